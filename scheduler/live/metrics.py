"""Prometheus metrics under kube-scheduler's names (upstream pkg/scheduler/metrics/metrics.go).

One ``Metrics`` object per process, on its own CollectorRegistry so tests can build many.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from scheduler.config.features import FeatureGates
from scheduler.framework.runtime import DurationObserver


def _exp_buckets(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"


def _count_of(counts: Callable[[], dict[str, int]], name: str) -> int:
    return counts().get(name, 0)


def _children(metric: Any) -> Callable[..., Any]:
    """``metric.labels(*values)`` with the children kept: the client's ``labels`` validates
    and locks on every call, and the cycle records several per pod."""
    cache: dict[tuple[str, ...], Any] = {}

    def child(*values: str) -> Any:
        c = cache.get(values)
        if c is None:
            c = cache[values] = metric.labels(*values)
        return c

    return child


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.scheduling_algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_exp_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that "
            "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
            "the scheduler never attempted to schedule because they are gated.",
            ["queue"],
            registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exp_buckets(1, 2, 5),
            registry=r,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
            "and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=_exp_buckets(0.01, 2, 20),
            registry=r,
        )
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.unschedulable_reasons = Counter(
            "scheduler_unschedulable_reasons",
            "Number of times a plugin rejected a pod in a scheduling attempt (pyscheduler: cumulative).",
            ["plugin", "profile"],
            registry=r,
        )
        self.binding_errors = Counter(
            "pyscheduler_binding_errors",
            "Binding failures by kind (conflict, gone, fenced, error).",
            ["kind"],
            registry=r,
        )
        self.object_errors = Counter(
            "pyscheduler_object_errors",
            "Objects that could not be handled, by kind and stage (watch: not parsed; cycle: the "
            "pod's scheduling cycle raised). Each stays contained to that object.",
            ["kind", "stage"],
            registry=r,
        )
        self.events_dropped = Counter(
            "pyscheduler_events_dropped",
            "Events not written because the bounded event queue was full, by event reason.",
            ["reason"],
            registry=r,
        )
        # Preemption (upstream metrics.go; the goroutine pair exists with SchedulerAsyncPreemption on).
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_exp_buckets(1, 2, 7),
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.preemption_goroutines_duration = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"],
            buckets=_exp_buckets(0.01, 2, 20),
            registry=r,
        )
        self.preemption_goroutines_execution_total = Counter(
            "scheduler_preemption_goroutines_execution",
            "Number of preemption goroutines executed.",
            ["result"],
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=r,
        )
        self._incoming = _children(self.queue_incoming_pods)
        self._attempts = _children(self.schedule_attempts)
        self._attempt_duration = _children(self.scheduling_attempt_duration)
        self._permit_wait = _children(self.permit_wait_duration)

    # -- hooks -------------------------------------------------------------------------------
    def extension_point_observer(self, profile: str) -> DurationObserver:
        hist = _children(self.framework_extension_point_duration)

        def observe(point: str, plugin: str, status: str, seconds: float) -> None:
            hist(point, status, profile).observe(seconds)

        return observe

    def feature_gates(self, gates: FeatureGates) -> None:
        """kubernetes_feature_enabled{name,stage} (component-base featuregate AddMetrics): every
        gate the process knows, 1 when on; a GA gate has an empty stage."""
        g = Gauge(
            "kubernetes_feature_enabled",
            "This metric records the data about the stage and enablement of a k8s feature.",
            ["name", "stage"],
            registry=self.registry,
        )
        for spec, on in gates.all():
            g.labels(spec.name, spec.stage).set(1 if on else 0)

    def watch_queue(self, counts: Callable[[], dict[str, int]]) -> None:
        """Pending-pod gauges read the queue's counts at scrape time."""
        for name in ("active", "backoff", "unschedulable", "gated"):
            self.pending_pods.labels(name).set_function(functools.partial(_count_of, counts, name))

    def watch_cache(self, counts: Callable[[], dict[str, int]]) -> None:
        """Cache-size gauges (kube-scheduler's scheduler_cache_size) read the cache at scrape time."""
        for name in ("nodes", "pods", "assumed_pods"):
            self.cache_size.labels(name).set_function(functools.partial(_count_of, counts, name))

    def incoming(self, queue: str, event: str) -> None:
        self._incoming(queue, event).inc()

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self._attempts(result, profile).inc()
        self._attempt_duration(result, profile).observe(seconds)

    def permit_waited(self, result: str, seconds: float) -> None:
        """One wait at Permit ended; ``result`` is its outcome's status code (Success, Unschedulable, Error)."""
        self._permit_wait(result).observe(seconds)

    def object_error(self, kind: str, stage: str = "watch") -> None:
        self.object_errors.labels(kind, stage).inc()

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
