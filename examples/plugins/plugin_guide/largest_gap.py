"""PostFilter: when no node fits, say how much CPU the emptiest node still has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, NodeToStatus, PostFilterPlugin, PostFilterResult
from scheduler.framework.status import Status, unschedulable
from scheduler.model.pod import PodInfo


class LargestGap(PostFilterPlugin):
    name = "LargestGap"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> LargestGap:
        if args:
            raise ValueError("plugin LargestGap takes no arguments")
        return cls(handle)

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        nodes = self.handle.snapshot.node_infos  # the cycle's snapshot, read-only
        free = max((n.allocatable.milli_cpu - n.requested.milli_cpu for n in nodes), default=0)
        # Not a success: the pod stays unschedulable and this reason joins the message.
        asks = pod.requests.milli_cpu
        return None, unschedulable(f"the most free cpu on one node is {free}m, the pod asks for {asks}m")
