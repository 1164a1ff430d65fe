"""PreEnqueue: keep pods that carry a hold label out of the active queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import Handle, PreEnqueuePlugin
from scheduler.framework.status import Status, unresolvable
from scheduler.model.pod import PodInfo


class HoldByLabel(PreEnqueuePlugin):
    name = "HoldByLabel"

    def __init__(self, label: str) -> None:
        self.label = label

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> HoldByLabel:
        args = dict(args or {})
        label = args.pop("label", "example.com/hold")
        if args:
            raise ValueError(f"unknown field(s): {', '.join(sorted(args))}")
        return cls(str(label))

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.labels.get(self.label) != "true":
            return None  # goes to the active queue
        return unresolvable(f"held by label {self.label}")
