"""GangScheduling: PreEnqueue until the gang's PodGroup and minCount pods exist, Permit waits for
the quorum, the queueing hints.

Upstream: pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go
(Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterPodGroupAdded, TestGangSchedulingFlow).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.plugins.gangscheduling import PERMIT_TIMEOUT, GangScheduling
from scheduler.testing.builders import make_node, make_pod
from tests.plugins._podgroup_helpers import Env, FakeWaitingPod, group_pod, make_pod_group


def plugin(env: Env) -> GangScheduling:
    pl = GangScheduling.new(None, env.handle)
    assert isinstance(pl, GangScheduling)
    return pl


# ---------------------------------------------------------------------------------------------
# Queueing hints

POD_ADDED = [
    ("matches the pod's scheduling group", group_pod("p", "pg"), group_pod("other", "pg"), QueueingHint.QUEUE),
    (
        "doesn't match the pod's namespace",
        group_pod("p", "pg"),
        group_pod("other", "pg", namespace="foo"),
        QueueingHint.QUEUE_SKIP,
    ),
    ("doesn't match the pod's pod group name", group_pod("p", "pg1"), group_pod("o", "pg2"), QueueingHint.QUEUE_SKIP),
    ("added pod has no scheduling group", group_pod("p", "pg"), make_pod("o"), QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(("pod", "added", "want"), [c[1:] for c in POD_ADDED], ids=[c[0] for c in POD_ADDED])
def test_is_schedulable_after_pod_added(pod: dict, added: dict, want: QueueingHint) -> None:
    assert GangScheduling.is_schedulable_after_pod_added(PodInfo(pod), None, PodInfo(added)) == want


GROUP_ADDED = [
    ("matches the pod's pod group name", group_pod("p", "pg"), make_pod_group("pg", min_count=1), QueueingHint.QUEUE),
    (
        "doesn't match the pod's scheduling group name",
        group_pod("p", "pg1"),
        make_pod_group("pg2", min_count=1),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "doesn't match the pod's scheduling group namespace",
        group_pod("p", "pg", namespace="ns1"),
        make_pod_group("pg", "ns2", min_count=1),
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(("pod", "group", "want"), [c[1:] for c in GROUP_ADDED], ids=[c[0] for c in GROUP_ADDED])
def test_is_schedulable_after_pod_group_added(pod: dict, group: dict, want: QueueingHint) -> None:
    assert GangScheduling.is_schedulable_after_pod_group_added(PodInfo(pod), None, PodGroup.parse(group)) == want


def test_registers_pod_add_and_pod_group_add() -> None:
    events = [(e.event.resource, int(e.event.action)) for e in plugin(Env()).events_to_register()]
    assert events == [("Pod", 1), ("PodGroup", 1)]


# ---------------------------------------------------------------------------------------------
# TestGangSchedulingFlow

PG1 = make_pod_group("pg1", "ns1", min_count=3)
PG2 = make_pod_group("pg2", "ns1", min_count=4)
PG3 = make_pod_group("pg3", "ns1", basic=True)
P1, P2, P3 = (group_pod(n, "pg1", "ns1") for n in ("p1", "p2", "p3"))
P4, P5 = (group_pod(n, "pg2", "ns1") for n in ("p4", "p5"))
BASIC = group_pod("basic-pod", "pg3", "ns1")
NON_GANG = make_pod("non-gang", "ns1", uid="non-gang")


@dataclass
class Flow:
    name: str
    pod: dict[str, Any]
    initial_pods: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[dict[str, Any]] = field(default_factory=list)
    in_pod_group_cycle: bool = False
    pre_enqueue: Status | None = None
    permit: Status | None = None
    activated: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)


FLOWS = [
    Flow("non-gang pod succeeds immediately", NON_GANG, groups=[PG1, PG2, PG3]),
    Flow("basic policy pod succeeds immediately", BASIC, groups=[PG1, PG2, PG3]),
    Flow(
        "gang pod fails PreEnqueue when pod group is not yet created",
        P1,
        initial_pods=[P2, P3, P4, P5],
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'waiting for pods\'s pod group "pg1" to appear in scheduling queue',
        ),
    ),
    Flow(
        "gang pod fails PreEnqueue when quorum is not met",
        P1,
        initial_pods=[P2, P4, P5],
        groups=[PG1, PG2],
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for minCount pods from a gang to appear in scheduling queue"
        ),
    ),
    Flow(
        "gang pod passes PreEnqueue, but waits at Permit",
        P1,
        initial_pods=[P2, P3, P4, P5],
        groups=[PG1, PG2],
        waiting=[P2, P4, P5],
        activated=["p3"],
        permit=Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled"),
    ),
    Flow(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        P1,
        initial_pods=[P2, P3, P4, P5],
        groups=[PG1, PG2],
        waiting=[P2, P3, P4, P5],
        allowed=["p2", "p3"],
    ),
    Flow(
        "final gang pod arrives at Permit during pod group scheduling cycle",
        P1,
        initial_pods=[P2, P3, P4, P5],
        groups=[PG1, PG2],
        waiting=[P2, P3, P4, P5],
        in_pod_group_cycle=True,
        allowed=["p2", "p3"],
    ),
]


def _on_node(raw: dict[str, Any]) -> PodInfo:
    r = copy.deepcopy(raw)
    r["spec"]["nodeName"] = "some-node"
    return PodInfo(r)


@pytest.mark.parametrize("tc", FLOWS, ids=[f.name for f in FLOWS])
def test_gang_scheduling_flow(tc: Flow) -> None:
    env = Env(nodes=[make_node("some-node")], groups=tc.groups)
    for p in tc.initial_pods:
        env.pending(p)
    pod = env.pending(tc.pod)
    pl = plugin(env)

    got = pl.pre_enqueue(pod)
    assert got == tc.pre_enqueue
    if got is not None:
        return

    # Other pods of the gangs already reached Permit and wait there.
    for raw in tc.waiting:
        wp = _on_node(raw)
        env.cache.assume_pod(wp, "some-node")
        s, timeout = pl.permit(CycleState(), wp, "some-node")
        assert s is not None and s.code == Code.WAIT and timeout == PERMIT_TIMEOUT
        env.waiting[wp.uid] = FakeWaitingPod(wp)
    env.activated.clear()

    state = CycleState()
    assumed = _on_node(tc.pod)
    if tc.in_pod_group_cycle:
        state.pod_group_cycle = state
        # The pod-group cycle's snapshot is taken after the waiting pods were assumed.
        env.sync().assume_pod(assumed, "some-node", in_group=True)
    else:
        env.cache.assume_pod(assumed, "some-node")

    s, timeout = pl.permit(state, assumed, "some-node")
    assert s == tc.permit
    if s is not None:
        assert s.code == Code.WAIT and timeout == PERMIT_TIMEOUT
    assert sorted(p.name for p in env.activated) == tc.activated
    assert sorted(uid for uid, wp in env.waiting.items() if wp.allowed == ["GangScheduling"]) == tc.allowed


def test_permit_errors_when_the_pod_group_is_gone() -> None:
    env = Env()
    pod = env.pending(P1)
    s, _ = plugin(env).permit(CycleState(), pod, "n")
    assert s is not None and s.code == Code.ERROR
    assert s.message == 'failed to get podGroup ns1/pg1: podgroup.scheduling.k8s.io "pg1" not found'


def test_pre_enqueue_errors_without_a_group_state() -> None:
    # The PodGroup exists but the cache knows no pod of it (upstream: AsStatus of the lookup).
    env = Env(groups=[PG1])
    s = plugin(env).pre_enqueue(PodInfo(P1))
    assert s is not None and s.code == Code.ERROR
    assert s.message == "pod group state not found for pod group ns1/pg1"
