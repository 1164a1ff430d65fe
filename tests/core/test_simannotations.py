"""kube-scheduler-simulator's result annotations from a Decision: names and JSON shapes as its
resultstore writes them (sigs.k8s.io/kube-scheduler-simulator simulator/scheduler/plugin/
resultstore/store.go: "passed", "success", "preemption victim"; scores as strings;
storereflector: result-history, oldest dropped past TotalAnnotationSizeLimitB)."""

from __future__ import annotations

import json
from typing import Any

from scheduler.config import load_config
from scheduler.core import simannotations as sa
from scheduler.core.decision import from_outcome
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod


def _decision(docs: list[dict[str, Any]]) -> Any:
    sim = Simulator(build_cluster(docs), load_config(None), 1)
    out = next(iter(sim.attempts()))
    return from_outcome(out, next(iter(sim.frameworks.values())), sim.snapshot.node_infos)


def test_placed_pod() -> None:
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    d = _decision([make_node("a", cpu="2"), make_node("b", cpu="4"), make_node("t", taints=taint),
                   make_pod("p", cpu="1")])
    got = {k.removeprefix(sa.PREFIX): v for k, v in sa.result_annotations(d).items()}
    filt = json.loads(got["filter-result"])
    # Every plugin that ran passed on the feasible nodes (skipped ones are absent); on t the
    # plugins before TaintToleration passed, it rejected, the rest did not run.
    assert set(filt["a"].values()) == {"passed"} and "NodeUnschedulable" in filt["a"]
    assert filt["t"] == {"NodeUnschedulable": "passed", "NodeName": "passed",
                         "TaintToleration": "node(s) had untolerated taint(s)"}
    score, final = json.loads(got["score-result"]), json.loads(got["finalscore-result"])
    assert score["b"]["TaintToleration"] == "0" and final["b"]["TaintToleration"] == "300"
    assert all(isinstance(v, str) for per in final.values() for v in per.values())
    assert got["selected-node"] == "b"
    assert json.loads(got["postfilter-result"]) == {}
    assert json.loads(got["reserve-result"]) == {p: "success" for p in d.points["reserve"]}
    assert json.loads(got["prefilter-result-status"])["NodeResourcesFit"] == "success"


def test_preempting_pod_marks_the_nominated_node() -> None:
    d = _decision([make_node("n1", cpu="2"), make_node("n2", cpu="1"),
                   make_pod("low", cpu="2", node_name="n1", priority=0), make_pod("high", cpu="2", priority=10)])
    got = sa.result_annotations(d)
    assert json.loads(got[sa.POSTFILTER]) == {"n1": {"DefaultPreemption": "preemption victim"}, "n2": {}}
    assert got[sa.SELECTED_NODE] == ""
    assert json.loads(got[sa.FILTER])["n2"]["NodeResourcesFit"] == "Insufficient cpu"


def test_history_appends_and_drops_the_oldest_past_the_limit() -> None:
    cur = {sa.FILTER: "{}", sa.SELECTED_NODE: "n1"}
    first = sa.with_history(cur, {})
    assert json.loads(first[sa.RESULT_HISTORY]) == [cur]
    second = sa.with_history(cur, first)
    assert json.loads(second[sa.RESULT_HISTORY]) == [cur, cur]
    # 80 kB each: the annotation itself and two in the history fit 256 KiB, three do not.
    big = {sa.FILTER: "x" * 80_000}
    h = sa.with_history(big, sa.with_history(big, {}))
    assert len(json.loads(h[sa.RESULT_HISTORY])) == 2
    h = sa.with_history({sa.FILTER: "y" * 80_000}, h)
    assert [e[sa.FILTER][0] for e in json.loads(h[sa.RESULT_HISTORY])] == ["x", "y"]
    assert sa.with_history(cur, {sa.RESULT_HISTORY: "not json"})[sa.RESULT_HISTORY] == json.dumps(
        [cur], separators=(",", ":"))
