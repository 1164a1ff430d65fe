"""Decision records (core/decision.py) and their text (core/report.py): built from real
scheduling cycles of the simulator on small clusters. Expected scores and messages are
kube-scheduler's (the same clusters as tests/simulate/test_simulator.py: least_allocated.go,
taint_toleration.go, balanced_allocation.go, and schedule_one.go's FitError message)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
import yaml

from scheduler.config import load_config
from scheduler.core.decision import (
    BINDING,
    SCHEDULED,
    SOURCE_SIMULATE,
    UNSCHEDULABLE,
    Attempt,
    compact,
    explain,
    from_json,
    from_outcome,
    narrow,
    narrowest,
    near_misses,
    to_json,
)
from scheduler.core.report import render, render_history
from scheduler.extender import build_extenders
from scheduler.simulate.simulator import Simulator, _human, attempt_record, build_cluster, run
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import ExtenderServer


def _sim(docs: list[dict[str, Any]], seed: int = 1) -> Simulator:
    return Simulator(build_cluster(docs), load_config(None), seed)


def _first(sim: Simulator) -> Any:
    return next(iter(sim.attempts()))


def _fw(sim: Simulator) -> Any:
    return next(iter(sim.frameworks.values()))


def _tainted(name: str, effect: str = "NoSchedule") -> dict[str, Any]:
    return make_node(name, taints=[{"key": "k", "value": "v", "effect": effect}])


def test_placed_pod_has_every_scored_node_with_raw_normalized_weighted() -> None:
    # n1 empty, n3 runs 3 of its 4 cpus; n2 is tainted NoSchedule.
    sim = _sim([make_node("n1", cpu="2", memory="4Gi"), _tainted("n2"), make_node("n3", cpu="4", memory="8Gi"),
                make_pod("busy", cpu="3", memory="1000Mi", node_name="n3"), make_pod("web", cpu="500m", memory="1Gi")])
    out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    assert (d.pod, d.outcome, d.node, d.evaluated, d.feasible, d.scored) == ("default/web", SCHEDULED, "n1", 3, 2, 2)
    assert [r.node for r in d.scores] == ["n1", "n3"]  # best first
    fit = d.plugins.index("NodeResourcesFit")
    taint = d.plugins.index("TaintToleration")
    n1 = d.scores[0]
    # least_allocated.go: (2000-500)*100/2000 = 75, (4Gi-1Gi)*100/4Gi = 75 -> 75, weight 1.
    assert (n1.raw[fit], d.normalized(n1)[fit], n1.final[fit]) == (75, 75, 75)
    # taint_toleration.go: raw 0 intolerable PreferNoSchedule taints, reversed -> 100, weight 3.
    assert (n1.raw[taint], d.normalized(n1)[taint], n1.final[taint], d.weights[taint]) == (0, 100, 300, 3)
    assert n1.total == sum(n1.final)
    # The tainted node: rejected by TaintToleration, counted and named.
    assert d.filtered["n2"].plugin == "TaintToleration"
    assert [(r.plugin, r.nodes) for r in d.rejections] == [("TaintToleration", 1)]
    assert d.stages == {"Reserve": "Success"}


def test_pending_pod_groups_rejections_by_plugin_and_reason() -> None:
    sim = _sim([make_node("a", cpu="1"), make_node("b", cpu="1"), _tainted("c"), make_pod("big", cpu="2")])
    out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    assert d.outcome == UNSCHEDULABLE and d.node is None
    # The FailedScheduling message, unchanged (schedule_one.go FitError.Error()).
    assert d.message == out.message
    assert d.message.startswith("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.")
    assert [(r.plugin, r.nodes, r.reasons) for r in d.rejections] == [
        ("NodeResourcesFit", 2, {"Insufficient cpu": 2}),
        ("TaintToleration", 1, {"node(s) had untolerated taint(s)": 1}),
    ]
    assert d.rejections[0].examples == {"Insufficient cpu": ["a", "b"]}
    assert d.filtered_total == 3 and set(d.filtered) == {"a", "b", "c"}


def test_prefilter_rejection_counts_every_node_with_its_status() -> None:
    # A claim that does not exist: VolumeRestrictions' PreFilter (the first to look at claims)
    # rejects the pod before any node is filtered; every node carries that status.
    pod = make_pod("p", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}])
    sim = _sim([make_node("a"), make_node("b"), pod])
    out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    assert d.filtered_total == 2 and d.evaluated == 2
    (r,) = d.rejections
    assert (r.plugin, r.nodes) == ("VolumeRestrictions", 2)
    assert d.message.startswith('0/2 nodes are available: persistentvolumeclaim "missing" not found.')
    assert sorted(r.examples[next(iter(r.reasons))]) == ["a", "b"]


@pytest.mark.parametrize("top, expected", [(1, ["n0"]), (2, ["n0", "n1"]), (None, ["n0", "n1", "n2", "n3"])])
def test_top_rows_best_first(top: int | None, expected: list[str]) -> None:
    # Less free cpu, lower score: n0 (empty) best, n3 (fullest) last.
    docs: list[dict[str, Any]] = [make_node(f"n{i}", cpu="4") for i in range(4)]
    docs += [make_pod(f"f{i}", cpu=f"{i}", node_name=f"n{i}") for i in range(1, 4)]
    docs.append(make_pod("p", cpu="100m"))
    sim = _sim(docs)
    d = from_outcome(_first(sim), _fw(sim), sim.snapshot.node_infos, top=top)
    assert [r.node for r in d.scores] == expected
    assert d.scored == 4


def _attempt(nodes: int, cpu: str, pod_cpu: str, seconds: float = 0.0) -> Attempt:
    """The first attempt of one pod on ``nodes`` equal nodes."""
    docs: list[dict[str, Any]] = [make_node(f"n{i:02d}", cpu=cpu) for i in range(nodes)]
    sim = _sim([*docs, make_pod("p", cpu=pod_cpu)])
    out = _first(sim)
    return Attempt(out.pod, _fw(sim), out, sim.snapshot.node_infos, 1, 1000.0, seconds)


def test_compact_keeps_the_chosen_node_and_lets_references_go() -> None:
    att = _attempt(4, "4", "100m", 0.002)
    full = explain(att)
    compact(att, top=1)
    assert att.result is None and att.nodes is None and att.fw is None
    small = explain(att)
    assert small.compact and not full.compact
    # Ties at the top: the chosen node is kept even when it is not the first row.
    assert small.node == full.node and full.node in [r.node for r in small.scores]
    assert len(small.scores) <= 2 and small.scored == 4
    assert small.timings == {"cycle": 0.002}


def test_compact_bounds_the_listed_verdicts_not_the_counts() -> None:
    att = _attempt(30, "1", "2")
    compact(att, filtered_limit=5, examples=2)
    d = explain(att)
    assert len(d.filtered) == 5 and d.filtered_total == 30
    (r,) = d.rejections
    assert (r.nodes, r.reasons) == (30, {"Insufficient cpu": 30})
    assert len(r.examples["Insufficient cpu"]) == 2


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([0, 100], np.int8),
        ([-127, 127], np.int8),
        ([-128], np.int16),  # its negation does not fit int8 (the best rows sort by -total)
        ([128, -5], np.int16),
        ([32767], np.int16),
        ([-32768], np.int32),
        ([2**31 - 1], np.int32),
        ([2**31], np.int64),  # as a custom plugin's raw score may be: kept as it is
        ([-(2**63)], np.int64),
        ([], np.int64),
    ],
)
def test_narrowest_holds_every_value_exactly(values: list[int], dtype: type) -> None:
    got = narrowest(np.array(values, dtype=np.int64))
    assert got.dtype == dtype and got.tolist() == values


@pytest.mark.parametrize(
    "raw_scale, itemsize",
    [
        (1, 2),  # raw 0-100, TaintToleration's weighted 300: int16
        (2**40, 8),  # raw scores past int32 (unchecked before normalizing): int64, as they were
    ],
)
def test_narrow_keeps_what_explain_shows(raw_scale: int, itemsize: int) -> None:
    # Scores that differ per node: loads, and a PreferNoSchedule taint (normalized, weight 3).
    docs: list[dict[str, Any]] = [make_node(f"n{i}", cpu="4") for i in range(4)]
    docs += [_tainted("t", "PreferNoSchedule"), make_pod("p", cpu="100m")]
    docs += [make_pod(f"f{i}", cpu=f"{i}", node_name=f"n{i}") for i in range(1, 4)]
    sim = _sim(docs)
    out = _first(sim)
    sc = out.result.scores
    sc.raw = [r * raw_scale for r in sc.raw]
    att = Attempt(out.pod, _fw(sim), out, sim.snapshot.node_infos, 1, 1000.0, 0.001)
    full, best = explain(att), explain(att, top=2)
    narrow(att)
    assert {a.dtype.itemsize for a in [*sc.raw, *sc.final, sc.totals]} == {itemsize}
    assert sc.idx.dtype == np.int8
    assert explain(att) == full and explain(att, top=2) == best
    assert len({r.total for r in full.scores}) > 1 and max(max(r.raw) for r in full.scores) > 50 * raw_scale
    compact(att, top=2)
    assert explain(att).scores == best.scores


def test_binding_outcome_and_stages_join_the_cycle_part() -> None:
    sim = _sim([make_node("n1"), make_pod("p", cpu="1")])
    out = sim.attempt(sim.pending[0].pod)
    att = Attempt(out.pod, _fw(sim), out, sim.snapshot.node_infos, 2, 0.0, 0.001)
    att.outcome = BINDING
    compact(att)
    att.finish(SCHEDULED, "", {"Permit": "Success", "PreBind": "Success", "Bind": "Success"}, {"total": 0.02})
    d = explain(att)
    assert d.stages == {"Reserve": "Success", "Permit": "Success", "PreBind": "Success", "Bind": "Success"}
    assert d.timings == {"cycle": 0.001, "total": 0.02}
    assert (d.outcome, d.attempt) == (SCHEDULED, 2)


def test_json_round_trip_and_simulate_shapes() -> None:
    sim = _sim([make_node("n1", cpu="2", memory="4Gi"), _tainted("n2"), make_node("n3"),
                make_pod("web", cpu="500m", memory="1Gi")])
    out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    doc = to_json(d)
    assert from_json(doc) == d
    # The same shapes (and numbers) as simulate --output json.
    rec = attempt_record(sim, out)
    assert {n: {p: {"score": v["score"], "final": v["final"]} for p, v in s["plugins"].items()}
            for n, s in doc["scores"].items()} == {n: s["plugins"] for n, s in rec["scores"].items()}
    assert {n: s["total"] for n, s in doc["scores"].items()} == {n: s["total"] for n, s in rec["scores"].items()}
    assert doc["filtered"] == rec["filtered"]
    with pytest.raises(ValueError, match="not a decision record"):
        from_json({"scores": {"n1": {}}})


def test_preemption_names_the_nominated_node_and_victims() -> None:
    docs = [make_node("n1", cpu="2"), make_pod("low", cpu="2", node_name="n1", priority=0),
            make_pod("high", cpu="2", priority=100)]
    sim = _sim(docs)
    out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    assert (d.outcome, d.nominated, d.victims) == (UNSCHEDULABLE, "n1", ["default/low"])
    text = render(d, top=None, detail=True)
    assert "  preemption: nominated n1, victims default/low\n" in text


def test_near_misses_are_nodes_one_plugin_rejects() -> None:
    # a: too small only; b: too small and tainted; c: fits but tainted -> a and c fail one plugin.
    sim = _sim([make_node("a", cpu="1"), {**_tainted("b"), "status": make_node("b", cpu="1")["status"]},
                _tainted("c"), make_pod("p", cpu="2")])
    out = _first(sim)
    misses = near_misses(_fw(sim), out.pod, sim.snapshot)
    assert [(m.node, m.plugin) for m in misses] == [("a", "NodeResourcesFit"), ("c", "TaintToleration")]
    assert misses[0].reasons == ["Insufficient cpu"]


def test_simulate_text_is_the_shared_renderer() -> None:
    sim = _sim([make_node("n1", cpu="2", memory="4Gi"), make_node("n3"), make_pod("web", cpu="500m", memory="1Gi"),
                make_pod("huge", cpu="64")])
    outs = list(sim.attempts())
    buf = io.StringIO()
    for out in outs:
        _human(sim, out, buf)
    text = buf.getvalue()
    # n3 has more room: LeastAllocated puts it first.
    assert text.startswith("default/web -> n3   (evaluated 2, feasible 2)\n  NODE  TOTAL  TaintToleration")
    assert "default/huge: unschedulable\n  0/2 nodes are available: 2 Insufficient cpu." in text
    # explain's detail adds to simulate's text, never changes it.
    d = from_outcome(outs[1], _fw(sim), sim.snapshot.node_infos, source=SOURCE_SIMULATE)
    short, long = render(d), render(d, detail=True)
    assert long.startswith(short.rstrip("\n"))
    assert "    NodeResourcesFit  2      Insufficient cpu (2: n1, n3)" in long


def test_history_shows_the_newest_in_full_and_the_earlier_briefly() -> None:
    docs = [make_node("n1", cpu="2"), make_pod("low", cpu="2", node_name="n1", priority=0),
            make_pod("high", cpu="2", priority=100)]
    sim = _sim(docs)
    first, second = list(sim.attempts())[:2]
    fw = _fw(sim)
    d1 = from_outcome(first, fw, sim.snapshot.node_infos, number=1)
    d2 = from_outcome(second, fw, sim.snapshot.node_infos, number=2)
    text = render_history([d2, d1])
    assert text.startswith("default/high -> n1")
    assert "earlier attempts:\n  #1 at " in text
    assert "    preemption: nominated n1, victims default/low\n" in text


def test_prioritizing_extender_is_a_column_after_the_plugins(tmp_path: Any) -> None:
    # schedule_one.go prioritizeNodes: an extender's score x weight x (MaxNodeScore /
    # MaxExtenderPriority) joins the total; simulate's table and JSON show it after the plugins.
    def prioritize(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, [{"Host": n, "Score": 10 if n == "n2" else 0} for n in body["NodeNames"] if n != "n3"]

    with ExtenderServer({"/prioritize": prioritize}) as ext:
        cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
               "extenders": [{"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 2,
                              "nodeCacheCapable": True}]}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
        (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(
            [make_node(n) for n in ("n1", "n2", "n3")] + [make_pod("p", cpu="1")]))
        text, js = io.StringIO(), io.StringIO()
        assert run(str(tmp_path / "cluster.yaml"), str(tmp_path / "config.yaml"), 1, "text", stream=text) == 0
        assert run(str(tmp_path / "cluster.yaml"), str(tmp_path / "config.yaml"), 1, "json", stream=js) == 0
        extenders, config = build_extenders(load_config(str(tmp_path / "config.yaml")))
        sim = Simulator(build_cluster([make_node(n) for n in ("n1", "n2", "n3")] + [make_pod("p", cpu="1")]),
                        config, 1, extenders=extenders)
        out = _first(sim)
    d = from_outcome(out, _fw(sim), sim.snapshot.node_infos)
    assert d.extenders == [ext.url] and d.plugins[-1] == ext.url
    assert text.getvalue().splitlines()[1].endswith(f"ImageLocality  {ext.url}")
    n2 = next(r for r in d.scores if r.node == "n2")
    assert (n2.raw[-1], n2.final[-1], d.weights[-1]) == (10, 200, 2)
    # Narrowed as the live store keeps it: the extender's column and the totals read the same.
    att = Attempt(out.pod, _fw(sim), out, sim.snapshot.node_infos, 1, 0.0, 0.0)
    narrow(att)
    assert out.result.scores.totals.dtype == np.int16 and explain(att).scores == d.scores
    # The JSON has simulate's shape: extenders only where one answered.
    rec = json.loads(js.getvalue().splitlines()[0])
    doc = to_json(d)
    assert {n: s.get("extenders") for n, s in doc["scores"].items()} == {
        n: s.get("extenders") for n, s in rec["scores"].items()}
    assert from_json(doc) == d
