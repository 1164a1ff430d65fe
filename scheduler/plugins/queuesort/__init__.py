"""PrioritySort (upstream plugins/queuesort/priority_sort.go)."""

from __future__ import annotations

from scheduler.framework.interface import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    """Higher spec.priority first; equal priorities by the time they entered the queue."""

    __slots__ = ()
    name = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, q: QueuedPodInfo) -> tuple[int, float, int]:
        # Same order as less(); seq only breaks the ties upstream leaves to heap order.
        return (-q.pod.priority, q.timestamp, q.seq)
