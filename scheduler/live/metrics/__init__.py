"""Prometheus metrics under kube-scheduler v1.36.3's names, types, labels, help and buckets
(pkg/scheduler/metrics and the component-base families kube-scheduler exports), on /metrics;
and kube_pod_resource_request/limit on /metrics/resources (``resources``).

families.py the scheduler's own families; hooks.py the ``Metrics`` object the loop, queue and
framework report to; component.py component-base's (leader election, feature gates, version,
process); client.py the API client's rest_client_*; kit.py what they are built from.
"""

from prometheus_client import disable_created_metrics

from scheduler.live.metrics.hooks import ERROR, SCHEDULED, UNSCHEDULABLE, Metrics, attempts_label

# The Go client writes no *_created series; neither do we (process-wide switch of the client).
disable_created_metrics()

__all__ = ["ERROR", "SCHEDULED", "UNSCHEDULABLE", "Metrics", "attempts_label"]
