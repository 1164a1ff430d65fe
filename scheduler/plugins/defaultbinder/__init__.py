"""DefaultBinder: binds the pod through the handle's client (a Binding POST in the live app)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin, Handle
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def __init__(self, handle: Handle | None) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> DefaultBinder:
        if args:
            raise ValueError("plugin DefaultBinder takes no arguments")
        return cls(handle)

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        client = self.handle.client if self.handle is not None else None
        if client is None:
            return Status(Code.ERROR, "no API client configured for binding")
        # Errors propagate; the runtime turns them into an Error status naming this plugin.
        await client.bind(pod, node_name)
        return None
