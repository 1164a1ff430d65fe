"""The scheduling algorithm with extenders, through the fake extender.

Upstream tables ported (kubernetes v1.36.3, pkg/scheduler):
- extender_test.go TestSchedulerWithExtenders
- schedule_one_test.go TestFindNodesThatPassExtenders, TestSchedulerSchedulePod ("test with
  extender which filters out some Nodes"), Test_prioritizeNodes ("the score from extender
  should also be recorded ..."), TestSchedulerBinding
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.backend.cache import Cache
from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.core.algorithm import Algorithm, FitError
from scheduler.core.extenders import extenders_binding, find_nodes_that_pass_extenders
from scheduler.core.profiles import new_framework
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import EXTENDER_NAME, Binding, Extender, FailedNodesMap, HostPriority
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Handle,
    NodeToStatus,
    Plugin,
    QueueSortPlugin,
    ScorePlugin,
)
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import (
    FakeExtender,
    error_predicate,
    error_prioritizer,
    false_predicate,
    favour_node,
    only_node,
    true_predicate,
)


class Sort(QueueSortPlugin):
    name = "Sort"

    def less(self, a: Any, b: Any) -> bool:
        return bool(a.timestamp < b.timestamp)


class Binder(BindPlugin):
    name = "Binder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


class TrueFilter(FilterPlugin):
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class FakeFilter(FilterPlugin):
    """Upstream NewFakeFilterPlugin({"3": Unschedulable})."""

    name = "FakeFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.name == "3":
            return Status(Code.UNSCHEDULABLE, f"injecting failure for pod {pod.name}")
        return None


class EqualPrioritizer(ScorePlugin):
    name = "EqualPrioritizerPlugin"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 1


class Node2Prioritizer(ScorePlugin):
    """Upstream node2PrioritizerPlugin: 100 for node2, else 10."""

    name = "Node2Prioritizer"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 100 if node.name == "node2" else 10


class RequestedCPU(ScorePlugin):
    """Scores a node by the milli-CPU its pods request (to see which NodeInfo is scored)."""

    name = "RequestedCPU"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return min(100, node.requested.milli_cpu // 10)


REGISTRY: dict[str, type[Plugin]] = {
    c.name: c for c in (Sort, Binder, TrueFilter, FakeFilter, EqualPrioritizer, Node2Prioritizer, RequestedCPU)
}


def _setup(
    nodes: Sequence[str | dict[str, Any]],
    filters: Sequence[str] = (),
    scores: dict[str, int] | None = None,
    extenders: Sequence[Extender] = (),
    pods: Sequence[dict[str, Any]] = (),
) -> tuple[Framework, Snapshot, Algorithm]:
    plugins = {
        "queueSort": (PluginRef("Sort"),),
        "bind": (PluginRef("Binder"),),
        "filter": tuple(PluginRef(n) for n in filters),
        "score": tuple(PluginRef(n, w) for n, w in (scores or {}).items()),
    }
    prof = Profile("test", {p: PluginSet(refs) for p, refs in plugins.items()}, {})
    cache = Cache()
    for n in nodes:
        cache.add_node(make_node(n) if isinstance(n, str) else n)
    for p in pods:
        cache.add_pod(PodInfo(p))
    snap = Snapshot()
    cache.update_snapshot(snap)
    fw = new_framework(prof, REGISTRY, Handle(snap, Listers(), extenders=extenders))
    return fw, snap, Algorithm(random.Random(0))


POD = PodInfo(make_pod("p"))


# extender_test.go TestSchedulerWithExtenders: (name, filters, scores, extenders, nodes,
# expected (host, evaluated, feasible) or None for an error).
Want = tuple[str, int, int] | None
WITH_EXTENDERS: list[tuple[str, list[str], dict[str, int], list[FakeExtender], list[str], Want]] = [
    (
        "test 1",
        ["TrueFilter"],
        {},
        [FakeExtender("FakeExtender1", [true_predicate]), FakeExtender("FakeExtender2", [error_predicate])],
        ["node1", "node2"],
        None,
    ),
    (
        "test 2",
        ["TrueFilter"],
        {},
        [FakeExtender("FakeExtender1", [true_predicate]), FakeExtender("FakeExtender2", [false_predicate])],
        ["node1", "node2"],
        None,
    ),
    (
        "test 3",
        ["TrueFilter"],
        {"EqualPrioritizerPlugin": 1},
        [FakeExtender("FakeExtender1", [true_predicate]), FakeExtender("FakeExtender2", [only_node("node1")])],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 4",
        ["TrueFilter"],
        {},
        [FakeExtender("FakeExtender1", [only_node("node2")]), FakeExtender("FakeExtender2", [only_node("node1")])],
        ["node1", "node2"],
        None,
    ),
    (
        "test 5",
        ["TrueFilter"],
        {},
        [FakeExtender("FakeExtender1", [true_predicate], [(error_prioritizer, 10)], weight=1)],
        ["node1"],
        ("node1", 1, 1),
    ),
    (
        "test 6",
        ["TrueFilter"],
        {},
        [
            FakeExtender("FakeExtender1", [true_predicate], [(favour_node("node1"), 10)], weight=1),
            FakeExtender("FakeExtender2", [true_predicate], [(favour_node("node2"), 10)], weight=5),
        ],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        "test 7",
        ["TrueFilter"],
        {"Node2Prioritizer": 20},
        [FakeExtender("FakeExtender1", [true_predicate], [(favour_node("node1"), 10)], weight=1)],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        "test 8: an extender not interested in the pod is never asked",
        ["TrueFilter"],
        {"Node2Prioritizer": 1},
        [FakeExtender("FakeExtender1", [error_predicate], [(error_prioritizer, 10)], uninterested=True)],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        "test 9: an ignorable extender's error is skipped",
        ["TrueFilter"],
        {"EqualPrioritizerPlugin": 1},
        [
            FakeExtender("FakeExtender1", [error_predicate], ignorable=True),
            FakeExtender("FakeExtender2", [only_node("node1")]),
        ],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 10 - no scoring, extender filters configured, multiple feasible nodes are evaluated",
        ["TrueFilter"],
        {},
        [FakeExtender("FakeExtender1", [true_predicate]), FakeExtender("FakeExtender2", [only_node("node1")])],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 11 - no scoring, no prefilters or extender filters configured, a single feasible node is evaluated",
        [],
        {},
        [FakeExtender("FakeExtender1", binder=lambda: None)],
        ["node1", "node2"],
        ("node1", 1, 1),
    ),
]


@pytest.mark.parametrize(
    ("filters", "scores", "extenders", "nodes", "want"),
    [c[1:] for c in WITH_EXTENDERS],
    ids=[c[0] for c in WITH_EXTENDERS],
)
def test_scheduler_with_extenders(
    filters: list[str],
    scores: dict[str, int],
    extenders: list[FakeExtender],
    nodes: list[str],
    want: tuple[str, int, int] | None,
) -> None:
    fw, snap, alg = _setup(nodes, filters, scores, extenders)
    if want is None:
        with pytest.raises((FitError, StatusError)):
            alg.schedule_pod(fw, CycleState(), POD, snap)
        return
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert (r.suggested_host, r.evaluated_nodes, r.feasible_nodes) == want


def test_extender_error_is_the_attempts_error() -> None:
    # Upstream returns the extender's err from SchedulePod: an Error status with its text.
    fw, snap, alg = _setup(["node1", "node2"], ["TrueFilter"], {}, [FakeExtender("E", [error_predicate])])
    with pytest.raises(StatusError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert (ei.value.status.code, ei.value.status.message) == (Code.ERROR, "some error")


def test_extender_rejections_in_the_fit_error() -> None:
    # schedule_one_test.go TestSchedulerSchedulePod "test with extender which filters out some Nodes".
    fw, snap, alg = _setup(
        ["1", "2", "3"], ["FakeFilter"], {"Node2Prioritizer": 1}, [FakeExtender("FakeExtender1", [false_predicate])]
    )
    pod = PodInfo(make_pod("test-filter"))
    with pytest.raises(FitError) as ei:
        alg.schedule_pod(fw, CycleState(), pod, snap)
    d = ei.value.diagnosis
    got = {n: (s.code, s.message, s.plugin) for n, s in d.node_to_status.statuses.items()}
    assert got == {
        "1": (Code.UNSCHEDULABLE, 'FakeExtender: node "1" failed', ""),
        "2": (Code.UNSCHEDULABLE, 'FakeExtender: node "2" failed', ""),
        "3": (Code.UNSCHEDULABLE, "injecting failure for pod test-filter", "FakeFilter"),
    }
    assert d.unschedulable_plugins == {"FakeFilter", EXTENDER_NAME}
    # Reasons sorted as strings, so the extender's (capitalised) come first.
    assert str(ei.value) == (
        '0/3 nodes are available: 1 FakeExtender: node "1" failed, 1 FakeExtender: node "2" failed, '
        "1 injecting failure for pod test-filter."
    )


def test_extender_keeping_every_node_adds_no_rejector() -> None:
    fw, snap, alg = _setup(["1", "2", "3"], ["FakeFilter"], {}, [FakeExtender("E", [true_predicate])])
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.diagnosis is not None and r.diagnosis.unschedulable_plugins == {"FakeFilter"}


# schedule_one_test.go TestFindNodesThatPassExtenders
def _a_only(pod: PodInfo, node: NodeInfo) -> Status | None:
    if node.name == "a":
        return None
    code = Code.UNSCHEDULABLE if node.name == "b" else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, f'node "{node.name}" is not allowed')


def _a_only_unschedulable(pod: PodInfo, node: NodeInfo) -> Status | None:
    return None if node.name == "a" else Status(Code.UNSCHEDULABLE, f'node "{node.name}" is not allowed')


U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PASS_EXTENDERS: list[tuple[str, list[FakeExtender], list[str], dict[str, Status], list[str] | None, dict[str, Any]]] = [
    ("error", [FakeExtender("FakeExtender1", [error_predicate])], ["a"], {}, None, {}),
    ("success", [FakeExtender("FakeExtender1", [true_predicate])], ["a"], {}, ["a"], {}),
    (
        "unschedulable",
        [FakeExtender("FakeExtender1", [_a_only_unschedulable])],
        ["a", "b"],
        {},
        ["a"],
        {"b": (U, 'FakeExtender: node "b" failed')},
    ),
    (
        "unschedulable and unresolvable",
        [FakeExtender("FakeExtender1", [_a_only])],
        ["a", "b", "c"],
        {},
        ["a"],
        {"b": (U, 'FakeExtender: node "b" failed'), "c": (UU, 'FakeExtender: node "c" failed and unresolvable')},
    ),
    (
        "extender does not overwrite the previous statuses",
        [FakeExtender("FakeExtender1", [_a_only])],
        ["a", "b"],
        {"c": Status(U, 'FakeFilterPlugin: node "c" failed')},
        ["a"],
        {"b": (U, 'FakeExtender: node "b" failed'), "c": (U, 'FakeFilterPlugin: node "c" failed')},
    ),
    (
        "multiple extenders",
        [FakeExtender("FakeExtender1", [_a_only]), FakeExtender("FakeExtender1", [_a_only_unschedulable])],
        ["a", "b", "c"],
        {},
        ["a"],
        {"b": (U, 'FakeExtender: node "b" failed'), "c": (UU, 'FakeExtender: node "c" failed and unresolvable')},
    ),
]


@pytest.mark.parametrize(
    ("extenders", "nodes", "before", "want_nodes", "want_statuses"),
    [c[1:] for c in PASS_EXTENDERS],
    ids=[c[0] for c in PASS_EXTENDERS],
)
def test_find_nodes_that_pass_extenders(
    extenders: list[FakeExtender],
    nodes: list[str],
    before: dict[str, Status],
    want_nodes: list[str] | None,
    want_statuses: dict[str, tuple[Code, str]],
) -> None:
    statuses = NodeToStatus()
    statuses.absent = Status(UU, "node(s) didn't satisfy plugin(s) [PreFilter]")
    statuses.statuses.update(before)
    infos = [NodeInfo(make_node(n)) for n in nodes]
    if want_nodes is None:
        with pytest.raises(StatusError):
            find_nodes_that_pass_extenders(extenders, POD, infos, statuses)
        return
    got = find_nodes_that_pass_extenders(extenders, POD, infos, statuses)
    assert [n.name for n in got] == want_nodes
    assert {n: (s.code, s.message) for n, s in statuses.statuses.items()} == want_statuses
    assert statuses.absent is not None and statuses.absent.message == "node(s) didn't satisfy plugin(s) [PreFilter]"


class BothMaps:
    """Reports node "b" as failed and as failed-and-unresolvable: the latter wins (upstream)."""

    def __init__(self) -> None:
        self.fake = FakeExtender("both")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[NodeInfo], FailedNodesMap, FailedNodesMap]:
        return [n for n in nodes if n.name != "b"], {"b": "plain"}, {"b": "final"}


def test_unresolvable_wins_over_failed_for_one_node() -> None:
    statuses = NodeToStatus()
    kept = find_nodes_that_pass_extenders([BothMaps()], POD, [NodeInfo(make_node(n)) for n in "ab"], statuses)
    assert [n.name for n in kept] == ["a"]
    assert (statuses.statuses["b"].code, statuses.statuses["b"].message) == (UU, "final")


# schedule_one_test.go Test_prioritizeNodes "the score from extender should also be recorded
# in PluginToNodeScores with plugin scores": 3x and 2x prioritizers, extender weight 1, scaled
# by MaxNodeScore / MaxExtenderPriority = 10.
def test_prioritize_nodes_records_extender_scores() -> None:
    extenders = [
        FakeExtender("FakeExtender1", prioritizers=[(favour_node("node1"), 3)], weight=1),
        FakeExtender("FakeExtender2", prioritizers=[(favour_node("node2"), 2)], weight=1),
    ]
    fw, snap, alg = _setup(["node1", "node2"], [], {"EqualPrioritizerPlugin": 1}, extenders)
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    sc = r.scores
    assert sc is not None
    names = [snap.node_infos[i].name for i in sc.idx.tolist()]
    by_ext = {e.name: dict(zip(names, e.final.tolist())) for e in sc.extenders}
    assert by_ext == {"FakeExtender1": {"node1": 300, "node2": 30}, "FakeExtender2": {"node1": 20, "node2": 200}}
    assert dict(zip(names, sc.totals.tolist())) == {"node1": 321, "node2": 231}
    assert r.suggested_host == "node1"


def test_extenders_without_score_plugins_still_score() -> None:
    # prioritizeNodes skips to "every node 1" only with neither extenders nor Score plugins.
    fw, snap, alg = _setup(
        ["node1", "node2", "node3"], [], {}, [FakeExtender("E", prioritizers=[(favour_node("node3"), 1)], weight=2)]
    )
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.suggested_host == "node3"
    assert r.scores is not None and r.scores.totals.tolist() == [20, 20, 200]


class OddScores:
    """A prioritizer answering hosts it was not given and one twice (upstream sums both)."""

    def __init__(self) -> None:
        self.fake = FakeExtender("odd", weight=1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def is_prioritizer(self) -> bool:
        return True

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        return [HostPriority("ghost", 10), HostPriority("node1", 1), HostPriority("node1", 2)], 2


def test_prioritize_sums_duplicates_and_ignores_unknown_hosts() -> None:
    fw, snap, alg = _setup(["node1", "node2"], [], {}, [OddScores()])
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.scores is not None and r.scores.totals.tolist() == [60, 0]
    assert r.suggested_host == "node1"


class Rebuilding:
    """Answers as a non-cache-capable HTTP extender does: new NodeInfos, without pods."""

    def __init__(self) -> None:
        self.fake = FakeExtender("rebuild", [true_predicate])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[NodeInfo], FailedNodesMap, FailedNodesMap]:
        fresh = []
        for n in nodes:
            ni = NodeInfo(n.raw)
            ni.image_states = {}
            fresh.append(ni)
        return fresh, {}, {}


def test_nodes_rebuilt_by_an_extender_are_scored_without_their_pods() -> None:
    # v1.36.3 scores the NodeInfos the extender's answer built (kubernetes#141781): the pods on
    # node1 do not count; plugins see both nodes empty.
    busy = make_pod("busy", cpu="500m", node_name="node1")
    fw, snap, alg = _setup(["node1", "node2"], [], {"RequestedCPU": 1}, [Rebuilding()], pods=[busy])
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.scores is not None and r.scores.totals.tolist() == [0, 0]
    # Without the extender the busy node scores higher.
    fw, snap, alg = _setup(["node1", "node2"], [], {"RequestedCPU": 1}, [], pods=[busy])
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.scores is not None and r.scores.totals.tolist() == [50, 0]


def test_nominated_node_must_pass_the_extenders_too() -> None:
    fw, snap, alg = _setup(["node1", "node2"], ["TrueFilter"], {}, [FakeExtender("E", [only_node("node2")])])
    pod = PodInfo(make_pod("p"))
    pod.nominated_node_name = "node1"
    r = alg.schedule_pod(fw, CycleState(), pod, snap)
    assert r.suggested_host == "node2"


def test_extender_enqueue_extension_moves_the_pod_on_every_event() -> None:
    # framework.go NewFramework: with extenders, ExtenderName gets the default enqueue extension.
    fw, _, _ = _setup(["node1"], [], {}, [FakeExtender("E")])
    reg = dict(fw.enqueue_extensions())
    events = reg[EXTENDER_NAME].events_to_register()
    assert [e.event.resource for e in events][:2] == ["Pod", "Node"]
    assert all(e.hint is None for e in events)
    fw, _, _ = _setup(["node1"], [], {}, [])
    assert EXTENDER_NAME not in dict(fw.enqueue_extensions())


# schedule_one_test.go TestSchedulerBinding
class BindFake:
    def __init__(self, binder: bool, interested: str, ignorable: bool = False, err: bool = False) -> None:
        self.fake = FakeExtender("fakeExtender", ignorable=ignorable)
        self.binder, self.interested, self.err = binder, interested, err
        self.got_bind = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def is_binder(self) -> bool:
        return self.binder

    def is_interested(self, pod: PodInfo) -> bool:
        return pod.name == self.interested

    def bind(self, binding: Binding) -> None:
        if not self.binder:
            raise RuntimeError("not a binder")
        if self.err:
            raise RuntimeError("bind error")
        self.got_bind = True


@pytest.mark.parametrize(
    ("pod", "extenders", "want_binder"),
    [
        ("pod0", [BindFake(False, "pod0")], -1),
        ("pod0", [BindFake(False, "pod0"), BindFake(True, "pod0")], 1),
        ("pod1", [BindFake(False, "pod1"), BindFake(True, "pod0")], -1),
        ("pod1", [BindFake(True, "pod1", ignorable=True, err=True)], -1),
    ],
    ids=[
        "the extender is not a binder",
        "one of the extenders is a binder and interested in pod",
        "one of the extenders is a binder, but not interested in pod",
        "ignore when extender bind failed",
    ],
)
def test_scheduler_binding(pod: str, extenders: list[BindFake], want_binder: int) -> None:
    bound, st = extenders_binding(extenders, PodInfo(make_pod(pod)), "node")
    assert st is None
    assert bound == (want_binder != -1)
    assert [e.got_bind for e in extenders] == [i == want_binder for i in range(len(extenders))]


def test_binder_extender_error_fails_the_binding() -> None:
    bound, st = extenders_binding([BindFake(True, "p", err=True)], POD, "node")
    assert bound and st is not None and (st.code, st.message) == (Code.ERROR, "bind error")
