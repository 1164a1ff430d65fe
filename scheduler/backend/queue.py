"""The scheduling queue (upstream backend/queue/scheduling_queue.go, PriorityQueue), as v1.36.3
runs it: queueing hints on (GA, locked) and SchedulerPopFromBackoffQ on (beta, default on).

A pending pod is in one of:

* activeQ (active_queue.py): the QueueSort plugin's order; ``pop`` takes its head, or, when it
  is empty, the head of podBackoffQ (PopFromBackoffQ).
* backoffQ (backoff_queue.py): waiting out a backoff that grows with its failed attempts, in
  1-second windows; moved to activeQ by the flush aligned on those windows.
* unschedulable: rejected, waiting for a cluster event the rejecting plugins registered and
  whose hint says it may help, or for ``max_in_unschedulable`` to pass. Pods a PreEnqueue
  plugin holds (gated) wait here too, looked at only for their gating plugin's events.

Plus the pods in flight, from ``pop`` to ``done``, and the events seen meanwhile: a pod that fails
after the event that would have helped it is requeued at once rather than parked.

Which queue a moved pod goes to (upstream queueingStrategy): a hint of a plugin that returned
Pending puts it straight into activeQ; a hint of a rejecting plugin puts it into backoffQ while
it is backing off, activeQ otherwise. PreEnqueue runs when a pod enters activeQ, and, with
PopFromBackoffQ, when it enters backoffQ instead of when it leaves it.

Upstream's moveRequestCycle only serves the queue without hints, which v1.36.3 no longer has.
Single-threaded: everything runs on one asyncio loop; time comes from an injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.backend.active_queue import ActiveQueue, LoggedEvent
from scheduler.backend.backoff_queue import WINDOW, BackoffQueue
from scheduler.backend.hints import QueueingHintMap, build_hint_map, is_wildcard, matches
from scheduler.backend.nominator import PodNominator
from scheduler.backend.unschedulable_pods import UnschedulablePods
from scheduler.config.features import DEFAULT_GATES
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    QueueingHint,
    QueueingHintFn,
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
FLUSH_BACKOFF_PERIOD = WINDOW
FLUSH_UNSCHEDULABLE_PERIOD = 30.0
#: SchedulerPopFromBackoffQ's default (beta since 1.33, on in v1.36.3); run reads --feature-gates.
POP_FROM_BACKOFF_Q = DEFAULT_GATES.enabled("SchedulerPopFromBackoffQ")

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"

# Events that requeue any pod regardless of its rejecting plugins.
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent("*", ActionType.ALL, "ForceActivate")
# An update of an unscheduled pod that changed nothing more specific (upstream's general
# UnschedulablePod/Update): only a registration covering every update action matches it.
EVENT_POD_UPDATE = ClusterEvent("UnscheduledPod", ActionType.UPDATE)

# Why a pod entered a queue (upstream's event labels of scheduler_queue_incoming_pods_total).
POD_ADD = "UnschedulablePodAdd"
POD_UPDATE = "UnschedulablePodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"

# Queueing strategies (upstream queueSkip, queueAfterBackoff, queueImmediately).
SKIP, AFTER_BACKOFF, IMMEDIATELY = 0, 1, 2

_TICK_SLACK = 0.001  # wake just after a window starts, never just before

Clock = Callable[[], float]


def wall_window_phase(clock: Clock) -> float:
    """The phase that puts ``clock``'s backoff windows on the wall clock's whole seconds, where
    Go's Time.Truncate puts them."""
    return (clock() - time.time()) % WINDOW


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
        pop_from_backoff_q: bool = POP_FROM_BACKOFF_Q,
        window_phase: float = 0.0,
        hint_maps: Mapping[str, QueueingHintMap] | None = None,
        generic_workload: bool = False,
    ) -> None:
        self.frameworks = frameworks
        # GenericWorkload gate: a pod of a pod group is retried after backoff, never on events.
        self.generic_workload = generic_workload
        self.clock = clock
        self.max_in_unschedulable = max_in_unschedulable
        self.pop_from_backoff_q = pop_from_backoff_q
        if queue_sort is None:
            queue_sort = next(iter(frameworks.values())).queue_sort
        self._qs = queue_sort
        key = queue_sort.sort_key if type(queue_sort).sort_key is not QueueSortPlugin.sort_key else self._less_key
        self.active_q = ActiveQueue(key)
        self.backoff_q = BackoffQueue(
            clock, initial_backoff, max_backoff, key, windows=pop_from_backoff_q, phase=window_phase
        )
        self.unschedulable_pods = UnschedulablePods()
        self._seq = 0
        self._wakeup = asyncio.Event()
        self._closed = False
        if hint_maps is None:
            hint_maps = {profile: build_hint_map(fw) for profile, fw in frameworks.items()}
        self.hint_maps = hint_maps
        # Upstream pluginToEventsMap: the events each plugin registered, over all profiles.
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        for hint_map in hint_maps.values():
            for ev, fns in hint_map.items():
                for plugin, _ in fns:
                    self._plugin_events.setdefault(plugin, []).append(ev)
        self._interest: dict[ClusterEvent, bool] = {}
        self._interested: dict[tuple[str, ClusterEvent], bool] = {}
        self._matching: dict[tuple[str, ClusterEvent], list[tuple[str, QueueingHintFn | None]]] = {}
        # Optional observer for metrics: (queue, event_label) per pod entering a queue.
        self.on_incoming: Callable[[str, str], None] | None = None
        # Optional observer of each queueing hint run: (plugin, event, "Queue"|"QueueSkip"|"Error", seconds).
        self.on_hint: Callable[[str, ClusterEvent, str, float], None] | None = None
        # Pods nominated to nodes by preemption (upstream PriorityQueue embeds the nominator).
        self.nominator = PodNominator()

    def _less_key(self, q: QueuedPodInfo) -> _LessKey:
        return _LessKey(q, self._qs.less)

    # -- moving pods between queues ------------------------------------------------------------
    def _incoming(self, queue: str, event: str) -> None:
        if self.on_incoming is not None:
            self.on_incoming(queue, event)

    def _pre_enqueue(self, q: QueuedPodInfo) -> bool:
        """Run PreEnqueue; True when a plugin holds the pod (upstream runPreEnqueuePlugins)."""
        fw = self.frameworks.get(q.pod.scheduler_name)
        s = fw.run_pre_enqueue(q.pod) if fw is not None else None
        if s is None:
            q.gated = False
            q.gating_plugin = ""
            return False
        q.gated = True
        # The gating plugin joins the rejectors: a pod gated after a failed attempt (async
        # preemption) keeps the plugins whose events may help it.
        if s.plugin:
            q.unschedulable_plugins = q.unschedulable_plugins | {s.plugin}
        q.gating_plugin = s.plugin
        return True

    def _park(self, q: QueuedPodInfo, event: str) -> None:
        """Into unschedulable, or updated there (upstream unschedulablePods.addOrUpdate)."""
        if self.unschedulable_pods.add_or_update(q):
            self._incoming(UNSCHEDULABLE, event)

    def _to_active(self, q: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """Upstream moveToActiveQ: PreEnqueue first (already run on entering backoffQ when
        popping from it is on); a held pod waits in unschedulable unless already queued."""
        uid = q.pod.uid
        if not (from_backoff and self.pop_from_backoff_q) and self._pre_enqueue(q):
            if uid not in self.active_q and uid not in self.backoff_q:
                self._park(q, event)
            return False
        if q.initial_attempt_timestamp is None:
            q.initial_attempt_timestamp = self.clock()
        self.unschedulable_pods.delete(uid)
        self.backoff_q.delete(uid)
        self.active_q.add(q)
        self._incoming(ACTIVE, event)
        self._wakeup.set()
        if event in (POD_ADD, POD_UPDATE):
            self.nominator.add(q.pod)
        return True

    def _to_backoff(self, q: QueuedPodInfo, event: str) -> bool:
        """Upstream moveToBackoffQ: with PopFromBackoffQ, PreEnqueue runs here."""
        if self.pop_from_backoff_q and self._pre_enqueue(q):
            self._park(q, event)
            return False
        self.unschedulable_pods.delete(q.pod.uid)
        self.backoff_q.add(q)
        self._incoming(BACKOFF, event)
        if self.pop_from_backoff_q:
            self._wakeup.set()  # pop may take it at once
        return True

    def _requeue(self, q: QueuedPodInfo, strategy: int, event: str) -> str:
        """Upstream requeuePodWithQueueingStrategy; returns the queue the pod is in now."""
        if strategy == SKIP:
            self._park(q, event)
        elif strategy == AFTER_BACKOFF and self.backoff_q.is_backing_off(q):
            if self._to_backoff(q, event):
                return BACKOFF
        elif self._to_active(q, event):
            return ACTIVE
        return GATED if q.gated else UNSCHEDULABLE

    # -- backoff -------------------------------------------------------------------------------
    def backoff_duration(self, q: QueuedPodInfo) -> float:
        """initial x 2^(count-1) capped at max, for the count that applies to ``q``."""
        return self.backoff_q.duration(q.consecutive_errors_count or q.unschedulable_count)

    def backoff_expiry(self, q: QueuedPodInfo) -> float:
        """When ``q``'s backoff ends, truncated to its window (-inf: none)."""
        return self.backoff_q.backoff_time(q)

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        return self.backoff_q.is_backing_off(q)

    # -- watch-driven changes ------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A new pending pod (upstream Add): into activeQ unless PreEnqueue holds it."""
        if pod.uid in self:
            self.update(None, pod)
            return
        self._to_active(self._new_info(pod), POD_ADD)

    def _new_info(self, pod: PodInfo) -> QueuedPodInfo:
        self._seq += 1
        q = QueuedPodInfo(pod, self.clock(), self._seq)
        q.signature = self._sign(pod)
        return q

    def _sign(self, pod: PodInfo) -> bytes | None:
        """The pod's OpportunisticBatching signature from its profile (upstream signPod); None
        with the gate off or for a profile that does not sign."""
        fw = self.frameworks.get(pod.scheduler_name)
        return fw.sign_pod(pod) if fw is not None and fw.batch is not None else None

    def update(self, old: PodInfo | None, new: PodInfo) -> None:
        """A pending pod changed (upstream Update): updated wherever it is; in unschedulable, the
        change itself may be what makes it schedulable."""
        uid = new.uid
        fl = self.active_q.in_flight.get(uid)
        if fl is not None:
            # Requeued later with this version; the change may be what helps it.
            prev = fl.q.pod
            fl.q.pod = new
            self.active_q.log_pod_events(uid, self._pod_events(old or prev, new), old or prev, new)
            return
        q = self.active_q.get(uid) or self.backoff_q.get(uid)
        if q is not None:
            prev = q.pod
            q.pod = new
            q.signature = self._sign(new)
            self.nominator.update(old or prev, new)
            if uid in self.active_q:
                self.active_q.add(q)  # re-sorted: the priority may have changed
            else:
                self.backoff_q.update(q)
            return
        q = self.unschedulable_pods.get(uid)
        if q is None:
            self._to_active(self._new_info(new), POD_UPDATE)
            return
        prev = q.pod
        q.pod = new
        q.signature = self._sign(new)
        self.nominator.update(old or prev, new)
        for ev in self._pod_events(old or prev, new):
            where = self._requeue(q, self._strategy(q, ev, old or prev, new), event_label(ev))
            if where == ACTIVE or (where == BACKOFF and self.pop_from_backoff_q):
                break

    @staticmethod
    def _pod_events(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
        return pod_update_events(old, new) or [EVENT_POD_UPDATE]

    def delete(self, uid: str) -> None:
        """The pod was deleted or got bound: it leaves the queue and is never requeued."""
        self.nominator.delete(uid)
        fl = self.active_q.in_flight.get(uid)
        if fl is not None:
            fl.gone = True
        if self.active_q.delete(uid) is None and self.backoff_q.delete(uid) is None:
            self.unschedulable_pods.delete(uid)

    def activate(self, pods: Mapping[str, PodInfo]) -> None:
        """Upstream Activate: these pods (name -> pod) go to activeQ if they wait in unschedulable
        or backoffQ; a pod in flight gets ForceActivate, so it is requeued when it returns."""
        for pod in pods.values():
            if not self._activate(pod.uid):
                self.active_q.log_pod_events(pod.uid, (EVENT_FORCE_ACTIVATE,), None, pod)

    def _activate(self, uid: str) -> bool:
        q = self.unschedulable_pods.get(uid)
        from_backoff = False
        if q is None:
            q = self.backoff_q.delete(uid)
            if q is None:
                return False
            from_backoff = True
        return self._to_active(q, FORCE_ACTIVATE, from_backoff)

    def __contains__(self, uid: str) -> bool:
        aq = self.active_q
        return uid in aq or uid in self.backoff_q or uid in self.unschedulable_pods or uid in aq.in_flight

    def get(self, uid: str) -> QueuedPodInfo | None:
        q = self.active_q.get(uid) or self.backoff_q.get(uid) or self.unschedulable_pods.get(uid)
        if q is None and (fl := self.active_q.in_flight.get(uid)) is not None:
            return fl.q
        return q

    # -- cluster events ------------------------------------------------------------------------
    def _of_interest(self, event: ClusterEvent) -> bool:
        """Some plugin registered ``event`` (upstream isEventOfInterest)."""
        hit = self._interest.get(event)
        if hit is None:
            hit = is_wildcard(event) or any(matches(r, event) for m in self.hint_maps.values() for r in m)
            self._interest[event] = hit
        return hit

    def _hints_for(self, profile: str, event: ClusterEvent) -> list[tuple[str, QueueingHintFn | None]]:
        """The (plugin, hint) pairs registered for events ``event`` matches, in map order."""
        key = (profile, event)
        hints = self._matching.get(key)
        if hints is None:
            hint_map = self.hint_maps.get(profile, {})
            hints = [fn for reg, fns in hint_map.items() if matches(reg, event) for fn in fns]
            self._matching[key] = hints
        return hints

    def _strategy(self, q: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> int:
        """Upstream isPodWorthRequeuing: ask the rejecting plugins' hints for ``event``."""
        unsched, pending = q.unschedulable_plugins, q.pending_plugins
        if not unsched and not pending:
            return AFTER_BACKOFF
        if is_wildcard(event):
            # A wildcard carrying a pod (ForceActivate) is for that pod alone.
            if new is not None and (not isinstance(new, PodInfo) or new.uid != q.pod.uid):
                return SKIP
            return AFTER_BACKOFF
        profile = q.pod.scheduler_name
        if profile not in self.hint_maps:
            return AFTER_BACKOFF
        strategy = SKIP
        for plugin, hint in self._hints_for(profile, event):
            if plugin not in unsched and plugin not in pending:
                continue
            if hint is not None and self._hint(q, plugin, hint, event, old, new) == QueueingHint.QUEUE_SKIP:
                continue
            if plugin in pending:
                return IMMEDIATELY  # the strongest: nothing else to ask
            if not pending:
                return AFTER_BACKOFF
            strategy = AFTER_BACKOFF
        return strategy

    def _hint(
        self, q: QueuedPodInfo, plugin: str, hint: QueueingHintFn, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingHint:
        observe = self.on_hint
        t0 = time.perf_counter() if observe is not None else 0.0
        try:
            h = hint(q.pod, old, new)
        except Exception as exc:  # a failing hint must not strand the pod: Queue (upstream)
            if observe is not None:
                observe(plugin, event, "Error", time.perf_counter() - t0)
            log.error("queueing_hint_failed", pod=q.pod.key, plugin=plugin, error=str(exc))
            return QueueingHint.QUEUE
        if observe is not None:
            observe(plugin, event, "Queue" if h == QueueingHint.QUEUE else "QueueSkip", time.perf_counter() - t0)
        return h

    def _gating_interested(self, q: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Upstream MatchAnyClusterEvent(event, GatingPluginEvents)."""
        return self._plugin_interested(q.gating_plugin, event)

    def _plugin_interested(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether an event ``plugin`` registered covers ``event``. Asked per unschedulable pod
        of every event (each gated pod's gate): the registrations never change, so each
        answer is worked out once."""
        key = (plugin, event)
        hit = self._interested.get(key)
        if hit is None:
            hit = self._interested[key] = any(matches(reg, event) for reg in self._plugin_events.get(plugin, ()))
        return hit

    def registered_actions(self, resource: str) -> ActionType:
        """The actions on ``resource`` some profile's plugin registered (upstream unionedGVKs):
        kube-scheduler installs a handler only for those, so other events move nobody. A
        wildcard registration does not count (upstream starts no informer for "*")."""
        acts = ActionType(0)
        for hint_map in self.hint_maps.values():
            for ev in hint_map:
                if ev.resource == resource:
                    acts |= ev.action
        return acts

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: Any = None, new: Any = None, pre_check: Callable[[PodInfo], bool] | None = None
    ) -> int:
        """A cluster event happened: requeue the unschedulable pods it may help (upstream
        MoveAllToActiveOrBackoffQueue). Returns how many left unschedulable."""
        if not self._of_interest(event):
            return 0
        if not self.unschedulable_pods:
            # Nobody to move (every pod event of a busy cluster): only the in-flight pods' log.
            self.active_q.log_event(event, old, new)
            return 0
        candidates = self.unschedulable_pods.candidates(lambda plugin: self._plugin_interested(plugin, event))
        pods = candidates if pre_check is None else [q for q in candidates if pre_check(q.pod)]
        return self._move(pods, event, old, new)

    def _move(self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> int:
        """Upstream movePodsToActiveOrBackoffQueue."""
        if not self._of_interest(event):
            return 0
        label = event_label(event)
        moved = 0
        for q in pods:
            if q.gated and not self._gating_interested(q, event):
                continue  # only the gating plugin's events can release it
            strategy = self._strategy(q, event, old, new)
            if strategy == SKIP:
                continue
            self.unschedulable_pods.delete(q.pod.uid)
            if self._requeue(q, strategy, label) in (ACTIVE, BACKOFF):
                moved += 1
        # Pods failing later may have been helped by it.
        self.active_q.log_event(event, old, new)
        return moved

    def release_gated(self, uid: str, plugin: str, event: str) -> str:
        """Run PreEnqueue again for a pod that ``plugin`` gated (backoffQ/activeQ if it now
        passes). For a gate whose end no cluster event announces, e.g. an async preemption whose
        last victim another preemptor had already deleted. Returns where the pod is now."""
        q = self.unschedulable_pods.get(uid)
        if q is None or not q.gated or q.gating_plugin != plugin:
            return self.where(uid)
        self.unschedulable_pods.delete(uid)
        return self._requeue(q, AFTER_BACKOFF, event)

    # -- scheduling-cycle side -----------------------------------------------------------------
    @property
    def scheduling_cycle(self) -> int:
        return self.active_q.cycle

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The head of activeQ, else (PopFromBackoffQ) of podBackoffQ, now in flight; None when
        both are empty. With windows a backoff can only end as a window starts, so flushing here
        first moves exactly what the aligned flush would have moved."""
        if self.backoff_q.windows and len(self.backoff_q):
            self.flush_backoff_completed()
        aq = self.active_q
        while True:
            q = aq.pop_head()
            if q is None:
                if not self.pop_from_backoff_q or not self.backoff_q.len_backoff():
                    return None
                q = self.backoff_q.pop_backoff()
                if q is None:
                    return None
                self._incoming(ACTIVE, POP_FROM_BACKOFF)
            if q.pod.uid not in aq.in_flight:
                aq.to_in_flight(q)
                return q
            # Queued while in flight: a bug somewhere; the attempt under way keeps the pod.
            log.error("pod_popped_twice", pod=q.pod.key)

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for a pod to pop; None once the queue is closed."""
        while not self._closed:
            q = self.pop_nowait()
            if q is not None:
                return q
            self._wakeup.clear()
            timeout = None
            if self.backoff_q.windows and len(self.backoff_q):
                timeout = max(0.0, self.backoff_q.next_completion() - self.clock()) + _TICK_SLACK
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
        return None

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Upstream PopSpecificPod: take this pod out of the queue as if it had been activated
        and popped (in flight, attempts counted); None if it is not queued or PreEnqueue holds it."""
        self._activate(uid)
        q = self.active_q.delete(uid)
        if q is not None:
            self.active_q.to_in_flight(q)
        return q

    def close(self) -> None:
        self._closed = True
        self.active_q.close()
        self._wakeup.set()

    def add_unschedulable_if_not_present(self, q: QueuedPodInfo) -> str:
        """A failed attempt comes back (upstream AddUnschedulableIfNotPresent).

        ``q.unschedulable_plugins`` and ``q.pending_plugins`` hold the plugins that rejected it
        (both empty for an error). Returns the queue it went to, or "" when the pod is gone."""
        uid = q.pod.uid
        fl = self.active_q.in_flight.get(uid)
        if fl is not None and fl.gone:
            self.active_q.done(uid)
            return ""
        where = self.where(uid)
        if where not in ("", "inflight"):
            self.active_q.done(uid)
            return where
        # Errors and rejections back off apart: a rejection resets the error streak.
        if not q.unschedulable_plugins and not q.pending_plugins:
            q.consecutive_errors_count += 1
        else:
            q.unschedulable_count += 1
            q.consecutive_errors_count = 0
        q.timestamp = self.clock()
        q.backoff_expiration = None
        q.flushed = False
        where = self._requeue(q, self._in_flight_strategy(q), SCHEDULE_ATTEMPT_FAILURE)
        self.active_q.done(uid)
        return where

    def _in_flight_strategy(self, q: QueuedPodInfo) -> int:
        """Upstream determineSchedulingHintForInFlightPod: may an event seen during the attempt
        have helped? Errors, and pods no longer in flight (done already: a PreBind or Bind
        failure), are retried after backoff."""
        if not q.unschedulable_plugins and not q.pending_plugins:
            return AFTER_BACKOFF
        if self.generic_workload and q.pod.scheduling_group is not None:
            # Event-based requeueing is not implemented for pod groups upstream: backoff only.
            return AFTER_BACKOFF
        events: list[LoggedEvent] | None = self.active_q.events_for(q.pod.uid)
        if events is None:
            return AFTER_BACKOFF
        strategy = SKIP
        for ev, old, new in events:
            s = self._strategy(q, ev, old, new)
            if s == IMMEDIATELY:
                return IMMEDIATELY
            if s == AFTER_BACKOFF:
                strategy = AFTER_BACKOFF
                if not q.pending_plugins:
                    return AFTER_BACKOFF
        return strategy

    def done(self, uid: str) -> None:
        """The pod's attempt (including binding) is over."""
        self.active_q.done(uid)

    def in_flight(self) -> list[QueuedPodInfo]:
        return [fl.q for fl in self.active_q.in_flight.values()]

    def in_flight_events(self) -> list[list[LoggedEvent]]:
        """The events each pod in flight has seen, (event, old, new) each; pods share the
        entries of one log (for metrics)."""
        return [self.active_q.events_for(uid) or [] for uid in self.active_q.in_flight]

    # -- periodic flushes ----------------------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Every pod done backing off to activeQ (upstream flushBackoffQCompleted)."""
        moved = 0
        for q in self.backoff_q.pop_all_completed():
            if self._to_active(q, BACKOFF_COMPLETE, from_backoff=True):
                moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Pods unschedulable for longer than ``max_in_unschedulable`` move as after an
        UnschedulableTimeout (upstream flushUnschedulablePodsLeftover)."""
        now = self.clock()
        old = [q for q in self.unschedulable_pods if now - q.timestamp > self.max_in_unschedulable]
        for q in old:
            q.flushed = True
        return self._move(old, EVENT_UNSCHEDULABLE_TIMEOUT, None, None) if old else 0

    async def run_flushers(self, stop: asyncio.Event | None = None) -> None:
        """Upstream Run: the backoff flush at each window start, the leftover flush every 30 s."""
        next_leftover = self.clock()
        while not self._closed and not (stop is not None and stop.is_set()):
            now = self.clock()
            if now >= next_leftover:
                self.flush_unschedulable_leftover()
                next_leftover = self.clock() + FLUSH_UNSCHEDULABLE_PERIOD
            tick = self.backoff_q.align(now) + WINDOW if self.backoff_q.windows else now + WINDOW
            await asyncio.sleep(tick - now + _TICK_SLACK)
            self.flush_backoff_completed()

    # -- introspection -------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        gated = self.unschedulable_pods.gated_count()
        return {
            ACTIVE: len(self.active_q),
            BACKOFF: len(self.backoff_q),
            UNSCHEDULABLE: len(self.unschedulable_pods) - gated,
            GATED: gated,
        }

    def where(self, uid: str) -> str:
        if uid in self.active_q.in_flight:
            return "inflight"
        if uid in self.active_q:
            return ACTIVE
        if uid in self.backoff_q:
            return BACKOFF
        if uid in self.unschedulable_pods:
            return GATED if self.unschedulable_pods.is_gated(uid) else UNSCHEDULABLE
        return ""

    def pending(self) -> list[QueuedPodInfo]:
        return [*self.active_q.pods(), *self.backoff_q.pods(), *self.unschedulable_pods]


def sort_queued(infos: list[QueuedPodInfo], qs: QueueSortPlugin) -> list[QueuedPodInfo]:
    """Helper for callers that want activeQ order of a plain list (tests, debug dumps)."""
    if type(qs).sort_key is not QueueSortPlugin.sort_key:
        return sorted(infos, key=qs.sort_key)

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if qs.less(a, b) else (1 if qs.less(b, a) else 0)

    return sorted(infos, key=functools.cmp_to_key(cmp))
