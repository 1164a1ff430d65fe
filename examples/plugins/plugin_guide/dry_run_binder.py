"""Bind: pods labelled for a dry run are not bound; every other pod goes to the next binder."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin
from scheduler.framework.status import SKIP, Status, unschedulable
from scheduler.model.pod import PodInfo

DRY_RUN = "example.com/dry-run"


class DryRunBinder(BindPlugin):
    name = "DryRunBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get(DRY_RUN) != "true":
            return SKIP  # not ours: the next Bind plugin (DefaultBinder) binds it
        return unschedulable(f"dry run: would bind to {node_name}")
