"""What-if: one pod's decision recomputed from the cluster's objects, nothing else placed.
Messages and scores are the scheduling cycle's own (the same as simulate and the live loop)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import load_config, load_run_config
from scheduler.core.decision import SCHEDULED, SOURCE_WHAT_IF, UNSCHEDULABLE
from scheduler.simulate.simulator import Simulator, attempt_record, build_cluster
from scheduler.simulate.whatif import GATED, WhatIfError, what_if
from scheduler.testing.builders import make_node, make_pod


def _cluster() -> list[dict[str, Any]]:
    return [make_node("a", cpu="2"), make_node("b", cpu="4"), make_pod("old", cpu="1", node_name="a"),
            make_pod("other-pending", cpu="3")]


def test_pending_pod_equals_simulate_and_others_stay_unplaced() -> None:
    docs = [*_cluster(), make_pod("p", cpu="1")]
    d = what_if(docs, load_config(None), "default/p")
    assert (d.source, d.outcome, d.node) == (SOURCE_WHAT_IF, SCHEDULED, "b")
    # other-pending was not placed first: simulate with p alone gives the same scores.
    alone = [x for x in docs if x["metadata"]["name"] != "other-pending"]
    sim = Simulator(build_cluster(alone), load_config(None), 1)
    rec = attempt_record(sim, next(iter(sim.attempts())))
    assert {r.node: r.total for r in d.scores} == {n: s["total"] for n, s in rec["scores"].items()}


def test_bound_pod_is_recomputed_as_if_pending() -> None:
    docs = [make_node("a", cpu="2"), make_node("b", cpu="2"), make_pod("p", cpu="2", node_name="a")]
    d = what_if(docs, load_config(None), "default/p")
    # Off its node, both fit again; nothing else holds a.
    assert d.outcome == SCHEDULED and {r.node for r in d.scores} == {"a", "b"}


def test_unschedulable_pod_with_near_misses() -> None:
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    docs = [make_node("small", cpu="1"), make_node("tainted", cpu="8", taints=taint), make_pod("p", cpu="2")]
    d = what_if(docs, load_config(None), "default/p")
    assert d.outcome == UNSCHEDULABLE
    assert d.message.startswith("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s).")
    assert [(m.node, m.plugin) for m in d.near_misses] == [("small", "NodeResourcesFit"),
                                                            ("tainted", "TaintToleration")]
    assert what_if(docs, load_config(None), "default/p", hints=False).near_misses == []


def test_gated_pod_is_not_attempted() -> None:
    d = what_if([make_node("a"), make_pod("p", gates=["x/y"])], load_config(None), "default/p")
    assert (d.outcome, d.message) == (GATED, "waiting for scheduling gates: [x/y]")


@pytest.mark.parametrize(("docs", "key", "message"), [
    ([make_node("a")], "default/p", "pod default/p not found"),
    ([make_node("a"), make_pod("p", scheduler_name="other")], "default/p",
     "pod default/p: no profile for schedulerName other in the scheduler's configuration"),
])
def test_errors(docs: list[dict[str, Any]], key: str, message: str) -> None:
    with pytest.raises(WhatIfError, match=message):
        what_if(docs, load_run_config(None), key)
