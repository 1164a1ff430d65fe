"""End-to-end: the volume plugins together with kube-controller-manager's PV binder.

Unlike e2e/test_volumes.py, nothing here plays the PV controller: claims reach Bound because
the real persistentvolume-binder controller binds them (static PVs, pre-bound PVs, PVs made by
the small provisioner below for WaitForFirstConsumer claims), and StatefulSet pods and their
claims come from the statefulset controller. Expected messages are kube-scheduler v1.36.3's:
VolumeBinding's ErrReasonBindConflict and its PreFilter "pod has unbound immediate
PersistentVolumeClaims" (volumebinding/binder.go, volume_binding.go), NodeVolumeLimits'
ErrReasonMaxVolumeCountExceeded (nodevolumelimits/csi.go), VolumeRestrictions'
ErrReasonReadWriteOncePodConflict (volumerestrictions/volume_restrictions.go).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.objects import unique_name
from e2e.support.waits import wait_bound
from e2e.test_volumes import GROUP, claim_pod, failed_message, group_nodes, local_pv, wait_claim_bound
from e2e.test_volumes import scheduler as scheduler  # the module's pyscheduler process (fixture)

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

NO_PROVISIONER = "kubernetes.io/no-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The PV binder's claim resync period is 15 s; a claim waiting for a PV that appears later
# may only be looked at again then.
BIND_TIMEOUT = 60.0


@pytest.fixture
def storage_objects(core_v1: client.CoreV1Api, api_client: client.ApiClient) -> Iterator[Callable[..., Any]]:
    """Creates cluster-scoped storage objects (PV, StorageClass, CSINode) and deletes them
    afterwards; PVs lose their finalizers first so none stays Terminating."""
    storage = client.StorageV1Api(api_client)
    made: list[tuple[str, str]] = []

    def create(body: dict[str, Any]) -> Any:
        kind, name = body["kind"], body["metadata"]["name"]
        made.append((kind, name))
        if kind == "PersistentVolume":
            return core_v1.create_persistent_volume(body)
        if kind == "StorageClass":
            return storage.create_storage_class(body)
        if kind == "CSINode":
            return storage.create_csi_node(body)
        raise ValueError(f"storage_objects: unsupported kind {kind}")

    def track_pv(name: str) -> None:
        made.append(("PersistentVolume", name))

    create.track_pv = track_pv  # type: ignore[attr-defined]
    yield create
    for kind, name in reversed(made):
        with contextlib.suppress(ApiException):
            if kind == "PersistentVolume":
                core_v1.patch_persistent_volume(name, {"metadata": {"finalizers": None}})
                core_v1.delete_persistent_volume(name)
            elif kind == "StorageClass":
                storage.delete_storage_class(name)
            else:
                storage.delete_csi_node(name)


def storage_class(name: str, provisioner: str = NO_PROVISIONER, mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": "Retain"}


def plain_claim(name: str, namespace: str, sc: str, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """An unbound claim: the PV controller (not the test) binds it."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": sc}}


def csi_pv(name: str, driver: str, claim: tuple[str, str],
           modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """A CSI PV pre-bound to *claim* by claimRef (no uid): the PV controller completes the bind."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": list(modes),
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "csi": {"driver": driver, "volumeHandle": name},
                     "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                  "namespace": claim[0], "name": claim[1]}}}


def pv_node(core: client.CoreV1Api, pv: str) -> str:
    """The one hostname a PV's required nodeAffinity allows."""
    terms = core.read_persistent_volume(pv).spec.node_affinity.required.node_selector_terms
    (expr,) = terms[0].match_expressions
    assert expr.key == "kubernetes.io/hostname" and len(expr.values) == 1, expr
    return str(expr.values[0])


def bound_csi_claims(core: client.CoreV1Api, create: Callable[..., Any], namespace: str, driver: str,
                     names: list[str], modes: tuple[str, ...] = ("ReadWriteOnce",)) -> None:
    for n in names:
        create(csi_pv(unique_name(f"pv-{n}"), driver, (namespace, n), modes))
        core.create_namespaced_persistent_volume_claim(namespace, plain_claim(n, namespace, "", modes))
    for n in names:
        wait_claim_bound(core, namespace, n)


# ---------------------------------------------------------------------------------------------
# 1. StatefulSet with volumeClaimTemplates on static local PVs


def test_statefulset_claims_bind_to_local_pvs(scheduler, core_v1, api_client, node_factory, namespace,
                                               storage_objects):
    # Two local PVs on two of three nodes, a WaitForFirstConsumer class with no provisioner:
    # VolumeBinding's Filter keeps only the nodes with a free matching PV, PreBind writes the
    # PV's claimRef, the PV controller binds the claim, and each replica runs where its PV is.
    nodes = group_nodes(node_factory, namespace)
    sc = unique_name("local")
    storage_objects(storage_class(sc))
    pvs = {unique_name("pv-sts"): nodes[0], unique_name("pv-sts"): nodes[2]}
    for pv, node in pvs.items():
        storage_objects(local_pv(pv, node, storage_class=sc))
    labels = {"app": "sts-vol"}
    sts = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": namespace},
        "spec": {
            "replicas": 2, "serviceName": "db", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"schedulerName": "pyscheduler", "nodeSelector": {GROUP: namespace},
                         "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.2",
                                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]},
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                         "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    }
    client.AppsV1Api(api_client).create_namespaced_stateful_set(namespace, sts)

    placed = {}
    for i in range(2):
        pod = f"db-{i}"
        node = wait_bound(core_v1, namespace, pod, timeout=BIND_TIMEOUT)
        c = wait_claim_bound(core_v1, namespace, f"data-{pod}")
        assert c.spec.volume_name in pvs, (c.spec.volume_name, pvs)
        assert pvs[c.spec.volume_name] == node == pv_node(core_v1, c.spec.volume_name)
        placed[pod] = node
    # One replica per PV: the PV-less node got none.
    assert sorted(placed.values()) == sorted(pvs.values())
    for pv in pvs:
        ref = core_v1.read_persistent_volume(pv).spec.claim_ref
        assert ref is not None and ref.namespace == namespace


# ---------------------------------------------------------------------------------------------
# 2. WaitForFirstConsumer with dynamic provisioning by a test provisioner


class TestProvisioner:
    """A minimal external provisioner: for each claim of its class that carries the scheduler's
    selected-node annotation and has no volume yet, it creates a PV pre-bound to the claim (uid
    included) with nodeAffinity to that node, as a CSI provisioner with topology would. The PV
    controller does the binding."""

    __test__ = False

    def __init__(self, core: client.CoreV1Api, namespace: str, storage_class_name: str, name: str) -> None:
        self.core, self.namespace, self.sc, self.name = core, namespace, storage_class_name, name
        self.made: dict[str, str] = {}  # claim name -> PV name
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="test-provisioner", daemon=True)

    def __enter__(self) -> TestProvisioner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self._once()
            except ApiException as exc:
                self.errors.append(f"{exc.status} {exc.reason}")

    def _once(self) -> None:
        for c in self.core.list_namespaced_persistent_volume_claim(self.namespace).items:
            node = (c.metadata.annotations or {}).get(SELECTED_NODE)
            if c.spec.storage_class_name != self.sc or not node or c.spec.volume_name or c.metadata.name in self.made:
                continue
            pv = unique_name("pvc-prov")
            self.core.create_persistent_volume({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv, "annotations": {"pv.kubernetes.io/provisioned-by": self.name}},
                "spec": {
                    "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": self.sc,
                    "csi": {"driver": self.name, "volumeHandle": pv},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
                    "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": self.namespace,
                                 "name": c.metadata.name, "uid": c.metadata.uid},
                },
            })
            self.made[c.metadata.name] = pv


def test_wait_for_first_consumer_dynamic_provisioning(scheduler, core_v1, node_factory, namespace,
                                                      storage_objects):
    # No PV exists: VolumeBinding finds the claim provisionable on every node, PreBind sets the
    # selected-node annotation and waits; the provisioner creates a PV for that node, the PV
    # controller binds it, and the pod is bound to the node it was provisioned for.
    nodes = group_nodes(node_factory, namespace)
    sc = unique_name("dyn")
    provisioner = f"{sc}.e2e.pyscheduler.io"
    storage_objects(storage_class(sc, provisioner=provisioner))
    core_v1.create_namespaced_persistent_volume_claim(namespace, plain_claim("dyn", namespace, sc))
    with TestProvisioner(core_v1, namespace, sc, provisioner) as prov:
        core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "dyn"))
        node = wait_bound(core_v1, namespace, "p", timeout=BIND_TIMEOUT)
        c = wait_claim_bound(core_v1, namespace, "dyn")
    for pv in prov.made.values():
        storage_objects.track_pv(pv)
    assert node in nodes
    assert c.metadata.annotations[SELECTED_NODE] == node
    assert prov.made == {"dyn": c.spec.volume_name}, prov.made
    assert pv_node(core_v1, c.spec.volume_name) == node
    # The PV controller handed the claim to the external provisioner before it bound it.
    assert c.metadata.annotations.get("volume.kubernetes.io/storage-provisioner") == provisioner


# ---------------------------------------------------------------------------------------------
# 3. Immediate claim, unbound until a PV appears


def test_unbound_immediate_claim_then_bound(scheduler, api_client, core_v1, node_factory, namespace,
                                            storage_objects):
    # VolumeBinding PreFilter: an Immediate claim that is not bound yet makes the pod
    # UnschedulableAndUnresolvable; once the PV controller binds it to a newly created local
    # PV, the claim's update brings the pod back and it lands on the PV's node.
    nodes = group_nodes(node_factory, namespace)
    sc = unique_name("imm")
    storage_objects(storage_class(sc, mode="Immediate"))
    core_v1.create_namespaced_persistent_volume_claim(namespace, plain_claim("imm", namespace, sc))
    core_v1.create_namespaced_pod(namespace, claim_pod("p", namespace, "imm"))
    msg = failed_message(core_v1, namespace, "p")
    assert re.match(r"^0/\d+ nodes are available: pod has unbound immediate PersistentVolumeClaims\.", msg), msg
    assert core_v1.read_namespaced_persistent_volume_claim("imm", namespace).status.phase == "Pending"
    assert core_v1.read_namespaced_pod("p", namespace).spec.node_name is None

    pv = unique_name("pv-imm")
    storage_objects(local_pv(pv, nodes[1], storage_class=sc))
    c = wait_claim_bound(core_v1, namespace, "imm")
    assert c.spec.volume_name == pv
    assert wait_bound(core_v1, namespace, "p", timeout=BIND_TIMEOUT) == nodes[1]


# ---------------------------------------------------------------------------------------------
# 4. CSI attach limit (NodeVolumeLimits)


def test_csi_attach_limit_refuses_node(scheduler, api_client, core_v1, node_factory, namespace,
                                       storage_objects):
    # The group's one node reports allocatable count 1 for the driver in its CSINode and
    # already runs a pod with one of the driver's volumes: the next pod with another volume of
    # that driver is refused there (NodeVolumeLimits), then placed on a node that joins the
    # group and has no limit.
    (full,) = group_nodes(node_factory, namespace, count=1)
    (spare,) = node_factory(1)
    driver = f"{unique_name('csi')}.e2e.pyscheduler.io"
    storage_objects({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": full},
                     "spec": {"drivers": [{"name": driver, "nodeID": full, "allocatable": {"count": 1}}]}})
    bound_csi_claims(core_v1, storage_objects, namespace, driver, ["first", "second"])

    # Placed by us, so the node's one attachable slot is taken in our view of it.
    core_v1.create_namespaced_pod(namespace, claim_pod("first", namespace, "first"))
    assert wait_bound(core_v1, namespace, "first") == full

    core_v1.create_namespaced_pod(namespace, claim_pod("second", namespace, "second"))
    msg = failed_message(core_v1, namespace, "second")
    assert re.match(r"^0/\d+ nodes are available: .*\b1 node\(s\) exceed max volume count[,.]", msg), msg
    assert core_v1.read_namespaced_pod("second", namespace).spec.node_name is None

    core_v1.patch_node(spare, {"metadata": {"labels": {GROUP: namespace}}})
    assert wait_bound(core_v1, namespace, "second", timeout=BIND_TIMEOUT) == spare


# ---------------------------------------------------------------------------------------------
# 5. ReadWriteOncePod conflict (VolumeRestrictions)


def test_read_write_once_pod_conflict(scheduler, api_client, core_v1, node_factory, namespace, storage_objects):
    # A ReadWriteOncePod claim already used by a scheduled pod: a second pod using it is
    # refused on every node (VolumeRestrictions Filter); once the first pod is gone it is placed.
    nodes = group_nodes(node_factory, namespace, count=2)
    driver = f"{unique_name('rwop')}.e2e.pyscheduler.io"
    bound_csi_claims(core_v1, storage_objects, namespace, driver, ["solo"], modes=("ReadWriteOncePod",))
    core_v1.create_namespaced_pod(namespace, claim_pod("a", namespace, "solo"))
    assert wait_bound(core_v1, namespace, "a") in nodes

    core_v1.create_namespaced_pod(namespace, claim_pod("b", namespace, "solo"))
    msg = failed_message(core_v1, namespace, "b")
    assert re.match(
        r"^0/\d+ nodes are available: .*\b2 node\(s\) unavailable due to PersistentVolumeClaim with "
        r"ReadWriteOncePod access mode already in-use by another pod[,.]", msg), msg
    assert core_v1.read_namespaced_pod("b", namespace).spec.node_name is None

    # VolumeRestrictions' pod-delete hint requeues "b" when "a" goes away.
    core_v1.delete_namespaced_pod("a", namespace, grace_period_seconds=0)
    assert wait_bound(core_v1, namespace, "b", timeout=BIND_TIMEOUT) in nodes
