"""OpportunisticBatching: the batch kept between cycles (upstream framework/runtime/batch_test.go
TestBatchBasic), the framework's pod signatures (schedule_one_test.go TestSignatures) and the
hint in the scheduling algorithm (schedule_one.go schedulePod, findNodesThatFitPod)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from scheduler.backend.cache import Cache
from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.core.algorithm import Algorithm
from scheduler.core.profiles import new_framework
from scheduler.framework.batch import OpportunisticBatch, SortedNodes
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import Extender
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Handle,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.listers import Listers
from scheduler.framework.metrics import MetricsRecorder
from scheduler.framework.signers import SignFragment
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod


class Recorder(MetricsRecorder):
    """Counts what the batch reports."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[str] = []
        self.flushes: list[str] = []
        self.hints: list[bool] = []
        self.stores = 0

    def batch_hint(self, profile: str, seconds: float, hinted: bool) -> None:
        self.hints.append(hinted)

    def batch_attempt(self, profile: str, result: str) -> None:
        self.attempts.append(result)

    def batch_flushed(self, profile: str, reason: str) -> None:
        self.flushes.append(reason)

    def batch_stored(self, profile: str, seconds: float) -> None:
        self.stores += 1


# -- the batch itself (TestBatchBasic) --------------------------------------------------------


class _Nodes:
    """The snapshot's lookup: node name -> the uids of its pods."""

    def __init__(self) -> None:
        self.pods: dict[str, list[str]] = {}

    def get(self, name: str) -> Any:
        return SimpleNamespace(name=name, uids=self.pods[name]) if name in self.pods else None


class _BatchTestFramework:
    """Upstream's batchTest filter: a pod whose uid starts with "b" does not fit a node that
    already has such a pod (the "blocking" pods go one per node)."""

    profile_name = "test"

    def __init__(self) -> None:
        self.handle = SimpleNamespace(metrics=Recorder(), snapshot=_Nodes())

    def run_filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        if pod.uid.startswith("b") and any(u.startswith("b") for u in node.uids):
            return Status(Code.UNSCHEDULABLE, "unsched")
        return None


def _pod(uid: str) -> PodInfo:
    return PodInfo(make_pod(uid, uid=uid))


_CASES = [
    # (name, first uid, first sig, first stored, first chosen, first others, skip a cycle,
    #  second uid, second sig, second chosen, expected hint, expected kept nodes)
    ("a second pod with the same signature gets a hint",
     "b-1", "sig", True, "n3", ["n1"], False, "b-2", "sig", "n1", "n1", None),
    ("a second pod with a different signature doesn't get a hint",
     "a-1", "sig", True, "n3", ["n1"], False, "a-2", "sig2", "n1", "", None),
    ("a second pod doesn't get a hint if it's not 1-pod-per-node",
     "a-1", "sig", True, "n3", ["n1"], False, "a-2", "sig", "n1", "", None),
    ("pod doesn't get hint if previous pod didn't scheduled",
     "b-1", "sig", False, "n3", ["n1"], False, "b-2", "sig", "n1", "", None),
    ("empty list", "b-1", "sig", True, "n3", [], False, "b-2", "sig", "n4", "", None),
    ("nil list", "b-1", "sig", True, "n3", None, False, "b-2", "sig", "n4", "", None),
    ("pod doesn't get hint because the previous pod is to a different profile",
     "b-1", "sig", True, "n3", ["n1"], True, "b-2", "sig", "n1", "", None),
    ("pod uses batch from preceding pod and leaves remaining batch to next pod",
     "b-1", "sig", True, "n3", ["n1", "n2"], False, "b-2", "sig", "n1", "n1", ["n2"]),
]


@pytest.mark.parametrize(
    ("first", "sig1", "stored", "chosen1", "others1", "skip", "second", "sig2", "chosen2", "hint", "kept"),
    [c[1:] for c in _CASES],
    ids=[c[0] for c in _CASES],
)
def test_batch_basic(
    first: str, sig1: str, stored: bool, chosen1: str, others1: list[str] | None, skip: bool,
    second: str, sig2: str, chosen2: str, hint: str, kept: list[str] | None,
) -> None:
    fw = _BatchTestFramework()
    batch = OpportunisticBatch(fw, clock=lambda: 0.0)  # type: ignore[arg-type]
    state = CycleState()
    assert batch.get_node_hint(_pod(first), sig1.encode(), state, 1) == ""
    if stored:
        batch.store_schedule_results(sig1.encode(), "", chosen1, None if others1 is None else SortedNodes(others1), 1)
    cycle = 3 if skip else 2
    # The first pod now runs on its node.
    fw.handle.snapshot.pods[chosen1] = [first]
    got = batch.get_node_hint(_pod(second), sig2.encode(), state, cycle)
    assert got == hint
    batch.store_schedule_results(sig2.encode(), got, chosen2, None, cycle)
    if kept is None:
        assert batch.state is None or len(batch.state.nodes) == 0
    else:
        assert batch.state is not None
        assert batch.state.signature == sig2.encode()
        assert batch.state.nodes.remaining() == kept


@pytest.mark.parametrize(
    ("name", "setup", "attempts", "flushes"),
    [
        # batch.go's reasons, each from the check that finds it.
        ("used", lambda fw, b: None, ["hint_used"], []),
        ("skipped cycle", lambda fw, b: setattr(b.last, "cycle", 0), ["no_hint"], ["pod_skipped"]),
        ("other signature", lambda fw, b: setattr(b.state, "signature", b"other"), ["no_hint"], ["pod_incompatible"]),
        ("expired", lambda fw, b: setattr(b, "clock", lambda: 0.6), ["no_hint"], ["expired"]),
        ("node gone", lambda fw, b: fw.handle.snapshot.pods.pop("n3"), ["no_hint"], ["node_missing"]),
        ("node not full", lambda fw, b: fw.handle.snapshot.pods.__setitem__("n3", []), ["no_hint"], ["node_not_full"]),
    ],
)
def test_invalidation_reasons_are_counted(name: str, setup: Any, attempts: list[str], flushes: list[str]) -> None:
    fw = _BatchTestFramework()
    batch = OpportunisticBatch(fw, clock=lambda: 0.0)  # type: ignore[arg-type]
    batch.store_schedule_results(b"sig", "", "n3", SortedNodes(["n1", "n2"]), 1)
    fw.handle.snapshot.pods["n3"] = ["b-1"]
    setup(fw, batch)
    rec = fw.handle.metrics
    hint = batch.get_node_hint(_pod("b-2"), b"sig", CycleState(), 2)
    batch.store_schedule_results(b"sig", hint, hint or "n1", None, 2)
    assert rec.attempts == attempts
    # A cycle that found its node alone (no runner-up) flushes with empty_list unless it used the hint.
    assert rec.flushes == flushes + ([] if hint else ["empty_list"])
    assert rec.hints == [bool(hint)]
    assert rec.stores == 2
    assert batch.batched_pods == (1 if hint else 0)


def test_a_hint_not_taken_is_counted_and_the_new_results_kept() -> None:
    fw = _BatchTestFramework()
    batch = OpportunisticBatch(fw, clock=lambda: 0.0)  # type: ignore[arg-type]
    batch.store_schedule_results(b"sig", "", "n3", SortedNodes(["n1", "n2"]), 1)
    fw.handle.snapshot.pods["n3"] = ["b-1"]
    assert batch.get_node_hint(_pod("b-2"), b"sig", CycleState(), 2) == "n1"
    # The pod went elsewhere (its nominated node): the hint was not used; a fresh list is kept.
    batch.store_schedule_results(b"sig", "n1", "n5", SortedNodes(["n6"]), 2)
    assert fw.handle.metrics.attempts == ["hint_not_used"]
    assert batch.state is not None and batch.state.nodes.remaining() == ["n6"]
    # An unsigned pod's results are not kept.
    batch.store_schedule_results(None, "", "n6", SortedNodes(["n7"]), 3)
    assert fw.handle.metrics.flushes == ["pod_not_batchable"]
    assert batch.state is None


# -- signatures (TestSignatures) --------------------------------------------------------------


class Sort(QueueSortPlugin):
    name = "Sort"

    def less(self, a: Any, b: Any) -> bool:
        return False


class Binder(BindPlugin):
    name = "Binder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


def _const_sig(name: str, base: type[Plugin], result: list[SignFragment] | Status) -> type[Plugin]:
    def sign_pod(self: Any, pod: PodInfo) -> list[SignFragment] | Status:
        return result

    body: dict[str, Any] = {"name": name, "sign_pod": sign_pod}
    if base is FilterPlugin:
        body["filter"] = lambda self, state, pod, node: None
    elif base is PreFilterPlugin:
        body["pre_filter"] = lambda self, state, pod, nodes: None
    elif base is ScorePlugin:
        body["score"] = lambda self, state, pod, node: 0
    elif base is PreScorePlugin:
        body["pre_score"] = lambda self, state, pod, nodes: None
    return type(name, (base, SignPlugin), body)


class Unsigned(FilterPlugin):
    name = "Unsigned"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


_POINT = {FilterPlugin: "filter", PreFilterPlugin: "preFilter", ScorePlugin: "score", PreScorePlugin: "preScore"}


def _framework(
    plugins: Sequence[type[Plugin]], *, batching: bool = True, extenders: Sequence[Extender] = (),
    snapshot: Snapshot | None = None,
) -> Any:
    registry: dict[str, type[Plugin]] = {"Sort": Sort, "Binder": Binder}
    points: dict[str, list[PluginRef]] = {"queueSort": [PluginRef("Sort")], "bind": [PluginRef("Binder")]}
    for cls in plugins:
        registry[cls.name] = cls
        base = next(b for b in _POINT if issubclass(cls, b))
        points.setdefault(_POINT[base], []).append(PluginRef(cls.name, 1 if base is ScorePlugin else 0))
    prof = Profile("test-scheduler", {p: PluginSet(tuple(r)) for p, r in points.items()}, {}, None)
    handle = Handle(snapshot or Snapshot(), Listers(), "test-scheduler", extenders=extenders)
    return new_framework(prof, registry, handle, opportunistic_batching=batching)


SIG16 = [("test", 16)]


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ([], b'{"v1.Pod.Spec.SchedulerName":"test-scheduler"}'),
        ([_const_sig("ConstSig", FilterPlugin, SIG16)], b'{"test":16,"v1.Pod.Spec.SchedulerName":"test-scheduler"}'),
        ([_const_sig("ConstSig", PreFilterPlugin, SIG16)], b'{"test":16,"v1.Pod.Spec.SchedulerName":"test-scheduler"}'),
        ([_const_sig("ConstSig", ScorePlugin, SIG16)], b'{"test":16,"v1.Pod.Spec.SchedulerName":"test-scheduler"}'),
        ([_const_sig("ConstSig", PreScorePlugin, SIG16)], b'{"test":16,"v1.Pod.Spec.SchedulerName":"test-scheduler"}'),
        (
            [_const_sig("ConstSig", FilterPlugin, SIG16), _const_sig("ConstSig2", ScorePlugin, [("test2", 17)])],
            b'{"test":16,"test2":17,"v1.Pod.Spec.SchedulerName":"test-scheduler"}',
        ),
        (
            [_const_sig("ConstSig", FilterPlugin, [("test", 16), ("test2", 17)])],
            b'{"test":16,"test2":17,"v1.Pod.Spec.SchedulerName":"test-scheduler"}',
        ),
        (
            [_const_sig("ConstSig", FilterPlugin, SIG16), _const_sig("ConstSig2", ScorePlugin, SIG16)],
            b'{"test":16,"v1.Pod.Spec.SchedulerName":"test-scheduler"}',
        ),
        ([_const_sig("ConstSig", FilterPlugin, Status(Code.UNSCHEDULABLE))], None),
        ([_const_sig("ConstSig", FilterPlugin, Status(Code.ERROR, "boom"))], None),
        # A filter that cannot sign turns signatures off for the profile (computeBatchablePlugins).
        ([_const_sig("ConstSig", FilterPlugin, SIG16), Unsigned], None),
    ],
    ids=["no plugins", "single filter", "single prefilter", "single score", "single prescore", "two plugins",
         "plugin with multiple fragments", "overlapping fragments", "unsignable plugin", "error plugin",
         "a plugin that does not sign"],
)
def test_signatures(plugins: list[type[Plugin]], expected: bytes | None) -> None:
    fw = _framework(plugins)
    assert fw.sign_pod(PodInfo(make_pod("foo", scheduler_name="test-scheduler"))) == expected


def test_no_signatures_with_extenders_or_without_the_gate() -> None:
    sig = [_const_sig("ConstSig", FilterPlugin, SIG16)]
    pod = PodInfo(make_pod("foo", scheduler_name="test-scheduler"))
    assert _framework(sig, extenders=[object()]).sign_pod(pod) is None  # type: ignore[list-item]
    off = _framework(sig, batching=False)
    assert off.batch is None and off.sign_pod(pod) is None


# -- the hint in the algorithm -----------------------------------------------------------------


class OnePerNode(FilterPlugin, SignPlugin):
    """A node takes one pod (as a host port would)."""

    name = "OnePerNode"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, "taken") if node.pods else None

    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        return []


class ByIndex(ScorePlugin, SignPlugin):
    """Score = the number in the node name (node-7 -> 7): no ties."""

    name = "ByIndex"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.name.split("-")[1])

    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        return []


def _cluster(n: int) -> tuple[Any, Cache, Snapshot, Algorithm]:
    cache, snap = Cache(), Snapshot()
    for i in range(n):
        cache.add_node(make_node(f"node-{i}"))
    cache.update_snapshot(snap)
    fw = _framework([OnePerNode, ByIndex], snapshot=snap)
    fw.handle.metrics = Recorder()
    fw.batch.clock = lambda: 0.0
    return fw, cache, snap, Algorithm(random.Random(0))


def _place(cache: Cache, snap: Snapshot, name: str, node: str) -> None:
    cache.assume_pod(PodInfo(make_pod(name, node_name=node)), node)
    cache.update_snapshot(snap)


def test_the_runner_up_is_hinted_and_placed_without_a_full_pass() -> None:
    fw, cache, snap, alg = _cluster(5)
    placed: list[tuple[str, int]] = []
    for cycle in range(1, 6):
        pod = PodInfo(make_pod(f"p{cycle}", scheduler_name="test-scheduler"))
        sig = fw.sign_pod(pod)
        r = alg.schedule_pod(fw, CycleState(), pod, snap, sig, cycle)
        placed.append((r.suggested_host, r.evaluated_nodes))
        _place(cache, snap, f"p{cycle}", r.suggested_host)
    # The first pod scores every node; each next one takes the hint, checked alone.
    assert placed == [("node-4", 5), ("node-3", 1), ("node-2", 1), ("node-1", 1), ("node-0", 1)]
    assert fw.handle.metrics.attempts == ["no_hint", "hint_used", "hint_used", "hint_used", "hint_used"]
    assert fw.batch.batched_pods == 4


def test_a_nominated_node_goes_before_the_hint() -> None:
    fw, cache, snap, alg = _cluster(4)
    first = PodInfo(make_pod("p1", scheduler_name="test-scheduler"))
    r = alg.schedule_pod(fw, CycleState(), first, snap, fw.sign_pod(first), 1)
    _place(cache, snap, "p1", r.suggested_host)
    second = PodInfo(make_pod("p2", scheduler_name="test-scheduler"))
    second.nominated_node_name = "node-0"
    r = alg.schedule_pod(fw, CycleState(), second, snap, fw.sign_pod(second), 2)
    # evaluateNominatedNode: the nominated node wins; the popped hint (node-2) was not used.
    assert r.suggested_host == "node-0"
    assert fw.handle.metrics.attempts == ["no_hint", "hint_not_used"]
    assert fw.handle.metrics.flushes == ["empty_list"]
