"""End-to-end: DefaultPreemption against the local control plane, each case run twice, by
``pyscheduler run`` and by the real kube-scheduler v1.36.3 binary, with the same assertions
(so every message checked here is the binary's own text too).

What the API server must show: the preemptor's status.nominatedNodeName, the victim's
DisruptionTarget condition (reason PreemptionByScheduler), a ``Preempted`` Event on the victim
naming the preemptor, the victim deleted, the preemptor bound to the nominated node; a
PodDisruptionBudget steering the choice to another node; preemptionPolicy Never refusing.
"""

from __future__ import annotations

import contextlib
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.differential import kubescheduler
from e2e.support.objects import GROUP, make_pod, unique_name
from e2e.support.waits import events_for, wait_bound, wait_failed_scheduling, wait_for, wait_for_deleted
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

BINARY = "e2e-kube-scheduler"
NOT_SELECTED = "node(s) didn't match Pod's node affinity/selector"


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def classes(api_client: client.ApiClient) -> Iterator[dict[str, str]]:
    """PriorityClasses of this module (cluster-scoped, so uniquely named and removed after)."""
    sched = client.SchedulingV1Api(api_client)
    suffix = unique_name("pc")
    spec = {
        "lowest": (50, None),
        "low": (100, None),
        "high": (1000, None),
        "high-never": (1000, "Never"),
    }
    names: dict[str, str] = {}
    for key, (value, policy) in spec.items():
        name = f"{suffix}-{key}"
        body: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        if policy:
            body["preemptionPolicy"] = policy
        sched.create_priority_class(body)
        names[key] = name
    yield names
    for name in names.values():
        with contextlib.suppress(ApiException):
            sched.delete_priority_class(name)


@pytest.fixture
def grp(namespace: str) -> dict[str, str]:
    """A label unique to this test: its nodes carry it, its pods select it."""
    return {GROUP: namespace}


@pytest.fixture(params=["pyscheduler", BINARY])
def sched_name(
    request: pytest.FixtureRequest,
    tmp_path: pathlib.Path,
    kubeconfig: str,
    scheduler_config_path: str,
    scheduler_kubeconfig: str,
) -> Iterator[str]:
    """The scheduler under test: ours (the manifests' configuration, under its ServiceAccount,
    so the RBAC is exercised too) or the real binary."""
    if request.param == "pyscheduler":
        proc = SchedulerProcess(scheduler_config_path, scheduler_kubeconfig, tmp_path, port=free_port())
        try:
            proc.wait_ready()
            yield "pyscheduler"
        finally:
            proc.stop()
        return
    cfg = kubescheduler.config(BINARY, kubeconfig, kubescheduler.disabled_plugins())
    cfg_path = tmp_path / "kube-scheduler.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    ks = kubescheduler.KubeScheduler(kubescheduler.binary_path(), cfg_path, kubeconfig, tmp_path / "ks.log")
    ks.start()
    try:
        yield BINARY
    finally:
        ks.stop()


class PodRecorder:
    """Every version of every pod in a namespace, from a watch (states that pass quickly, such
    as a victim's DisruptionTarget condition just before its deletion, are not missed)."""

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        self.versions: list[client.V1Pod] = []
        self._w = watch.Watch()
        self._ready = threading.Event()
        self._t = threading.Thread(target=self._run, args=(core, namespace), daemon=True)
        self._t.start()
        self._ready.wait(10)

    def _run(self, core: client.CoreV1Api, namespace: str) -> None:
        rv = core.list_namespaced_pod(namespace).metadata.resource_version
        self._ready.set()
        with contextlib.suppress(Exception):
            for ev in self._w.stream(core.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=120):
                self.versions.append(ev["object"])

    def of(self, name: str) -> list[client.V1Pod]:
        return [p for p in self.versions if p.metadata.name == name]

    def stop(self) -> None:
        self._w.stop()


@pytest.fixture
def recorder(core_v1: client.CoreV1Api, namespace: str) -> Iterator[PodRecorder]:
    r = PodRecorder(core_v1, namespace)
    yield r
    r.stop()


# ---------------------------------------------------------------------------------------------
# Helpers


def hist(*entries: tuple[int, str]) -> str:
    """A FitError reason histogram: "N reason" entries, zero counts left out, sorted as strings."""
    return ", ".join(sorted(f"{n} {r}" for n, r in entries if n))


def fit_message(core: client.CoreV1Api, ours: list[tuple[int, str]]) -> tuple[int, str]:
    """(all nodes, the FitError text) when the nodes outside the test's group fail NodeAffinity."""
    total = len(core.list_node().items)
    rest = total - sum(n for n, _ in ours)
    return total, f"0/{total} nodes are available: {hist(*ours, (rest, NOT_SELECTED))}."


def pod(name: str, ns: str, sched: str, grp: dict[str, str], cls: str, cpu: str, **kw: Any) -> dict[str, Any]:
    return make_pod(
        name, ns, scheduler_name=sched, cpu=cpu, memory="64Mi", node_selector=grp, priority_class_name=cls, **kw
    )


def wait_gone(core: client.CoreV1Api, ns: str, name: str) -> None:
    wait_for_deleted(lambda: core.read_namespaced_pod(name, ns), timeout=60, desc=f"pod {ns}/{name}")


def wait_until(pred: Callable[[], Any], desc: str, timeout: float = 30.0) -> Any:
    return wait_for(pred, timeout=timeout, desc=desc)


# ---------------------------------------------------------------------------------------------
# Cases


def test_high_priority_pod_preempts_lower_priority_pod(
    sched_name, api_client, core_v1, node_factory, namespace, grp, classes, recorder
):
    [node] = node_factory(1, cpu="2", memory="4Gi", labels=grp)
    core_v1.create_namespaced_pod(namespace, pod("victim", namespace, sched_name, grp, classes["low"], "1500m"))
    assert wait_bound(core_v1, namespace, "victim") == node
    core_v1.create_namespaced_pod(namespace, pod("preemptor", namespace, sched_name, grp, classes["high"], "1"))

    # The preemptor lands on the node the victim held, the victim is gone.
    assert wait_bound(core_v1, namespace, "preemptor", timeout=60) == node
    wait_gone(core_v1, namespace, "victim")
    preemptor = core_v1.read_namespaced_pod("preemptor", namespace)

    # Its first attempt failed with the plain FitError (PostFilter succeeded: no message of
    # its own) and nominated the node.
    _, fit = fit_message(core_v1, [(1, "Insufficient cpu")])
    [ev] = wait_until(lambda: events_for(api_client, namespace, "preemptor", "FailedScheduling"), "FailedScheduling")
    assert ev.note == fit
    assert any(p.status.nominated_node_name == node for p in recorder.of("preemptor"))

    # The victim: DisruptionTarget condition, then deletion, then a Preempted Event.
    conds = [
        c
        for p in recorder.of("victim")
        for c in (p.status.conditions or [])
        if c.type == "DisruptionTarget"
    ]
    assert conds, "victim never showed the DisruptionTarget condition"
    c = conds[-1]
    assert (c.status, c.reason) == ("True", "PreemptionByScheduler")
    assert c.message == f"{sched_name}: preempting to accommodate a higher priority pod"
    [pe] = wait_until(lambda: events_for(api_client, namespace, "victim", "Preempted"), "Preempted event")
    assert pe.type == "Normal"
    assert pe.action == "Preempting"
    assert pe.note == f"Preempted by pod {preemptor.metadata.uid} on node {node}"
    assert pe.reporting_controller == sched_name
    # Upstream hands the event library a wrapper of the preemptor it cannot reference: no related.
    assert pe.related is None


def test_pdb_steers_preemption_to_another_node(
    sched_name, api_client, core_v1, node_factory, namespace, grp, classes
):
    a, b = node_factory(2, cpu="2", memory="4Gi", labels=grp)
    # Without the budget node a wins: its victim has the lower priority.
    guarded = pod("guarded", namespace, sched_name, grp, classes["lowest"], "1500m",
                  labels={"app": "guarded"}, node_name=a)
    free = pod("free", namespace, sched_name, grp, classes["low"], "1500m", labels={"app": "free"}, node_name=b)
    core_v1.create_namespaced_pod(namespace, guarded)
    core_v1.create_namespaced_pod(namespace, free)
    policy = client.PolicyV1Api(api_client)
    policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )

    def counted() -> bool:
        st = policy.read_namespaced_pod_disruption_budget("guard", namespace).status
        return bool(st and st.observed_generation and st.current_healthy == 1 and st.disruptions_allowed == 0)

    wait_until(counted, "the disruption controller to count the guarded pod", timeout=60)
    core_v1.create_namespaced_pod(namespace, pod("preemptor", namespace, sched_name, grp, classes["high"], "1"))
    assert wait_bound(core_v1, namespace, "preemptor", timeout=60) == b
    wait_gone(core_v1, namespace, "free")
    assert core_v1.read_namespaced_pod("guarded", namespace).metadata.deletion_timestamp is None


def test_preemption_policy_never_does_not_preempt(
    sched_name, api_client, core_v1, node_factory, namespace, grp, classes
):
    [node] = node_factory(1, cpu="2", memory="4Gi", labels=grp)
    core_v1.create_namespaced_pod(
        namespace, pod("victim", namespace, sched_name, grp, classes["low"], "1500m", node_name=node)
    )
    core_v1.create_namespaced_pod(namespace, pod("never", namespace, sched_name, grp, classes["high-never"], "1"))
    # An equal-priority pod cannot preempt either: no victims on the node.
    core_v1.create_namespaced_pod(namespace, pod("peer", namespace, sched_name, grp, classes["low"], "1"))
    total, fit = fit_message(core_v1, [(1, "Insufficient cpu")])
    ev, cond = wait_failed_scheduling(api_client, core_v1, namespace, "never")
    want = f"{fit} no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    assert ev.note == want
    assert cond.message == want
    ev, _ = wait_failed_scheduling(api_client, core_v1, namespace, "peer")
    dry_run = hist(
        (1, "No preemption victims found for incoming pod"), (total - 1, "Preemption is not helpful for scheduling")
    )
    assert ev.note == f"{fit} no new claims to deallocate, preemption: 0/{total} nodes are available: {dry_run}."
    v = core_v1.read_namespaced_pod("victim", namespace)
    assert v.metadata.deletion_timestamp is None
    assert not core_v1.read_namespaced_pod("never", namespace).status.nominated_node_name
