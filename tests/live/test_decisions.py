"""The live decision records: what the loop keeps per attempt (through the real loop, fake API)
and the store's bounds. The messages compared are the loop's own FailedScheduling notes
(upstream schedule_one.go handleSchedulingFailure); stages and outcomes follow bindingCycle."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.core.decision import (
    BINDING,
    ERROR,
    SCHEDULED,
    UNSCHEDULABLE,
    WAITING,
    Attempt,
    PodRef,
    Verdict,
    compact,
    from_outcome,
)
from scheduler.framework.status import Code, Status
from scheduler.live.decisions import DecisionStore
from scheduler.live.kube.transport import ApiError
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.fakes import FakeCoreAPI
from scheduler.testing.harness import Harness
from scheduler.testing.permit import fake_permit, with_plugins


async def test_placed_pod_record_has_scores_stages_and_timings() -> None:
    h = Harness()
    for n, cpu in (("n1", "2"), ("n2", "4")):
        h.sched.on_node(None, make_node(n, cpu=cpu))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    (d,) = h.sched.decisions.attempts("default/a")
    assert (d.outcome, d.node, d.attempt, d.feasible) == (SCHEDULED, h.bound()["a"], 1, 2)
    assert {r.node for r in d.scores} == {"n1", "n2"} and d.scores[0].node == "n2"
    assert d.stages == {"Reserve": "Success", "Permit": "Success", "PreBind": "Success", "Bind": "Success"}
    assert set(d.timings) == {"cycle", "total"} and 0 < d.timings["cycle"] <= d.timings["total"]


async def test_pending_pod_record_carries_the_failed_scheduling_message() -> None:
    h = Harness()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_node(None, make_node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    await h.step()
    (d,) = h.sched.decisions.attempts("default/big")
    (event,) = h.events("FailedScheduling")
    assert (d.outcome, d.message) == (UNSCHEDULABLE, event["note"])
    assert {r.plugin: r.nodes for r in d.rejections} == {"NodeResourcesFit": 1, "TaintToleration": 1}
    assert d.stages == {}


async def test_bind_failure_is_the_attempts_outcome() -> None:
    h = Harness(FakeCoreAPI(ApiError(500, "etcd timeout")))
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    (d,) = h.sched.decisions.attempts("default/a")
    assert d.outcome == ERROR and d.node == "n1"
    assert d.stages["Bind"].startswith("Error (DefaultBinder): ")
    assert "etcd timeout" in d.message


def _waiter(pod: Any) -> tuple[Status | None, float]:
    return Status(Code.WAIT, "wait"), 300.0


async def test_wait_at_permit_then_rejection() -> None:
    waiter = fake_permit("Waiter", _waiter)
    cfg, registry = with_plugins(waiter)
    h = Harness(config=cfg, registry=registry)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    (d,) = h.sched.decisions.attempts("default/a")
    assert (d.outcome, d.stages["Permit"]) == (WAITING, "Wait")
    assert h.sched.decisions.recent()[0].outcome == WAITING
    waiter.instances[0].handle.get_waiting_pod("uid-default-a").reject("Waiter", "not now")
    await h.settle()
    (d,) = h.sched.decisions.attempts("default/a")
    assert d.outcome == UNSCHEDULABLE
    assert d.stages["Permit"] == "Unschedulable (Waiter): not now"
    assert d.message == h.events("FailedScheduling")[-1]["note"] == "0/1 nodes are available: 1 not now."
    assert "permitWait" in d.timings


async def test_records_off_keeps_nothing_and_schedules_alike() -> None:
    h = Harness()
    h.sched.decisions = DecisionStore(0)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert h.bound() == {"a": "n1"} and h.sched.decisions.attempts("default/a") == []


# ---------------------------------------------------------------------------------------------
# Bounds


def _attempts(n: int, nodes: int = 3) -> tuple[Simulator, list[tuple[Any, Any]]]:
    docs: list[dict[str, Any]] = [make_node(f"n{i}", cpu="1") for i in range(nodes)]
    docs += [make_pod(f"p{i}", cpu="2") for i in range(n)]
    sim = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim.frameworks.values()))
    return sim, [(out, fw) for out in sim.attempts()]


def _record(store: DecisionStore, sim: Simulator, out: Any, fw: Any, number: int = 1) -> Attempt | None:
    return store.record(out.pod, fw, out, sim.snapshot.node_infos, number, 0.0, 0.001)


def test_the_least_recently_attempted_pod_is_dropped_first() -> None:
    sim, outs = _attempts(4)
    store = DecisionStore(3)
    for out, fw in outs[:3]:
        _record(store, sim, out, fw)
    _record(store, sim, *outs[0], number=2)  # p0 attempted again: now the most recent
    _record(store, sim, *outs[3])
    assert [s.pod for s in store.recent()] == ["default/p3", "default/p0", "default/p2"]
    assert store.attempts("default/p1") == [] and len(store) == 3


@pytest.mark.parametrize("per_pod", [1, 2, 3])
def test_attempts_per_pod_newest_first(per_pod: int) -> None:
    sim, outs = _attempts(1)
    store = DecisionStore(10, per_pod=per_pod)
    for k in range(1, 5):
        _record(store, sim, *outs[0], number=k)
    assert [d.attempt for d in store.attempts("default/p0")] == list(range(4, 4 - per_pod, -1))


def test_whole_attempts_are_bounded_by_the_budget_and_compacted_when_idle() -> None:
    # Each attempt: 60 rejected nodes (more than a compact form lists), weight 61. Budget 130:
    # the third record makes the first let its references go (the budget is full); the newest
    # one (``full``) never does. Every attempt has its compact form from the start (made while
    # the cycle's arrays are hot).
    sim, outs = _attempts(3, nodes=60)
    now = [0.0]
    store = DecisionStore(10, full=1, budget=130, top=1, perf=lambda: now[0])
    kept = [_record(store, sim, out, fw) for out, fw in outs]
    assert [a is not None and a.decision is not None for a in kept] == [True, True, True]
    assert [a is not None and a.fw is None for a in kept] == [True, False, False]
    assert store.compacted_in_cycle == 1
    old = store.attempts("default/p0")[0]
    new = store.attempts("default/p2")[0]
    assert old.compact and not new.compact
    # Compaction keeps the counts and the message: both say the same about the rejections.
    assert [(r.plugin, r.nodes, r.reasons) for r in old.rejections] == [
        (r.plugin, r.nodes, r.reasons) for r in new.rejections]
    assert old.message == new.message
    # Idle (no record for a while): down to half the budget, the newest still whole.
    assert not store.idle()
    now[0] = 1.0
    assert store.idle()
    assert store.compact_idle() == 1 and store.compact_idle() == 0
    assert [store.attempts(f"default/p{i}")[0].compact for i in range(3)] == [True, True, False]


def test_forgotten_attempts_let_their_references_go() -> None:
    sim, outs = _attempts(3, nodes=60)
    store = DecisionStore(2, per_pod=1)
    first = _record(store, sim, *outs[0])
    again = _record(store, sim, *outs[0], number=2)  # takes the first one's place
    assert first is not None and again is not None
    assert first.result is None and first.weight == 0 and again.weight > 0
    _record(store, sim, *outs[1])
    _record(store, sim, *outs[2])  # p0 is dropped: its attempt lets go too
    assert again.result is None and store.attempts("default/p0") == []


def test_final_outcomes_reach_the_annotation_writer_once() -> None:
    sim, outs = _attempts(1)
    final: list[str] = []
    store = DecisionStore(10, on_final=lambda a: final.append(a.outcome))
    _record(store, sim, *outs[0])
    assert final == [UNSCHEDULABLE]
    # A placed pod: final when its binding cycle ends.
    docs = [make_node("n1"), make_pod("a")]
    sim2 = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim2.frameworks.values()))
    out = sim2.attempt(sim2.pending[0].pod)
    att = store.record(out.pod, fw, out, sim2.snapshot.node_infos, 1, 0.0, 0.0)
    assert att is not None and att.outcome in (BINDING, SCHEDULED)
    store.finish(out.pod.uid, None, {"total": 0.01})
    store.finish(out.pod.uid, None, {"total": 0.02})  # once only
    assert final == [UNSCHEDULABLE, SCHEDULED]


def test_recorded_scores_are_kept_narrow_and_read_the_same() -> None:
    docs = [make_node(f"n{i}", cpu=f"{4 * (i + 1)}") for i in range(3)]
    docs += [make_pod("busy", cpu="3", node_name="n2"), make_pod("p", cpu="1")]
    sim = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim.frameworks.values()))
    out = sim.attempt(sim.pending[0].pod)
    want = from_outcome(out, fw, sim.snapshot.node_infos)  # before the store narrows them
    store = DecisionStore(10, top=1)  # more scored nodes than its compact form keeps: held whole
    att = store.record(out.pod, fw, out, sim.snapshot.node_infos, 1, 0.0, 0.001)
    assert att is not None and att.result is not None and att.result.scores is not None
    sc = att.result.scores
    assert max(a.dtype.itemsize for a in [*sc.raw, *sc.final, sc.totals, sc.idx]) <= 2
    (d,) = store.attempts("default/p")
    assert d.scores == want.scores and len(d.scores) == 3 and len({r.total for r in d.scores}) > 1


@pytest.mark.parametrize(
    "docs, key",
    [
        pytest.param([make_node(f"n{i}", cpu="1") for i in range(3)] + [make_pod("p", cpu="2")], "default/p",
                     id="every-node-rejected"),
        pytest.param([make_node(f"n{i}", cpu=f"{2 * (i + 1)}") for i in range(3)] + [make_pod("p", cpu="1")],
                     "default/p", id="every-node-scored"),
    ],
)
def test_a_small_clusters_attempt_lets_its_references_go_at_once(docs: list[dict[str, Any]], key: str) -> None:
    # No more scored nodes than the compact form's rows, no more rejected than its verdicts:
    # the compact form is the whole answer, so nothing else is held (and nothing is marked
    # compact). The full answer is built before the store touches the attempt.
    sim = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim.frameworks.values()))
    out = sim.attempt(sim.pending[0].pod)
    want = from_outcome(out, fw, sim.snapshot.node_infos)
    store = DecisionStore(10)
    att = _record(store, sim, out, fw)
    assert att is not None and att.fw is None and att.result is None and att.weight == 0
    (d,) = store.attempts(key)
    assert not d.compact
    assert (d.node, d.scored, d.scores, d.filtered, d.filtered_total, d.rejections, d.message) == (
        want.node, want.scored, want.scores, want.filtered, want.filtered_total, want.rejections, want.message)
    assert d.points == want.points and d.points["filter"]
    # Pickled when the loop idles, and read back the same.
    assert att.compacted is not None and att.compacted.base is not None
    assert store.compact_idle() == 1 and att.compacted.base is None and att.compacted.blob
    assert store.attempts(key) == [d]


def test_a_final_attempt_keeps_only_its_pods_names_and_requests() -> None:
    # The outcome writer sees the PodInfo; the kept attempt then holds a PodRef, not the pod's
    # JSON. An attempt in its binding cycle keeps the PodInfo until the cycle ends.
    sim, outs = _attempts(1, nodes=60)
    out, fw = outs[0]
    seen: list[Any] = []
    store = DecisionStore(10, on_final=lambda a: seen.append(a.pod))
    att = _record(store, sim, out, fw)
    assert att is not None and seen == [out.pod]
    assert isinstance(att.pod, PodRef) and not hasattr(att.pod, "raw")
    assert (att.pod.key, att.pod.uid, att.pod.requests) == (out.pod.key, out.pod.uid, out.pod.requests)
    (s,) = store.recent()
    assert s.pod == "default/p0"
    docs = [make_node("n1"), make_pod("a")]
    sim2 = Simulator(build_cluster(docs), load_config(None), 1)
    fw2 = next(iter(sim2.frameworks.values()))
    placed = sim2.attempt(sim2.pending[0].pod)
    binding = store.record(placed.pod, fw2, placed, sim2.snapshot.node_infos, 1, 0.0, 0.0)
    assert binding is not None and binding.pod is placed.pod
    store.finish(placed.pod.uid, None, {"total": 0.01})
    assert isinstance(binding.pod, PodRef) and seen[-1] is placed.pod


def test_nodes_rejected_alike_share_one_verdict() -> None:
    sim, outs = _attempts(1, nodes=60)
    store = DecisionStore(10, top=1)
    att = _record(store, sim, *outs[0])
    assert att is not None
    compact(att, 1)
    d = att.decision
    assert d is not None and d.compact and len(d.filtered) == 50 and d.filtered_total == 60
    assert len({id(v) for v in d.filtered.values()}) == 1
    assert next(iter(d.filtered.values())) == Verdict("NodeResourcesFit", ["Insufficient cpu"])
