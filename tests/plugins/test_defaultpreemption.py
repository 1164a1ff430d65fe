"""DefaultPreemption and the preemption evaluator, tables transcribed from v1.36.3
plugins/defaultpreemption/default_preemption_test.go (TestPostFilter, TestDryRunPreemption,
TestSelectBestCandidate, TestPodEligibleToPreemptOthers) and framework/preemption
(pickOneNodeForPreemption, filterPodsWithPDBViolation). Case ids name the upstream case.

Start times: upstream uses time.Unix(0, n) (n nanoseconds after the epoch); here the same order
is kept with whole seconds after a base, since a zero time means "no startTime" to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.backend.cache import Cache
from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.core.profiles import new_framework
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import Victims
from scheduler.framework.interface import Handle, NodeToStatus, Plugin, PreFilterPlugin, PreFilterResult
from scheduler.framework.listers import Listers
from scheduler.framework.preemption import filter_pods_with_pdb_violation, pick_one_node_for_preemption
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.plugins.defaultpreemption import NO_VICTIMS, DefaultPreemption, parse_args
from scheduler.plugins.registry import default_registry
from scheduler.testing.builders import MakeNode, MakePod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
BASE = 1_700_000_000


def t(n: int) -> str:
    """epochTime<n> of the upstream tests, shifted (see the module docstring)."""
    return datetime.fromtimestamp(BASE + n, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, res: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """st.MakeNode().Capacity(res): pods 32 unless given, every other resource absent (0)."""
    return MakeNode().name(name).capacity({"pods": "32", **(res or {})}).labels(labels or {}).obj()


def pod(
    name: str,
    prio: int | None = None,
    node_name: str = "",
    req: dict[str, str] | None = None,
    start: int | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    w = MakePod().name(name).uid(name).node(node_name).labels(labels or {}).req(req or {})
    if prio is not None:
        w.priority(prio)
    if start is not None:
        w.start_time(t(start))
    return w.obj()


def pdb(name: str, match: dict[str, str], allowed: int, disrupted: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": match}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted}},
    }


class ErrorOnLabel(PreFilterPlugin):
    """Upstream's TestPlugin: AddPod/RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | None:
        return None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        if node.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        if node.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to remove pod: {pod.name}")
        return None


class Recorded:
    """A PreemptionActuator that records what it was asked to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list[str]]] = []
        self.attempts = 0

    def preempt(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo], plugin: str) -> None:
        self.calls.append((preemptor.name, node, [v.name for v in victims]))

    def is_running(self, uid: str) -> bool:
        return False

    def attempted(self) -> None:
        self.attempts += 1


def setup(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: Sequence[dict[str, Any]] = (),
    args: dict[str, Any] | None = None,
    test_plugin: bool = False,
) -> tuple[Framework, DefaultPreemption, Recorded]:
    registry: dict[str, type[Plugin]] = {**default_registry(), ErrorOnLabel.name: ErrorOnLabel}
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(PodInfo(p))
    snap = Snapshot()
    cache.update_snapshot(snap)
    listers = Listers()
    for d in pdbs:
        b = PodDisruptionBudget.parse(d)
        listers.pdbs[b.key] = b
    pre = [PluginRef("NodeResourcesFit")] + ([PluginRef(ErrorOnLabel.name)] if test_plugin else [])
    plugins = {
        "queueSort": (PluginRef("PrioritySort"),),
        "preFilter": tuple(pre),
        "filter": (PluginRef("NodeResourcesFit"),),
        "postFilter": (PluginRef("DefaultPreemption"),),
        "bind": (PluginRef("DefaultBinder"),),
    }
    sets = {p: PluginSet(refs) for p, refs in plugins.items()}
    prof = Profile("default-scheduler", sets, {"DefaultPreemption": args} if args else {}, None)
    rec = Recorded()
    fw = new_framework(prof, registry, Handle(snap, listers, preemption=rec))
    pl = fw.plugins["DefaultPreemption"]
    assert isinstance(pl, DefaultPreemption)
    return fw, pl, rec


def statuses(explicit: dict[str, Code], absent: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE) -> NodeToStatus:
    nts = NodeToStatus()
    nts.statuses = {n: Status(c) for n, c in explicit.items()}
    nts.absent = Status(absent)
    return nts


# ---------------------------------------------------------------------------------------------
# TestPostFilter

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

POST_FILTER_CASES = [
    pytest.param(
        pod("p", HIGH), [pod("p1", node_name="node1")], [node("node1", ONE_POD)], [], {"node1": U},
        "node1", Code.SUCCESS, "", id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        pod("p"), [pod("p1", node_name="node1")], [node("node1", ONE_POD)], [], {"node1": U},
        "", Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        pod("p", HIGH), [pod("p1", node_name="node1")], [node("node1", ONE_POD)], [], {"node1": UU},
        "", Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        pod("p", HIGH), [pod("p1", node_name="node1")], [node("node1", ONE_POD)], [], {},
        "", Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", MID),
        [pod("p1", HIGH, "node1"), pod("p2", LOW, "node2")],
        [node("node1", ONE_POD), node("node2", ONE_POD)], [], {"node1": U, "node2": U},
        "node2", Code.SUCCESS, "", id="pod can be made schedulable on one node",
    ),
    pytest.param(
        pod("p", VERY_HIGH),
        [
            pod("p1", HIGH, "node1", labels={"test.kubernetes.io/is-violating-pdb": "non-violating"}),
            pod("p2", LOW, "node1", labels={"test.kubernetes.io/is-violating-pdb": "violating"}),
            pod("p3", MID, "node2", labels={"test.kubernetes.io/is-violating-pdb": "violating"}),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [
            pdb("violating-pdb", {"test.kubernetes.io/is-violating-pdb": "violating"}, 0),
            pdb("non-violating-pdb", {"test.kubernetes.io/is-violating-pdb": "non-violating"}, 2**31 - 1),
        ],
        {"node1": U, "node2": U},
        "node2", Code.SUCCESS, "", id="pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)], [], {"node1": U, "node2": U},
        "", Code.UNSCHEDULABLE, "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", HIGH, "node1"), pod("p2", node_name="node2"), pod("p3", HIGH, "node3")],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)], [],
        {"node1": U, "node2": U, "node3": U},
        "", Code.UNSCHEDULABLE,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)], [], {"node1": U, "node2": U, "node4": UU},
        "", Code.UNSCHEDULABLE,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes "
        "don't have enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1")],
        [node("node1", LARGE, labels={"error": "true"})], [], {"node1": U},
        None, Code.ERROR,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2", req=MEDIUM)],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE)], [], {"node1": U, "node2": U},
        "node2", Code.SUCCESS, "", id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "pdbs", "explicit", "want_node", "want_code", "want_msg"), POST_FILTER_CASES
)
def test_post_filter(
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    explicit: dict[str, Code],
    want_node: str | None,
    want_code: Code,
    want_msg: str,
) -> None:
    fw, _, rec = setup(nodes, pods, pdbs, test_plugin=True)
    p = PodInfo(preemptor)
    state = CycleState()
    fw.run_pre_filter(state, p, fw.handle.snapshot.node_infos)
    result, st = fw.run_post_filter(state, p, statuses(explicit))
    assert st.code == want_code
    assert st.message == want_msg
    if want_node is None:
        assert result is None
    else:
        assert result is not None and result.nominated_node_name == want_node and result.mode == "override"
    assert rec.attempts == 1  # scheduler_preemption_attempts_total counts every PostFilter call
    assert [c[1] for c in rec.calls] == ([want_node] if want_node else [])


# ---------------------------------------------------------------------------------------------
# TestDryRunPreemption (selectVictimsOnNode through DryRunPreemption)

DRY_RUN_CASES = [
    pytest.param(
        ["node1", "node2"], pod("p", HIGH, req=LARGE),
        [pod("p1.1", LOW, "node1", SMALL), pod("p1.2", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        [], None, 0, {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        ["node1", "node2"], pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", MID, "node1", SMALL), pod("p1.2", LOW, "node1", SMALL), pod("p1.3", MID, "node1", MEDIUM),
            pod("p1.4", HIGH, "node1", SMALL), pod("p2", HIGH, "node2", LARGE),
        ],
        [], None, 0, {"node1": (["p1.2", "p1.3"], 0)},
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2"], pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", LOW, "node1", SMALL, start=5), pod("p1.2", LOW, "node1", SMALL, start=4),
            pod("p1.3", MID, "node1", MEDIUM, start=3), pod("p1.4", HIGH, "node1", SMALL, start=2),
            pod("p2", HIGH, "node2", LARGE, start=1),
        ],
        [], None, 0, {"node1": (["p1.1", "p1.3"], 0)},
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        ["node1"], pod("p", HIGH, req=VERY_LARGE),
        [pod(n, MID, "node1", MEDIUM, labels={"app": "foo"}) for n in ("p1.1", "p1.2")],
        [pdb("pdb", {"app": "foo"}, 1)], None, 0, {"node1": (["p1.1", "p1.2"], 1)},
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        ["node1"], pod("p", HIGH, req=VERY_LARGE),
        [pod(n, MID, "node1", MEDIUM, labels={"app": "foo"}) for n in ("p1.1", "p1.2")],
        [pdb("pdb", {"app": "foo"}, 1, ["p2"])], None, 0, {"node1": (["p1.1", "p1.2"], 1)},
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong "
        "to DisruptedPods",
    ),
    pytest.param(
        ["node1"], pod("p", HIGH, req=VERY_LARGE),
        [pod(n, MID, "node1", MEDIUM, labels={"app": "foo"}) for n in ("p1.1", "p1.2")],
        [pdb("pdb", {"app": "foo"}, 1, ["p1.2"])], None, 0, {"node1": (["p1.1", "p1.2"], 0)},
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
    ),
    pytest.param(
        ["node1"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.2", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.3", MID, "node1", MEDIUM, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 1, ["p1.3"])], None, 0, {"node1": (["p1.1", "p1.2", "p1.3"], 1)},
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to "
        "DisruptedPods is treated as 'nonViolating'",
    ),
    pytest.param(
        [f"node{i}" for i in range(1, 6)], pod("p", HIGH, req=LARGE),
        [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
        [], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 4,
        {"node1": (["p1"], 0), "node5": (["p5"], 0)},
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        [f"node{i}" for i in range(1, 6)], pod("p", HIGH, req=LARGE),
        [pod(f"p{i}", VERY_HIGH if i in (2, 5) else MID, f"node{i}", LARGE) for i in range(1, 6)],
        [], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 4,
        {"node1": (["p1"], 0), "node3": (["p3"], 0)},
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
]


def _dry_run(case: tuple[Any, ...], quick: bool = True) -> Any:
    """The plugin's DryRunPreemption over a fresh cluster (a DRY_RUN_CASES row without its
    answer); ``quick`` False: without victimless."""
    node_names, preemptor, pods, pdbs, args, offset = case
    fw, pl, _ = setup([node(n, VERY_LARGE) for n in node_names], pods, pdbs, args)
    if not quick:
        pl.victimless = lambda node, pod: None  # type: ignore[method-assign]
    p = PodInfo(preemptor)
    state = CycleState()
    fw.run_pre_filter(state, p, fw.handle.snapshot.node_infos)
    infos = fw.handle.snapshot.node_infos
    _, num = pl.get_offset_and_num_candidates(len(infos))
    budgets = list(fw.handle.listers.pdbs.values())
    return pl.dry_run_preemption(fw, state, p, infos, budgets, offset, num)


@pytest.mark.parametrize(("node_names", "preemptor", "pods", "pdbs", "args", "offset", "want"), DRY_RUN_CASES)
def test_dry_run_preemption(
    node_names: list[str],
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    args: dict[str, Any] | None,
    offset: int,
    want: dict[str, tuple[list[str], int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = (node_names, preemptor, pods, pdbs, args, offset)
    cands, _, errors = _dry_run(case)
    assert not errors
    # Upstream's table compares the victims sorted by name.
    got = {c.name: (sorted(v.name for v in c.victims.pods), c.victims.num_pdb_violations) for c in cands}
    assert got == want
    for c in cands:  # and they come most important first (priority, then earlier start)
        prios = [v.priority for v in c.victims.pods]
        assert prios == sorted(prios, reverse=True)
    # Not an upstream table: DefaultPreemption.victimless answers for a node without copying
    # it, and the dry run must come out as select_victims_on_node's would, node by node.
    from scheduler.model.node import NodeInfo

    def dry_run(quick: bool) -> tuple[Any, dict[str, Any], int]:
        clones = 0
        real = NodeInfo.clone

        def counting(self: NodeInfo) -> NodeInfo:
            nonlocal clones
            clones += 1
            return real(self)

        monkeypatch.setattr(NodeInfo, "clone", counting)
        cands, statuses, _ = _dry_run(case, quick)
        monkeypatch.setattr(NodeInfo, "clone", real)
        got = {c.name: sorted(v.name for v in c.victims.pods) for c in cands}
        return got, {n: (s.code, s.reasons) for n, s in statuses.statuses.items()}, clones

    fast, slow = dry_run(True), dry_run(False)
    assert fast[:2] == slow[:2]
    no_victims = sum(1 for _, reasons in fast[1].values() if list(reasons) == [NO_VICTIMS])
    assert fast[2] == slow[2] - no_victims


# ---------------------------------------------------------------------------------------------
# TestSelectBestCandidate (DryRunPreemption + SelectCandidate over NodeResourcesFit)

SELECT_CASES = [
    pytest.param(
        ["node1", "node2"], pod("p", HIGH, req=LARGE),
        [pod("p1", MID, "node1", LARGE, start=0), pod("p2", MID, "node2", LARGE, start=0)],
        {"node1", "node2"}, id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=0), pod("p1.2", MID, "node1", LARGE, start=0),
            pod("p2.1", MID, "node2", MEDIUM, start=0), pod("p2.2", LOW, "node2", MEDIUM, start=0),
            pod("p3.1", LOW, "node3", MEDIUM, start=0), pod("p3.2", LOW, "node3", MEDIUM, start=0),
        ],
        {"node3"}, id="node with min highest priority pod is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=0), pod("p1.2", MID, "node1", LARGE, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0), pod("p2.2", LOW, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0), pod("p3.2", MID, "node3", MEDIUM, start=0),
        ],
        {"node2"}, id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0), pod("p1.2", NEG, "node1", SMALL, start=0),
            pod("p1.3", MID, "node1", SMALL, start=0), pod("p1.4", NEG, "node1", SMALL, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0), pod("p2.2", NEG, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0), pod("p3.2", NEG, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0),
        ],
        {"node2"}, id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0), pod("p1.2", NEG, "node1", SMALL, start=0),
            pod("p1.3", NEG, "node1", SMALL, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0), pod("p2.2", NEG, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0), pod("p3.2", NEG, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0),
        ],
        {"node2"}, id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"], pod("p", VERY_HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0), pod("p1.2", LOW, "node1", SMALL, start=0),
            pod("p1.3", LOW, "node1", SMALL, start=0),
            pod("p2.1", HIGH, "node2", LARGE, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0), pod("p3.2", LOW, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0), pod("p3.4", LOW, "node3", MEDIUM, start=0),
            pod("p4.1", MID, "node4", MEDIUM, start=0), pod("p4.2", MID, "node4", SMALL, start=0),
            pod("p4.3", MID, "node4", SMALL, start=0), pod("p4.4", NEG, "node4", SMALL, start=0),
        ],
        {"node1"}, id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=2), pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=3), pod("p2.2", MID, "node2", MEDIUM, start=3),
            pod("p3.1", MID, "node3", MEDIUM, start=1), pod("p3.2", MID, "node3", MEDIUM, start=1),
        ],
        {"node2"}, id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=4), pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=5), pod("p2.2", MID, "node2", MEDIUM, start=1),
            pod("p3.1", MID, "node3", MEDIUM, start=3), pod("p3.2", MID, "node3", MEDIUM, start=6),
        ],
        {"node3"}, id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, "node1", MEDIUM, start=4), pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=6), pod("p2.2", LOW, "node2", MEDIUM, start=1),
            pod("p3.1", LOW, "node3", MEDIUM, start=3), pod("p3.2", MID, "node3", MEDIUM, start=5),
        ],
        {"node2"}, id="different priority, same number of victims, different start time for all pods",
    ),
]



@pytest.mark.parametrize(("node_names", "preemptor", "pods", "expected"), SELECT_CASES)
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_select_best_candidate(
    node_names: list[str], preemptor: dict[str, Any], pods: list[dict[str, Any]], expected: set[str], offset: int
) -> None:
    fw, pl, _ = setup([node(n, VERY_LARGE) for n in node_names], pods)
    p = PodInfo(preemptor)
    state = CycleState()
    fw.run_pre_filter(state, p, fw.handle.snapshot.node_infos)
    infos = fw.handle.snapshot.node_infos
    _, num = pl.get_offset_and_num_candidates(len(infos))
    cands, _, _ = pl.dry_run_preemption(fw, state, p, infos, [], offset % len(infos), num)
    best = pl.select_candidate(cands)
    assert best is not None and best.name in expected


# ---------------------------------------------------------------------------------------------
# TestPodEligibleToPreemptOthers


def _terminating(p: dict[str, Any], disruption: bool) -> dict[str, Any]:
    p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if disruption:
        p.setdefault("status", {})["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    return p


ELIGIBLE_CASES = [
    pytest.param(
        {"nominated": "node1"}, [_terminating(pod("p1", LOW, "node1"), False)], ["node1"],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"), True,
        id="Pod with nominated node",
    ),
    pytest.param({}, [], [], None, True, id="Pod without nominated node"),
    pytest.param({"never": True}, [], [], None, False, id="Pod with 'PreemptNever' preemption policy"),
    pytest.param(
        {"nominated": "node1"}, [_terminating(pod("p1", LOW, "node1"), True)], ["node1"], None, False,
        id="preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
    ),
    pytest.param(
        {"nominated": "node1"}, [_terminating(pod("p1", LOW, "node1"), False)], ["node1"], None, True,
        id="non-victim Pods terminating",
    ),
]


@pytest.mark.parametrize(("how", "pods", "node_names", "nominated_status", "expected"), ELIGIBLE_CASES)
def test_pod_eligible_to_preempt_others(
    how: dict[str, Any],
    pods: list[dict[str, Any]],
    node_names: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    _, pl, _ = setup([node(n) for n in node_names], pods)
    raw = pod("p", HIGH)
    if how.get("nominated"):
        raw["status"] = {"nominatedNodeName": how["nominated"]}
    if how.get("never"):
        raw["spec"]["preemptionPolicy"] = "Never"
    ok, msg = pl.pod_eligible_to_preempt_others(PodInfo(raw), nominated_status)
    assert ok is expected
    if how.get("never"):
        assert msg == "not eligible due to preemptionPolicy=Never."
    elif not expected:
        assert msg == "not eligible due to a terminating pod on the nominated node."


# ---------------------------------------------------------------------------------------------
# pickOneNodeForPreemption, one criterion at a time


def _v(*specs: tuple[int, int], violations: int = 0) -> Victims:
    return Victims([PodInfo(pod(f"v{i}", prio, "n", start=start)) for i, (prio, start) in enumerate(specs)], violations)


@pytest.mark.parametrize(
    ("m", "want"),
    [
        pytest.param({"a": _v((1, 0), violations=1), "b": _v((5, 0))}, "b", id="fewest PDB violations first"),
        pytest.param({"a": _v((5, 0)), "b": _v((3, 0), (3, 0))}, "b", id="then the lowest highest priority"),
        pytest.param({"a": _v((3, 0), (2, 0)), "b": _v((3, 0), (1, 0))}, "b", id="then the smallest priority sum"),
        pytest.param(
            {"a": _v((-5, 0), (-5, 0)), "b": _v((-5, 0))}, "b",
            id="sum shifted by MaxInt32+1: more negative pods do not win",
        ),
        pytest.param({"a": _v((3, 0), (0, 0)), "b": _v((3, 0), (0, 0))}, "a", id="full tie: the first candidate"),
        pytest.param({"a": _v((3, 1)), "b": _v((3, 2))}, "b", id="then the latest earliest start"),
        pytest.param({}, "", id="no candidates"),
    ],
)
def test_pick_one_node_for_preemption(m: dict[str, Victims], want: str) -> None:
    assert pick_one_node_for_preemption(m) == want


# ---------------------------------------------------------------------------------------------
# filterPodsWithPDBViolation


def test_filter_pods_with_pdb_violation_counts_each_budget_once_per_pod() -> None:
    pods = [PodInfo(pod(f"p{i}", 0, "n", labels={"app": "x"})) for i in range(3)]
    budgets = [PodDisruptionBudget.parse(pdb("a", {"app": "x"}, 2))]
    violating, ok = filter_pods_with_pdb_violation(pods, budgets)
    assert [p.name for p in ok] == ["p0", "p1"]
    assert [p.name for p in violating] == ["p2"]


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param(None, False, id="nil selector matches nothing"),
        pytest.param({}, False, id="empty selector matches nothing"),
        pytest.param({"matchLabels": {"app": "x"}}, True, id="matching selector"),
    ],
)
def test_pdb_selector(selector: dict[str, Any] | None, matches: bool) -> None:
    raw = pdb("a", {}, 0)
    raw["spec"] = {} if selector is None else {"selector": selector}
    b = PodDisruptionBudget.parse(raw)
    assert b.matches("default", {"app": "x"}) is matches
    assert not b.matches("other", {"app": "x"})


# ---------------------------------------------------------------------------------------------
# Args (defaults and ValidateDefaultPreemptionArgs)


PCT, ABS = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"


def test_default_args() -> None:
    a = parse_args(None)
    assert (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute) == (10, 100)


@pytest.mark.parametrize(
    ("args", "err"),
    [
        ({"minCandidateNodesPercentage": -1}, f"{PCT}: Invalid value: -1: not in valid range [0, 100]"),
        ({"minCandidateNodesPercentage": 101}, f"{PCT}: Invalid value: 101: not in valid range [0, 100]"),
        ({"minCandidateNodesAbsolute": -1}, f"{ABS}: Invalid value: -1: not in valid range [0, inf)"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time "
            "as minCandidateNodesPercentage]",
        ),
    ],
)
def test_args_validation(args: dict[str, Any], err: str) -> None:
    with pytest.raises(ValueError) as ei:
        parse_args(args)
    assert str(ei.value) == err


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [(10, 100, 50, 50), (10, 100, 5000, 500), (40, 1, 5, 2), (0, 3, 10, 3), (100, 0, 7, 7)],
)
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    _, pl, _ = setup([node("n")], [], args={"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute})
    assert pl.calculate_num_candidates(nodes) == want
