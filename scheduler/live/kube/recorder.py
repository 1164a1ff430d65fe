"""Kubernetes Events (events.k8s.io/v1) and PodScheduled=False conditions: built here, written
off the scheduling path (upstream's events library and schedule_one.go updatePod).

The loop only enqueues; a few worker tasks send through the events lane (its own API client and
rate limit). Events wait in a bounded queue: when it is full the new event is dropped and
counted, as client-go's event broadcaster drops when its 1000-deep channel is full (best
effort, never back-pressure on scheduling). Series as client-go's events library keeps them
(tools/events event_broadcaster.go): an Event isomorphic to one still cached (same type,
action, reason, controller and regarding object at the same resourceVersion; the note does
not count) is not created again: the first repeat patches the cached Event's series (count 2),
later ones only count in memory; every 30 minutes the series are written again, and every 6
minutes those unobserved for 6 minutes are written a last time and dropped, as are single
Events older than that. Condition patches coalesce per
pod (the newest wins), so they are bounded by the number of pending pods and never dropped:
the PodScheduled condition is what users and tools read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.live.kube.transport import ApiError, CoreAPI, Fenced, Lane, micro_time, rfc3339
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

MAX_QUEUED_EVENTS = 1000  # client-go tools/record maxQueuedEvents
# client-go tools/events: series written again (refreshTime), series and single Events done
# with (finishTime).
EVENT_SERIES_REFRESH = 30 * 60.0
EVENT_SERIES_FINISH = 6 * 60.0
# Cached Events at most; past it the oldest go first (upstream keeps every Event of the last 6
# minutes: hundreds of thousands at a few hundred binds a second).
MAX_CACHED_EVENTS = 20000
# Pods whose last written PodScheduled condition is remembered at most (see Recorder._written).
MAX_WRITTEN = 50000
# What Recorder._written holds for a pod whose last PodScheduled write may or may not have landed:
# equal to no real (reason, message), so the next condition is never skipped as already there.
UNKNOWN_WRITE = ("", "")
CONDITION_RETRY_DELAY = 1.0  # seconds before a PodScheduled write the API server failed is tried again
# Upstream events.k8s.io note limit (truncateMessage).
NOTE_LENGTH_LIMIT = 1024


def truncate_message(message: str) -> str:
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


@dataclass(slots=True)
class _Event:
    pod: PodInfo
    controller: str
    etype: str
    reason: str
    action: str
    note: str


@dataclass(slots=True)
class _Series:
    """A cached Event: its name and time; count 1 until an isomorphic one came (then a series)."""

    namespace: str
    name: str
    count: int
    first: float
    last: float


# (pod uid, its resourceVersion, type, action, reason, reporting controller): upstream getKey
# over the Event (regarding is the pod's ObjectReference, resourceVersion included).
_SeriesKey = tuple[str, str, str, str, str, str]


class Recorder:
    """``event`` and ``unschedulable`` queue; ``run`` writes what is queued through ``lane``
    with ``api`` (the Binder's events lane and client)."""

    def __init__(
        self,
        api: CoreAPI,
        lane: Lane,
        *,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
        max_queued: int = MAX_QUEUED_EVENTS,
        workers: int | None = None,
        on_drop: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.lane = lane
        self.hostname = hostname or socket.gethostname()
        self.clock = clock
        self.max_queued = max_queued
        # Writer tasks: as many as the lane has threads (more would only queue in it).
        self.workers = lane.workers if workers is None else workers
        self.on_drop = on_drop
        self._events: deque[_Event] = deque()
        self._conditions: dict[str, tuple[PodInfo, str, str, str | None]] = {}
        self._writing: dict[str, asyncio.Event] = {}  # pods whose PodScheduled patch is in flight
        self._series: dict[_SeriesKey, _Series] = {}  # insertion order = oldest first
        self._wake = asyncio.Event()
        self._busy = 0
        self.dropped = 0
        # A condition patch the API server failed for a passing reason is queued again after
        # this long (unless a newer one for the pod is queued); ``clear`` cancels the retries.
        self.retry_delay = CONDITION_RETRY_DELAY
        self._generation = 0
        # The newest condition queued per pod (a sequence number) while it is unwritten or being
        # retried: a retry of an older one must never overwrite a newer one.
        self._latest: dict[str, int] = {}
        self._seq = 0
        # The PodScheduled (reason, message) this recorder last wrote per pod. A retried write can
        # land just before the pod's next attempt, while the watched pod still shows the
        # condition before it: that attempt must not skip its write as "already so".
        self._written: dict[str, tuple[str, str]] = {}

    # -- producers (the scheduling loop, preemption) -----------------------------------------
    def event(self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str) -> bool:
        """Queue an Event (its note cut to the API's limit); False (and counted) if the queue is full."""
        if len(self._events) >= self.max_queued:
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop(reason)
            return False
        if len(note) > NOTE_LENGTH_LIMIT:
            note = truncate_message(note)
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
        self._seq += 1
        self._latest[pod.uid] = self._seq
        self._wake.set()

    def forget_pod(self, uid: str) -> None:
        """The pod is gone: drop its queued condition (its cached Events expire as any)."""
        self._conditions.pop(uid, None)
        self._latest.pop(uid, None)
        self._written.pop(uid, None)

    def pending(self) -> int:
        return len(self._events) + len(self._conditions)

    def clear(self) -> None:
        """Lease lost: nothing queued is ours to write any more."""
        self._generation += 1
        self._latest.clear()
        self._events.clear()
        self._conditions.clear()
        self._written.clear()

    def has_condition(self, uid: str) -> bool:
        """A PodScheduled patch of this pod is queued or being written."""
        return uid in self._conditions or uid in self._writing

    async def settle(self, uid: str) -> None:
        """Write this pod's PodScheduled patch now, and wait for one being written. Its binding
        calls this first: upstream patches the failed attempt's condition and nomination before
        the next cycle can start, so they never land on a pod already bound."""
        ev = self._writing.get(uid)
        if ev is not None:
            await ev.wait()
        if uid in self._conditions:
            await self._write_condition(uid)
        self._written.pop(uid, None)  # about to be bound: no more conditions to compare

    async def _write_condition(self, uid: str) -> None:
        pod, reason, message, nominated = self._conditions.pop(uid)
        done = self._writing[uid] = asyncio.Event()
        self._busy += 1
        try:
            await self.write_unschedulable(pod, reason, message, nominated, seq=self._latest.get(uid))
        finally:
            self._busy -= 1
            done.set()
            if self._writing.get(uid) is done:
                del self._writing[uid]
            if uid in self._conditions:
                self._wake.set()  # a newer condition of the pod waited for this write

    # -- consumers ---------------------------------------------------------------------------
    async def _one(self) -> bool:
        """Write one queued item (conditions first). False when nothing could be taken: a
        condition whose pod has a write in flight waits for the worker writing it."""
        if self._conditions:
            # Never two writes of one pod's condition at once: the older could land last.
            writing = self._writing
            uid = next((u for u in self._conditions if u not in writing), None)
            if uid is not None:
                await self._write_condition(uid)
                return True
        if self._events:
            e = self._events.popleft()
            self._busy += 1
            try:
                await self.write_event(e.pod, e.controller, e.etype, e.reason, e.action, e.note)
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
            except Exception:  # API errors are logged where written; anything else must not stop the worker
                log.exception("event_writer_failed")

    async def _series_keeper(self) -> None:
        next_refresh = self.clock() + EVENT_SERIES_REFRESH
        while True:
            await asyncio.sleep(EVENT_SERIES_FINISH)
            try:
                await self.finish_series()
                if self.clock() >= next_refresh:
                    next_refresh += EVENT_SERIES_REFRESH
                    await self.refresh_series()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event_series_failed")

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._worker(), name=f"event-writer-{i}") for i in range(self.workers)]
        tasks.append(asyncio.create_task(self._series_keeper(), name="event-series"))
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)

    async def flush(self) -> None:
        """Write everything queued (tests; graceful shutdown under a timeout)."""
        while True:
            while await self._one():
                pass
            if not self._busy and not self._conditions and not self._events:
                return
            await asyncio.sleep(0.01)  # writes in flight, or a condition queued behind one

    # -- the writes --------------------------------------------------------------------------
    def _event_body(
        self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str, now: float
    ) -> dict[str, Any]:
        # Event names follow the events library: <object>.<hex nanoseconds>.
        name = f"{pod.name}.{int(now * 1e9):x}"
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.hostname}",
            "action": action,
            "reason": reason,
            "type": etype,
            "note": note,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
                "resourceVersion": pod.resource_version,
            },
        }

    async def write_event(
        self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str
    ) -> None:
        """Create the Event, unless an isomorphic one is cached: then the first repeat patches
        its series (count 2) and later ones are only counted (upstream recordToSink)."""
        now = self.clock()
        key = (pod.uid, pod.resource_version, etype, action, reason, controller)
        s = self._series.get(key)
        if s is not None:
            s.count += 1
            s.last = now
            if s.count > 2:
                return  # counted; written by the next refresh or finish
            # The cached Event's body, should the API have lost it (its name is the first one's).
            await self._write_series(s, self._event_body(pod, controller, etype, reason, action, note, s.first))
            return
        body = self._event_body(pod, controller, etype, reason, action, note, now)
        # Cached before the write, as upstream: an isomorphic Event meanwhile is a repeat.
        self._series[key] = _Series(pod.namespace, body["metadata"]["name"], 1, now, now)
        if len(self._series) > MAX_CACHED_EVENTS:
            self._prune(now)
        try:
            if self.lane.loop_io:
                await self.lane.run_async(self.api.create_event_async, pod.namespace, body)  # type: ignore[attr-defined]
            else:
                await self.lane.run(self.api.create_event, pod.namespace, body)
        except ApiError as exc:
            # Events are best effort, as in client-go.
            log.warning("event_write_failed", pod=pod.key, reason=reason, status=exc.status, error=exc.message)

    async def _write_series(self, s: _Series, body: dict[str, Any] | None = None) -> bool:
        """Patch the cached Event's series; an Event gone from the API (404) is created again
        with its series when its ``body`` is given (upstream recordEvent). Returns whether it is
        done with: written, or refused for good (not a passing error worth another try)."""
        patch = {"series": {"count": s.count, "lastObservedTime": micro_time(s.last)}}
        try:
            await self.lane.run(self.api.patch_event, s.namespace, s.name, patch)
            return True
        except ApiError as exc:
            if exc.status == 404 and body is not None:
                body["series"] = patch["series"]
                try:
                    await self.lane.run(self.api.create_event, s.namespace, body)  # under its old name
                    return True
                except ApiError as exc2:
                    exc = exc2
            log.warning("event_write_failed", event_object=f"{s.namespace}/{s.name}", status=exc.status,
                        error=exc.message)
            return not (exc.status == 0 or exc.status == 429 or exc.status >= 500)

    async def refresh_series(self) -> None:
        """Every series written again (upstream refreshExistingEventSeries)."""
        for s in list(self._series.values()):
            if s.count > 1:
                await self._write_series(s)

    async def finish_series(self) -> None:
        """Series unobserved for EVENT_SERIES_FINISH written a last time and dropped, single
        Events that old dropped (upstream finishSeries)."""
        limit = self.clock() - EVENT_SERIES_FINISH
        for key, s in list(self._series.items()):
            if s.count > 1:
                if s.last < limit and await self._write_series(s):
                    self._series.pop(key, None)
            elif s.first < limit:
                self._series.pop(key, None)

    def _prune(self, now: float) -> None:
        limit = now - EVENT_SERIES_FINISH
        for k, s in list(self._series.items()):
            if s.count == 1 and s.first < limit:
                del self._series[k]
        while len(self._series) > MAX_CACHED_EVENTS:
            del self._series[next(iter(self._series))]

    async def write_unschedulable(
        self, pod: PodInfo, reason: str, message: str, nominated: str | None = None, *, seq: int | None = None
    ) -> bool:
        """PodScheduled=False with reason and message; skipped when the pod already says so
        (upstream updatePod via podutil.UpdatePodCondition). ``nominated`` (not None) sets
        status.nominatedNodeName, "" clearing it, in the same patch. Returns whether it patched.
        ``seq``: the queued condition's number; a passing failure of it is retried while it is
        the pod's newest."""
        status = (pod.raw.get("status") or {}) if isinstance(pod.raw, dict) else {}
        nnn_change = nominated is not None and nominated != str(status.get("nominatedNodeName") or "")
        ours = self._written.get(pod.uid, (reason, message)) == (reason, message)
        for c in status.get("conditions") or []:
            if (
                c.get("type") == "PodScheduled"
                and c.get("status") == "False"
                and c.get("reason") == reason
                and c.get("message") == message
                and not nnn_change
                and ours
            ):
                return False
        now = self.clock()
        cond: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(now),
        }
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("lastTransitionTime"):
                cond["lastTransitionTime"] = c["lastTransitionTime"]  # status unchanged: keep it
        body: dict[str, Any] = {"status": {"conditions": [cond]}}
        if nnn_change:
            body["status"]["nominatedNodeName"] = nominated or None
        try:
            await self.lane.run(self.api.patch_pod_status, pod.namespace, pod.name, body)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("pod_condition_update_failed", pod=pod.key, status=exc.status, error=exc.message)
            # A reset or a 5xx: the server may have taken it (the answer lost on the way back).
            uncertain = exc.status == 0 or exc.status >= 500
            if uncertain:
                # What the pod says is unknown until the watch shows it: its next condition is
                # written even if a stale copy of the pod already carries it.
                self._remember_written(pod.uid, UNKNOWN_WRITE)
            if seq is not None and not isinstance(exc, Fenced) and (uncertain or exc.status == 429):
                self._retry_later(pod, reason, message, nominated, seq)
            return False
        self._remember_written(pod.uid, (reason, message))
        if seq is not None and self._latest.get(pod.uid) == seq:
            del self._latest[pod.uid]
        return True

    def _remember_written(self, uid: str, written: tuple[str, str]) -> None:
        """The pod's last PodScheduled write, newest last; the oldest go first past the bound
        (pods deleted while pending)."""
        self._written.pop(uid, None)
        self._written[uid] = written
        if len(self._written) > MAX_WRITTEN:
            del self._written[next(iter(self._written))]

    def _retry_later(self, pod: PodInfo, reason: str, message: str, nominated: str | None, seq: int) -> None:
        """The condition is what users and tools read: a write lost to a 5xx, a throttle or a
        reset is queued again (upstream's next attempt would rewrite it, minutes later), unless
        a newer condition for the pod came meanwhile."""
        generation = self._generation

        def again() -> None:
            if generation == self._generation and self._latest.get(pod.uid) == seq and pod.uid not in self._conditions:
                log.info("pod_condition_retry", pod=pod.key, reason=reason)
                self._conditions[pod.uid] = (pod, reason, message, nominated)
                self._wake.set()

        asyncio.get_running_loop().call_later(self.retry_delay, again)
