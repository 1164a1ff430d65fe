"""PreBind: the last word before the Binding; here, pods marked as denied are not bound."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PreBindPlugin
from scheduler.framework.status import Status, unschedulable
from scheduler.model.pod import PodInfo

APPROVAL = "example.com/approval"


class ApprovalCheck(PreBindPlugin):
    name = "ApprovalCheck"

    # async: live, it runs in the pod's binding task, off the scheduling loop, and may await
    # API calls. simulate drives it without an event loop, so offline it must not await I/O.
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get(APPROVAL) == "denied":
            return unschedulable(f"binding to {node_name} refused: {APPROVAL} is denied")
        return None
