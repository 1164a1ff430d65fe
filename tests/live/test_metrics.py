"""The metric families as the scheduler fills them: queue gauges read when scraped, the sampled
per-plugin timing, evaluation counts, event labels, the exposition's format. Expected values from
kube-scheduler v1.36.3: backend/queue/scheduling_queue_test.go (TestUnschedulablePodsMetric,
TestIncomingPodsMetrics), framework/runtime/framework_test.go (TestPluginEvaluationTotalMetric,
TestRecordingMetrics), schedule_one.go (getAttemptsLabel, PodScheduledAfterFlush), and Go's
strconv.FormatFloat(f, 'g', -1, 64) for the bucket bounds the Go client writes."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.config import SchedulerConfig, parse_config
from scheduler.framework.events import ActionType, ClusterEvent, event_label
from scheduler.live.metrics import Metrics, attempts_label
from scheduler.live.metrics.kit import BulkHistogram, exponential_buckets, go_float
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness

PROFILE = "default-scheduler"


def attached(config: SchedulerConfig | None = None) -> Harness:
    h = Harness(config=config)
    h.metrics.attach(h.sched.frameworks, h.queue, h.cache.sizes, lambda: len(h.sched.binding_tasks))
    return h


def value(m: Metrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


def exposed(m: Metrics) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(m.exposition()[0].decode())}


# -- format ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("f", "go"),
    [  # printed by Go's strconv.FormatFloat(f, 'g', -1, 64)
        (64.0, "64"), (1e6, "1e+06"), (1048576.0, "1.048576e+06"), (262144.0, "262144"), (0.0001, "0.0001"),
        (0.00012, "0.00012"), (123456.5, "123456.5"), (2.68435456e9, "2.68435456e+09"), (3.25, "3.25"),
        (1e21, "1e+21"), (1e-7, "1e-07"), (0.5, "0.5"), (100000.0, "100000"), (999999.0, "999999"),
        (1000000.5, "1.0000005e+06"), (float("inf"), "+Inf"),
    ],
)
def test_floats_as_go_writes_them(f: float, go: str) -> None:
    assert go_float(f) == go


def test_buckets_multiplied_step_by_step_as_go() -> None:
    # prometheus.ExponentialBuckets(0.00001, 1.5, 20), each bound as Go prints it.
    go = [
        "1e-05", "1.5000000000000002e-05", "2.2500000000000005e-05", "3.375000000000001e-05",
        "5.062500000000001e-05", "7.593750000000002e-05", "0.00011390625000000003", "0.00017085937500000006",
        "0.0002562890625000001", "0.00038443359375000017", "0.0005766503906250003", "0.0008649755859375004",
        "0.0012974633789062506", "0.0019461950683593758", "0.0029192926025390638", "0.004378938903808595",
        "0.006568408355712893", "0.009852612533569338", "0.014778918800354007", "0.02216837820053101",
    ]
    assert [go_float(b) for b in exponential_buckets(0.00001, 1.5, 20)] == go


def test_bulk_observation_is_that_many_observations() -> None:
    h = BulkHistogram("x_seconds", "x", ("a",), [1.0, 2.0])
    h.labels("v").observe(1.5, 3)
    h.labels("v").observe(0.5)
    fam = next(iter(h.collect()))
    got = {(s.name, s.labels.get("le")): s.value for s in fam.samples}
    assert got[("x_seconds_bucket", "1")] == 1
    assert got[("x_seconds_bucket", "2")] == 4
    assert got[("x_seconds_bucket", "+Inf")] == 4
    assert got[("x_seconds_count", None)] == 4
    assert got[("x_seconds_sum", None)] == 5.0


def test_no_created_series_and_no_empty_families() -> None:
    m = Metrics()
    text = m.exposition()[0].decode()
    assert "_created" not in text
    # A vector family appears once it has a series, as the Go client writes it.
    assert "scheduler_schedule_attempts_total" not in text
    assert "scheduler_preemption_attempts_total 0.0" in text  # no labels: always one series
    m.attempt("scheduled", PROFILE, 0.01)
    text = m.exposition()[0].decode()
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text
    assert "_created" not in text


# -- labels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("ev", "label"),
    [  # upstream ClusterEvent.Label(): CustomLabel, else Resource + ActionType.String()
        (ClusterEvent("Node", ActionType.ADD), "NodeAdd"),
        (ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint"),
        (ClusterEvent("UnscheduledPod", ActionType.UPDATE_POD_LABEL), "UnschedulablePodUpdatePodLabel"),
        (ClusterEvent("AssignedPod", ActionType.DELETE), "AssignedPodDelete"),
        (ClusterEvent("*", ActionType.ALL, "UnschedulableTimeout"), "UnschedulableTimeout"),
        (ClusterEvent("PersistentVolumeClaim", ActionType.ADD, "PersistentVolumeClaimAdd"), "PersistentVolumeClaimAdd"),
        (ClusterEvent("Pod", ActionType.UPDATE), "PodUpdate"),
    ],
)
def test_event_labels(ev: ClusterEvent, label: str) -> None:
    assert event_label(ev) == label


@pytest.mark.parametrize(("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")])
def test_sli_attempts_label_is_capped(attempts: int, label: str) -> None:
    assert attempts_label(attempts) == label


# -- queue gauges ------------------------------------------------------------------------------

def unschedulable(m: Metrics, plugin: str) -> float:
    return value(m, "scheduler_unschedulable_pods", plugin=plugin, profile=PROFILE)


async def test_unschedulable_pods_gauge_follows_the_rejected_pods() -> None:
    # Counted while the pod waits (any queue), taken back when it is popped; the series stays at 0.
    h = attached()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    assert unschedulable(h.metrics, "NodeResourcesFit") == 0
    await h.step()
    assert unschedulable(h.metrics, "NodeResourcesFit") == 1
    h.clock.step(2)
    h.sched.on_node(None, make_node("large", cpu="8"))  # requeued to activeQ: still counted
    assert unschedulable(h.metrics, "NodeResourcesFit") == 1
    assert h.queue.pop_nowait() is not None  # popped: no longer
    assert unschedulable(h.metrics, "NodeResourcesFit") == 0
    assert 'scheduler_unschedulable_pods{plugin="NodeResourcesFit"' in h.metrics.exposition()[0].decode()


async def test_gated_pod_counts_under_its_gating_plugin_and_as_gated() -> None:
    # TestUnschedulablePodsMetric: gated once (1), ungated and popped (0); pending_pods{queue="gated"}
    # and, as upstream keeps gated pods in unschedulablePods, queue_incoming_pods{queue="unschedulable"}.
    h = attached()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    gated = make_pod("g", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    h.sched.on_pod("ADDED", gated)
    m = h.metrics
    assert unschedulable(m, "SchedulingGates") == 1
    assert value(m, "scheduler_pending_pods", queue="gated") == 1
    assert value(m, "scheduler_pending_pods", queue="unschedulable") == 0
    assert value(m, "scheduler_queue_incoming_pods_total", queue="unschedulable", event="UnschedulablePodAdd") == 1
    assert value(m, "scheduler_queue_incoming_pods_total", queue="gated", event="UnschedulablePodAdd") == 0
    open_pod = make_pod("g", cpu="1")
    open_pod["metadata"]["resourceVersion"] = "2"
    h.sched.on_pod("MODIFIED", open_pod)
    assert value(m, "scheduler_pending_pods", queue="active") == 1
    assert unschedulable(m, "SchedulingGates") == 1  # until popped
    await h.step()
    assert unschedulable(m, "SchedulingGates") == 0
    assert value(m, "scheduler_pending_pods", queue="gated") == 0


def test_deleted_pod_leaves_the_gauge() -> None:
    h = attached()
    gated = make_pod("g", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    h.sched.on_pod("ADDED", gated)
    assert unschedulable(h.metrics, "SchedulingGates") == 1
    h.sched.on_pod("DELETED", gated)
    assert unschedulable(h.metrics, "SchedulingGates") == 0


async def test_pod_scheduled_after_flush() -> None:
    # schedule_one.go: counted when a pod the leftover flush moved out of unschedulable is bound;
    # a pod bound without such a flush is not.
    h = attached()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    await h.step()
    h.sched.on_pod("ADDED", make_pod("other", cpu="1"))
    await h.step()
    assert h.bound() == {"other": "small"}
    assert value(h.metrics, "scheduler_pod_scheduled_after_flush_total") == 0
    h.clock.step(h.queue.max_in_unschedulable + 1)
    assert h.queue.flush_unschedulable_leftover() == 1
    h.sched.on_node(None, make_node("large", cpu="8"))
    await h.step()
    assert h.bound()["big"] == "large"
    assert value(h.metrics, "scheduler_pod_scheduled_after_flush_total") == 1
    assert value(h.metrics, "scheduler_pod_scheduling_attempts_count") == 2


async def test_inflight_events_count_the_popped_pods_and_the_events_meanwhile() -> None:
    h = attached()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    q = h.queue.pop_nowait()
    assert q is not None
    h.sched.on_node(None, make_node("n2", cpu="4"))
    m = h.metrics
    assert value(m, "scheduler_inflight_events", event="PodPopped") == 1
    assert value(m, "scheduler_inflight_events", event="NodeAdd") == 1
    h.queue.done(q.pod.uid)
    assert value(m, "scheduler_inflight_events", event="PodPopped") == 0
    # A label once seen stays, at 0, as a Go gauge child does.
    assert 'scheduler_inflight_events{event="NodeAdd"} 0.0' in m.exposition()[0].decode()


# -- framework ---------------------------------------------------------------------------------

async def test_plugin_evaluations_count_every_node_a_filter_or_score_plugin_saw() -> None:
    # TestPluginEvaluationTotalMetric: instrumented Filter and Score count once per node,
    # PreFilter and PreScore once per cycle unless they Skip; every plugin's series from the start.
    h = attached()
    before = exposed(h.metrics)["scheduler_plugin_evaluation"]
    series = {(s.labels["plugin"], s.labels["extension_point"]) for s in before.samples}  # type: ignore[attr-defined]
    assert ("NodeResourcesFit", "Filter") in series and ("ImageLocality", "Score") in series
    for i in range(3):
        h.sched.on_node(None, make_node(f"n{i}", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    m = h.metrics

    def evals(plugin: str, point: str) -> float:
        return value(m, "scheduler_plugin_evaluation_total", plugin=plugin, extension_point=point, profile=PROFILE)

    assert evals("NodeResourcesFit", "Filter") == 3
    assert evals("NodeResourcesFit", "PreFilter") == 1
    assert evals("NodeResourcesBalancedAllocation", "Score") == 3
    assert evals("VolumeBinding", "PreFilter") == 0  # Skip: no volumes
    assert evals("VolumeBinding", "Filter") == 0  # skipped at PreFilter, so not run


async def test_sampled_cycle_times_each_plugin_once_per_node() -> None:
    h = attached()
    fw = h.sched.frameworks[PROFILE]
    fw.handle.metrics.sample = lambda: True  # type: ignore[method-assign]
    for i in range(4):
        h.sched.on_node(None, make_node(f"n{i}", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    m = h.metrics

    def count(plugin: str, point: str, status: str = "Success") -> float:
        return value(m, "scheduler_plugin_execution_duration_seconds_count", plugin=plugin,
                     extension_point=point, status=status)

    assert count("NodeResourcesFit", "Filter") == 4
    assert count("NodeResourcesFit", "PreFilter") == 1
    assert count("TaintToleration", "Score") == 4
    assert count("TaintToleration", "ScoreExtensionNormalize") == 1
    assert count("DefaultBinder", "Bind") == 1
    assert count("VolumeBinding", "PreFilter", "Skip") == 1
    ext = exposed(m)["scheduler_framework_extension_point_duration_seconds"]
    points = {s.labels["extension_point"] for s in ext.samples}  # type: ignore[attr-defined]
    assert {"PreEnqueue", "PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind",
            "PostBind"} <= points


async def test_cycles_are_not_timed_per_plugin_unless_sampled() -> None:
    h = attached()
    h.sched.frameworks[PROFILE].handle.metrics.sample = lambda: False  # type: ignore[method-assign]
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    # Only SignPod, which upstream times on every call (framework.go SignPod), when the pod
    # entered the queue: no extension point of the cycle.
    timed = exposed(h.metrics)["scheduler_plugin_execution_duration_seconds"]
    points = {s.labels["extension_point"] for s in timed.samples}  # type: ignore[attr-defined]
    assert points == {"Sign"}


def test_sampling_rate_is_upstreams() -> None:
    m = Metrics()
    m.recorder._rng.seed(7)
    hits = sum(m.recorder.sample() for _ in range(20000))
    assert 1700 < hits < 2300  # pluginMetricsSamplePercent = 10


# -- handlers ----------------------------------------------------------------------------------

def test_event_handling_is_timed_under_upstreams_labels() -> None:
    h = attached()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    tainted = make_node("n1", cpu="4")
    tainted["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    h.sched.on_node("MODIFIED", tainted)
    h.sched.on_pod("ADDED", make_pod("b", cpu="1", node_name="n1"))
    text = h.metrics.exposition()[0].decode()
    labels = set(re.findall(r'scheduler_event_handling_duration_seconds_count\{event="(\w+)"\}', text))
    assert labels == {"NodeAdd", "UnschedulablePodAdd", "NodeUpdateNodeTaint", "AssignedPodAdd"}


def test_goroutines_are_the_bindings_in_flight() -> None:
    h = attached()
    assert value(h.metrics, "scheduler_goroutines", operation="binding") == 0


async def test_a_rejecting_plugin_has_its_series_even_if_never_scraped_while_counted() -> None:
    # Upstream makes the gauge child at the first increment; it stays at 0 afterwards.
    h = attached()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    await h.step()
    h.clock.step(2)
    h.sched.on_node(None, make_node("large", cpu="8"))
    await h.step()  # popped and bound before any scrape
    text = h.metrics.exposition()[0].decode()
    assert 'scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="default-scheduler"} 0.0' in text



# -- OpportunisticBatching ----------------------------------------------------------------------

async def test_batch_metrics_under_the_default_profile() -> None:
    # Default spreading makes the pod unsignable: no hint, and a cycle with one feasible node
    # flushes with empty_list (upstream StoreScheduleResults).
    h = attached()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    m = h.metrics
    assert value(m, "scheduler_batch_attempts_total", profile=PROFILE, result="no_hint") == 1
    assert value(m, "scheduler_batch_cache_flushed_total", profile=PROFILE, reason="empty_list") == 1
    assert value(m, "scheduler_get_node_hint_duration_seconds_count", hinted="no_hint", profile=PROFILE) == 1
    assert value(m, "scheduler_store_schedule_results_duration_seconds_count", profile=PROFILE) == 1
    sign = "scheduler_framework_extension_point_duration_seconds_count"
    assert value(m, sign, extension_point="Sign", status="Success", profile=PROFILE) == 1
    # Signing stopped at PodTopologySpread, which refused the pod.
    assert value(m, "scheduler_plugin_execution_duration_seconds_count", plugin="PodTopologySpread",
                 extension_point="Sign", status="Unschedulable") == 1


async def test_batch_metrics_when_pods_are_signable() -> None:
    cfg = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE,
                      "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]}],
    })
    h = attached(cfg)
    for i in range(3):
        h.sched.on_node(None, make_node(f"n{i}", cpu=str(2 + i)))
    for k in range(3):
        h.sched.on_pod("ADDED", make_pod(f"web-{k}", cpu="1", host_ports=[8080]))
    for _ in range(3):
        await h.step()
    assert h.bound() == {"web-0": "n2", "web-1": "n1", "web-2": "n0"}
    m = h.metrics
    assert value(m, "scheduler_batch_attempts_total", profile=PROFILE, result="no_hint") == 1
    assert value(m, "scheduler_batch_attempts_total", profile=PROFILE, result="hint_used") == 2
    assert value(m, "scheduler_get_node_hint_duration_seconds_count", hinted="hint", profile=PROFILE) == 2
