"""DefaultPreemption with workload-aware scheduling: pods of a pod group are not preempted for one
by one (WorkloadAwarePreemption, or a group with scheduling constraints under
TopologyAwareWorkloadScheduling), and PreEnqueue holds a group's pods while its preemption runs.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (PostFilter,
PreEnqueue).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler.config.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.plugins.defaultpreemption import DefaultPreemption
from tests.plugins._podgroup_helpers import Env, group_pod, make_pod_group


class Actuator:
    def __init__(self, running: set[str]) -> None:
        self.running = running
        self.attempts = 0

    def preempt(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo], plugin: str) -> None:
        raise AssertionError("no pod-by-pod preemption expected")

    def is_running(self, uid: str) -> bool:
        return uid in self.running

    def attempted(self) -> None:
        self.attempts += 1


def plugin(
    gates: FeatureGates, groups: list[dict], running: set[str] = frozenset()
) -> tuple[DefaultPreemption, Actuator]:  # type: ignore[assignment]
    env = Env(groups=groups)
    env.handle.features = gates.features()
    actuator = Actuator(set(running))
    env.handle.preemption = actuator
    pl = DefaultPreemption.new(None, env.handle)
    pl.set_framework(object())  # type: ignore[arg-type]  # the early returns never reach it
    return pl, actuator


TAS = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True})
WAP = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True})
POD = PodInfo(group_pod("p", "pg"))


@pytest.mark.parametrize(
    ("gates", "groups", "msg"),
    [
        (TAS, [], "preemption: pod group for pod not found"),
        (
            TAS,
            [make_pod_group("pg", min_count=1, topology="zone")],
            "preemption: not eligible due to placement-based pod group scheduling limitation",
        ),
        (WAP, [make_pod_group("pg", min_count=1)], "preemption: not eligible due to workload aware preemption enabled"),
    ],
)
def test_post_filter_refuses_pod_group_pods(gates: FeatureGates, groups: list[dict], msg: str) -> None:
    pl, actuator = plugin(gates, groups)
    result, st = pl.post_filter(CycleState(), POD, NodeToStatus())
    assert result is None and st == Status(Code.UNSCHEDULABLE, msg)
    assert actuator.attempts == 1  # upstream counts the attempt in a deferred call


def test_pre_enqueue_holds_a_group_while_its_preemption_runs() -> None:
    group = make_pod_group("pg", min_count=1)
    pl, _ = plugin(WAP, [group], running={group["metadata"]["uid"]})
    assert pl.pre_enqueue(POD) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for the preemption for this pod group to be finished"
    )
    free, _ = plugin(WAP, [group])
    assert free.pre_enqueue(POD) is None
    # No PodGroup: not this plugin's business.
    orphan, _ = plugin(WAP, [], running={"x"})
    assert orphan.pre_enqueue(POD) is None
