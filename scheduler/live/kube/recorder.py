"""Events and PodScheduled=False conditions, written off the scheduling path.

The loop only enqueues; a few worker tasks send through the binder's events lane (its own API
client and rate limit). Events wait in a bounded queue: when it is full the new event is
dropped and counted, as client-go's event broadcaster drops when its 1000-deep channel is full
(best effort, never back-pressure on scheduling). Condition patches coalesce per pod (the
newest wins), so they are bounded by the number of pending pods and never dropped: the
PodScheduled condition is what users and tools read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from scheduler.live.kube.binder import Binder
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

MAX_QUEUED_EVENTS = 1000  # client-go tools/record maxQueuedEvents


@dataclass(slots=True)
class _Event:
    pod: PodInfo
    controller: str
    etype: str
    reason: str
    action: str
    note: str


class Recorder:
    def __init__(
        self,
        binder: Binder,
        *,
        max_queued: int = MAX_QUEUED_EVENTS,
        workers: int = 4,
        on_drop: Callable[[str], None] | None = None,
    ) -> None:
        self.binder = binder
        self.max_queued = max_queued
        self.workers = workers
        self.on_drop = on_drop
        self._events: deque[_Event] = deque()
        self._conditions: dict[str, tuple[PodInfo, str, str, str | None]] = {}
        self._wake = asyncio.Event()
        self._busy = 0
        self.dropped = 0

    # -- producers (the scheduling loop) -----------------------------------------------------
    def event(self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str) -> bool:
        """Queue an Event; False (and counted) if the queue is full."""
        if len(self._events) >= self.max_queued:
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop(reason)
            return False
        self._events.append(_Event(pod, controller, etype, reason, action, note))
        self._wake.set()
        return True

    def unschedulable(self, pod: PodInfo, reason: str, message: str, nominated: str | None = None) -> None:
        """Queue the PodScheduled=False patch (with the nominated node to set, if not None);
        replaces one still queued for the same pod, keeping a nomination it carried."""
        prev = self._conditions.get(pod.uid)
        if nominated is None and prev is not None:
            nominated = prev[3]
        self._conditions[pod.uid] = (pod, reason, message, nominated)
        self._wake.set()

    def forget_pod(self, uid: str) -> None:
        self._conditions.pop(uid, None)

    def pending(self) -> int:
        return len(self._events) + len(self._conditions)

    def clear(self) -> None:
        """Lease lost: nothing queued is ours to write any more."""
        self._events.clear()
        self._conditions.clear()

    # -- consumers ---------------------------------------------------------------------------
    async def _one(self) -> bool:
        """Write one queued item (conditions first). False when nothing was queued."""
        if self._conditions:
            uid = next(iter(self._conditions))
            pod, reason, message, nominated = self._conditions.pop(uid)
            self._busy += 1
            try:
                await self.binder.set_unschedulable(pod, reason, message, nominated)
            finally:
                self._busy -= 1
            return True
        if self._events:
            e = self._events.popleft()
            self._busy += 1
            try:
                await self.binder.event(e.pod, e.controller, e.etype, e.reason, e.action, e.note)
            finally:
                self._busy -= 1
            return True
        return False

    async def _worker(self) -> None:
        while True:
            try:
                if not await self._one():
                    self._wake.clear()
                    await self._wake.wait()
            except asyncio.CancelledError:
                raise
            except Exception:  # the binder logs API errors; anything else must not stop the worker
                log.exception("event_writer_failed")

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._worker(), name=f"event-writer-{i}") for i in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)

    async def flush(self) -> None:
        """Write everything queued (tests; graceful shutdown under a timeout)."""
        while await self._one():
            pass
        while self._busy:
            await asyncio.sleep(0.01)
