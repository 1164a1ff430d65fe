"""Reserve/Unreserve: at most ``maxPerNode`` pods per node hold a slot of this plugin's ledger."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, ReservePlugin
from scheduler.framework.status import Status, unschedulable
from scheduler.model.pod import PodInfo


class NodeSlots(ReservePlugin):
    name = "NodeSlots"

    def __init__(self, max_per_node: int) -> None:
        self.max_per_node = max_per_node
        # node -> uids holding a slot. Plugin state lives as long as the scheduler process;
        # a real plugin would also free the slot when the pod goes away.
        self.slots: dict[str, set[str]] = {}

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> NodeSlots:
        n = (args or {}).get("maxPerNode", 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"maxPerNode: Invalid value: {n!r}: must be a positive integer")
        return cls(n)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        held = self.slots.setdefault(node_name, set())
        if len(held) >= self.max_per_node:
            return unschedulable(f"node {node_name} has no free slot ({len(held)} of {self.max_per_node} held)")
        held.add(pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Called on every Reserve plugin, in reverse order, when this attempt fails after
        # Reserve (a later Reserve, Permit, PreBind or Bind), including the plugin that failed.
        self.slots.get(node_name, set()).discard(pod.uid)
