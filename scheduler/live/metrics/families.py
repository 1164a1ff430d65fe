"""kube-scheduler's own metric families, as v1.36.3 registers them by default
(pkg/scheduler/metrics/metrics.go with the gates on by default: SchedulerQueueingHints,
SchedulerAsyncPreemption, DRAExtendedResource, DRADeviceBindingConditions; the volume binder's
from framework/plugins/volumebinding/metrics), each with upstream's name, type, labels, help
text (the stability level in front, as component-base writes it) and buckets.

Counts that the scheduler's structures already hold (queue sizes, rejecting plugins, the cache,
plugin evaluations, bindings in flight) are read when scraped, so the hot path pays nothing for
them; durations are observed where they happen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter

from scheduler.live.metrics.kit import (
    ALPHA,
    BETA,
    STABLE,
    BulkHistogram,
    ScrapeFamily,
    exponential_buckets,
    helptext,
)

Samples = Iterable[tuple[Sequence[str], float]]

# (name, level, help, labels, buckets) of every histogram; counters and gauges are built below.
_HISTOGRAMS: dict[str, tuple[str, str, str, tuple[str, ...], list[float]]] = {
    "event_handling_duration": (
        "scheduler_event_handling_duration_seconds", ALPHA, "Event handling latency in seconds.",
        ("event",), exponential_buckets(0.0001, 2, 12)),
    "scheduling_attempt_duration": (
        "scheduler_scheduling_attempt_duration_seconds", STABLE,
        "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
        ("result", "profile"), exponential_buckets(0.001, 2, 15)),
    "scheduling_algorithm_duration": (
        "scheduler_scheduling_algorithm_duration_seconds", ALPHA, "Scheduling algorithm latency in seconds",
        (), exponential_buckets(0.001, 2, 15)),
    "preemption_victims": (
        "scheduler_preemption_victims", STABLE, "Number of selected preemption victims",
        (), exponential_buckets(1, 2, 7)),
    "get_node_hint_duration": (
        "scheduler_get_node_hint_duration_seconds", ALPHA, "Latency for getting a node hint.",
        ("hinted", "profile"), exponential_buckets(0.00001, 2, 12)),
    "store_schedule_results_duration": (
        "scheduler_store_schedule_results_duration_seconds", ALPHA, "Latency for getting a no.",
        ("profile",), exponential_buckets(0.00001, 2, 12)),
    "pod_scheduling_sli_duration": (
        "scheduler_pod_scheduling_sli_duration_seconds", BETA,
        "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
        "involve multiple scheduling attempts.",
        ("attempts",), exponential_buckets(0.01, 2, 20)),
    "pod_scheduling_attempts": (
        "scheduler_pod_scheduling_attempts", STABLE, "Number of attempts to successfully schedule a pod.",
        (), exponential_buckets(1, 2, 5)),
    "framework_extension_point_duration": (
        "scheduler_framework_extension_point_duration_seconds", STABLE,
        "Latency for running all plugins of a specific extension point.",
        ("extension_point", "status", "profile"), exponential_buckets(0.0001, 2, 12)),
    "plugin_execution_duration": (
        "scheduler_plugin_execution_duration_seconds", ALPHA,
        "Duration for running a plugin at a specific extension point.",
        ("plugin", "extension_point", "status"), exponential_buckets(0.00001, 1.5, 20)),
    "queueing_hint_execution_duration": (
        "scheduler_queueing_hint_execution_duration_seconds", ALPHA,
        "Duration for running a queueing hint function of a plugin.",
        ("plugin", "event", "hint"), exponential_buckets(0.00001, 1.5, 20)),
    "permit_wait_duration": (
        "scheduler_permit_wait_duration_seconds", BETA, "Duration of waiting on permit.",
        ("result",), exponential_buckets(0.001, 2, 15)),
    "preemption_goroutines_duration": (
        "scheduler_preemption_goroutines_duration_seconds", ALPHA,
        "Duration in seconds for running goroutines for the preemption.",
        ("result",), exponential_buckets(0.01, 2, 20)),
    "dra_bindingconditions_wait_duration": (
        "scheduler_dra_bindingconditions_wait_duration_seconds", ALPHA,
        "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
        ("profile", "driver", "status"), exponential_buckets(0.1, 2, 14)),
}

# (name with _total, level, help, labels) of every counter observed where it happens.
_COUNTERS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "schedule_attempts": (
        "scheduler_schedule_attempts_total", STABLE,
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
        "while 'error' means an internal scheduler problem.", ("result", "profile")),
    "preemption_attempts": (
        "scheduler_preemption_attempts_total", STABLE, "Total preemption attempts in the cluster till now", ()),
    "batch_attempts": (
        "scheduler_batch_attempts_total", ALPHA, "Counts of results when we attempt to use batching.",
        ("profile", "result")),
    "batch_cache_flushed": (
        "scheduler_batch_cache_flushed_total", ALPHA, "Counts of cache flushes by reason.", ("profile", "reason")),
    "pod_scheduled_after_flush": (
        "scheduler_pod_scheduled_after_flush_total", ALPHA,
        "Number of pods that were successfully scheduled after being flushed from unschedulablePods due to "
        "timeout. This metric helps detect potential queueing hint misconfigurations or event handling issues.",
        ()),
    "queue_incoming_pods": (
        "scheduler_queue_incoming_pods_total", STABLE,
        "Number of pods added to scheduling queues by event and queue type.", ("queue", "event")),
    "preemption_goroutines_execution": (
        "scheduler_preemption_goroutines_execution_total", ALPHA, "Number of preemption goroutines executed.",
        ("result",)),
    "resourceclaim_creates": (
        "scheduler_resourceclaim_creates_total", ALPHA,
        "Number of ResourceClaims creation requests within scheduler", ("status",)),
    "dra_bindingconditions_allocations": (
        "scheduler_dra_bindingconditions_allocations_total", ALPHA,
        "Number of allocations using devices with BindingConditions, counted per driver per scheduling attempt",
        ("profile", "driver", "status")),
    "volume_binder_cache_requests": (
        "scheduler_volume_binder_cache_requests_total", ALPHA, "Total number for request volume binding cache",
        ("operation",)),
    "volume_scheduling_stage_error": (
        "scheduler_volume_scheduling_stage_error_total", ALPHA, "Volume scheduling stage error count",
        ("operation",)),
}

# (name, kind, level, help, labels) of the families read when scraped.
_SCRAPED: dict[str, tuple[str, str, str, str, tuple[str, ...]]] = {
    "pending_pods": (
        "scheduler_pending_pods", "gauge", STABLE,
        "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
        "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
        "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
        "scheduler never attempted to schedule because they are gated.", ("queue",)),
    "inflight_events": (
        "scheduler_inflight_events", "gauge", ALPHA, "Number of events currently tracked in the scheduling queue.",
        ("event",)),
    "goroutines": (
        "scheduler_goroutines", "gauge", BETA,
        "Number of running goroutines split by the work they do such as binding.", ("operation",)),
    "cache_size": (
        "scheduler_cache_size", "gauge", ALPHA,
        "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.", ("type",)),
    "unschedulable_pods": (
        "scheduler_unschedulable_pods", "gauge", BETA,
        "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all "
        "plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
        ("plugin", "profile")),
    "plugin_evaluation": (
        "scheduler_plugin_evaluation_total", "counter", BETA,
        "Number of attempts to schedule pods by each plugin and the extension point (available only in "
        "PreFilter, Filter, PreScore, and Score).", ("plugin", "extension_point", "profile")),
}

# Registered only with the GenericWorkload gate (metrics.go Register): (name, level, help,
# labels, buckets) of the histograms, (name, level, help, labels) of the counter.
_PODGROUP_HISTOGRAMS: dict[str, tuple[str, str, str, tuple[str, ...], list[float]]] = {
    "podgroup_scheduling_attempt_duration": (
        "scheduler_podgroup_scheduling_attempt_duration_seconds", ALPHA,
        "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
        ("result", "profile"), exponential_buckets(0.001, 2, 15)),
    "podgroup_scheduling_algorithm_duration": (
        "scheduler_podgroup_scheduling_algorithm_duration_seconds", ALPHA,
        "Pod group scheduling algorithm latency in seconds", (), exponential_buckets(0.001, 2, 15)),
}
_PODGROUP_COUNTERS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "podgroup_schedule_attempts": (
        "scheduler_podgroup_schedule_attempts_total", ALPHA,
        "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not "
        "be scheduled, while 'error' means an internal scheduler problem.", ("result", "profile")),
}
PODGROUP_STABILITY: dict[str, str] = {
    **{v[0]: v[1] for v in _PODGROUP_HISTOGRAMS.values()},
    **{v[0]: v[1] for v in _PODGROUP_COUNTERS.values()},
}

# The stability level of every family above, by exposed name (registered_metrics_total).
STABILITY: dict[str, str] = {
    **{v[0]: v[1] for v in _HISTOGRAMS.values()},
    **{v[0]: v[1] for v in _COUNTERS.values()},
    **{v[0]: v[2] for v in _SCRAPED.values()},
}


class SchedulerFamilies:
    """The families as attributes (histograms and counters by their short name) plus the
    scrape-time families, whose sources ``sources`` maps by short name."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.sources: dict[str, Callable[[], Samples]] = {}
        self.histograms: dict[str, BulkHistogram] = {}
        for key, (name, level, text, labels, buckets) in _HISTOGRAMS.items():
            h = BulkHistogram(name, helptext(level, text), labels, buckets)
            registry.register(h)
            self.histograms[key] = h
        self.counters: dict[str, Counter] = {}
        for key, (name, level, text, labels) in _COUNTERS.items():
            self.counters[key] = Counter(name, helptext(level, text), labels, registry=registry)
        for key, (name, kind, level, text, labels) in _SCRAPED.items():
            registry.register(ScrapeFamily(kind, name, helptext(level, text), labels, self._reader(key)))

    def register_pod_groups(self, registry: CollectorRegistry) -> None:
        """The pod-group families (GenericWorkload), into ``histograms`` and ``counters``."""
        for key, (name, level, text, labels, buckets) in _PODGROUP_HISTOGRAMS.items():
            h = BulkHistogram(name, helptext(level, text), labels, buckets)
            registry.register(h)
            self.histograms[key] = h
        for key, (name, level, text, labels) in _PODGROUP_COUNTERS.items():
            self.counters[key] = Counter(name, helptext(level, text), labels, registry=registry)

    def _reader(self, key: str) -> Callable[[], Samples]:
        def read() -> Samples:
            src = self.sources.get(key)
            return src() if src is not None else ()

        return read
