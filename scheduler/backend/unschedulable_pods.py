"""unschedulablePods (upstream backend/queue/unschedulable_pods.go): pods a plugin rejected,
waiting for an event that may help, and pods a PreEnqueue plugin holds (gated). The two are
counted apart, as upstream's pending_pods gauge reports them ("unschedulable", "gated")."""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.framework.interface import QueuedPodInfo


class UnschedulablePods:
    __slots__ = ("_gated", "pods")

    def __init__(self) -> None:
        self.pods: dict[str, QueuedPodInfo] = {}  # by uid
        self._gated: set[str] = set()

    def add_or_update(self, q: QueuedPodInfo) -> bool:
        """Add or replace; True when the pod was not here (upstream counts it as incoming)."""
        uid = q.pod.uid
        fresh = uid not in self.pods
        self.pods[uid] = q
        if q.gated:
            self._gated.add(uid)
        else:
            self._gated.discard(uid)
        return fresh

    def delete(self, uid: str) -> QueuedPodInfo | None:
        q = self.pods.pop(uid, None)
        if q is not None:
            self._gated.discard(uid)
        return q

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self.pods.get(uid)

    def is_gated(self, uid: str) -> bool:
        return uid in self._gated

    def __contains__(self, uid: str) -> bool:
        return uid in self.pods

    def __len__(self) -> int:
        return len(self.pods)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self.pods.values())

    def gated_count(self) -> int:
        return len(self._gated)

    def clear(self) -> None:
        self.pods.clear()
        self._gated.clear()
