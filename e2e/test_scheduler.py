"""End-to-end: ``pyscheduler run`` as a subprocess under the pyscheduler ServiceAccount, against
the e2e control plane (etcd + kube-apiserver + kwok). Assertions are on what the API
server shows: spec.nodeName, events.k8s.io Events, the PodScheduled condition, the Lease.

Every case keeps its own nodes (a unique label the pods select), so placements do not depend
on whatever else lives in the cluster. Timeouts are <= 60 s per wait.
"""

from __future__ import annotations

import json
import math
import pathlib
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.support.auth import metrics_reader_token
from e2e.support.objects import GROUP, SCHEDULER, bind_pod, create_pod, create_pods, make_pod
from e2e.support.plane import restart_apiserver
from e2e.support.waits import (
    WaitTimeout,
    events_for,
    pod_condition,
    wait_bound,
    wait_failed_scheduling,
    wait_for,
    wait_for_deleted,
)
from scheduler.testing.process import REPO, SchedulerProcess, run_argv, scheduler_env

LEASE_NS = "pyscheduler"
LEASE_NAME = "pyscheduler"

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")


# ---------------------------------------------------------------------------------------------
# The scheduler process


@pytest.fixture
def start_scheduler(scheduler_config_path: str, scheduler_kubeconfig: str, tmp_path: pathlib.Path):
    procs: list[SchedulerProcess] = []

    def start(config: str | None = None, ready: bool = True, name: str = "sched") -> SchedulerProcess:
        p = SchedulerProcess(config or scheduler_config_path, scheduler_kubeconfig, tmp_path, name, port=free_port())
        procs.append(p)
        if ready:
            p.wait_ready()
        return p

    yield start
    for p in procs:
        p.stop()


@pytest.fixture
def scheduler(start_scheduler) -> SchedulerProcess:
    return start_scheduler()


@pytest.fixture
def group(namespace: str) -> dict[str, str]:
    """A label unique to this test: its nodes carry it, its pods select it."""
    return {GROUP: namespace}


def sample(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    """One sample's value; 0 when the scheduler has not exported it (a counter never incremented)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def metrics_token(api_client: client.ApiClient, namespace: str) -> str:
    """A token allowed to read the scheduler's /metrics (ClusterRole pyscheduler-metrics-reader)."""
    return metrics_reader_token(api_client, namespace)


def wait_metrics(
    proc: SchedulerProcess,
    token: str,
    ok: Any,
    desc: str,
    timeout: float = 30.0,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Scrape /metrics until ``ok(samples)`` holds; return those samples."""
    last: list[Any] = [None]

    def check() -> Any:
        m = proc.metrics(token)
        last[0] = m
        return m is not None and ok(m) and m

    try:
        return wait_for(check, timeout=timeout, interval=0.3, desc=desc)
    except WaitTimeout as exc:
        shown = {
            k: v
            for k, v in (last[0] or {}).items()
            if k[0].startswith(
                ("scheduler_pending", "scheduler_cache", "scheduler_schedule_attempts", "scheduler_queue_incoming")
            )
        }
        raise WaitTimeout(f"{exc}; metrics: {shown}") from None


def pending_total(m: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return sum(sample(m, "scheduler_pending_pods", queue=q) for q in ("active", "backoff", "unschedulable", "gated"))


# ---------------------------------------------------------------------------------------------
# Reading what the cluster shows


def node_of(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    return core.read_namespaced_pod(name, namespace).spec.node_name


def scheduled_message(core: client.CoreV1Api, namespace: str, name: str) -> str:
    """The message of the pod's PodScheduled condition ("" without one)."""
    cond = pod_condition(core.read_namespaced_pod(name, namespace), "PodScheduled")
    return (cond.message or "") if cond is not None else ""


def simulate(
    api_client: client.ApiClient,
    core: client.CoreV1Api,
    nodes: list[str],
    pods: list[dict[str, Any]],
    config: str,
    tmp_path: pathlib.Path,
) -> dict[str, str | None]:
    """What ``pyscheduler simulate`` predicts for these nodes (as the API shows them) and pods."""
    docs = [api_client.sanitize_for_serialization(core.read_node(n)) for n in nodes]
    for d in docs:
        d.setdefault("apiVersion", "v1")
        d.setdefault("kind", "Node")
    docs.extend(pods)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(docs))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            "simulate",
            "--cluster",
            str(cluster),
            "--config",
            config,
            "--output",
            "json",
            "--seed",
            "1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    placements: dict[str, str | None] = {}
    for line in out.splitlines():
        rec = json.loads(line)
        totals = sorted((s["total"] for s in rec["scores"].values()), reverse=True)
        # The comparison is only meaningful where no tie-break (random) decides.
        assert len(totals) < 2 or totals[0] > totals[1], f"tie for {rec['pod']}: {rec['scores']}"
        placements[rec["pod"].split("/", 1)[1]] = rec["node"]
    return placements


# ---------------------------------------------------------------------------------------------
# Placement


def test_placement_equals_simulate(
    scheduler, api_client, core_v1, node_factory, namespace, group, scheduler_config_path, tmp_path
):
    # Different sizes make every score distinct: the answer is unique, no tie-break involved.
    nodes = []
    for cpu in ("2", "4", "8"):
        nodes += node_factory(1, cpu=cpu, memory="16Gi", labels=group)
    pods = [
        make_pod(f"p{i}", namespace, cpu=cpu, memory="1Gi", node_selector=group)
        for i, cpu in enumerate(["1", "1500m", "2", "500m", "3", "1200m", "6"])
    ]
    predicted = simulate(api_client, core_v1, nodes, pods, scheduler_config_path, tmp_path)
    live = {}
    for p in pods:  # one at a time: the same order simulate uses
        core_v1.create_namespaced_pod(namespace, p)
        name = p["metadata"]["name"]
        if predicted[name] is None:
            wait_failed_scheduling(api_client, core_v1, namespace, name)
            live[name] = None
        else:
            live[name] = wait_bound(core_v1, namespace, name)
    assert live == predicted
    assert any(v is None for v in predicted.values()) or len(set(live.values())) > 1


def required_node_affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    """A pod affinity with one required node selector term made of ``expressions``."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


def test_node_selector_taints_affinity(scheduler, api_client, core_v1, node_factory, namespace, group):
    ssd = node_factory(1, labels={**group, "disk": "ssd"})[0]
    tainted = node_factory(1, labels=group, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])[0]
    plain = node_factory(1, labels=group)[0]
    create_pod(core_v1, namespace, "sel", node_selector={**group, "disk": "ssd"})
    create_pod(
        core_v1,
        namespace,
        "tol",
        node_selector=group,
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}],
        affinity=required_node_affinity({"key": "kubernetes.io/hostname", "operator": "In", "values": [tainted]}),
    )
    create_pod(
        core_v1,
        namespace,
        "notol",
        node_selector=group,
        affinity=required_node_affinity({"key": "kubernetes.io/hostname", "operator": "In", "values": [tainted]}),
    )
    create_pod(
        core_v1,
        namespace,
        "anti-ssd",
        node_selector=group,
        affinity=required_node_affinity({"key": "disk", "operator": "DoesNotExist"}),
        tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "PreferNoSchedule"}],
    )
    assert wait_bound(core_v1, namespace, "sel") == ssd
    assert wait_bound(core_v1, namespace, "tol") == tainted
    assert wait_bound(core_v1, namespace, "anti-ssd") == plain  # ssd excluded, tainted not tolerated
    ev, cond = wait_failed_scheduling(api_client, core_v1, namespace, "notol")
    assert "untolerated taint" in ev.note and "didn't match Pod's node affinity/selector" in ev.note
    assert cond.reason == "Unschedulable" and cond.message == ev.note
    assert ev.reporting_controller == SCHEDULER and ev.type == "Warning" and ev.action == "Scheduling"


def test_topology_spreading(scheduler, core_v1, node_factory, namespace, group):
    a = node_factory(2, zone="zone-a", labels=group)
    b = node_factory(2, zone="zone-b", labels=group)
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
    for i in range(6):
        create_pod(
            core_v1, namespace, f"s{i}", labels={"app": "spread"}, node_selector=group, topologySpreadConstraints=spread
        )
        wait_bound(core_v1, namespace, f"s{i}")
    placed = [node_of(core_v1, namespace, f"s{i}") for i in range(6)]
    per_zone = Counter("a" if n in a else "b" for n in placed)
    assert per_zone == {"a": 3, "b": 3}
    assert set(placed) <= set(a) | set(b)


def test_insufficient_then_placed_when_node_added(scheduler, api_client, core_v1, node_factory, namespace, group):
    node_factory(1, cpu="1", labels=group)
    create_pod(core_v1, namespace, "big", cpu="3", node_selector=group)
    ev, cond = wait_failed_scheduling(api_client, core_v1, namespace, "big")
    assert "Insufficient cpu" in ev.note and ev.note.startswith("0/")
    assert cond.reason == "Unschedulable" and cond.message == ev.note
    large = node_factory(1, cpu="4", labels=group)[0]
    assert wait_bound(core_v1, namespace, "big", timeout=30) == large
    sched = events_for(api_client, namespace, "big", "Scheduled")
    assert [e.note for e in sched] == [f"Successfully assigned {namespace}/big to {large}"]
    assert sched[0].reporting_controller == SCHEDULER and sched[0].action == "Binding"


def backoff_seconds(config: str, attempts: int) -> float:
    """The queue's backoff after ``attempts`` failed attempts (initial x 2^(attempts-1), capped)."""
    cfg = yaml.safe_load(pathlib.Path(config).read_text())
    initial = float(cfg.get("podInitialBackoffSeconds", 1))
    return min(float(cfg.get("podMaxBackoffSeconds", 10)), initial * 2 ** max(0, attempts - 1))


def log_time(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()


def test_priority_order(
    scheduler, api_client, core_v1, node_factory, namespace, priority_classes, metrics_token, scheduler_config_path
):
    low, high = priority_classes
    target = {GROUP: namespace + "-prio"}
    node_factory(1, labels={GROUP: namespace + "-decoy"})  # so both fail on a FitError, not "no nodes"
    create_pod(core_v1, namespace, "low", cpu="1", node_selector=target, priority_class_name=low)
    create_pod(core_v1, namespace, "high", cpu="1", node_selector=target, priority_class_name=high)
    wait_failed_scheduling(api_client, core_v1, namespace, "low")
    wait_failed_scheduling(api_client, core_v1, namespace, "high")
    # Both parked in the unschedulable queue, waiting for an event that may help them.
    failures = wait_for(
        lambda: (f := scheduler.last_failures(namespace, ["low", "high"])) and len(f) == 2 and f,
        timeout=10,
        desc="pod_unschedulable logged for both",
    )
    assert {n: (e["queue"], e["attempts"]) for n, e in failures.items()} == {
        "low": ("unschedulable", 1),
        "high": ("unschedulable", 1),
    }, failures
    wait_metrics(
        scheduler,
        metrics_token,
        lambda m: sample(m, "scheduler_pending_pods", queue="unschedulable") == 2,
        "both pods in the unschedulable queue",
    )
    # The node must arrive after both pods' first backoff is over, so that its event moves both
    # to activeQ at once and the priority order decides. Nothing shows "backoff over": a pod
    # parked in unschedulable stays there whatever its backoff, and only an event that moves it
    # makes the queue compare the clock with the pod's timestamp (queue.py _requeue). So this
    # waits for the deadline the scheduler's own records give: the queue stamps the pod, then
    # logs pod_unschedulable, so the backoff ends at the latest one backoff after that line.
    # Upstream's backoff ends at the start of the whole second after the expiry (its 1-second
    # windows, backoff_queue.go), so the wait rounds up to that second.
    ends = max(
        math.floor(log_time(e) + backoff_seconds(scheduler_config_path, e["attempts"])) + 1 for e in failures.values()
    )
    wait_for(lambda: time.time() > ends + 0.1, timeout=15, interval=0.05, desc="first backoff of both over")
    node = node_factory(1, cpu="1", labels=target)[0]
    assert wait_bound(core_v1, namespace, "high") == node
    # The node's arrival moved both pods to activeQ (not one of them to backoffQ): the case was tested.
    m = wait_metrics(
        scheduler,
        metrics_token,
        lambda m: sample(m, "scheduler_queue_incoming_pods_total", queue="active", event="NodeAdd") >= 2,
        "the node event to requeue both pods",
    )
    assert sample(m, "scheduler_queue_incoming_pods_total", queue="backoff", event="NodeAdd") == 0
    # "low" was tried again with "high" on the node (not just left waiting) and did not fit.
    wait_for(
        lambda: "Insufficient cpu" in scheduled_message(core_v1, namespace, "low"),
        timeout=30,
        desc="low rejected for Insufficient cpu on the new node",
    )
    assert node_of(core_v1, namespace, "low") is None


def test_other_schedulers_pods_untouched(scheduler, api_client, core_v1, node_factory, namespace, group, metrics_token):
    node = node_factory(1, cpu="2", labels=group)[0]
    create_pod(core_v1, namespace, "theirs", cpu="1500m", scheduler_name="someone-else", node_selector=group)
    create_pod(core_v1, namespace, "default", cpu="100m", scheduler_name=None, node_selector=group)
    # A pod of ours created after them: one pod watch delivers in resourceVersion order, so once
    # the scheduler has bound this one it has seen the other two, and would have queued them
    # before it (same priority, earlier).
    create_pod(core_v1, namespace, "probe", cpu=None, node_selector=group)
    assert wait_bound(core_v1, namespace, "probe") == node
    m = wait_metrics(
        scheduler,
        metrics_token,
        lambda m: (
            sample(m, "scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER) >= 1
            and sample(m, "scheduler_cache_size", type="assumed_pods") == 0
        ),
        "the probe's binding to finish",
    )
    # Exactly one attempt (the probe), nothing of theirs queued or waiting for a binding.
    attempts = {
        r: sample(m, "scheduler_schedule_attempts_total", result=r, profile=SCHEDULER)
        for r in ("scheduled", "unschedulable", "error")
    }
    assert attempts == {"scheduled": 1, "unschedulable": 0, "error": 0}, attempts
    assert pending_total(m) == 0, m
    assert node_of(core_v1, namespace, "theirs") is None
    # (a kube-scheduler peer, PYSCHED_WITH_KUBE_SCHEDULER=1, may bind "default"; we must not)
    ours = [
        e
        for e in events_for(api_client, namespace)
        if e.reporting_controller == SCHEDULER and e.regarding.name != "probe"
    ]
    assert ours == []
    assert not any(e.get("pod") in (f"{namespace}/theirs", f"{namespace}/default") for e in scheduler.log_events())
    # Bound by "someone else": its requests count against the node for our pods.
    bind_pod(core_v1, namespace, "theirs", node)
    create_pod(core_v1, namespace, "mine", cpu="1", node_selector=group)
    ev, _ = wait_failed_scheduling(api_client, core_v1, namespace, "mine")
    assert "Insufficient cpu" in ev.note


def test_pod_deleted_while_being_scheduled(
    scheduler, api_client, core_v1, node_factory, namespace, group, metrics_token
):
    node_factory(2, labels=group)
    names = create_pods(core_v1, 20, namespace, prefix="d", node_selector=group)
    deleted, kept = names[::2], names[1::2]
    for n in deleted:
        core_v1.delete_namespaced_pod(n, namespace, grace_period_seconds=0)
    for n in kept:
        wait_bound(core_v1, namespace, n)
    # Every pod settled in the scheduler: none queued (a deleted pod kept for a retry would be),
    # no binding in flight, and the Scheduled events of the kept pods written.
    wait_metrics(
        scheduler,
        metrics_token,
        lambda m: pending_total(m) == 0 and sample(m, "scheduler_cache_size", type="assumed_pods") == 0,
        "an empty queue and no binding in flight",
    )
    wait_for(
        lambda: {e.regarding.name for e in events_for(api_client, namespace, reason="Scheduled")} >= set(kept),
        timeout=30,
        desc="Scheduled events of the kept pods",
    )
    assert scheduler.proc.poll() is None
    assert scheduler.get("/healthz")[0] == 200
    # Nothing crashed, and nothing was retried for a deleted pod.
    events = scheduler.log_events()
    bad = [e for e in events if e.get("level") in ("error", "critical")]
    assert bad == [], bad
    gone = {f"{namespace}/{n}" for n in deleted}
    retried = [
        e
        for e in events
        if e.get("pod") in gone
        and e.get("event") in ("pod_unschedulable", "scheduling_error", "bind_failed", "bind_outcome_unknown")
    ]
    assert retried == [], retried


def test_node_deleted(scheduler, api_client, core_v1, node_factory, namespace, group, metrics_token):
    def cache_has_api_nodes() -> Any:
        return wait_metrics(
            scheduler,
            metrics_token,
            lambda m: sample(m, "scheduler_cache_size", type="nodes") == len(core_v1.list_node().items),
            "the scheduler's node count to match the API's",
        )

    keep, gone = node_factory(1, labels=group)[0], node_factory(1, labels={**group, "only": "me"})[0]
    before = sample(cache_has_api_nodes(), "scheduler_cache_size", type="nodes")  # "gone" is in the cache
    core_v1.delete_node(gone)
    wait_for_deleted(lambda: core_v1.read_node(gone), timeout=30, desc=f"node {gone}")
    after = sample(cache_has_api_nodes(), "scheduler_cache_size", type="nodes")  # ... and out of it
    assert after == before - 1
    create_pod(core_v1, namespace, "pinned", node_selector={**group, "only": "me"})
    create_pod(core_v1, namespace, "free", node_selector=group)
    assert wait_bound(core_v1, namespace, "free") == keep
    ev, _ = wait_failed_scheduling(api_client, core_v1, namespace, "pinned")
    # Weighed against the nodes that exist, the deleted one not among them.
    assert ev.note.startswith(f"0/{int(after)} nodes are available"), ev.note
    assert node_of(core_v1, namespace, "pinned") is None


# ---------------------------------------------------------------------------------------------
# Process lifecycle


def lease_holder(api_client: client.ApiClient) -> str:
    try:
        lease = client.CoordinationV1Api(api_client).read_namespaced_lease(LEASE_NAME, LEASE_NS)
    except ApiException as exc:
        if exc.status == 404:
            return ""
        raise
    return lease.spec.holder_identity or ""


def test_health_and_metrics(scheduler, api_client, core_v1, node_factory, namespace, group):
    node_factory(1, labels=group)
    create_pod(core_v1, namespace, "m", node_selector=group)
    wait_bound(core_v1, namespace, "m")
    assert scheduler.get("/healthz") == (200, "ok")
    assert scheduler.get("/readyz") == (200, "ok")
    status, text = scheduler.get("/metrics", token=metrics_reader_token(api_client, namespace))
    assert status == 200
    assert 'scheduler_schedule_attempts_total{profile="pyscheduler",result="scheduled"}' in text
    for name in (
        'scheduler_pending_pods{queue="active"}',
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_framework_extension_point_duration_seconds_bucket",
    ):
        assert name in text


def slow_config(base: str, tmp_path: pathlib.Path, qps: float) -> str:
    """The same configuration with a low API write rate, so a stream of pods takes a while."""
    cfg = yaml.safe_load(pathlib.Path(base).read_text())
    cfg.setdefault("clientConnection", {}).update(qps=qps, burst=1)
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def lease_identity(proc: SchedulerProcess) -> str | None:
    for e in proc.log_events():
        if e.get("event") == "lease_acquired":
            return str(e.get("identity"))
    return None


def test_killed_and_restarted_mid_stream(
    start_scheduler, api_client, core_v1, node_factory, namespace, group, scheduler_config_path, tmp_path
):
    node_factory(3, cpu="32", labels=group)
    # ~2.5 pods/s (a Binding and an Event each): the kill lands mid-stream.
    first = start_scheduler(slow_config(scheduler_config_path, tmp_path, 5), name="first")
    names = create_pods(core_v1, 40, namespace, prefix="k", node_selector=group)

    def some_bound() -> bool:
        return sum(1 for p in core_v1.list_namespaced_pod(namespace).items if p.spec.node_name) >= 8

    wait_for(some_bound, timeout=30, desc="some pods bound")
    first.stop(signal.SIGKILL)
    bound_at_kill = sum(1 for p in core_v1.list_namespaced_pod(namespace).items if p.spec.node_name)
    assert bound_at_kill < len(names), "the stream finished before the kill; nothing was tested"
    # The dead leader's lease must expire (15 s) before the new process may schedule.
    second = start_scheduler(name="second")
    for n in names:
        wait_bound(core_v1, namespace, n, timeout=60)
    scheduled = Counter(e.regarding.name for e in events_for(api_client, namespace, reason="Scheduled"))
    assert max(scheduled.values()) == 1, scheduled  # no pod reported bound twice
    # Pods bound by the second process: each has exactly one Scheduled event and no conflict.
    conflicts = [e for e in second.log_events() if e.get("event") == "bind_skipped"]
    assert conflicts == []
    assert all(node_of(core_v1, namespace, n) for n in names)


def test_two_replicas_failover(start_scheduler, api_client, core_v1, node_factory, namespace, group):
    node_factory(2, labels=group)
    a = start_scheduler(name="a")
    # (a previous case may have left a dead holder: then a waits out its 15 s lease)
    leader_a = wait_for(lambda: lease_identity(a), timeout=40, desc="a leader")
    assert lease_holder(api_client) == leader_a
    b = start_scheduler(name="b", ready=True)  # ready = cache synced; it waits for the lease
    create_pod(core_v1, namespace, "before", node_selector=group)
    wait_bound(core_v1, namespace, "before")
    assert lease_holder(api_client) == leader_a
    assert not any(e.get("event") == "pod_scheduled" for e in b.log_events())
    # Graceful stop releases the lease: the standby takes over within a few retry periods.
    assert a.stop(signal.SIGTERM) == 0
    wait_for(lambda: lease_holder(api_client) not in ("", leader_a), timeout=20, desc="b leader")
    create_pod(core_v1, namespace, "after", node_selector=group)
    wait_bound(core_v1, namespace, "after")
    # b logs pod_scheduled after the Binding returns: the API may show the node first.
    wait_for(
        lambda: any(e.get("event") == "pod_scheduled" and e.get("pod") == f"{namespace}/after" for e in b.log_events()),
        timeout=10,
        desc="b to log the binding",
    )
    assert b.stop(signal.SIGTERM) == 0
    assert lease_holder(api_client) == ""  # released on SIGTERM


def test_bad_config_exits_clearly_and_writes_nothing(scheduler_kubeconfig, api_client, core_v1, namespace, tmp_path):
    create_pod(core_v1, namespace, "waiting")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: pyscheduler\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n"
    )
    holder_before = lease_holder(api_client)
    r = subprocess.run(
        run_argv(bad, "--kubeconfig", scheduler_kubeconfig, "--port", str(free_port())),
        cwd=REPO,
        env=scheduler_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "NoSuchPlugin" in lines[0], r.stderr
    assert r.stdout == ""
    assert node_of(core_v1, namespace, "waiting") is None
    assert events_for(api_client, namespace) == []
    assert lease_holder(api_client) == holder_before


def test_lost_lease_stops_and_exits(start_scheduler, api_client, core_v1, node_factory, namespace, group):
    node_factory(1, labels=group)
    proc = start_scheduler(name="victim")
    wait_for(lambda: lease_identity(proc), timeout=40, desc="leader")
    coord = client.CoordinationV1Api(api_client)
    lease = coord.read_namespaced_lease(LEASE_NAME, LEASE_NS)
    lease.spec.holder_identity = "intruder"
    lease.spec.lease_duration_seconds = 3600
    coord.replace_namespaced_lease(LEASE_NAME, LEASE_NS, lease)
    try:
        # It can no longer renew: within the renew deadline (10 s) it stops and exits non-zero.
        code = proc.proc.wait(timeout=30)
        assert code != 0
        events = proc.log_events()
        lost = [i for i, e in enumerate(events) if e.get("event") == "leader_election_lost"]
        assert lost, proc.logs()
        assert not any(e.get("event") == "pod_scheduled" for e in events[lost[0] :])
        # (Whether a pod created now stays unbound says nothing: the process is gone. A leader
        # that is still alive past its lease is test_paused_leader_schedules_nothing.)
        assert lease_holder(api_client) == "intruder"  # it did not release a lease it no longer holds
    finally:
        free_lease(api_client)


def free_lease(api_client: client.ApiClient) -> None:
    """Clear the holder (1 s duration), so that the next case's scheduler takes the lease at once."""
    coord = client.CoordinationV1Api(api_client)
    lease = coord.read_namespaced_lease(LEASE_NAME, LEASE_NS)
    lease.spec.holder_identity = ""
    lease.spec.lease_duration_seconds = 1
    coord.replace_namespaced_lease(LEASE_NAME, LEASE_NS, lease)


def process_stopped(pid: int) -> bool:
    """The kernel shows the process stopped (SIGSTOP delivered: state T)."""
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def test_paused_leader_schedules_nothing(
    start_scheduler, api_client, core_v1, node_factory, namespace, group, scheduler_config_path, tmp_path
):
    """A leader frozen past its lease wakes up with work to do (a pod it had queued, made
    schedulable by a node change it has not seen yet) and must do none of it: no Binding, no
    Lease write, exit non-zero. Nobody else takes the lease meanwhile, so only the fence (its
    own clock) stands between the stale leader and a Binding another replica could race."""
    renew_deadline, lease_duration = 4.0, 6.0
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["leaderElection"].update(
        leaseDuration=f"{lease_duration:g}s", renewDeadline=f"{renew_deadline:g}s", retryPeriod="1s"
    )
    short = tmp_path / "short-lease.yaml"
    short.write_text(yaml.safe_dump(cfg))
    node = node_factory(1, labels=group)[0]
    proc = start_scheduler(str(short), name="paused")
    me = wait_for(lambda: lease_identity(proc), timeout=40, desc="leader")
    create_pod(core_v1, namespace, "orphan", node_selector={**group, "wake": "yes"})
    # Positive evidence that the leader holds the pod in its queue, waiting for a node event.
    wait_for(lambda: scheduler_failure(proc, namespace, "orphan"), timeout=30, desc="orphan queued")
    coord = client.CoordinationV1Api(api_client)
    proc.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: process_stopped(proc.proc.pid), timeout=10, interval=0.05, desc="leader frozen")
        frozen = time.monotonic()
        # The node now fits the orphan: the event waits in the frozen leader's watch.
        core_v1.patch_node(node, {"metadata": {"labels": {"wake": "yes"}}})
        # No renewal can start while the leader is frozen, so a lease duration from here its lease
        # has expired for every candidate (and its fence, a renew deadline after its last renewal,
        # has closed). A frozen process shows nothing; only the clock can tell when that is.
        wait_for(
            lambda: time.monotonic() > frozen + lease_duration + 0.5,
            timeout=lease_duration + 5,
            interval=0.1,
            desc="lease duration passed",
        )
        # As the frozen leader last wrote it (a renewal in flight at the freeze has landed by now).
        lease = coord.read_namespaced_lease(LEASE_NAME, LEASE_NS)
        assert lease.spec.holder_identity == me
    finally:
        proc.proc.send_signal(signal.SIGCONT)
    try:
        code = proc.proc.wait(timeout=30)
        events = proc.log_events()
        assert code == 1, proc.logs()
        assert any(e.get("event") == "leader_election_lost" for e in events), proc.logs()
        assert [e for e in events if e.get("event") == "pod_scheduled"] == []
        assert node_of(core_v1, namespace, "orphan") is None
        # Not renewed (nor released) on waking: no Lease write since.
        after = coord.read_namespaced_lease(LEASE_NAME, LEASE_NS)
        assert after.metadata.resource_version == lease.metadata.resource_version
    finally:
        free_lease(api_client)


def scheduler_failure(proc: SchedulerProcess, namespace: str, pod: str) -> dict[str, Any] | None:
    return proc.last_failures(namespace, [pod]).get(pod)


# ---------------------------------------------------------------------------------------------
# API server restart (last: it briefly takes the API away from everything in the session)


def test_apiserver_restart_watches_recover(
    start_scheduler, scheduler_config_path, tmp_path, control_plane, core_v1, node_factory, namespace, group
):
    if control_plane.run_dir is None or not control_plane.started_here:
        pytest.skip("restarts the kube-apiserver of the local control plane only")
    # The API is away ~10 s (down, start, RBAC warming up): longer than the default renew
    # deadline, which would rightly fence and stop a lone leader. This case is about watches.
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["leaderElection"].update(leaseDuration="60s", renewDeadline="40s")
    long_lease = tmp_path / "long-lease.yaml"
    long_lease.write_text(yaml.safe_dump(cfg))
    scheduler = start_scheduler(str(long_lease))
    node_factory(1, labels=group)
    core_v1.create_namespaced_pod(namespace, make_pod("before", namespace, node_selector=group))
    wait_bound(core_v1, namespace, "before")

    restart_apiserver(control_plane.run_dir, control_plane.kubeconfig)

    # A node and a pod that only exist after the restart: both watches must have resumed.
    fresh = node_factory(1, labels={**group, "after": "restart"})[0]
    core_v1.create_namespaced_pod(
        namespace, make_pod("after", namespace, node_selector={**group, "after": "restart"})
    )
    assert wait_bound(core_v1, namespace, "after", timeout=60) == fresh
    assert scheduler.proc.poll() is None, scheduler.logs()
