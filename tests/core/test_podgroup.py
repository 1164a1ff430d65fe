"""The pod-group scheduling cycle: the algorithm's per-pod and group results, how they are
applied (bound, requeued, nominated), the PodGroupScheduled condition, collecting the group from
the queue, the framework for a group, placements and workload-aware preemption.

Upstream: pkg/scheduler/schedule_one_podgroup_test.go (TestPodGroupSchedulingAlgorithm,
TestSubmitPodGroupAlgorithmResult, TestUpdatePodGroupCondition, TestPodGroupInfoForPod,
TestFrameworkForPodGroup, TestSkipPodGroupPodSchedule, TestPodGroupSchedulingPlacementAlgorithm,
TestRunWorkloadAwarePreemption).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.config import API_VERSION, KIND, parse_config
from scheduler.config.features import FeatureGates
from scheduler.core.algorithm import Algorithm, ScheduleResult
from scheduler.core.cycle import CycleOutcome
from scheduler.core.podgroup import (
    CLEAR,
    LEAVE,
    GroupAttempt,
    PodAttempt,
    PodGroupCycle,
    PodGroupError,
    PostFilterMode,
    QueuedPodGroup,
    collect_pod_group,
    framework_for_group,
    group_unschedulable,
    next_conditions,
)
from scheduler.core.profiles import build_frameworks
from scheduler.framework import interface as fw
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PodGroupInfo, PostFilterResult, QueuedPodInfo
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.queuesort import PrioritySort
from scheduler.testing.builders import make_node
from tests.plugins._podgroup_helpers import group_pod, make_pod_group

SCHED = "test-scheduler"
OFF = FeatureGates({"GenericWorkload": True, "GangScheduling": True})
TAS = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True})


class FakePodGroupPlugin(fw.FilterPlugin, fw.PostFilterPlugin, fw.PermitPlugin):
    """Upstream fakePodGroupPlugin: Filter, PostFilter and Permit answer by pod name."""

    name = "FakePodGroupPlugin"
    filter_status: ClassVar[dict[str, Status | None]] = {}
    post_filter_status: ClassVar[dict[str, Status | None]] = {}
    post_filter_result: ClassVar[dict[str, PostFilterResult | None]] = {}
    permit_status: ClassVar[dict[str, Status | None]] = {}

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self.filter_status.get(pod.name)

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: fw.NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return self.post_filter_result.get(pod.name), self.post_filter_status.get(pod.name)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return self.permit_status.get(pod.name), 10.0


def unsched() -> Status:
    return Status(Code.UNSCHEDULABLE)


def wait() -> Status:
    return Status(Code.WAIT)


def nominate(node: str = "node1") -> PostFilterResult:
    return PostFilterResult(node, [], "override")


class Hooks:
    def __init__(self, cycle_cache: Cache) -> None:
        self.cache = cycle_cache
        self.bound: set[str] = set()
        self.preempting: set[str] = set()
        self.failed: dict[str, Status] = {}
        self.nominated: dict[str, tuple[str, str]] = {}
        self.done_uids: list[str] = []
        self.conditions: list[dict[str, str]] = []

    def failure(self, f: Framework, q: QueuedPodInfo, status: Status, nominating: tuple[str, str]) -> None:
        self.nominated[q.pod.name] = nominating
        if nominating[1]:
            self.preempting.add(q.pod.name)
        else:
            self.failed[q.pod.name] = status

    def assumed(self, f: Framework, q: QueuedPodInfo, out: CycleOutcome) -> None:
        self.bound.add(q.pod.name)

    def done(self, uid: str) -> None:
        self.done_uids.append(uid)

    def condition(self, f: Framework, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        self.conditions.append(condition)


@dataclass
class Env:
    plugin: type[FakePodGroupPlugin] | None = None
    gates: FeatureGates = OFF
    nodes: list[dict[str, Any]] = field(default_factory=lambda: [make_node("node1")])
    extra_plugins: Mapping[str, type[fw.Plugin]] = field(default_factory=dict)
    enable: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        registry: dict[str, type[fw.Plugin]] = {"PrioritySort": PrioritySort, "DefaultBinder": DefaultBinder}
        registry.update(self.extra_plugins)
        plugins: dict[str, Any] = {
            "multiPoint": {"disabled": [{"name": "*"}]},
            "queueSort": {"enabled": [{"name": "PrioritySort"}]},
            "bind": {"enabled": [{"name": "DefaultBinder"}]},
        }
        if self.plugin is not None:
            registry[self.plugin.name] = self.plugin
            for point in ("filter", "postFilter", "permit"):
                plugins[point] = {"enabled": [{"name": self.plugin.name}]}
        for point, names in self.enable.items():
            plugins[point] = {"enabled": [{"name": n} for n in names]}
        cfg = parse_config(
            {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"schedulerName": SCHED, "plugins": plugins}]},
            self.gates,
        )
        self.cache = Cache(generic_workload=True)
        self.snapshot = Snapshot()
        self.listers = Listers()
        self.frameworks = build_frameworks(cfg, self.snapshot, self.listers, registry=registry, seed=1)
        self.fw = self.frameworks[SCHED]
        self.fw.handle.pod_group_manager = self.cache.pod_group_state_lister()
        for n in self.nodes:
            self.cache.add_node(n)
        self.queue = SchedulingQueue(self.frameworks, lambda: 0.0, generic_workload=True)
        self.fw.handle.nominator = self.queue.nominator
        self.hooks = Hooks(self.cache)
        self.cycle = PodGroupCycle(
            self.frameworks, Algorithm(random.Random(1)), self.cache, self.snapshot, self.queue, self.hooks
        )

    def group(self, *names: str, pg: str = "pg") -> QueuedPodGroup:
        queued = [QueuedPodInfo(PodInfo(group_pod(n, pg, scheduler_name=SCHED)), 0.0, i) for i, n in enumerate(names)]
        for q in queued:
            self.cache.add_pod_group_member(q.pod)
        g = QueuedPodGroup(PodGroupInfo("default", pg), [])
        g.set_queued(queued)
        return g


def fake(
    filter_status: dict[str, Status | None] | None = None,
    permit_status: dict[str, Status | None] | None = None,
    post_filter_status: dict[str, Status | None] | None = None,
    post_filter_result: dict[str, PostFilterResult | None] | None = None,
) -> type[FakePodGroupPlugin]:
    return type(
        "Fake",
        (FakePodGroupPlugin,),
        {
            "filter_status": filter_status or {},
            "permit_status": permit_status or {},
            "post_filter_status": post_filter_status or {},
            "post_filter_result": post_filter_result or {},
        },
    )


# ---------------------------------------------------------------------------------------------
# TestPodGroupSchedulingAlgorithm


@dataclass
class AlgCase:
    name: str
    plugin: type[FakePodGroupPlugin]
    group_code: Code
    pod_codes: dict[str, Code]
    waiting_on_preemption: bool = False
    preemption: dict[str, bool] = field(default_factory=dict)
    skip_for_tas: bool = False


OK = Code.SUCCESS
U = Code.UNSCHEDULABLE
E = Code.ERROR
ALG_CASES = [
    AlgCase("All pods feasible", fake(permit_status={}), OK, {"p1": OK, "p2": OK, "p3": OK}),
    AlgCase(
        "All pods feasible, two waiting",
        fake(permit_status={"p1": wait(), "p2": wait()}),
        OK,
        {"p1": OK, "p2": OK, "p3": OK},
    ),
    AlgCase(
        "All pods feasible, but all waiting",
        fake(permit_status={"p1": wait(), "p2": wait(), "p3": wait()}),
        U,
        {"p1": OK, "p2": OK, "p3": OK},
    ),
    AlgCase(
        "All pods feasible, but last waiting", fake(permit_status={"p3": wait()}), OK, {"p1": OK, "p2": OK, "p3": OK}
    ),
    AlgCase(
        "All pods feasible, one waiting, one unschedulable",
        fake(permit_status={"p1": wait(), "p2": unsched()}),
        OK,
        {"p1": OK, "p2": U, "p3": OK},
    ),
    AlgCase(
        "All pods require preemption",
        fake(
            filter_status={"p1": unsched(), "p2": unsched(), "p3": unsched()},
            post_filter_result={"p1": nominate(), "p2": nominate(), "p3": nominate()},
        ),
        U,
        {"p1": U, "p2": U, "p3": U},
        waiting_on_preemption=True,
        preemption={"p1": True, "p2": True, "p3": True},
        skip_for_tas=True,
    ),
    AlgCase(
        "All pods require preemption, but waiting",
        fake(
            filter_status={"p1": unsched(), "p2": unsched(), "p3": unsched()},
            post_filter_result={"p1": nominate(), "p2": nominate(), "p3": nominate()},
            permit_status={"p1": wait(), "p2": wait(), "p3": wait()},
        ),
        U,
        {"p1": U, "p2": U, "p3": U},
        preemption={"p1": True, "p2": True, "p3": True},
        skip_for_tas=True,
    ),
    AlgCase(
        "One pod requires preemption, but waiting, two are feasible",
        fake(
            filter_status={"p1": unsched()},
            post_filter_result={"p1": nominate()},
            permit_status={"p1": wait(), "p2": wait()},
        ),
        U,
        {"p1": U, "p2": OK, "p3": OK},
        waiting_on_preemption=True,
        preemption={"p1": True, "p2": False, "p3": False},
        skip_for_tas=True,
    ),
    AlgCase(
        "One pod unschedulable, one requires preemption, one feasible",
        fake(
            filter_status={"p1": unsched(), "p2": unsched()},
            post_filter_status={"p2": unsched()},
            post_filter_result={"p1": nominate(), "p2": PostFilterResult("", [], "override")},
        ),
        U,
        {"p1": U, "p2": U, "p3": OK},
        waiting_on_preemption=True,
        preemption={"p1": True, "p2": False, "p3": False},
        skip_for_tas=True,
    ),
    AlgCase(
        "All pods unschedulable",
        fake(filter_status={"p1": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), "p2": unsched(), "p3": unsched()}),
        U,
        {"p1": U, "p2": U, "p3": U},
    ),
    AlgCase("Any filter returned Error", fake(filter_status={"p2": Status(Code.ERROR)}), E, {"p1": OK, "p2": E}),
    AlgCase("Any permit returned Error", fake(permit_status={"p2": Status(Code.ERROR)}), E, {"p1": OK, "p2": E}),
    AlgCase(
        "Any filter returned Error while waiting on preemption",
        fake(filter_status={"p1": unsched(), "p2": Status(Code.ERROR)}, post_filter_result={"p1": nominate()}),
        E,
        {"p1": U, "p2": E},
    ),
    AlgCase(
        "Any permit returned Error while waiting on preemption",
        fake(
            filter_status={"p1": unsched()},
            permit_status={"p2": Status(Code.ERROR)},
            post_filter_result={"p1": nominate()},
        ),
        E,
        {"p1": U, "p2": E},
    ),
]
ALG_PARAMS = [
    pytest.param(c, gates, id=f"{c.name} (TopologyAwareWorkloadScheduling={gates is TAS})")
    for gates in (TAS, OFF)
    for c in ALG_CASES
    if not (gates is TAS and c.skip_for_tas)
]


def _code(st: Status | None) -> Code:
    return Code.SUCCESS if st is None else st.code


@pytest.mark.parametrize(("tc", "gates"), ALG_PARAMS)
def test_pod_group_scheduling_algorithm(tc: AlgCase, gates: FeatureGates) -> None:
    env = Env(tc.plugin, gates)
    group = env.group("p1", "p2", "p3")
    env.cache.update_snapshot(env.snapshot)
    res = env.cycle.algorithm_for(env.fw, CycleState(), group, PostFilterMode.RUN_ALL)
    assert _code(res.status) == tc.group_code
    assert res.waiting_on_preemption == tc.waiting_on_preemption
    assert {a.pod.name: _code(a.status) for a in res.pods} == tc.pod_codes
    for a in res.pods:
        if _code(a.status) == Code.SUCCESS or a.requires_preemption:
            assert a.host == "node1"
            want = tc.plugin.permit_status.get(a.pod.name)
            assert _code(a.permit) == _code(want)
        else:
            assert a.host == "" and a.permit is None
        if a.pod.name in tc.preemption:
            assert a.requires_preemption == tc.preemption[a.pod.name]
    # Every assumption is reverted: the snapshot is the cache's view again.
    assert not env.snapshot.assumed_pods and env.snapshot.get("node1").pods == []  # type: ignore[union-attr]
    assert env.snapshot.pod_group_states["default/pg"].scheduled_pods_count() == 0


def test_gang_wait_messages_reach_the_pods() -> None:
    # All three wait at Permit: the group is unschedulable and each pod carries its Permit's
    # message behind the group's (submitPodGroupAlgorithmResult).
    env = Env(
        fake(
            permit_status={
                "p1": Status(Code.WAIT, "gang"),
                "p2": Status(Code.WAIT, "gang"),
                "p3": Status(Code.WAIT, "gang"),
            }
        )
    )
    out = env.cycle.cycle(env.fw, CycleState(), env.group("p1", "p2", "p3"))
    msg = "pod group is unschedulable, gang, one or more plugins asked to wait and no plugin rejected pod"
    assert {n: s.message for n, s in env.hooks.failed.items()} == {"p1": msg, "p2": msg, "p3": msg}
    assert out.condition == {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
    }
    assert out.result == "unschedulable" and not env.hooks.bound
    assert env.cache.assumed_pods() == []


# ---------------------------------------------------------------------------------------------
# TestSubmitPodGroupAlgorithmResult


def _attempt(
    env: Env,
    group: QueuedPodGroup,
    i: int,
    host: str = "",
    status: Status | None = None,
    permit: Status | None = None,
    requires_preemption: bool = False,
    nominating: tuple[str, str] = CLEAR,
) -> PodAttempt:
    q = group.queued[i]
    st = CycleState()
    res = ScheduleResult(host, 1, 1) if host and status is None else None
    return PodAttempt(
        q,
        st,
        host=host,
        result=res,
        nominating=nominating,
        status=status,
        permit=permit,
        requires_preemption=requires_preemption,
        outcome=CycleOutcome(q.pod, st),
    )


NOM = ("override", "node1")


@dataclass
class SubmitCase:
    name: str
    result: Callable[[Env, QueuedPodGroup], GroupAttempt]
    bound: set[str]
    preempting: set[str]
    failed: set[str]
    condition: dict[str, str]
    existing: list[dict[str, Any]] | None = None


def _ok(env: Env, g: QueuedPodGroup, i: int, permit: Status | None = None) -> PodAttempt:
    return _attempt(env, g, i, "node1", None, permit)


def _pre(env: Env, g: QueuedPodGroup, i: int, permit: Status | None = None) -> PodAttempt:
    return _attempt(env, g, i, "node1", unsched(), permit, True, NOM)


def _no(
    env: Env, g: QueuedPodGroup, i: int, st: Status | None = None, nominating: tuple[str, str] = CLEAR
) -> PodAttempt:
    return _attempt(env, g, i, "", st or unsched(), nominating=nominating)


def cond(status: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": "PodGroupScheduled", "status": status, "reason": reason, "message": message}


SCHEDULED_BEFORE = [
    {
        "type": "PodGroupScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "All pods scheduled",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
]
SUBMIT_CASES = [
    SubmitCase(
        "All pods feasible",
        lambda e, g: GroupAttempt([_ok(e, g, i) for i in range(3)], None),
        {"p1", "p2", "p3"},
        set(),
        set(),
        cond("True", "Scheduled"),
    ),
    SubmitCase(
        "All pods feasible, but all waiting",
        lambda e, g: GroupAttempt([_ok(e, g, i, wait()) for i in range(3)], group_unschedulable()),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "Unschedulable", "pod group is unschedulable"),
    ),
    SubmitCase(
        "All pods feasible, but last waiting",
        lambda e, g: GroupAttempt([_ok(e, g, 0), _ok(e, g, 1), _ok(e, g, 2, wait())], None),
        {"p1", "p2", "p3"},
        set(),
        set(),
        cond("True", "Scheduled"),
    ),
    SubmitCase(
        "All pods feasible, one waiting, one unschedulable",
        lambda e, g: GroupAttempt([_ok(e, g, 0, wait()), _no(e, g, 1), _ok(e, g, 2)], None),
        {"p1", "p3"},
        set(),
        {"p2"},
        cond("True", "Scheduled"),
    ),
    SubmitCase(
        "All pods require preemption",
        lambda e, g: GroupAttempt(
            [_pre(e, g, i) for i in range(3)], Status(Code.UNSCHEDULABLE, "waiting for preemption to complete"), True
        ),
        set(),
        {"p1", "p2", "p3"},
        set(),
        cond("False", "Unschedulable", "waiting for preemption to complete"),
    ),
    SubmitCase(
        "All pods require preemption, but waiting",
        lambda e, g: GroupAttempt(
            [_pre(e, g, i, wait()) for i in range(3)],
            Status(Code.UNSCHEDULABLE, "preemption required but not feasible"),
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "Unschedulable", "preemption required but not feasible"),
    ),
    SubmitCase(
        "One pod requires preemption, but waiting, two are feasible",
        lambda e, g: GroupAttempt(
            [_pre(e, g, 0, wait()), _ok(e, g, 1, wait()), _ok(e, g, 2)],
            Status(Code.UNSCHEDULABLE, "waiting for preemption to complete"),
            True,
        ),
        set(),
        {"p1", "p2", "p3"},
        set(),
        cond("False", "Unschedulable", "waiting for preemption to complete"),
    ),
    SubmitCase(
        "One pod unschedulable, one requires preemption, one feasible",
        lambda e, g: GroupAttempt(
            [_no(e, g, 0), _pre(e, g, 1), _ok(e, g, 2)],
            Status(Code.UNSCHEDULABLE, "waiting for preemption to complete"),
            True,
        ),
        set(),
        {"p2", "p3"},
        {"p1"},
        cond("False", "Unschedulable", "waiting for preemption to complete"),
    ),
    SubmitCase(
        "All pods unschedulable",
        lambda e, g: GroupAttempt(
            [_no(e, g, i) for i in range(3)], Status(Code.UNSCHEDULABLE, "0/3 nodes are available: insufficient cpu")
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "Unschedulable", "0/3 nodes are available: insufficient cpu"),
    ),
    SubmitCase(
        "All pods unschedulable with nil nominatingInfo",
        lambda e, g: GroupAttempt(
            [_no(e, g, i, nominating=LEAVE) for i in range(3)],
            Status(Code.UNSCHEDULABLE, "0/3 nodes are available: insufficient cpu"),
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "Unschedulable", "0/3 nodes are available: insufficient cpu"),
    ),
    SubmitCase(
        "Unschedulable for the entire pod group",
        lambda e, g: GroupAttempt([], Status(Code.UNSCHEDULABLE, "node affinity mismatch")),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "Unschedulable", "node affinity mismatch"),
    ),
    SubmitCase(
        "Error for one pod",
        lambda e, g: GroupAttempt(
            [_ok(e, g, 0), _no(e, g, 1, Status(Code.ERROR, "plugin returned error"))],
            Status(Code.ERROR, "plugin returned error"),
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "SchedulerError", "plugin returned error"),
    ),
    SubmitCase(
        "Error for one pod while waiting on preemption",
        lambda e, g: GroupAttempt(
            [_pre(e, g, 0), _no(e, g, 1, Status(Code.ERROR, "internal failure"))],
            Status(Code.ERROR, "internal failure"),
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("False", "SchedulerError", "internal failure"),
    ),
    SubmitCase(
        "Already Scheduled, successful cycle keeps condition",
        lambda e, g: GroupAttempt([_ok(e, g, i) for i in range(3)], None),
        {"p1", "p2", "p3"},
        set(),
        set(),
        cond("True", "Scheduled"),
        SCHEDULED_BEFORE,
    ),
    SubmitCase(
        "Already Scheduled, rejected cycle does not regress condition",
        lambda e, g: GroupAttempt(
            [_no(e, g, i) for i in range(3)], Status(Code.UNSCHEDULABLE, "extra pods could not be placed")
        ),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("True", "Scheduled", "All pods scheduled"),
        SCHEDULED_BEFORE,
    ),
    SubmitCase(
        "Already Scheduled, error cycle does not regress condition",
        lambda e, g: GroupAttempt([_ok(e, g, 0), _no(e, g, 1, Status(Code.ERROR))], Status(Code.ERROR)),
        set(),
        set(),
        {"p1", "p2", "p3"},
        cond("True", "Scheduled", "All pods scheduled"),
        SCHEDULED_BEFORE,
    ),
]


@pytest.mark.parametrize("tc", SUBMIT_CASES, ids=[c.name for c in SUBMIT_CASES])
def test_submit_pod_group_algorithm_result(tc: SubmitCase) -> None:
    env = Env()
    group = env.group("p1", "p2", "p3")
    env.cache.update_snapshot(env.snapshot)
    out = env.cycle.submit(env.fw, CycleState(), group, tc.result(env, group), 0.0)
    assert env.hooks.bound == tc.bound
    assert env.hooks.preempting == tc.preempting
    assert set(env.hooks.failed) == tc.failed
    # Bound pods are assumed in the cache; nothing else is.
    assert sorted(p.name for p in env.cache.assumed_pods()) == sorted(tc.bound)
    pg = PodGroup.parse(make_pod_group("pg", min_count=3, conditions=tc.existing, generation=0))
    [condition] = env.hooks.conditions
    assert condition == out.condition
    conditions = next_conditions(pg, condition, "2026-02-02T00:00:00Z")
    stored = conditions if conditions is not None else [dict(c) for c in pg.conditions]
    [got] = [c for c in stored if c["type"] == "PodGroupScheduled"]
    assert {k: got[k] for k in ("type", "status", "reason", "message")} == tc.condition


def test_group_rejected_pods_carry_their_permit_message() -> None:
    env = Env()
    group = env.group("p1", "p2")
    env.cache.update_snapshot(env.snapshot)
    gang_wait = Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled")
    env.cycle.submit(
        env.fw, CycleState(), group, GroupAttempt([_ok(env, group, 0, gang_wait), _pre(env, group, 1, gang_wait)]), 0.0
    )
    want = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled"
    assert {n: (s.code, s.message) for n, s in env.hooks.failed.items()} == {
        "p1": (Code.UNSCHEDULABLE, want),
        "p2": (Code.UNSCHEDULABLE, want),
    }
    assert all(n == CLEAR for n in env.hooks.nominated.values())


# ---------------------------------------------------------------------------------------------
# TestUpdatePodGroupCondition (apimeta.SetStatusCondition semantics)

T0, T1 = "2026-01-01T00:00:00Z", "2026-02-02T00:00:00Z"


def _pg(conditions: list[dict[str, Any]] | None, generation: int = 0) -> PodGroup:
    return PodGroup.parse(make_pod_group("pg", min_count=1, conditions=conditions, generation=generation))


def _c(status: str, reason: str, message: str = "", t: str | None = None, gen: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": "PodGroupScheduled", "status": status, "reason": reason, "message": message}
    if t is not None:
        c["lastTransitionTime"] = t
    if gen is not None:
        c["observedGeneration"] = gen
    return c


CONDITION_CASES: list[tuple[str, list[dict[str, Any]] | None, dict[str, str], dict[str, Any] | None]] = [
    (
        "set Scheduled condition to True on empty status",
        None,
        cond("True", "Scheduled"),
        _c("True", "Scheduled", "", T1),
    ),
    (
        "set Scheduled condition to False with Unschedulable reason",
        None,
        cond("False", "Unschedulable", "not enough resources"),
        _c("False", "Unschedulable", "not enough resources", T1),
    ),
    (
        "set Scheduled condition to False with SchedulerError reason",
        None,
        cond("False", "SchedulerError", "internal error"),
        _c("False", "SchedulerError", "internal error", T1),
    ),
    (
        "transition from Unschedulable to Scheduled",
        [_c("False", "Unschedulable", "x", T0)],
        cond("True", "Scheduled"),
        _c("True", "Scheduled", "", T1),
    ),
    (
        "transition from SchedulerError to Scheduled",
        [_c("False", "SchedulerError", "x", T0)],
        cond("True", "Scheduled"),
        _c("True", "Scheduled", "", T1),
    ),
    (
        "do not regress Scheduled to Unschedulable",
        [_c("True", "Scheduled", "", T0)],
        cond("False", "Unschedulable", "x"),
        None,
    ),
    (
        "do not regress Scheduled to SchedulerError",
        [_c("True", "Scheduled", "", T0)],
        cond("False", "SchedulerError", "x"),
        None,
    ),
    (
        "transition from Unschedulable to SchedulerError preserves LastTransitionTime",
        [_c("False", "Unschedulable", "a", T0)],
        cond("False", "SchedulerError", "b"),
        _c("False", "SchedulerError", "b", T0),
    ),
    (
        "transition from SchedulerError to Unschedulable preserves LastTransitionTime",
        [_c("False", "SchedulerError", "a", T0)],
        cond("False", "Unschedulable", "b"),
        _c("False", "Unschedulable", "b", T0),
    ),
    (
        "Scheduled to Scheduled preserves LastTransitionTime",
        [_c("True", "Scheduled", "", T0, 0)],
        cond("True", "Scheduled"),
        None,
    ),
]


@pytest.mark.parametrize(
    ("existing", "new", "want"), [c[1:] for c in CONDITION_CASES], ids=[c[0] for c in CONDITION_CASES]
)
def test_update_pod_group_condition(
    existing: list[dict[str, Any]] | None, new: dict[str, str], want: dict[str, Any] | None
) -> None:
    got = next_conditions(_pg(existing), new, T1)
    if want is None:
        assert got is None
        return
    assert got is not None
    [c] = [c for c in got if c["type"] == "PodGroupScheduled"]
    assert c == want


def test_observed_generation_is_the_pod_groups() -> None:
    got = next_conditions(_pg(None, generation=5), cond("True", "Scheduled"), T1)
    assert got is not None and got[0]["observedGeneration"] == 5


# ---------------------------------------------------------------------------------------------
# TestPodGroupInfoForPod, TestFrameworkForPodGroup, TestSkipPodGroupPodSchedule


def test_pod_group_info_for_pod_sorts_by_priority_then_first_attempt() -> None:
    # "Success with multiple pods, sorted by priority and timestamp"
    env = Env()
    clock = [0.0]
    env.queue.clock = lambda: clock[0]
    pods = {
        "p1": group_pod("p1", "pg", scheduler_name=SCHED, priority=10),
        "p2": group_pod("p2", "pg", scheduler_name=SCHED, priority=20),
        "p3": group_pod("p3", "pg", scheduler_name=SCHED, priority=10),
    }
    for name in ("p3", "p1", "p2"):
        clock[0] += 1
        pod = PodInfo(pods[name])
        env.cache.add_pod_group_member(pod)
        env.queue.add(pod)
    head = env.queue.pop_nowait()
    assert head is not None and head.pod.name == "p2"  # priority first
    group = collect_pod_group(env.queue, env.cache, head)
    assert [q.pod.name for q in group.queued] == ["p2", "p3", "p1"]
    assert [p.name for p in group.info.unscheduled_pods] == ["p2", "p3", "p1"]
    assert all(q.attempts == 1 for q in group.queued)
    assert env.queue.counts()["active"] == 0 and len(env.queue.in_flight()) == 3


def test_pods_not_in_state_or_not_in_queue_are_skipped() -> None:
    # "Pods not in state or not in queue are skipped"
    env = Env()
    a, b = PodInfo(group_pod("a", "pg", scheduler_name=SCHED)), PodInfo(group_pod("b", "pg", scheduler_name=SCHED))
    env.cache.add_pod_group_member(a)
    env.cache.add_pod_group_member(b)  # known to the group but never queued
    env.queue.add(a)
    q = env.queue.pop_nowait()
    assert q is not None
    assert [x.pod.name for x in collect_pod_group(env.queue, env.cache, q).queued] == ["a"]


def test_pod_group_without_state_is_an_error() -> None:
    env = Env()
    q = QueuedPodInfo(PodInfo(group_pod("a", "pg", scheduler_name=SCHED)), 0.0)
    with pytest.raises(
        PodGroupError,
        match="error while retrieving pod group state: pod group state not found for pod group default/pg",
    ):
        collect_pod_group(env.queue, env.cache, q)


FW_CASES = [
    ("success for same scheduler name", [SCHED, SCHED], None),
    (
        "failure for different scheduler names",
        [SCHED, "other"],
        "all pods in a single pod group should have the same .spec.schedulerName set, got: "
        '"other" and "test-scheduler"',
    ),
    ("failure when profile not found", ["other", "other"], 'profile not found for scheduler name "other"'),
]


@pytest.mark.parametrize(("names", "err"), [c[1:] for c in FW_CASES], ids=[c[0] for c in FW_CASES])
def test_framework_for_pod_group(names: list[str], err: str | None) -> None:
    env = Env()
    g = QueuedPodGroup(PodGroupInfo("default", "pg"), [])
    g.set_queued([QueuedPodInfo(PodInfo(group_pod(f"p{i}", "pg", scheduler_name=n)), 0.0) for i, n in enumerate(names)])
    if err is None:
        assert framework_for_group(env.frameworks, g) is env.fw
    else:
        with pytest.raises(PodGroupError) as ei:
            framework_for_group(env.frameworks, g)
        assert str(ei.value) == err


def test_skip_pod_group_pod_schedule() -> None:
    env = Env()
    keep = PodInfo(group_pod("keep", "pg", scheduler_name=SCHED))
    deleting = PodInfo(group_pod("deleting", "pg", scheduler_name=SCHED, deleting=True))
    assumed = PodInfo(group_pod("assumed", "pg", scheduler_name=SCHED))
    for p in (keep, deleting, assumed):
        env.cache.add_pod_group_member(p)
    env.cache.assume_pod(assumed, "node1")
    g = QueuedPodGroup(PodGroupInfo("default", "pg"), [])
    g.set_queued([QueuedPodInfo(p, 0.0) for p in (keep, deleting, assumed)])
    env.cycle._skip_pods(g)
    assert [q.pod.name for q in g.queued] == ["keep"]
    assert [p.name for p in g.info.unscheduled_pods] == ["keep"]
    assert env.hooks.done_uids == ["deleting", "assumed"]


# ---------------------------------------------------------------------------------------------
# TestPodGroupSchedulingPlacementAlgorithm (+ _Scoring)


class FakePlacementPlugin(fw.PlacementGeneratePlugin, fw.PlacementScorePlugin, fw.FilterPlugin):
    """Upstream fakePlacementPlugin: placements (name -> node names), their scores, per-node Filter."""

    name = "FakePlacementPlugin"
    placements: ClassVar[dict[str, list[str]]] = {}
    generate_status: ClassVar[Status | None] = None
    scores: ClassVar[dict[str, int]] = {}
    score_status: ClassVar[dict[str, Status]] = {}
    filter_status: ClassVar[dict[str, Status]] = {}

    def __init__(self, handle: fw.Handle) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: fw.Handle) -> fw.Plugin:
        return cls(handle)

    def generate_placements(
        self, state: CycleState, pod_group: PodGroupInfo, parent: fw.Placement
    ) -> list[fw.Placement] | Status:
        if self.generate_status is not None:
            return self.generate_status
        by_name = {n.name: n for n in parent.nodes}
        return [fw.Placement(name, [by_name[n] for n in nodes]) for name, nodes in self.placements.items()]

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo, assignments: fw.PodGroupAssignments) -> int:
        st = self.score_status.get(assignments.placement.name)
        if st is not None:
            from scheduler.framework.status import StatusError

            raise StatusError(st)
        return self.scores.get(assignments.placement.name, 0)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self.filter_status.get(node.name)


def placement_plugin(name: str = "FakePlacementPlugin", **attrs: Any) -> type[FakePlacementPlugin]:
    return type(name, (FakePlacementPlugin,), {"name": name, **attrs})


TWO = {"placement1": ["node1"], "placement2": ["node2"]}
PLACEMENT_CASES: list[tuple[str, dict[str, Any], str | None, Code, str]] = [
    (
        "respects higher score of placement1",
        {"placements": TWO, "scores": {"placement1": 2, "placement2": 1}},
        "node1",
        Code.SUCCESS,
        "",
    ),
    (
        "respects higher score of placement2",
        {"placements": TWO, "scores": {"placement1": 1, "placement2": 2}},
        "node2",
        Code.SUCCESS,
        "",
    ),
    (
        "when no placements are generated, returns unschedulable",
        {"placements": {}},
        None,
        Code.UNSCHEDULABLE,
        "no feasible placements found",
    ),
    (
        "when all placements are infeasible, returns unschedulable",
        {"placements": TWO, "filter_status": {"node1": unsched(), "node2": unsched()}},
        "",
        Code.UNSCHEDULABLE,
        "0/2 placements are available, first placement status: pod group is unschedulable",
    ),
    (
        "filters out infeasible placements",
        {"placements": TWO, "scores": {"placement1": 1}, "filter_status": {"node2": unsched()}},
        "node1",
        Code.SUCCESS,
        "",
    ),
    (
        "when generate plugin fails, returns error",
        {"generate_status": Status(Code.ERROR, "error for test")},
        None,
        Code.ERROR,
        "error for test",
    ),
    (
        "when score plugin fails, returns error",
        {
            "placements": TWO,
            "scores": {"placement1": 1},
            "score_status": {"placement2": Status(Code.ERROR, "error for test")},
        },
        None,
        Code.ERROR,
        'running PlacementScore plugins: plugin "FakePlacementPlugin" failed with: error for test',
    ),
]


@pytest.mark.parametrize(
    ("attrs", "host", "code", "msg"), [c[1:] for c in PLACEMENT_CASES], ids=[c[0] for c in PLACEMENT_CASES]
)
def test_pod_group_scheduling_placement_algorithm(
    attrs: dict[str, Any], host: str | None, code: Code, msg: str
) -> None:
    pl = placement_plugin(**attrs)
    env = Env(
        gates=TAS,
        nodes=[make_node("node1"), make_node("node2")],
        extra_plugins={pl.name: pl},
        enable={"placementGenerate": [pl.name], "placementScore": [pl.name], "filter": [pl.name]},
    )
    group = env.group("foo")
    env.cache.update_snapshot(env.snapshot)
    res = env.cycle.placement_algorithm(env.fw, CycleState(), group, PostFilterMode.RUN_ALL)
    assert _code(res.status) == code
    if code != Code.SUCCESS:
        assert res.status is not None and res.status.message == msg
    if host is None:
        assert res.pods == []
        return
    [a] = res.pods
    assert a.host == host
    if host:
        assert a.result is not None and (a.result.evaluated_nodes, a.result.feasible_nodes) == (1, 1)
    else:
        assert a.status is not None and a.status.message == "0/1 nodes are available:"
    assert env.snapshot.placement_idx is None


@pytest.mark.parametrize(
    ("first", "second", "want"),
    [
        # weight 1 and 2: placement1 = 50 + 2*25 = 100 > placement2 = 75 + 2*10 = 95
        ({"placement1": 50, "placement2": 75}, {"placement1": 25, "placement2": 10}, "node1"),
        ({"placement1": 75, "placement2": 50}, {"placement1": 10, "placement2": 25}, "node2"),
    ],
    ids=["respects higher score of placement1", "respects higher score of placement2"],
)
def test_placement_scores_are_weighted(first: dict[str, int], second: dict[str, int], want: str) -> None:
    gen = placement_plugin("FakeGeneratorPlugin", placements=TWO)
    s0 = placement_plugin("FakeScorePlugin0", scores=first)
    s1 = placement_plugin("FakeScorePlugin1", scores=second)
    env = Env(
        gates=TAS,
        nodes=[make_node("node1"), make_node("node2")],
        extra_plugins={p.name: p for p in (gen, s0, s1)},
        enable={"placementGenerate": [gen.name], "filter": [gen.name]},
    )
    # Weights go through the configuration, as upstream RegisterPlacementScorePlugin's.
    cfg = parse_config(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "profiles": [
                {
                    "schedulerName": SCHED,
                    "plugins": {
                        "multiPoint": {"disabled": [{"name": "*"}]},
                        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                        "bind": {"enabled": [{"name": "DefaultBinder"}]},
                        "filter": {"enabled": [{"name": gen.name}]},
                        "placementGenerate": {"enabled": [{"name": gen.name}]},
                        "placementScore": {"enabled": [{"name": s0.name, "weight": 1}, {"name": s1.name, "weight": 2}]},
                    },
                }
            ],
        },
        TAS,
    )
    registry = {"PrioritySort": PrioritySort, "DefaultBinder": DefaultBinder, gen.name: gen, s0.name: s0, s1.name: s1}
    env.frameworks = build_frameworks(cfg, env.snapshot, env.listers, registry=registry)
    env.fw = env.frameworks[SCHED]
    env.cycle.frameworks = env.frameworks
    group = env.group("foo")
    env.cache.update_snapshot(env.snapshot)
    res = env.cycle.placement_algorithm(env.fw, CycleState(), group, PostFilterMode.RUN_ALL)
    assert res.status is None and res.pods[0].host == want


# ---------------------------------------------------------------------------------------------
# TestRunWorkloadAwarePreemption


class FakeDefaultPreemption(fw.PostFilterPlugin, fw.PodGroupPostFilterPlugin):
    name = "DefaultPreemption"
    result: ClassVar[Status | None] = None

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: fw.NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return None, unsched()

    def pod_group_post_filter(
        self, pod_group: PodGroup, pods: list[PodInfo], feasible: Callable[[], Status | None]
    ) -> Status | None:
        return self.result


WAP = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True})
WAP_CASES: list[tuple[str, str, list[dict[str, Any]], bool, Status | None, Code, str]] = [
    (
        "error when no PodGroupPostFilter plugin is registered",
        "pg1",
        [],
        False,
        None,
        Code.UNSCHEDULABLE,
        "default preemption plugin is not registered, workload aware preemption is disabled",
    ),
    (
        "error when pod group is not found in informer",
        "missing-pg",
        [],
        True,
        None,
        Code.ERROR,
        'failed to get pod group object: podgroup.scheduling.k8s.io "missing-pg" not found',
    ),
    (
        "error when pod group has scheduling constraints",
        "pg-with-constraints",
        [make_pod_group("pg-with-constraints", min_count=1, topology="")],
        True,
        None,
        Code.UNSCHEDULABLE,
        "workload aware preemption is not supported for pod groups with scheduling constraints",
    ),
    (
        "success when plugin returns success status",
        "pg-success",
        [make_pod_group("pg-success", min_count=1)],
        True,
        Status(Code.SUCCESS),
        Code.SUCCESS,
        "",
    ),
    (
        "failure when plugin returns unschedulable status",
        "pg-unschedulable",
        [make_pod_group("pg-unschedulable", min_count=1)],
        True,
        Status(Code.UNSCHEDULABLE, "not enough resources"),
        Code.UNSCHEDULABLE,
        "not enough resources",
    ),
]


@pytest.mark.parametrize(
    ("pg", "groups", "registered", "returns", "code", "msg"), [c[1:] for c in WAP_CASES], ids=[c[0] for c in WAP_CASES]
)
def test_run_workload_aware_preemption(
    pg: str, groups: list[dict[str, Any]], registered: bool, returns: Status | None, code: Code, msg: str
) -> None:
    dp = type("DP", (FakeDefaultPreemption,), {"result": returns})
    extra = {"DefaultPreemption": dp} if registered else {}
    enable = {"postFilter": ["DefaultPreemption"]} if registered else {}
    env = Env(gates=WAP if registered else OFF, extra_plugins=extra, enable=enable)
    for g in groups:
        p = PodGroup.parse(g)
        env.listers.pod_groups[p.key] = p
    group = env.group("p1", pg=pg)
    env.cache.update_snapshot(env.snapshot)
    st = env.cycle.workload_aware_preemption(env.fw, CycleState(), group)
    assert _code(st) == code
    assert (st.message if st is not None else "") == msg


def test_wap_failure_is_appended_to_the_group_status() -> None:
    # podGroupCycle: an unschedulable group with a failed preemption keeps both reasons.
    dp = type("DP", (FakeDefaultPreemption,), {"result": Status(Code.UNSCHEDULABLE, "no victims")})
    env = Env(
        fake(filter_status={"p1": unsched()}),
        gates=WAP,
        extra_plugins={"DefaultPreemption": dp},
        enable={"postFilter": ["DefaultPreemption"]},
    )
    pg = PodGroup.parse(make_pod_group("pg", min_count=1))
    env.listers.pod_groups[pg.key] = pg
    out = env.cycle.cycle(env.fw, CycleState(), env.group("p1"))
    assert out.condition["message"] == "pod group is unschedulable, no victims"
    assert out.result == "unschedulable"


def test_wap_success_sends_the_group_back_waiting_on_preemption() -> None:
    dp = type("DP", (FakeDefaultPreemption,), {"result": None})
    env = Env(
        fake(filter_status={"p1": unsched()}),
        gates=WAP,
        extra_plugins={"DefaultPreemption": dp},
        enable={"postFilter": ["DefaultPreemption"]},
    )
    pg = PodGroup.parse(make_pod_group("pg", min_count=1))
    env.listers.pod_groups[pg.key] = pg
    out = env.cycle.cycle(env.fw, CycleState(), env.group("p1"))
    assert out.result == "waiting_on_preemption"
    assert set(env.hooks.failed) == {"p1"}


@pytest.mark.parametrize(
    ("attrs", "want"),
    [
        ({"placements": TWO, "scores": {"placement1": 2, "placement2": 1}}, {"placement1": 2, "placement2": 1}),
        # A single feasible placement is taken without scoring (upstream returns it directly).
        ({"placements": TWO, "scores": {"placement1": 1}, "filter_status": {"node2": unsched()}}, {}),
    ],
    ids=["two feasible placements scored", "one feasible placement is not scored"],
)
def test_placement_scores_reported(attrs: dict[str, Any], want: dict[str, int]) -> None:
    """The chosen result carries every feasible placement's total score: ties are a random
    pick upstream, so a comparison with the binary needs them."""
    pl = placement_plugin(**attrs)
    env = Env(
        gates=TAS,
        nodes=[make_node("node1"), make_node("node2")],
        extra_plugins={pl.name: pl},
        enable={"placementGenerate": [pl.name], "placementScore": [pl.name], "filter": [pl.name]},
    )
    group = env.group("foo")
    env.cache.update_snapshot(env.snapshot)
    res = env.cycle.placement_algorithm(env.fw, CycleState(), group, PostFilterMode.RUN_ALL)
    assert res.status is None
    assert res.placement_scores == want


def test_no_feasible_placement_reports_every_placements_messages() -> None:
    """0/2 placements: the status and pods are the first placement's, as upstream; which one is
    first is a random map walk upstream, so the outcome also carries each placement's messages."""
    pl = placement_plugin(
        placements=TWO,
        filter_status={"node1": Status(Code.UNSCHEDULABLE, "no room"), "node2": Status(Code.UNSCHEDULABLE, "nope")},
    )
    env = Env(
        gates=TAS,
        nodes=[make_node("node1"), make_node("node2")],
        extra_plugins={pl.name: pl},
        enable={"placementGenerate": [pl.name], "placementScore": [pl.name], "filter": [pl.name]},
    )
    group = env.group("foo")
    env.cache.update_snapshot(env.snapshot)
    res = env.cycle.placement_algorithm(env.fw, CycleState(), group, PostFilterMode.RUN_ALL)
    assert res.status is not None and res.status.message.startswith("0/2 placements are available")
    assert list(res.alternatives) == ["placement1", "placement2"]
    out = env.cycle.submit(env.fw, CycleState(), group, res, 0.0)
    assert out.placement_messages == {
        "placement1": ["0/1 nodes are available: 1 no room."],
        "placement2": ["0/1 nodes are available: 1 nope."],
    }
    # The reported pod status is the first placement's.
    assert [d.status.message for d in out.decisions if d.status is not None] == out.placement_messages["placement1"]
