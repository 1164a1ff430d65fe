"""End-to-end: DynamicResources on live resource.k8s.io/v1 objects, ``pyscheduler run`` under
its ServiceAccount (so the ClusterRole's resource.k8s.io rules are exercised too).

The test plays the DRA driver: it creates a DeviceClass and a ResourceSlice publishing devices
on one node. The local plane runs kube-controller-manager's resourceclaim-controller, which
creates the claims of ResourceClaimTemplates and records them in the pod's
``status.resourceClaimStatuses``.

Messages are checked against the real kube-scheduler v1.36.3 on the same plane: the binary runs
with the same profile (DefaultPreemption off on both sides while pyscheduler lacks it) under
its own scheduler name, and gets a twin of each unschedulable pod.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.differential import kubescheduler
from e2e.support.objects import make_pod
from e2e.support.waits import wait_bound, wait_failed_scheduling, wait_for
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

GROUP = "e2e-dra"
REFERENCE = "dra-reference"


@pytest.fixture(scope="module")
def scheduler(
    scheduler_config_path: str, scheduler_kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    log_dir = tmp_path_factory.mktemp("sched")
    with SchedulerProcess.ready(scheduler_config_path, scheduler_kubeconfig, log_dir, "dra") as p:
        yield p


@pytest.fixture(scope="module")
def reference(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubescheduler.KubeScheduler]:
    """The real kube-scheduler, scheduling pods that name ``REFERENCE``."""
    binary = kubescheduler.binary_path()
    if not binary.exists():
        pytest.skip(f"{binary} missing (e2e/controlplane/build.sh kube-scheduler)")
    d = pathlib.Path(tmp_path_factory.mktemp("ref"))
    cfg = kubescheduler.config(REFERENCE, kubeconfig, kubescheduler.disabled_plugins())
    ks = kubescheduler.KubeScheduler(
        binary, kubescheduler.write_config(d / "config.yaml", cfg), kubeconfig, d / "kube-scheduler.log"
    )
    ks.start()
    try:
        yield ks
    finally:
        ks.stop()


@pytest.fixture
def resource_api(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


@pytest.fixture
def cluster_scoped(resource_api: client.ResourceV1Api) -> Iterator[Callable[[str, dict[str, Any]], None]]:
    """Creates DeviceClasses and ResourceSlices, deleted afterwards."""
    made: list[tuple[str, str]] = []

    def create(kind: str, body: dict[str, Any]) -> None:
        made.append((kind, body["metadata"]["name"]))
        if kind == "DeviceClass":
            resource_api.create_device_class(body)
        else:
            resource_api.create_resource_slice(body)

    yield create
    for kind, name in reversed(made):
        with contextlib.suppress(ApiException):
            if kind == "DeviceClass":
                resource_api.delete_device_class(name)
            else:
                resource_api.delete_resource_slice(name)


def driver_of(namespace: str) -> str:
    return f"{namespace}.dra.example.com"


def setup_driver(create: Callable[[str, dict[str, Any]], None], namespace: str, node: str, devices: int = 1) -> str:
    """A DeviceClass for this test's driver and a slice with *devices* devices on *node*."""
    driver = driver_of(namespace)
    cls = f"gpu-{namespace}"
    create(
        "DeviceClass",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": cls},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
    )
    create(
        "ResourceSlice",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{namespace}"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": f"gpu-{i}",
                        "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                        "capacity": {"memory": {"value": "40Gi"}},
                    }
                    for i in range(devices)
                ],
            },
        },
    )
    return cls


def claim_body(name: str, namespace: str, cls: str, count: int = 1, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def claim_pod(name: str, namespace: str, claim: dict[str, str], scheduler_name: str = "pyscheduler") -> dict[str, Any]:
    return make_pod(name, namespace, scheduler_name=scheduler_name, resourceClaims=[{"name": "gpu", **claim}])


def wait_reserved(resource_api: client.ResourceV1Api, namespace: str, claim: str, pod_uid: str) -> dict[str, Any]:
    def reserved() -> Any:
        c = resource_api.api_client.sanitize_for_serialization(
            resource_api.read_namespaced_resource_claim(claim, namespace)
        )
        st = c.get("status") or {}
        return st.get("allocation") and any(r.get("uid") == pod_uid for r in st.get("reservedFor") or []) and c

    return wait_for(reserved, timeout=30, desc=f"claim {namespace}/{claim} allocated and reserved")


def test_claim_gets_the_node_with_the_device(
    scheduler: SchedulerProcess,
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    node_factory: Callable[..., list[str]],
    cluster_scoped: Callable[..., None],
    namespace: str,
) -> None:
    nodes = node_factory(3, labels={GROUP: namespace})
    cls = setup_driver(cluster_scoped, namespace, nodes[1], devices=2)
    resource_api.create_namespaced_resource_claim(
        namespace,
        claim_body("c1", namespace, cls, selector='device.attributes["' + driver_of(namespace) + '"].index == 1'),
    )
    pod = core_v1.create_namespaced_pod(namespace, claim_pod("p1", namespace, {"resourceClaimName": "c1"}))
    assert wait_bound(core_v1, namespace, "p1") == nodes[1]
    c = wait_reserved(resource_api, namespace, "c1", pod.metadata.uid)
    alloc = c["status"]["allocation"]
    assert alloc["devices"]["results"] == [
        {"request": "gpu", "driver": driver_of(namespace), "pool": nodes[1], "device": "gpu-1"}
    ]
    assert alloc["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [nodes[1]]}]}]
    }
    assert "resource.kubernetes.io/delete-protection" in (c["metadata"].get("finalizers") or [])
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": pod.metadata.uid}]

    # The device is taken: a second claim for the same device cannot be allocated anywhere.
    resource_api.create_namespaced_resource_claim(
        namespace,
        claim_body("c2", namespace, cls, selector='device.attributes["' + driver_of(namespace) + '"].index == 1'),
    )
    core_v1.create_namespaced_pod(namespace, claim_pod("p2", namespace, {"resourceClaimName": "c2"}))
    ev, _ = wait_failed_scheduling(core_v1.api_client, core_v1, namespace, "p2")
    n = len(core_v1.list_node().items)
    assert ev.note == (
        f"0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable"
        f", preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
    )


def test_claim_from_template(
    scheduler: SchedulerProcess,
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    node_factory: Callable[..., list[str]],
    cluster_scoped: Callable[..., None],
    namespace: str,
) -> None:
    nodes = node_factory(2, labels={GROUP: namespace})
    cls = setup_driver(cluster_scoped, namespace, nodes[0])
    resource_api.create_namespaced_resource_claim_template(
        namespace,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "tmpl", "namespace": namespace},
            "spec": {"spec": claim_body("x", namespace, cls)["spec"]},
        },
    )
    pod = core_v1.create_namespaced_pod(namespace, claim_pod("p1", namespace, {"resourceClaimTemplateName": "tmpl"}))
    assert wait_bound(core_v1, namespace, "p1", timeout=60) == nodes[0]
    statuses = core_v1.read_namespaced_pod("p1", namespace).status.resource_claim_statuses
    assert statuses and statuses[0].name == "gpu"
    c = wait_reserved(resource_api, namespace, statuses[0].resource_claim_name, pod.metadata.uid)
    assert c["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    owner = c["metadata"]["ownerReferences"][0]
    assert owner["uid"] == pod.metadata.uid and owner["controller"] is True


@pytest.mark.parametrize("case", ["too-many-devices", "missing-class"])
def test_unschedulable_message_matches_kube_scheduler(
    case: str,
    scheduler: SchedulerProcess,
    reference: kubescheduler.KubeScheduler,
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    node_factory: Callable[..., list[str]],
    cluster_scoped: Callable[..., None],
    namespace: str,
) -> None:
    nodes = node_factory(2, labels={GROUP: namespace})
    cls = setup_driver(cluster_scoped, namespace, nodes[0])
    notes = {}
    for who, sched in (("py", "pyscheduler"), ("ref", REFERENCE)):
        if case == "too-many-devices":
            body = claim_body(f"c-{who}", namespace, cls, count=3)
        else:
            body = claim_body(f"c-{who}", namespace, f"no-such-class-{namespace}")
        resource_api.create_namespaced_resource_claim(namespace, body)
        core_v1.create_namespaced_pod(
            namespace, claim_pod(f"p-{who}", namespace, {"resourceClaimName": f"c-{who}"}, scheduler_name=sched)
        )
        ev, _ = wait_failed_scheduling(core_v1.api_client, core_v1, namespace, f"p-{who}", timeout=60)
        notes[who] = ev.note
    n = len(core_v1.list_node().items)
    expected = {
        # kube-scheduler v1.36.3 on this plane, full default profile (DefaultPreemption too).
        "too-many-devices": f"0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable"
        f", preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.",
        "missing-class": f"0/{n} nodes are available: request gpu: device class no-such-class-{namespace} does not "
        f"exist. no new claims to deallocate, "
        f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.",
    }[case]
    assert notes["ref"] == expected
    assert notes["py"] == notes["ref"]


def test_shared_claim_and_claim_created_after_the_pod(
    scheduler: SchedulerProcess,
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    node_factory: Callable[..., list[str]],
    cluster_scoped: Callable[..., None],
    namespace: str,
) -> None:
    """The pod waits (PreEnqueue) until its claim exists; a second pod sharing the allocated
    claim only adds itself to reservedFor and lands on the same node."""
    nodes = node_factory(3, labels={GROUP: namespace})
    cls = setup_driver(cluster_scoped, namespace, nodes[2])
    p1 = core_v1.create_namespaced_pod(namespace, claim_pod("p1", namespace, {"resourceClaimName": "shared"}))
    wait_for(
        lambda: core_v1.read_namespaced_pod("p1", namespace).spec.node_name is None, timeout=5, desc="p1 pending"
    )
    resource_api.create_namespaced_resource_claim(namespace, claim_body("shared", namespace, cls))
    assert wait_bound(core_v1, namespace, "p1") == nodes[2]
    first = wait_reserved(resource_api, namespace, "shared", p1.metadata.uid)
    p2 = core_v1.create_namespaced_pod(namespace, claim_pod("p2", namespace, {"resourceClaimName": "shared"}))
    assert wait_bound(core_v1, namespace, "p2") == nodes[2]
    c = wait_reserved(resource_api, namespace, "shared", p2.metadata.uid)
    assert c["status"]["allocation"]["devices"] == first["status"]["allocation"]["devices"]
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["p1", "p2"]
