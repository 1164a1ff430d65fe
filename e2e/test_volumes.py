"""End-to-end: the volume plugins on live storage objects, ``pyscheduler run`` under its
ServiceAccount (so the ClusterRole's storage rules are exercised too).

The local plane runs kube-controller-manager's PV binder. Claims that must start out bound are
bound by it (a PV pre-bound by claimRef, seen by the controller before its claim, which names
the PV), so the controller never marks them Lost. The PreBind cases fence the controller off
their namespace's claims (a ValidatingAdmissionPolicy denying its claim updates) and play its
part themselves, so that "PreBind waits" and "bindTimeout expires" are observable.
e2e/test_volumes_controllers.py has the cases where the controller does all the binding.
Expected messages are kube-scheduler v1.36.3's: FitError ("0/N nodes are available: ..."),
VolumeBinding's lister NotFound, VolumeZone's ErrReasonConflict.
"""

from __future__ import annotations

import contextlib
import pathlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.objects import make_pod, unique_name
from e2e.support.plane import new_api_client
from e2e.support.waits import pod_condition, wait_bound, wait_for
from scheduler.testing.process import SchedulerProcess

GROUP = "e2e-volumes"
ZONE_LABEL = "topology.kubernetes.io/zone"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
# kube-controller-manager's identity for the PV binder (--use-service-account-credentials).
PV_BINDER = "system:serviceaccount:kube-system:persistent-volume-binder"

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")



@pytest.fixture(scope="module")
def scheduler(scheduler_config_path: str, scheduler_kubeconfig: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerProcess]:
    log_dir = tmp_path_factory.mktemp("sched")
    with SchedulerProcess.ready(scheduler_config_path, scheduler_kubeconfig, log_dir, "volumes") as p:
        yield p


@pytest.fixture
def storage_api(api_client: client.ApiClient) -> client.StorageV1Api:
    return client.StorageV1Api(api_client)


@pytest.fixture
def cluster_objects(core_v1: client.CoreV1Api, storage_api: client.StorageV1Api) -> Iterator[Callable[..., Any]]:
    """Creates PVs and StorageClasses, and removes them afterwards (the finalizers no PV
    controller will clear are dropped first, so nothing stays Terminating)."""
    made: list[tuple[str, str]] = []

    def create(kind: str, body: dict[str, Any]) -> Any:
        made.append((kind, body["metadata"]["name"]))
        if kind == "PersistentVolume":
            return core_v1.create_persistent_volume(body)
        return storage_api.create_storage_class(body)

    yield create
    for kind, name in reversed(made):
        with contextlib.suppress(ApiException):
            if kind == "PersistentVolume":
                core_v1.patch_persistent_volume(name, {"metadata": {"finalizers": None}})
                core_v1.delete_persistent_volume(name)
            else:
                storage_api.delete_storage_class(name)


def group_nodes(node_factory: Callable[..., list[str]], namespace: str, count: int = 3) -> list[str]:
    return node_factory(count, labels={GROUP: namespace})


def claim_pod(name: str, namespace: str, claim: str) -> dict[str, Any]:
    return make_pod(
        name, namespace, node_selector={GROUP: namespace},
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    )


def local_pv(name: str, node: str | None = None, claim: tuple[str, str] | None = None,
             storage_class: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
    }
    if node is not None:
        spec["local"] = {"path": "/mnt/disks/e2e"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    else:
        spec["hostPath"] = {"path": "/mnt/disks/e2e"}
    if claim is not None:
        spec["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                            "namespace": claim[0], "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def claim(name: str, namespace: str, volume: str = "", storage_class: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                            "storageClassName": storage_class}
    if volume:
        # Bound as the PV controller leaves a claim (pv_controller.go bindClaimToVolume).
        meta["annotations"] = {BIND_COMPLETED: "yes"}
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def mark_bound(core: client.CoreV1Api, namespace: str, pvc: str, pv: str) -> None:
    """The status the PV controller writes once claim and volume are bound to each other."""
    core.patch_namespaced_persistent_volume_claim_status(pvc, namespace, {"status": {"phase": "Bound"}})
    core.patch_persistent_volume_status(pv, {"status": {"phase": "Bound"}})


def wait_claim_bound(core: client.CoreV1Api, namespace: str, name: str,
                     timeout: float = 60.0) -> client.V1PersistentVolumeClaim:
    def bound() -> Any:
        c = core.read_namespaced_persistent_volume_claim(name, namespace)
        return c.status.phase == "Bound" and c.spec.volume_name and c

    return wait_for(bound, timeout=timeout, desc=f"claim {namespace}/{name} Bound")


def bound_claim(core: client.CoreV1Api, create: Callable[..., Any], namespace: str, pvc: str, pv: str,
                node: str | None = None, labels: dict[str, str] | None = None) -> None:
    """A claim bound to a PV pre-bound to it, bound by the PV controller. The controller must
    have seen the PV (it leaves Pending) before the claim appears: a claim naming a volume its
    cache lacks is marked Lost."""
    create("PersistentVolume", local_pv(pv, node, claim=(namespace, pvc), labels=labels))
    wait_for(lambda: core.read_persistent_volume(pv).status.phase in ("Available", "Bound"),
                     timeout=30, desc=f"PV {pv} seen by the PV controller")
    body = claim(pvc, namespace)
    body["spec"]["volumeName"] = pv
    core.create_namespaced_persistent_volume_claim(namespace, body)
    wait_claim_bound(core, namespace, pvc)


def wait_failed(core: client.CoreV1Api, namespace: str, pod: str,
                timeout: float = 30.0) -> tuple[client.CoreV1Event, client.V1PodCondition]:
    """The pod's FailedScheduling event and its PodScheduled=False condition.

    Read through the core Events API filtered by the pod: the PV controller's own events in
    the namespace (core Events without eventTime) do not deserialize as events.k8s.io/v1
    objects in the Python client, which test_scheduler.events_for lists unfiltered."""

    def both() -> Any:
        evs = core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.kind=Pod,involvedObject.name={pod},reason=FailedScheduling"
        ).items
        cond = pod_condition(core.read_namespaced_pod(pod, namespace), "PodScheduled")
        return evs and cond is not None and cond.status == "False" and (evs[-1], cond)

    return wait_for(both, timeout=timeout, desc=f"FailedScheduling for {namespace}/{pod}")


def failed_message(core: client.CoreV1Api, namespace: str, pod: str, timeout: float = 30.0) -> str:
    ev, cond = wait_failed(core, namespace, pod, timeout)
    assert ev.message == cond.message, (ev.message, cond.message)
    assert cond.reason == "Unschedulable", cond
    return str(cond.message)


@pytest.fixture
def pv_binder_fenced(api_client: client.ApiClient, core_v1: client.CoreV1Api, kubeconfig: str,
                     namespace: str) -> Iterator[None]:
    """The PV controller may not update claims in *namespace* (so the test binds them): a
    ValidatingAdmissionPolicy and its binding, in force once a dry-run update of a probe claim
    made as the controller is denied."""
    adm = client.AdmissionregistrationV1Api(api_client)
    name = unique_name("fence-pv-binder")
    adm.create_validating_admission_policy({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["persistentvolumeclaims", "persistentvolumeclaims/status"]}]},
            "validations": [{"expression": f"request.userInfo.username != '{PV_BINDER}'",
                             "message": "e2e: the PV binder is fenced off this namespace"}],
        },
    })
    try:
        adm.create_validating_admission_policy_binding({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {
                         "matchLabels": {"kubernetes.io/metadata.name": namespace}}}},
        })
        # A class that does not exist: the controller leaves the probe alone.
        core_v1.create_namespaced_persistent_volume_claim(
            namespace, claim("fence-probe", namespace, storage_class=f"{name}-none"))
        as_binder = new_api_client(kubeconfig)
        as_binder.set_default_header("Impersonate-User", PV_BINDER)
        try:
            probe = client.CoreV1Api(as_binder)

            def denied() -> bool:
                # An update, as the controller makes them (its role has no patch).
                body = core_v1.read_namespaced_persistent_volume_claim("fence-probe", namespace)
                body.metadata.labels = {"probe": "x"}
                try:
                    probe.replace_namespaced_persistent_volume_claim("fence-probe", namespace, body, dry_run="All")
                except ApiException as exc:
                    return exc.status in (403, 422) and "fenced" in str(exc.body)
                return False

            wait_for(denied, timeout=30, desc="PV binder fence in force")
        finally:
            as_binder.close()
        yield
    finally:
        with contextlib.suppress(ApiException):
            adm.delete_validating_admission_policy_binding(name)
        with contextlib.suppress(ApiException):
            adm.delete_validating_admission_policy(name)


# ---------------------------------------------------------------------------------------------


def test_bound_local_volume_pins_the_pod(scheduler, core_v1, node_factory, namespace, cluster_objects):
    # VolumeBinding Filter on a bound claim: only the node the local PV's nodeAffinity names.
    nodes = group_nodes(node_factory, namespace)
    pv = unique_name("pv-local")
    bound_claim(core_v1, cluster_objects, namespace, "data", pv, node=nodes[1])
    core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "data"))
    assert wait_bound(core_v1, namespace, "p") == nodes[1]


def test_missing_claim_then_bound(scheduler, api_client, core_v1, node_factory, namespace, cluster_objects):
    # VolumeBinding PreFilter: the claim lister's NotFound, UnschedulableAndUnresolvable; the
    # claim's Add event (VolumeBinding's PVC hint) brings the pod back.
    nodes = group_nodes(node_factory, namespace)
    core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "later"))
    msg = failed_message(core_v1, namespace, "p")
    assert re.match(r'^0/\d+ nodes are available: persistentvolumeclaim "later" not found\.', msg), msg
    assert core_v1.read_namespaced_pod("p", namespace).spec.node_name is None

    pv = unique_name("pv-later")
    bound_claim(core_v1, cluster_objects, namespace, "later", pv, node=nodes[2])
    assert wait_bound(core_v1, namespace, "p", timeout=60) == nodes[2]


def test_volume_zone_mismatch(scheduler, api_client, core_v1, node_factory, namespace, cluster_objects):
    # VolumeZone Filter: the bound PV's zone label matches none of the candidate nodes' zones.
    nodes = group_nodes(node_factory, namespace, count=2)
    pv = unique_name("pv-zone")
    bound_claim(core_v1, cluster_objects, namespace, "zoned", pv, labels={ZONE_LABEL: "zone-elsewhere"})
    core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "zoned"))
    msg = failed_message(core_v1, namespace, "p")
    assert re.match(r"^0/\d+ nodes are available: .*\b2 node\(s\) had no available volume zone[,.]", msg), msg
    assert all(core_v1.read_node(n).metadata.labels[ZONE_LABEL] != "zone-elsewhere" for n in nodes)


def test_prebind_writes_claim_ref_and_waits_for_binding(
    scheduler, core_v1, node_factory, namespace, cluster_objects, pv_binder_fenced
):
    # VolumeBinding with WaitForFirstConsumer: Filter finds the one node the free local PV can
    # serve, PreBind updates the PV's claimRef (the ServiceAccount's "update persistentvolumes"),
    # then waits until the claim is bound (here the test, not the fenced PV controller) before Bind.
    nodes = group_nodes(node_factory, namespace)
    sc = unique_name("wffc")
    cluster_objects("StorageClass", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
    })
    pv = unique_name("pv-wffc")
    cluster_objects("PersistentVolume", local_pv(pv, nodes[0], storage_class=sc))
    # A new PV is Pending until the PV controller makes it Available; only Available PVs are
    # matched (FindMatchingVolume).
    core_v1.patch_persistent_volume_status(pv, {"status": {"phase": "Available"}})
    pvc = core_v1.create_namespaced_persistent_volume_claim(namespace, claim("wait", namespace, storage_class=sc))
    core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "wait"))

    def claimed() -> Any:
        v = core_v1.read_persistent_volume(pv)
        ref = v.spec.claim_ref
        return ref is not None and ref.uid == pvc.metadata.uid and v

    written = wait_for(claimed, timeout=30, desc=f"PV {pv} claimRef written by PreBind")
    assert (written.spec.claim_ref.namespace, written.spec.claim_ref.name) == (namespace, "wait")
    assert (written.metadata.annotations or {}).get(BOUND_BY_CONTROLLER) == "yes"
    # PreBind waits for the binding: the pod stays unbound meanwhile.
    assert core_v1.read_namespaced_pod("p", namespace).spec.node_name is None

    core_v1.patch_namespaced_persistent_volume_claim(
        "wait", namespace, {"metadata": {"annotations": {BIND_COMPLETED: "yes"}}, "spec": {"volumeName": pv}}
    )
    mark_bound(core_v1, namespace, "wait", pv)
    assert wait_bound(core_v1, namespace, "p", timeout=30) == nodes[0]


TIMEOUT_SCHEDULER = "pyscheduler-bind-timeout"


@pytest.fixture
def short_bind_timeout(scheduler_config_path: str, scheduler_kubeconfig: str,
                       tmp_path: pathlib.Path) -> Iterator[SchedulerProcess]:
    """A second process with its own profile name (no overlap with the module's scheduler, so
    no leader election) and bindTimeoutSeconds 2."""
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["leaderElection"] = {"leaderElect": False}
    cfg["profiles"] = [{
        "schedulerName": TIMEOUT_SCHEDULER,
        "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 2}}],
    }]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with SchedulerProcess.ready(str(path), scheduler_kubeconfig, tmp_path, "bind-timeout") as p:
        yield p


def test_prebind_timeout_requeues_then_binds(
    short_bind_timeout, core_v1, node_factory, namespace, cluster_objects, pv_binder_fenced
):
    # Nobody binds the claim within bindTimeoutSeconds: PreBind fails ("binding volumes: context
    # deadline exceeded", as BindPodVolumes' poll reports it), Unreserve, the pod is requeued;
    # once the claim is bound its update brings the pod back and it is placed.
    nodes = group_nodes(node_factory, namespace, count=2)
    sc = unique_name("wffc")
    cluster_objects("StorageClass", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
    })
    pv = unique_name("pv-slow")
    cluster_objects("PersistentVolume", local_pv(pv, nodes[1], storage_class=sc))
    core_v1.patch_persistent_volume_status(pv, {"status": {"phase": "Available"}})
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("slow", namespace, storage_class=sc))
    pod = claim_pod("p", namespace, "slow")
    pod["spec"]["schedulerName"] = TIMEOUT_SCHEDULER
    core_v1.create_namespaced_pod(namespace, pod)

    # The first failure is the timeout. The retry that follows may fail differently before this
    # test looks (the PV controller, seeing the claimRef, writes the PV's phase, so the retry's
    # PV update can meet a 409 Conflict, as kube-scheduler's would): look for the timeout among
    # the pod's FailedScheduling events, not just the latest.
    timed_out = 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'

    def timeout_event() -> Any:
        evs = core_v1.list_namespaced_event(
            namespace, field_selector="involvedObject.kind=Pod,involvedObject.name=p,reason=FailedScheduling"
        ).items
        return next((e for e in evs if e.message == timed_out), None)

    ev = wait_for(timeout_event, timeout=30, desc="the PreBind timeout's FailedScheduling event")
    assert ev.reporting_component == TIMEOUT_SCHEDULER
    _, cond = wait_failed(core_v1, namespace, "p")
    assert cond.reason == "SchedulerError"
    assert core_v1.read_namespaced_pod("p", namespace).spec.node_name is None

    core_v1.patch_namespaced_persistent_volume_claim(
        "slow", namespace, {"metadata": {"annotations": {BIND_COMPLETED: "yes"}}, "spec": {"volumeName": pv}}
    )
    mark_bound(core_v1, namespace, "slow", pv)
    assert wait_bound(core_v1, namespace, "p", timeout=60) == nodes[1]
