"""activeQ and the pods in flight (upstream backend/queue/active_queue.go).

activeQ is a heap in the QueueSort plugin's order. Popping a pod puts it in flight until
``done``: every cluster event the queue sees meanwhile is logged, so that when the attempt
fails the queue can tell whether something that happened during it may already have helped
(upstream inFlightPods and inFlightEvents). The log is shared: a pod sees the events logged
after it was popped. It is cut when no pod is in flight, and its prefix that no pod in flight
can see is dropped once it grows long.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from scheduler.backend.entries import Entries
from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import QueuedPodInfo

#: One logged event: (event, old object, new object).
LoggedEvent = tuple[ClusterEvent, Any, Any]

_PRUNE_AT = 1024  # log entries before looking for a prefix nobody can see


class InFlight:
    """A popped pod: where its view of the event log starts; ``gone`` once it was deleted (or
    bound by someone else) during its attempt, so it is never requeued."""

    __slots__ = ("gone", "q", "start")

    def __init__(self, q: QueuedPodInfo, start: int) -> None:
        self.q = q
        self.start = start
        self.gone = False


class ActiveQueue(Entries):
    __slots__ = ("_base", "_heap", "_key", "_log", "_tokens", "cycle", "in_flight")

    def __init__(self, key: Callable[[QueuedPodInfo], Any]) -> None:
        super().__init__()
        self._key = key
        self._heap: list[list[Any]] = []  # [activeQ key, token, q]; q is None once removed
        self._tokens = itertools.count()
        self.in_flight: dict[str, InFlight] = {}
        self._log: list[LoggedEvent] = []
        self._base = 0  # absolute position of _log[0]
        self.cycle = 0  # scheduling cycles: one per pop (upstream schedCycle)

    # -- the heap -----------------------------------------------------------------------------
    def add(self, q: QueuedPodInfo) -> None:
        """Add, or re-sort after an in-place change (upstream AddOrUpdate)."""
        uid = q.pod.uid
        self._drop(uid)
        entry = [self._key(q), next(self._tokens), q]
        heapq.heappush(self._heap, entry)
        self._entries[uid] = entry

    def delete(self, uid: str) -> QueuedPodInfo | None:
        return self._drop(uid)

    def pop_head(self) -> QueuedPodInfo | None:
        heap = self._heap
        while heap:
            q: QueuedPodInfo | None = heapq.heappop(heap)[-1]
            if q is not None:
                del self._entries[q.pod.uid]
                return q
        return None

    # -- in flight ----------------------------------------------------------------------------
    def to_in_flight(self, q: QueuedPodInfo) -> None:
        """What popping does to a pod (upstream movePodToInFlight)."""
        q.attempts += 1
        # The rejectors of the last attempt stay for logs until this one fails and replaces them.
        self.in_flight[q.pod.uid] = InFlight(q, self._base + len(self._log))
        self.cycle += 1

    def log_event(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Log an event for the pods in flight (upstream addEventIfAnyInFlight)."""
        if not self.in_flight:
            return False
        self._log.append((event, old, new))
        return True

    def log_pod_events(self, uid: str, events: Iterable[ClusterEvent], old: Any, new: Any) -> bool:
        """The pod ``uid`` changed while in flight: log its update events (upstream
        addEventsIfPodInFlight). False when it is not in flight."""
        if uid not in self.in_flight:
            return False
        self._log.extend((ev, old, new) for ev in events)
        return True

    def events_for(self, uid: str) -> list[LoggedEvent] | None:
        """The events logged since ``uid`` was popped; None when it is not in flight (upstream
        clusterEventsForPod)."""
        fl = self.in_flight.get(uid)
        if fl is None:
            return None
        return self._log[fl.start - self._base :]

    def done(self, uid: str) -> InFlight | None:
        fl = self.in_flight.pop(uid, None)
        if fl is None:
            return None
        if not self.in_flight:
            self._base += len(self._log)
            self._log.clear()
        elif len(self._log) >= _PRUNE_AT:
            first = min(f.start for f in self.in_flight.values())
            cut = first - self._base
            if cut > 0:
                del self._log[:cut]
                self._base = first
        return fl

    def logged(self) -> int:
        return len(self._log)

    def listing(self) -> list[Any]:
        """Pods in flight (their PodInfo) and the events logged after the first of them, in
        order (upstream listInFlightEvents, for tests and debug dumps)."""
        starts = sorted(((fl.start, i, fl.q.pod) for i, fl in enumerate(self.in_flight.values())), key=lambda t: t[:2])
        out: list[Any] = []
        k = 0
        for pos, (ev, _, _) in enumerate(self._log, start=self._base):
            while k < len(starts) and starts[k][0] <= pos:
                out.append(starts[k][2])
                k += 1
            if k:
                out.append(ev)
        out.extend(t[2] for t in starts[k:])
        return out

    def close(self) -> None:
        """Forget every pod in flight (their attempts end without them, upstream close)."""
        self.in_flight.clear()
        self._base += len(self._log)
        self._log.clear()
