"""The scheduler's metrics object: every family on one registry, the calls the loop, queue,
framework and API clients make where something happens, and the wiring of the families read
when scraped (``attach``).

One ``Metrics`` per process, on its own CollectorRegistry so tests can build many.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from scheduler.config.features import FeatureGates
from scheduler.framework.events import ClusterEvent, event_label
from scheduler.framework.interface import QueuedPodInfo
from scheduler.framework.metrics import MetricsRecorder
from scheduler.framework.runtime import DurationObserver
from scheduler.live.metrics import auth, component
from scheduler.live.metrics.families import PODGROUP_STABILITY, STABILITY, Samples, SchedulerFamilies
from scheduler.live.metrics.kit import exposition

if TYPE_CHECKING:
    from scheduler.backend.queue import SchedulingQueue
    from scheduler.framework.runtime import Framework

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# The queue's own event names where upstream's labels differ (EventUnscheduledPodAdd/Update).
_QUEUE_EVENTS = {"PodAdd": "UnschedulablePodAdd", "UnscheduledPodUpdate": "UnschedulablePodUpdate"}
# Upstream caps the attempts label of the SLI histogram (getAttemptsLabel).
_MAX_ATTEMPTS_LABEL = 15


def attempts_label(attempts: int) -> str:
    return "15+" if attempts >= _MAX_ATTEMPTS_LABEL else str(attempts)


def _children(metric: Any) -> Callable[..., Any]:
    """``metric.labels(*values)`` with the children kept: the Python client's ``labels``
    validates and locks on every call, and the cycle records several per pod."""
    cache: dict[tuple[str, ...], Any] = {}

    def child(*values: str) -> Any:
        c = cache.get(values)
        if c is None:
            c = cache[values] = metric.labels(*values)
        return c

    return child


class _FrameworkRecorder(MetricsRecorder):
    """What the framework and the plugins report (scheduler.framework.metrics)."""

    enabled = True

    def __init__(self, m: Metrics) -> None:
        super().__init__()
        self._plugin = m.plugin_execution_duration.labels
        self._stage = _children(m.volume_scheduling_stage_error)
        self._claims = _children(m.resourceclaim_creates)
        self._bc_total = _children(m.dra_bindingconditions_allocations)
        self._bc_wait = m.dra_bindingconditions_wait_duration.labels
        self._hint_duration = m.get_node_hint_duration.labels
        self._store_duration = m.store_schedule_results_duration.labels
        self._batch = _children(m.batch_attempts)
        self._flushed = _children(m.batch_cache_flushed)

    def plugin(self, point: str, plugin: str, status: str, seconds: float, count: int = 1) -> None:
        # Upstream observes each call; a batch over ``count`` nodes is that many calls of its mean.
        self._plugin(plugin, point, status).observe(seconds / count if count > 1 else seconds, count)

    def batch_hint(self, profile: str, seconds: float, hinted: bool) -> None:
        self._hint_duration("hint" if hinted else "no_hint", profile).observe(seconds)

    def batch_attempt(self, profile: str, result: str) -> None:
        self._batch(profile, result).inc()

    def batch_flushed(self, profile: str, reason: str) -> None:
        self._flushed(profile, reason).inc()

    def batch_stored(self, profile: str, seconds: float) -> None:
        self._store_duration(profile).observe(seconds)

    def volume_stage_error(self, operation: str) -> None:
        self._stage(operation).inc()

    def resource_claim_created(self, status: str) -> None:
        self._claims(status).inc()

    def binding_conditions(self, profile: str, driver: str, status: str) -> None:
        self._bc_total(profile, driver, status).inc()

    def binding_conditions_wait(self, profile: str, driver: str, status: str, seconds: float) -> None:
        self._bc_wait(profile, driver, status).observe(seconds)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        f = SchedulerFamilies(r)
        self.families = f
        h, c = f.histograms, f.counters
        self.schedule_attempts = c["schedule_attempts"]
        self.scheduling_attempt_duration = h["scheduling_attempt_duration"]
        self.scheduling_algorithm_duration = h["scheduling_algorithm_duration"]
        self.event_handling_duration = h["event_handling_duration"]
        self.framework_extension_point_duration = h["framework_extension_point_duration"]
        self.plugin_execution_duration = h["plugin_execution_duration"]
        self.queueing_hint_execution_duration = h["queueing_hint_execution_duration"]
        self.queue_incoming_pods = c["queue_incoming_pods"]
        self.pod_scheduling_attempts = h["pod_scheduling_attempts"]
        self.pod_scheduling_sli_duration = h["pod_scheduling_sli_duration"]
        self.pod_scheduled_after_flush = c["pod_scheduled_after_flush"]
        self.preemption_victims = h["preemption_victims"]
        self.preemption_attempts = c["preemption_attempts"]
        self.preemption_goroutines_duration = h["preemption_goroutines_duration"]
        self.permit_wait_duration = h["permit_wait_duration"]
        self.preemption_goroutines_execution_total = c["preemption_goroutines_execution"]
        self.batch_attempts = c["batch_attempts"]
        self.batch_cache_flushed = c["batch_cache_flushed"]
        self.get_node_hint_duration = h["get_node_hint_duration"]
        self.store_schedule_results_duration = h["store_schedule_results_duration"]
        self.resourceclaim_creates = c["resourceclaim_creates"]
        self.dra_bindingconditions_allocations = c["dra_bindingconditions_allocations"]
        self.dra_bindingconditions_wait_duration = h["dra_bindingconditions_wait_duration"]
        self.volume_binder_cache_requests = c["volume_binder_cache_requests"]
        self.volume_scheduling_stage_error = c["volume_scheduling_stage_error"]
        # pyscheduler's own (no kube-scheduler counterpart).
        self.binding_errors = Counter(
            "pyscheduler_binding_errors", "Binding failures by kind (conflict, gone, fenced, error).",
            ["kind"], registry=r,
        )
        self.object_errors = Counter(
            "pyscheduler_object_errors",
            "Objects that could not be handled, by kind and stage (watch: not parsed; cycle: the "
            "pod's scheduling cycle raised). Each stays contained to that object.",
            ["kind", "stage"], registry=r,
        )
        self.events_dropped = Counter(
            "pyscheduler_events_dropped",
            "Events not written because the bounded event queue was full, by event reason.",
            ["reason"], registry=r,
        )
        # component-base's families kube-scheduler exports (leader election, client, process...).
        self.component = component.ComponentFamilies(r, STABILITY)
        # The secure port's delegated authentication and authorization (k8s.io/apiserver's).
        self.auth = auth.AuthMetrics(r)
        self.component.meta.count(auth.STABILITY)
        self.recorder = _FrameworkRecorder(self)
        self._incoming = _children(self.queue_incoming_pods)
        self._attempts = _children(self.schedule_attempts)
        self._attempt_duration = self.scheduling_attempt_duration.labels
        self._hint = self.queueing_hint_execution_duration.labels
        self._event = self.event_handling_duration.labels
        self._permit_wait = self.permit_wait_duration.labels
        self._unschedulable: _Unschedulable | None = None
        # Pod groups (GenericWorkload): registered by ``enable_pod_groups``, as upstream only
        # registers them with the gate on.
        self._pod_groups = False

    def enable_pod_groups(self) -> None:
        if self._pod_groups:
            return
        self._pod_groups = True
        self.families.register_pod_groups(self.registry)
        self.component.meta.count(PODGROUP_STABILITY)

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One pod-group cycle ended (scheduled, unschedulable, waiting_on_preemption or error)."""
        if self._pod_groups:
            f = self.families
            f.counters["podgroup_schedule_attempts"].labels(result, profile).inc()
            f.histograms["podgroup_scheduling_attempt_duration"].labels(result, profile).observe(seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        if self._pod_groups:
            self.families.histograms["podgroup_scheduling_algorithm_duration"].observe(seconds)

    # -- wiring ------------------------------------------------------------------------------
    def attach(
        self,
        frameworks: Mapping[str, Framework],
        queue: SchedulingQueue,
        cache_sizes: Callable[[], dict[str, int]],
        binding_tasks: Callable[[], int],
    ) -> None:
        """Point the scrape-time families at the live structures and hook the queue and the
        frameworks (their handles' recorder) to this object."""
        for fw in frameworks.values():
            fw.handle.metrics = self.recorder
        queue.on_incoming = self.incoming
        queue.on_hint = self.hint
        self.watch_queue(queue.counts)
        self.watch_cache(cache_sizes)
        src = self.families.sources
        self._unschedulable = _Unschedulable(queue)
        src["unschedulable_pods"] = self._unschedulable.read
        inflight_seen: set[str] = set()
        src["inflight_events"] = lambda: _inflight_events(queue, inflight_seen)
        src["plugin_evaluation"] = lambda: _evaluations(frameworks)
        src["goroutines"] = lambda: ((("binding",), binding_tasks()),)

    def watch_queue(self, counts: Callable[[], dict[str, int]]) -> None:
        """scheduler_pending_pods reads the queue's counts when scraped."""
        queues = ("active", "backoff", "unschedulable", "gated")
        self.families.sources["pending_pods"] = lambda: _by_key(counts(), queues)

    def watch_cache(self, counts: Callable[[], dict[str, int]]) -> None:
        """scheduler_cache_size reads the cache when scraped."""
        self.families.sources["cache_size"] = lambda: _by_key(counts(), ("nodes", "pods", "assumed_pods"))

    # -- hooks -------------------------------------------------------------------------------
    def extension_point_observer(self, profile: str) -> DurationObserver:
        hist = self.framework_extension_point_duration.labels

        def observe(point: str, plugin: str, status: str, seconds: float) -> None:
            hist(point, status, profile).observe(seconds)

        return observe

    def incoming(self, queue: str, event: str) -> None:
        # Upstream keeps gated pods in unschedulablePods and counts them entering "unschedulable".
        if queue == "gated":
            queue = "unschedulable"
        self._incoming(queue, _QUEUE_EVENTS.get(event, event)).inc()

    def hint(self, plugin: str, event: ClusterEvent, hint: str, seconds: float) -> None:
        self._hint(plugin, event_label(event), hint).observe(seconds)

    def event_handled(self, events: Iterable[ClusterEvent | str], seconds: float) -> None:
        """One watch event handled; upstream observes the time once per cluster event it made."""
        for ev in events:
            self._event(ev if isinstance(ev, str) else event_label(ev)).observe(seconds)

    def rejected(self, plugins: Iterable[str], profile: str) -> None:
        """A failed attempt's rejecting plugins: their scheduler_unschedulable_pods series exist
        from now on (upstream's gauge child is made at the first increment)."""
        if self._unschedulable is not None:
            self._unschedulable.seen.update((p, profile) for p in plugins)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self._attempts(result, profile).inc()
        self._attempt_duration(result, profile).observe(seconds)

    def scheduled(self, q: QueuedPodInfo, since_first_attempt: float | None) -> None:
        """A pod is bound (schedule_one.go, after Bind)."""
        self.pod_scheduling_attempts.observe(q.attempts)
        if since_first_attempt is not None:
            self.pod_scheduling_sli_duration.labels(attempts_label(q.attempts)).observe(since_first_attempt)
        if q.flushed:
            self.pod_scheduled_after_flush.inc()

    def permit_waited(self, result: str, seconds: float) -> None:
        """One wait at Permit ended; ``result`` is its outcome's status code (Success, Unschedulable, Error)."""
        self._permit_wait(result).observe(seconds)

    def feature_gates(self, gates: FeatureGates) -> None:
        """kubernetes_feature_enabled{name,stage} (component-base featuregate AddMetrics): every
        gate the process knows, 1 when on; a GA gate has an empty stage."""
        self.component.set_features((spec.name, spec.stage, on) for spec, on in gates.all())

    def object_error(self, kind: str, stage: str = "watch") -> None:
        self.object_errors.labels(kind, stage).inc()

    def exposition(self) -> tuple[bytes, str]:
        return exposition(self.registry), CONTENT_TYPE_LATEST


def _by_key(counts: dict[str, int], keys: tuple[str, ...]) -> Samples:
    return [((k,), counts.get(k, 0)) for k in keys]


class _Unschedulable:
    """scheduler_unschedulable_pods: per (plugin, profile), the queued pods that plugin rejected
    in their last attempt or gates (upstream adds one when a failed attempt returns or a
    PreEnqueue plugin gates, and takes it back when the pod is popped or deleted). A series
    stays once seen, at 0 when no pod counts, as a Go gauge child does."""

    def __init__(self, queue: SchedulingQueue) -> None:
        self.queue = queue
        self.seen: set[tuple[str, str]] = set()

    def read(self) -> Samples:
        counts: dict[tuple[str, str], int] = {}
        for q in self.queue.pending():
            for plugin in q.unschedulable_plugins | q.pending_plugins:
                key = (plugin, q.pod.scheduler_name)
                counts[key] = counts.get(key, 0) + 1
        self.seen.update(counts)
        return [(key, counts.get(key, 0)) for key in sorted(self.seen)]


def _inflight_events(queue: SchedulingQueue, seen: set[str]) -> Samples:
    """scheduler_inflight_events: upstream keeps one list of the events received while any pod
    is in flight, from the oldest in-flight pod on; here each pod in flight keeps its own, so
    the union of those lists (one entry per event, however many pods hold it) is that list.
    ``PodPopped`` counts the pods in flight. A label once seen stays, at 0, as a Go gauge child."""
    lists = queue.in_flight_events()
    distinct: set[tuple[int, int, int]] = set()
    counts: dict[str, int] = {"PodPopped": len(lists)}
    for events in lists:
        for ev, old, new in events:
            key = (id(ev), id(old), id(new))
            if key not in distinct:
                distinct.add(key)
                label = event_label(ev)
                counts[label] = counts.get(label, 0) + 1
    seen.update(counts)
    return [((label,), counts.get(label, 0)) for label in sorted(seen)]


def _evaluations(frameworks: Mapping[str, Framework]) -> Samples:
    return [((plugin, point, profile), n)
            for profile, fw in frameworks.items() for plugin, point, n in fw.plugin_evaluations()]
