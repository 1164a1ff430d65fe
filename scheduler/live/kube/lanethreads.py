"""The threads behind a write lane: blocking API calls run here (status patches, preemption's
deletes, reads; Bindings and Events only through a proxy, see loophttp.py), their results go
back to the event loop in batches.

``loop.run_in_executor`` on a ThreadPoolExecutor pays, per call, a concurrent Future with its
Condition, an idle-thread semaphore, a chained asyncio Future and one wake-up of the loop
through its self-pipe. At a few hundred writes a second that handoff took about 8% of the
scheduler's CPU on SchedulingBasic, more than building the requests. Here a call is a tuple on
a C queue, and a thread that finishes one wakes the loop only when no earlier result is
waiting: one wake-up delivers every result that arrived meanwhile.

The threads run under SCHED_BATCH where Linux offers it: a write handed to an idle thread then
no longer preempts the event loop that handed it over (wake-up preemption) while the loop still
holds the GIL, only for the new thread to block on that GIL at once. On 2 busy cores that
round trip cost the loop about a tenth of its CPU per pod on SchedulingDaemonset and
SchedulingWhileGated (bench/live.py, 1.03-1.14 -> 0.92-1.04 and 0.93 -> 0.84 CPU-s per 1,000
pods). The threads spend their time waiting on sockets, so the policy's longer time slices
cost them nothing.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]


def batch_policy() -> bool:
    """Put the calling thread under SCHED_BATCH; False where the platform or a seccomp profile
    does not allow it (the thread then keeps the default policy)."""
    setter = getattr(os, "sched_setscheduler", None)
    policy = getattr(os, "SCHED_BATCH", None)
    if setter is None or policy is None:
        return False
    try:
        setter(0, policy, os.sched_param(0))  # 0: this thread (Linux applies it per thread)
    except OSError:
        return False
    return True


class _Results:
    """Finished calls of one event loop, waiting for it to pick them up."""

    __slots__ = ("items", "scheduled")

    def __init__(self) -> None:
        self.items: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self.scheduled = False


class LaneThreads:
    """Up to ``workers`` threads, started as calls need them, that run calls in order of
    submission."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers = max(1, workers)
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._results: dict[asyncio.AbstractEventLoop, _Results] = {}
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run ``fn(*args)`` in a lane thread; the future completes on the running loop."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        spawn: threading.Thread | None = None
        with self._lock:
            if self._closed:
                raise RuntimeError(f"lane {self.name} is shut down")
            # Queued first: a thread started for it takes it at once.
            self._jobs.put((loop, fut, fn, args))
            if self._idle == 0 and len(self._threads) < self.workers:
                spawn = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
                self._threads.append(spawn)
            elif self._idle > 0:
                self._idle -= 1  # this job will wake one idle thread
        if spawn is not None:
            spawn.start()
        return fut

    def _work(self) -> None:
        batch_policy()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, fut, fn, args = job
            try:
                result, error = fn(*args), None
            except BaseException as exc:
                result, error = None, exc
            with self._lock:
                self._idle += 1
                res = self._results.get(loop)
                if res is None:
                    res = self._results[loop] = _Results()
                res.items.append((fut, result, error))
                wake = not res.scheduled
                res.scheduled = True
            if wake:
                try:
                    loop.call_soon_threadsafe(self._deliver, loop)
                except RuntimeError:  # the loop is closed: nobody awaits these any more
                    with self._lock:
                        self._results.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            res = self._results.pop(loop, None)
        if res is None:
            return
        for fut, result, error in res.items:
            if fut.cancelled():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)

    def shutdown(self) -> None:
        """No new calls; calls not started are cancelled; threads end after their current call."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                loop, fut, _, _ = job
                # Cancelled on its own loop's thread, as futures require.
                if not loop.is_closed():
                    loop.call_soon_threadsafe(fut.cancel)
        for _ in threads:
            self._jobs.put(None)
