"""QueueSort: the pod that asks for the least CPU is tried first."""

from __future__ import annotations

from scheduler.framework.interface import QueuedPodInfo, QueueSortPlugin


class SmallestFirst(QueueSortPlugin):
    name = "SmallestFirst"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # Optional: a key that orders exactly as less() lets the queue keep a plain heap.
    def sort_key(self, q: QueuedPodInfo) -> tuple[int, float, int]:
        return (q.pod.requests.milli_cpu, q.timestamp, q.seq)
