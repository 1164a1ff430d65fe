"""The scheduling queue (upstream backend/queue/scheduling_queue.go, queueing hints on).

Three places a pending pod can be:

* activeQ: a heap ordered by the profile's QueueSort plugin; ``pop`` takes its head.
* backoffQ: pods waiting out their backoff (initial x 2^(attempts-1), capped at max), ordered by
  expiry; moved to activeQ once it has passed.
* unschedulable: pods that failed and wait for a cluster event that may help them (the
  rejecting plugins' registered events and queueing hints decide), or for
  ``max_in_unschedulable`` to pass. Gated pods (PreEnqueue rejected) wait here too.

Plus the in-flight set: pods popped and not yet ``done``. Events that arrive while a pod is in
flight are recorded, so a pod that fails after the event that would have helped it is not
parked in unschedulable forever (upstream inFlightEvents).

Single-threaded: everything runs on one asyncio loop; time comes from an injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.backend.nominator import PodNominator
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    event_label,
    pod_update_events,
)
from scheduler.framework.interface import QueuedPodInfo, QueueSortPlugin
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework

log = structlog.get_logger(__name__)

# Upstream defaults (apis/config/v1 defaults.go, scheduling_queue.go).
DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
FLUSH_BACKOFF_PERIOD = 1.0
FLUSH_UNSCHEDULABLE_PERIOD = 30.0

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"

# Events that requeue any pod regardless of its rejecting plugins.
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent("*", ActionType.ALL, "ForceActivate")
_WILDCARDS = (EVENT_UNSCHEDULABLE_TIMEOUT, EVENT_FORCE_ACTIVATE)

Clock = Callable[[], float]


@dataclass(slots=True)
class _InFlight:
    q: QueuedPodInfo
    cycle: int
    events: list[tuple[ClusterEvent, Any, Any]] = field(default_factory=list)
    gone: bool = False  # deleted (or bound by someone) while in flight: never requeue


class _LessKey:
    """Heap key for a QueueSort plugin that only implements ``less``."""

    __slots__ = ("less", "q")

    def __init__(self, q: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        self.q = q
        self.less = less

    def __lt__(self, other: _LessKey) -> bool:
        return self.less(self.q, other.q)


class SchedulingQueue:
    """One queue for all profiles (upstream requires them to share the QueueSort plugin)."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        clock: Clock,
        *,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        queue_sort: QueueSortPlugin | None = None,
    ) -> None:
        self.frameworks = frameworks
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        if queue_sort is None:
            queue_sort = next(iter(frameworks.values())).queue_sort
        self._qs = queue_sort
        # Probe once whether the plugin offers a heap key; otherwise compare with less().
        self._use_key = type(queue_sort).sort_key is not QueueSortPlugin.sort_key
        self._active: list[tuple[Any, int, QueuedPodInfo]] = []
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._where: dict[str, tuple[str, int]] = {}  # uid -> (queue, token); stale heap entries differ
        self._pods: dict[str, QueuedPodInfo] = {}  # uid -> info, for every queued (not in-flight) pod
        self._in_flight: dict[str, _InFlight] = {}
        self._token = 0
        self._seq = 0
        self.scheduling_cycle = 0
        self._wakeup = asyncio.Event()
        self._closed = False
        # Registered events per profile per plugin, read once from the plugins.
        self._hints: dict[str, dict[str, list[ClusterEventWithHint]]] = {}
        self._plugins: dict[str, frozenset[str]] = {p: frozenset(fw.plugins) for p, fw in frameworks.items()}
        for profile, fw in frameworks.items():
            reg: dict[str, list[ClusterEventWithHint]] = {}
            for name, pl in fw.enqueue_extensions():
                try:
                    reg[name] = list(pl.events_to_register())
                except NotImplementedError:
                    continue
            self._hints[profile] = reg
        # Optional observer for metrics: (queue, event_label) per pod entering a queue.
        self.on_incoming: Callable[[str, str], None] | None = None
        # Optional observer of each queueing hint run: (plugin, event, "Queue"|"QueueSkip"|"Error", seconds).
        self.on_hint: Callable[[str, ClusterEvent, str, float], None] | None = None
        # Pods nominated to nodes by preemption (upstream PriorityQueue embeds the nominator).
        self.nominator = PodNominator()

    # -- bookkeeping -------------------------------------------------------------------------
    def _next_token(self) -> int:
        self._token += 1
        return self._token

    def _incoming(self, queue: str, event: str) -> None:
        if self.on_incoming is not None:
            self.on_incoming(queue, event)

    def _heap_key(self, q: QueuedPodInfo) -> Any:
        return self._qs.sort_key(q) if self._use_key else _LessKey(q, self._qs.less)

    def _remove(self, uid: str) -> QueuedPodInfo | None:
        """Take a pod out of whichever queue holds it (heap entries die lazily)."""
        where = self._where.pop(uid, None)
        q = self._pods.pop(uid, None)
        if where is not None and where[0] in (UNSCHEDULABLE, GATED):
            self._unschedulable.pop(uid, None)
        return q

    def _push_active(self, q: QueuedPodInfo, event: str) -> bool:
        """Run PreEnqueue, then put the pod in activeQ (or park it as gated)."""
        fw = self.frameworks.get(q.pod.scheduler_name)
        s = fw.run_pre_enqueue(q.pod) if fw is not None else None
        uid = q.pod.uid
        self._remove(uid)
        if s is not None:
            q.gated = True
            # Upstream adds the gating plugin to the rejectors: a pod gated after a failed
            # attempt (async preemption) keeps the plugins whose events may help it.
            if s.plugin:
                q.unschedulable_plugins = q.unschedulable_plugins | {s.plugin}
            q.gating_plugin = s.plugin
            self._unschedulable[uid] = q
            self._where[uid] = (GATED, 0)
            self._pods[uid] = q
            self._incoming(GATED, event)
            return False
        q.gated = False
        q.gating_plugin = ""
        token = self._next_token()
        heapq.heappush(self._active, (self._heap_key(q), token, q))
        self._where[uid] = (ACTIVE, token)
        self._pods[uid] = q
        self._incoming(ACTIVE, event)
        self._wakeup.set()
        if event in ("PodAdd", "UnscheduledPodUpdate"):
            self.nominator.add(q.pod)
        return True

    def _push_backoff(self, q: QueuedPodInfo, event: str) -> None:
        uid = q.pod.uid
        self._remove(uid)
        token = self._next_token()
        heapq.heappush(self._backoff, (self.backoff_expiry(q), token, q))
        self._where[uid] = (BACKOFF, token)
        self._pods[uid] = q
        self._incoming(BACKOFF, event)
        self._wakeup.set()  # the pop loop recomputes its sleep until the next expiry

    def _push_unschedulable(self, q: QueuedPodInfo, event: str) -> None:
        uid = q.pod.uid
        self._remove(uid)
        self._unschedulable[uid] = q
        self._where[uid] = (UNSCHEDULABLE, 0)
        self._pods[uid] = q
        self._incoming(UNSCHEDULABLE, event)

    # -- backoff -----------------------------------------------------------------------------
    def backoff_duration(self, q: QueuedPodInfo) -> float:
        """initial x 2^(attempts-1), capped at max; no penalty before the first attempt."""
        if q.attempts == 0:
            return 0.0
        d = self.initial_backoff
        for _ in range(1, q.attempts):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def backoff_expiry(self, q: QueuedPodInfo) -> float:
        return q.timestamp + self.backoff_duration(q)

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        return self.backoff_expiry(q) > self.clock()

    # -- watch-driven changes ----------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A new pending pod (upstream Add): straight to activeQ unless PreEnqueue gates it."""
        uid = pod.uid
        if uid in self._in_flight or uid in self._pods:
            self.update(None, pod)
            return
        self._seq += 1
        q = QueuedPodInfo(pod, self.clock(), self._seq)
        self._push_active(q, "PodAdd")

    def update(self, old: PodInfo | None, new: PodInfo) -> None:
        """A pending pod changed (upstream Update): updated in place wherever it is."""
        uid = new.uid
        fl = self._in_flight.get(uid)
        if fl is not None:
            # Requeued later with the latest version; the update may be what helps it.
            prev = fl.q.pod
            fl.q.pod = new
            for ev in pod_update_events(old or prev, new):
                fl.events.append((ev, old or prev, new))
            return
        q = self._pods.get(uid)
        if q is None:
            self.add(new)
            return
        prev = q.pod
        q.pod = new
        self.nominator.update(old or prev, new)
        where = self._where[uid][0]
        if where == ACTIVE:
            # Re-push: the sort key may have changed; the old heap entry dies lazily.
            token = self._next_token()
            heapq.heappush(self._active, (self._heap_key(q), token, q))
            self._where[uid] = (ACTIVE, token)
            return
        if where == BACKOFF:
            return
        # Unschedulable or gated: the update itself may make the pod schedulable.
        if where == GATED:
            if q.gated and self.frameworks.get(new.scheduler_name) is not None:
                fw = self.frameworks[new.scheduler_name]
                if fw.run_pre_enqueue(new) is None:
                    self._requeue(q, "UnscheduledPodUpdate")
            return
        for ev in pod_update_events(old or prev, new):
            if self._worth_requeuing(q, ev, old or prev, new) == QueueingHint.QUEUE:
                self._requeue(q, event_label(ev))
                return

    def delete(self, uid: str) -> None:
        """The pod was deleted or got bound: it leaves the queue and is never requeued."""
        fl = self._in_flight.get(uid)
        if fl is not None:
            fl.gone = True
        self._remove(uid)
        self.nominator.delete(uid)

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods or uid in self._in_flight

    def get(self, uid: str) -> QueuedPodInfo | None:
        q = self._pods.get(uid)
        if q is None and uid in self._in_flight:
            return self._in_flight[uid].q
        return q

    # -- cluster events ----------------------------------------------------------------------
    def _worth_requeuing(self, q: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
        rejectors = q.unschedulable_plugins | q.pending_plugins
        if not rejectors or event in _WILDCARDS:
            return QueueingHint.QUEUE
        reg = self._hints.get(q.pod.scheduler_name, {})
        known = self._plugins.get(q.pod.scheduler_name, frozenset())
        for plugin in rejectors:
            registered = reg.get(plugin)
            if registered is None:
                if plugin not in known:
                    # Not a plugin of the profile (a waiting pod rejected through the API has
                    # none): no event was registered for it, only wildcards move the pod.
                    continue
                # A plugin without EnqueueExtensions is interested in every event (upstream).
                return QueueingHint.QUEUE
            for ewh in registered:
                if not ewh.event.matches(event):
                    continue
                if ewh.hint is None:
                    return QueueingHint.QUEUE
                observe = self.on_hint
                t0 = time.perf_counter() if observe is not None else 0.0
                try:
                    h = ewh.hint(q.pod, old, new)
                except Exception as exc:  # a failing hint must not strand the pod
                    if observe is not None:
                        observe(plugin, event, "Error", time.perf_counter() - t0)
                    log.warning("queueing_hint_failed", pod=q.pod.key, plugin=plugin, error=str(exc))
                    return QueueingHint.QUEUE
                if observe is not None:
                    label = "Queue" if h == QueueingHint.QUEUE else "QueueSkip"
                    observe(plugin, event, label, time.perf_counter() - t0)
                if h == QueueingHint.QUEUE:
                    return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _gating_plugin_interested(self, q: QueuedPodInfo, event: ClusterEvent) -> bool:
        reg = self._hints.get(q.pod.scheduler_name, {}).get(q.gating_plugin)
        if not reg:
            return False
        return any(ewh.event.matches(event) for ewh in reg)

    def registered_actions(self, resource: str) -> ActionType:
        """The actions on ``resource`` some profile's plugin registered (upstream unionedGVKs):
        kube-scheduler installs a handler only for those, so other events move nobody. A
        wildcard registration does not count (upstream starts no informer for "*")."""
        acts = ActionType(0)
        for reg in self._hints.values():
            for registered in reg.values():
                for ewh in registered:
                    if ewh.event.resource == resource:
                        acts |= ewh.event.action
        return acts

    def _requeue(self, q: QueuedPodInfo, event: str) -> str:
        """queueAfterBackoff: backoffQ while backing off, else activeQ."""
        if self.is_backing_off(q):
            self._push_backoff(q, event)
            return BACKOFF
        return ACTIVE if self._push_active(q, event) else GATED

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: Any = None, new: Any = None, pre_check: Callable[[PodInfo], bool] | None = None
    ) -> int:
        """A cluster event happened: requeue the unschedulable pods it may help. Returns how many moved."""
        for fl in self._in_flight.values():
            fl.events.append((event, old, new))
        moved = 0
        for uid, q in list(self._unschedulable.items()):
            # A gated pod is looked at only for events its gating plugin registered (upstream
            # GatingPluginEvents); PreEnqueue runs again when it moves.
            gated = self._where.get(uid, ("", 0))[0] == GATED and event not in _WILDCARDS
            if gated and not self._gating_plugin_interested(q, event):
                continue
            if pre_check is not None and not pre_check(q.pod):
                continue
            if self._worth_requeuing(q, event, old, new) == QueueingHint.QUEUE:
                self._requeue(q, event_label(event))
                moved += 1
        return moved

    def activate(self, pods: Mapping[str, PodInfo]) -> None:
        """Move pods from unschedulable (gated included) or backoffQ straight to activeQ
        (PreEnqueue still runs); a pod in flight gets the ForceActivate event, so it is
        requeued when its attempt fails; any other pod is ignored (upstream Activate)."""
        for pod in pods.values():
            uid = pod.uid
            where = self._where.get(uid, ("", 0))[0]
            q = self._pods.get(uid)
            if q is not None and where in (UNSCHEDULABLE, GATED, BACKOFF):
                self._push_active(q, EVENT_FORCE_ACTIVATE.label)
                continue
            fl = self._in_flight.get(uid)
            if fl is not None:
                fl.events.append((EVENT_FORCE_ACTIVATE, None, pod))

    def release_gated(self, uid: str, plugin: str, event: str) -> str:
        """Run PreEnqueue again for a pod that ``plugin`` gated (backoffQ/activeQ if it now
        passes). For a gate whose end no cluster event announces, e.g. an async preemption whose
        last victim another preemptor had already deleted. Returns where the pod is now."""
        q = self._unschedulable.get(uid)
        if q is None or self._where.get(uid, ("", 0))[0] != GATED or q.gating_plugin != plugin:
            return self.where(uid)
        return self._requeue(q, event)

    # -- scheduling-cycle side ---------------------------------------------------------------
    def pop_nowait(self) -> QueuedPodInfo | None:
        self.flush_backoff_completed()
        while self._active:
            _, token, q = heapq.heappop(self._active)
            uid = q.pod.uid
            if self._where.get(uid) != (ACTIVE, token):
                continue  # stale entry
            del self._where[uid]
            del self._pods[uid]
            self.scheduling_cycle += 1
            q.attempts += 1
            if q.initial_attempt_timestamp is None:
                q.initial_attempt_timestamp = self.clock()
            # Plugins are recorded afresh by this attempt.
            q.unschedulable_plugins = set()
            q.pending_plugins = set()
            self._in_flight[uid] = _InFlight(q, self.scheduling_cycle)
            return q
        return None

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for the head of activeQ; None once the queue is closed."""
        while not self._closed:
            q = self.pop_nowait()
            if q is not None:
                return q
            self._wakeup.clear()
            timeout = None
            if self._backoff:
                timeout = max(0.0, min(FLUSH_BACKOFF_PERIOD, self._next_backoff_expiry() - self.clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
        return None

    def _next_backoff_expiry(self) -> float:
        while self._backoff:
            exp, token, q = self._backoff[0]
            if self._where.get(q.pod.uid) == (BACKOFF, token):
                return exp
            heapq.heappop(self._backoff)
        return float("inf")

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    def add_unschedulable_if_not_present(self, q: QueuedPodInfo) -> str:
        """A failed attempt comes back (upstream AddUnschedulableIfNotPresent, hints on).

        ``q.unschedulable_plugins`` holds the plugins that rejected it (empty for an error).
        Returns the queue it went to, or "" when the pod is gone."""
        uid = q.pod.uid
        fl = self._in_flight.pop(uid, None)
        if fl is not None and fl.gone:
            return ""
        if uid in self._pods:
            return self._where[uid][0]
        q.timestamp = self.clock()
        q.flushed = False
        if not q.unschedulable_plugins and not q.pending_plugins:
            q.gated = False
            self._push_backoff(q, "ScheduleAttemptFailure")
            return BACKOFF
        q.unschedulable_count += 1
        if fl is None:
            # done() was called already (a PreBind/Bind failure): like upstream, which finds no
            # in-flight events for the pod, retry it after backoff.
            return self._requeue(q, "ScheduleAttemptFailure")
        for ev, old, new in fl.events:
            if self._worth_requeuing(q, ev, old, new) == QueueingHint.QUEUE:
                return self._requeue(q, "ScheduleAttemptFailure")
        self._push_unschedulable(q, "ScheduleAttemptFailure")
        return UNSCHEDULABLE

    def done(self, uid: str) -> None:
        """The pod's attempt (including binding) is over."""
        self._in_flight.pop(uid, None)

    def in_flight(self) -> list[QueuedPodInfo]:
        return [fl.q for fl in self._in_flight.values()]

    def in_flight_events(self) -> list[list[tuple[ClusterEvent, Any, Any]]]:
        """The events recorded for each pod in flight, (event, old, new) each (for metrics)."""
        return [fl.events for fl in self._in_flight.values()]

    # -- periodic flushes --------------------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        now = self.clock()
        moved = 0
        while self._backoff:
            exp, token, q = self._backoff[0]
            if self._where.get(q.pod.uid) != (BACKOFF, token):
                heapq.heappop(self._backoff)
                continue
            if exp > now:
                break
            heapq.heappop(self._backoff)
            self._push_active(q, "BackoffComplete")
            moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        now = self.clock()
        old = [q for q in self._unschedulable.values() if now - q.timestamp > self.max_in_unschedulable]
        for q in old:
            q.flushed = True
            self._requeue(q, EVENT_UNSCHEDULABLE_TIMEOUT.label)
        return len(old)

    async def run_flushers(self, stop: asyncio.Event | None = None) -> None:
        """Upstream's goroutines: backoff every second, unschedulable leftovers every 30 s."""
        last_leftover = self.clock()
        while not self._closed and not (stop is not None and stop.is_set()):
            await asyncio.sleep(FLUSH_BACKOFF_PERIOD)
            self.flush_backoff_completed()
            if self.clock() - last_leftover >= FLUSH_UNSCHEDULABLE_PERIOD:
                last_leftover = self.clock()
                self.flush_unschedulable_leftover()

    # -- introspection -----------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        c = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
        for where, _ in self._where.values():
            c[where] += 1
        return c

    def where(self, uid: str) -> str:
        if uid in self._in_flight:
            return "inflight"
        w = self._where.get(uid)
        return w[0] if w else ""

    def pending(self) -> Iterable[QueuedPodInfo]:
        return list(self._pods.values())


def sort_queued(infos: list[QueuedPodInfo], qs: QueueSortPlugin) -> list[QueuedPodInfo]:
    """Helper for callers that want activeQ order of a plain list (tests, debug dumps)."""
    if type(qs).sort_key is not QueueSortPlugin.sort_key:
        return sorted(infos, key=qs.sort_key)

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if qs.less(a, b) else (1 if qs.less(b, a) else 0)

    return sorted(infos, key=functools.cmp_to_key(cmp))
