"""SchedulingGates; cases from upstream plugins/schedulinggates/scheduling_gates_test.go."""

from __future__ import annotations

from scheduler.framework.events import ActionType, QueueingHint
from scheduler.framework.status import Code
from scheduler.model.pod import PodInfo
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.testing.builders import make_pod


def test_pre_enqueue_no_gates() -> None:
    # TestPreEnqueue "pod does not carry scheduling gates"
    assert SchedulingGates().pre_enqueue(PodInfo(make_pod("p"))) is None


def test_pre_enqueue_gated() -> None:
    # TestPreEnqueue "pod carries scheduling gates"
    st = SchedulingGates().pre_enqueue(PodInfo(make_pod("p", gates=["foo", "bar"])))
    assert st is not None
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ("waiting for scheduling gates: [foo bar]",)


def test_events_and_hint() -> None:
    # TestIsSchedulableAfterUpdateTargetPodSchedulingGatesEliminated: only the target pod's update queues it.
    pl = SchedulingGates()
    (ev,) = pl.events_to_register()
    assert ev.event.resource == "Pod"
    assert ev.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert ev.hint is not None
    pod = PodInfo(make_pod("p", gates=["foo"]))
    same = PodInfo(make_pod("p"))
    other = PodInfo(make_pod("other"))
    assert ev.hint(pod, pod, same) == QueueingHint.QUEUE
    assert ev.hint(pod, other, other) == QueueingHint.QUEUE_SKIP
