"""End-to-end: ``pyscheduler run`` with only the permissions kube-scheduler v1.36.3 itself has.

Two identities, each scheduling the same workload on the local plane:

* ``kube-scheduler-user``: the user ``system:kube-scheduler`` (the client certificate
  e2e/controlplane/pki.sh makes, as kubeadm makes scheduler.conf). The API server's bootstrap
  policy binds it to the ClusterRoles system:kube-scheduler and system:volume-scheduler and to
  the Role kube-system/system::leader-locking-kube-scheduler, so its Lease lives in kube-system.
* ``service-account``: a ServiceAccount bound as manifests/examples/rbac-builtin-roles.yaml
  binds one: the same two ClusterRoles plus a Role for the one Lease of its own.

The workload touches every API call the scheduler makes: a plain bind, a FailedScheduling Event
with the PodScheduled condition, VolumeBinding's PreBind (PV claimRef, WaitForFirstConsumer),
DynamicResources' claim writes, and a preemption (victim's DisruptionTarget condition and
deletion, the preemptor's nominatedNodeName). The scheduler must become ready (every LIST of
kube-scheduler's informers allowed) and never log a forbidden request.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from e2e.controlplane.freeport import free_port
from e2e.support.apply import apply_objects, ensure_namespace, iter_yaml_documents
from e2e.support.auth import write_sa_kubeconfig
from e2e.support.objects import GROUP, make_pod, unique_name
from e2e.support.plane import MANIFESTS_DIR, ControlPlane
from e2e.support.waits import wait_bound, wait_failed_scheduling, wait_for, wait_for_deleted
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

BUILTIN_EXAMPLE = MANIFESTS_DIR / "examples" / "rbac-builtin-roles.yaml"


def _rebind(doc: dict[str, Any], namespace: str, suffix: str) -> dict[str, Any]:
    """The example's object for ServiceAccount ``namespace``/pyscheduler, cluster-scoped names
    made unique with ``suffix``."""
    doc = yaml.safe_load(yaml.safe_dump(doc))
    meta = doc["metadata"]
    if doc["kind"].startswith("Cluster"):
        meta["name"] = f"{meta['name']}-{suffix}"
    elif meta.get("namespace") == "kube-system":
        # The client CA reader stays where the ConfigMap is; its name is made unique.
        meta["name"] = f"{meta['name']}-{suffix}"
    else:
        meta["namespace"] = namespace
    for s in doc.get("subjects") or []:
        s["namespace"] = namespace
    return doc


@pytest.fixture(params=["kube-scheduler-user", "service-account"])
def identity(
    request: pytest.FixtureRequest, control_plane: ControlPlane, api_client: client.ApiClient,
    core_v1: client.CoreV1Api, tmp_path: pathlib.Path,
) -> Iterator[tuple[str, str, str]]:
    """(kubeconfig, Lease namespace, Lease name) of an identity with kube-scheduler's roles."""
    coord = client.CoordinationV1Api(api_client)
    if request.param == "kube-scheduler-user":
        kc = control_plane.run_dir / "pki" / "kube-scheduler.kubeconfig" if control_plane.run_dir else None
        if kc is None or not kc.exists():
            pytest.skip("the system:kube-scheduler client certificate exists on the local plane only")
        lease = unique_name("pyscheduler")
        yield str(kc), "kube-system", lease
        with contextlib.suppress(ApiException):
            coord.delete_namespaced_lease(lease, "kube-system")
        return
    ns = unique_name("pyscheduler-builtin")
    ensure_namespace(core_v1, ns)
    docs = [_rebind(d, ns, ns) for d in iter_yaml_documents(BUILTIN_EXAMPLE)]
    kinds = ["ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding"]
    assert sorted(d["kind"] for d in docs) == kinds
    apply_objects(api_client, docs)
    kc = write_sa_kubeconfig(api_client, ns, "pyscheduler", tmp_path / "sa.kubeconfig")
    try:
        yield kc, ns, "pyscheduler"
    finally:
        rbac = client.RbacAuthorizationV1Api(api_client)
        for d in docs:
            if d["kind"] == "ClusterRoleBinding":
                with contextlib.suppress(ApiException):
                    rbac.delete_cluster_role_binding(d["metadata"]["name"])
        with contextlib.suppress(ApiException):
            core_v1.delete_namespace(ns)


@pytest.fixture
def cluster_scoped(api_client: client.ApiClient) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Creates StorageClasses, PVs, DeviceClasses and ResourceSlices; deletes them afterwards."""
    made: list[dict[str, Any]] = []

    def create(body: dict[str, Any]) -> None:
        made.append(body)
        apply_objects(api_client, [body])

    yield create
    dyn = DynamicClient(api_client)
    for body in reversed(made):
        with contextlib.suppress(ApiException):
            dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"]).delete(name=body["metadata"]["name"])


def test_schedules_with_kube_schedulers_own_roles(
    identity: tuple[str, str, str],
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    node_factory: Callable[..., list[str]],
    namespace: str,
    priority_classes: tuple[str, str],
    cluster_scoped: Callable[[dict[str, Any]], None],
    tmp_path: pathlib.Path,
) -> None:
    kubeconfig, lease_ns, lease_name = identity
    sched = unique_name("pyscheduler-builtin")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": True, "resourceNamespace": lease_ns, "resourceName": lease_name},
        "profiles": [{"schedulerName": sched}],
    }))
    nodes = node_factory(2, labels={GROUP: namespace})
    small = node_factory(1, labels={GROUP: namespace}, cpu="1")[0]
    proc = SchedulerProcess(str(config), kubeconfig, tmp_path, "builtin", port=free_port())
    try:
        proc.wait_ready(timeout=60)

        def pod(name: str, node: str | None = None, **kw: Any) -> dict[str, Any]:
            sel = {GROUP: namespace, **({"kubernetes.io/hostname": node} if node else {})}
            return make_pod(name, namespace, scheduler_name=sched, node_selector=sel, **kw)

        # A plain bind (pods/binding) and a FailedScheduling Event with PodScheduled=False
        # (events.k8s.io, pods/status).
        core_v1.create_namespaced_pod(namespace, pod("plain"))
        assert wait_bound(core_v1, namespace, "plain") in nodes
        core_v1.create_namespaced_pod(namespace, pod("nowhere", node="no-such-node"))
        wait_failed_scheduling(api_client, core_v1, namespace, "nowhere")

        # VolumeBinding's PreBind: the free local PV's claimRef and the claim's selected node
        # (system:volume-scheduler's PV/PVC update); the PV controller completes the binding.
        sc, pv = unique_name("wffc"), unique_name("pv")
        cluster_scoped({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
                        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
        cluster_scoped({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": sc,
            "persistentVolumeReclaimPolicy": "Retain", "local": {"path": "/mnt/disks/e2e"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [nodes[0]]}]}]}}}})
        core_v1.create_namespaced_persistent_volume_claim(namespace, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}})
        core_v1.create_namespaced_pod(namespace, pod(
            "volume", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]))
        assert wait_bound(core_v1, namespace, "volume", timeout=60) == nodes[0]

        # DynamicResources: allocation, reservedFor (resourceclaims/status, /binding) and the
        # delete-protection finalizer (resourceclaims update).
        driver, cls = f"{namespace}.dra.example.com", unique_name("gpu")
        cluster_scoped({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls},
                        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
        cluster_scoped({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": unique_name("slice")}, "spec": {
                            "driver": driver, "nodeName": nodes[1],
                            "pool": {"name": nodes[1], "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": "gpu-0"}]}})
        resource = client.ResourceV1Api(api_client)
        resource.create_namespaced_resource_claim(namespace, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}})
        core_v1.create_namespaced_pod(namespace, pod("claims", resourceClaims=[
            {"name": "gpu", "resourceClaimName": "gpu"}]))
        assert wait_bound(core_v1, namespace, "claims") == nodes[1]
        c = resource.read_namespaced_resource_claim("gpu", namespace)
        assert c.status.allocation is not None and [r.name for r in c.status.reserved_for] == ["claims"]

        # Preemption: the victim's DisruptionTarget condition and deletion, the preemptor's
        # nominatedNodeName (pods/status patch, pods delete).
        low, high = priority_classes
        core_v1.create_namespaced_pod(namespace, pod("victim", node=small, cpu="800m", priority_class_name=low))
        assert wait_bound(core_v1, namespace, "victim") == small
        core_v1.create_namespaced_pod(namespace, pod("preemptor", node=small, cpu="800m", priority_class_name=high))
        wait_for_deleted(lambda: core_v1.read_namespaced_pod("victim", namespace), timeout=60, desc="victim")
        assert wait_bound(core_v1, namespace, "preemptor", timeout=60) == small

        # It led (its Lease is the one it may renew) and nothing it asked for was refused.
        lease = client.CoordinationV1Api(api_client).read_namespaced_lease(lease_name, lease_ns)
        assert lease.spec.holder_identity
        events = proc.log_events()
        refused = [e for e in events if e.get("event") in ("watch_forbidden", "watch_not_served", "discovery_forbidden")
                   or "forbidden" in str(e.get("error", "")).lower()]
        assert not refused, refused
        assert [e for e in events if e.get("event") == "api_discovered"]
        assert proc.proc.poll() is None, proc.logs()
    finally:
        code = proc.stop()
    assert code == 0, proc.logs()
    # The Lease was released on the way out.
    wait_for(lambda: not client.CoordinationV1Api(api_client).read_namespaced_lease(lease_name, lease_ns)
             .spec.holder_identity, timeout=10, desc="Lease released")
