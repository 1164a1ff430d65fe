"""The lazy-deletion bookkeeping activeQ and backoffQ share: heap entries are mutable lists
whose last item is the pod, cleared when the pod leaves out of heap order, so that removal is a
dict lookup and the heap drops the dead entry when it reaches the top."""

from __future__ import annotations

from typing import Any

from scheduler.framework.interface import QueuedPodInfo


class Entries:
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, list[Any]] = {}  # uid -> its live heap entry

    def _drop(self, uid: str) -> QueuedPodInfo | None:
        """Forget ``uid``'s entry and mark it dead in its heap; its pod, or None."""
        entry = self._entries.pop(uid, None)
        if entry is None:
            return None
        q: QueuedPodInfo = entry[-1]
        entry[-1] = None
        return q

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        return None if entry is None else entry[-1]

    def __contains__(self, uid: str) -> bool:
        return uid in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def pods(self) -> list[QueuedPodInfo]:
        return [e[-1] for e in self._entries.values()]
