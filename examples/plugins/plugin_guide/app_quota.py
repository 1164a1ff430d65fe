"""Permit: at most ``max`` pods with the same ``app`` label in the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, PermitPlugin
from scheduler.framework.status import Status, unschedulable
from scheduler.model.pod import PodInfo


class AppQuota(PermitPlugin):
    name = "AppQuota"

    def __init__(self, maximum: int, handle: Handle) -> None:
        self.maximum = maximum
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> AppQuota:
        n = (args or {}).get("max", 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"max: Invalid value: {n!r}: must be a non-negative integer")
        return cls(n, handle)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        app = pod.labels.get("app")
        if app is None:
            return None, 0.0  # allow
        # The snapshot holds every pod bound or assumed before this cycle.
        running = sum(
            1 for n in self.handle.snapshot.node_infos for p in n.pods if p.labels.get("app") == app
        )
        if running >= self.maximum:
            return unschedulable(f"app {app} already has {running} pod(s), quota {self.maximum}"), 0.0
        return None, 0.0
