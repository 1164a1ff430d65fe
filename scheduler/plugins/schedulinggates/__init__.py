"""SchedulingGates (upstream plugins/schedulinggates/scheduling_gates.go)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, PreEnqueuePlugin
from scheduler.framework.status import Status, unresolvable
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_pod


def gated_message(gates: tuple[str, ...]) -> str:
    # Upstream formats the gate names with Go's %v of a []string: "[a b]".
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    """Keeps pods that still carry spec.schedulingGates out of the active queue."""

    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return unresolvable(gated_message(pod.scheduling_gates))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self._after_gates_eliminated,
            )
        ]

    @staticmethod
    def _after_gates_eliminated(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        # Only the gated pod's own update can release it.
        modified = as_pod(new_obj)
        if modified is None or modified.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
