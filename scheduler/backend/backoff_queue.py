"""backoffQ (upstream backend/queue/backoff_queue.go): pods waiting out their backoff.

Two heaps behind one face, as upstream:

* podBackoffQ, for pods some plugin rejected. With SchedulerPopFromBackoffQ (beta, on by
  default in v1.36.3) its order is (expiry window, activeQ order): expiries are truncated to
  1-second windows, and within one window the QueueSort plugin decides, so that popping from
  it while activeQ is empty takes the pod activeQ would take.
* podErrorBackoffQ, for pods whose attempt ended in an error (no rejecting plugin), ordered by
  expiry alone and never popped early.

The backoff of a pod is initial x 2^(count-1) capped at max, where count is its consecutive
error count if its last attempt was an error and its unschedulable count otherwise; a pod that
never failed has none, and a max of 0 disables backoff. The expiry is computed once per failed
attempt and kept on the pod (upstream caches it in BackoffExpiration). With windows a pod is
still backing off while its expiry's window is the current one or a later one, so it completes
at the start of the window after its expiry, when the aligned 1-second flush moves it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any

from scheduler.backend.entries import Entries
from scheduler.framework.interface import QueuedPodInfo

#: The ordering window, also the period of the backoff flush (upstream backoffQOrderingWindowDuration).
WINDOW = 1.0

_NO_BACKOFF = -math.inf  # upstream's zero time.Time: before every window
_NS = 1_000_000_000


class BackoffQueue(Entries):
    """Both heaps, with lazy deletion (entries.py)."""

    __slots__ = (
        "_clock",
        "_errors",
        "_heap",
        "_key",
        "_n_backoff",
        "_tokens",
        "initial_ns",
        "max_ns",
        "phase",
        "windows",
    )

    def __init__(
        self,
        clock: Callable[[], float],
        initial: float,
        maximum: float,
        active_key: Callable[[QueuedPodInfo], Any],
        *,
        windows: bool = True,
        phase: float = 0.0,
    ) -> None:
        super().__init__()
        self._clock = clock
        # Durations in integer nanoseconds, as time.Duration: the doubling and its cap are exact.
        self.initial_ns = round(initial * _NS)
        self.max_ns = round(maximum * _NS)
        self.windows = windows
        # Windows start where clock() - phase is a whole second (the live queue's clock is
        # monotonic; the phase puts window starts on the wall clock's seconds, as Go truncates).
        self.phase = phase
        self._key = active_key
        self._heap: list[list[Any]] = []  # podBackoffQ: [expiry, activeQ key, token, q]
        self._errors: list[list[Any]] = []  # podErrorBackoffQ: [expiry, token, q]
        self._n_backoff = 0  # live entries of podBackoffQ (upstream lenBackoff)
        self._tokens = itertools.count()

    # -- time ---------------------------------------------------------------------------------
    def align(self, t: float) -> float:
        """The start of ``t``'s window (upstream alignToWindow); ``t`` itself without windows."""
        if not self.windows:
            return t
        p = self.phase
        return math.floor(t - p) + p

    def duration(self, count: int) -> float:
        """initial x 2^(count-1), capped at max (upstream calculateBackoffDuration)."""
        if count <= 0:
            return 0.0
        shift = count - 1
        if self.initial_ns > self.max_ns >> shift:
            return self.max_ns / _NS
        return (self.initial_ns << shift) / _NS

    def backoff_time(self, q: QueuedPodInfo) -> float:
        """When ``q``'s backoff ends, window-aligned; -inf for none (upstream getBackoffTime)."""
        if self.max_ns == 0:
            return _NO_BACKOFF
        count = q.consecutive_errors_count or q.unschedulable_count
        if count == 0:
            return _NO_BACKOFF
        exp = q.backoff_expiration
        if exp is None:
            exp = q.backoff_expiration = self.align(q.timestamp + self.duration(count))
        return exp

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        """Still backing off: its expiry is not before the current window's start."""
        return self.backoff_time(q) >= self.align(self._clock())

    def completion_time(self, q: QueuedPodInfo) -> float:
        """The first instant ``q`` no longer backs off."""
        exp = self.backoff_time(q)
        return exp + WINDOW if self.windows else math.nextafter(exp, math.inf)

    # -- membership ---------------------------------------------------------------------------
    def add(self, q: QueuedPodInfo) -> None:
        """Into podErrorBackoffQ after an error, podBackoffQ otherwise (upstream add)."""
        uid = q.pod.uid
        self.delete(uid)
        exp = self.backoff_time(q)
        if not q.unschedulable_plugins and not q.pending_plugins:
            entry = [exp, next(self._tokens), q]
            heapq.heappush(self._errors, entry)
        else:
            # Without windows only the expiry orders podBackoffQ; equal expiries stay FIFO.
            key = self._key(q) if self.windows else 0
            entry = [exp, key, next(self._tokens), q]
            heapq.heappush(self._heap, entry)
            self._n_backoff += 1
        self._entries[uid] = entry

    def update(self, q: QueuedPodInfo) -> None:
        """The pod changed in place (priority may move it within its window)."""
        if q.pod.uid in self._entries:
            self.add(q)

    def delete(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        if entry is not None and len(entry) == 4:
            self._n_backoff -= 1  # it was in podBackoffQ
        return self._drop(uid)

    def len_backoff(self) -> int:
        """Pods in podBackoffQ alone: the ones Pop may take early."""
        return self._n_backoff

    # -- popping ------------------------------------------------------------------------------
    @staticmethod
    def _head(heap: list[list[Any]]) -> list[Any] | None:
        while heap:
            entry = heap[0]
            if entry[-1] is not None:
                return entry
            heapq.heappop(heap)
        return None

    def pop_backoff(self) -> QueuedPodInfo | None:
        """The head of podBackoffQ, backing off or not (upstream popBackoff)."""
        entry = self._head(self._heap)
        if entry is None:
            return None
        heapq.heappop(self._heap)
        q: QueuedPodInfo = entry[-1]
        del self._entries[q.pod.uid]
        self._n_backoff -= 1
        return q

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        """Every pod done backing off: podBackoffQ's in its order, then podErrorBackoffQ's."""
        out: list[QueuedPodInfo] = []
        start = self.align(self._clock())
        for heap in (self._heap, self._errors):
            while (entry := self._head(heap)) is not None and entry[0] < start:
                heapq.heappop(heap)
                q: QueuedPodInfo = entry[-1]
                del self._entries[q.pod.uid]
                if heap is self._heap:
                    self._n_backoff -= 1
                out.append(q)
        return out

    def next_completion(self) -> float:
        """When the earliest pod completes its backoff (inf when empty)."""
        best = math.inf
        for heap in (self._heap, self._errors):
            entry = self._head(heap)
            if entry is not None:
                best = min(best, self.completion_time(entry[-1]))
        return best
