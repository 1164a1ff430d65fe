"""End-to-end, side by side with kube-scheduler v1.36.3: the two DRA gates that are beta and on
in v1.36.3, DRAExtendedResource and DRADeviceBindingConditions (with
DRAResourceClaimDeviceStatus), on the local plane's resource.k8s.io/v1.

The test plays the DRA driver: it publishes ResourceSlices (devices, some with
``bindingConditions``), and for binding conditions it sets the allocated device's conditions in
the claim's ``status.devices`` itself, later or as a failure. pyscheduler runs under its
ServiceAccount with the manifests' configuration; the binary runs as a second scheduler
(``kube-reference``). Each side has its own nodes, classes, extended resource names and driver,
so the two never compete for a device; the outcomes are compared with the side's names mapped.

* Extended resources backed by DRA: the pod asks for ``example.com/<side>-gpu``; no node
  advertises it; a DeviceClass maps it. Both schedulers create the claim (generateName, the
  annotation, the pod as controller, one request per container), allocate it, reserve it for the
  pod, record ``status.extendedResourceClaimStatus`` in the pod and bind it.
* Binding conditions: the pod is not bound while the device's condition is pending; it is
  nominated to the node meanwhile; it is bound once the condition turns True.
* A failure condition fails PreBind; the next attempt deallocates the claim (PostFilter), the
  one after allocates again, and once the driver reports success the pod is bound.
* scheduler_perf's misc SchedulingWithExtendedResource and dra ExtendedResource workloads
  ("fast" sizes) on both sides: every pod placed where the binary places its twin.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.objects import REFERENCE, SCHEDULER, make_pod, unique_name
from e2e.support.waits import events_for, wait_bound, wait_for, wait_for_node_ready
from scheduler.testing.dra_workloads import extended_resource, scheduling_with_extended_resource
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok", "scheduler", "reference")

SIDES = {"py": SCHEDULER, "ref": REFERENCE}
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


@pytest.fixture(scope="module")
def scheduler(
    scheduler_config_path: str, scheduler_kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    log_dir = tmp_path_factory.mktemp("sched")
    with SchedulerProcess.ready(scheduler_config_path, scheduler_kubeconfig, log_dir, "dra-gates") as p:
        yield p


@pytest.fixture
def resource_api(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


@pytest.fixture
def cluster_objects(
    api_client: client.ApiClient, core_v1: client.CoreV1Api
) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Creates nodes, DeviceClasses and ResourceSlices (deleted afterwards)."""
    resource = client.ResourceV1Api(api_client)
    # kind -> (create, delete)
    calls: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
        "Node": (core_v1.create_node, core_v1.delete_node),
        "DeviceClass": (resource.create_device_class, resource.delete_device_class),
        "ResourceSlice": (resource.create_resource_slice, resource.delete_resource_slice),
    }
    made: list[tuple[str, str]] = []

    def create(body: dict[str, Any]) -> None:
        made.append((body["kind"], body["metadata"]["name"]))
        calls[body["kind"]][0](body)

    yield create
    for kind, name in reversed(made):
        with contextlib.suppress(ApiException):
            calls[kind][1](name)


# -- reading objects as the API server has them --------------------------------------------------

def _json(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    resp = fn(*args, _preload_content=False)
    return dict(json.loads(resp.data))


def _pod(core: client.CoreV1Api, ns: str, name: str) -> dict[str, Any]:
    return _json(core.read_namespaced_pod, name, ns)


def _claim(resource: client.ResourceV1Api, ns: str, name: str) -> dict[str, Any]:
    return _json(resource.read_namespaced_resource_claim, name, ns)


def _extended_claims(resource: client.ResourceV1Api, ns: str, pod_uid: str) -> list[dict[str, Any]]:
    items = _json(resource.list_namespaced_resource_claim, ns)["items"]
    return [
        c for c in items
        if (c["metadata"].get("annotations") or {}).get(ANNOTATION) == "true"
        and any(o.get("uid") == pod_uid for o in c["metadata"].get("ownerReferences") or [])
    ]


def _node(name: str, labels: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> dict[str, Any]:
    caps = {"pods": "110", "cpu": "4", "memory": "32Gi", **(extra or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"capacity": caps, "allocatable": caps}}


def _slice(name: str, node: str, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def _class(name: str, driver: str, ern: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if ern is not None:
        spec["extendedResourceName"] = ern
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


class Side:
    """One scheduler's share of the cluster: its own names for everything cluster-wide."""

    def __init__(self, who: str, ns: str) -> None:
        self.who = who
        self.scheduler = SIDES[who]
        self.tag = f"{ns}-{who}"
        self.driver = f"{self.tag}.dra.example.com"
        self.cls = f"gpu-{self.tag}"
        self.ern = f"example.com/{self.tag}-gpu"

    def neutral(self, text: str) -> str:
        """``text`` with this side's names replaced by placeholders, to compare the sides."""
        return text.replace(self.tag, "<side>").replace(self.scheduler, "<scheduler>")


def _sides(ns: str) -> list[Side]:
    return [Side(who, ns) for who in SIDES]


def _make_nodes(create: Callable[[dict[str, Any]], None], core: client.CoreV1Api, names: list[str]) -> None:
    for n in names:
        create(_node(n))
    for n in names:
        wait_for_node_ready(core, n, timeout=60)


def _neutral(side: Side, obj: Any) -> Any:
    return json.loads(side.neutral(json.dumps(obj, sort_keys=True)))


# -- extended resources backed by DRA -------------------------------------------------------------

def test_extended_resource_claim_is_created_as_the_binary_creates_it(
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    cluster_objects: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    seen: dict[str, Any] = {}
    for side in _sides(namespace):
        nodes = [f"{side.tag}-plain", f"{side.tag}-dra"]
        _make_nodes(cluster_objects, core_v1, nodes)
        cluster_objects(_class(side.cls, side.driver, side.ern))
        cluster_objects(_slice(f"{side.tag}-dra", nodes[1], side.driver,
                               [{"name": f"gpu-{i}"} for i in range(3)]))
        # Two containers: one device for the first, two for the second.
        pod = make_pod(f"p-{side.tag}", namespace, scheduler_name=side.scheduler)
        pod["spec"]["containers"] = [
            {"name": "a", "image": "registry.k8s.io/pause:3.10.2", "resources": {"requests": {side.ern: "1"},
                                                                                   "limits": {side.ern: "1"}}},
            {"name": "b", "image": "registry.k8s.io/pause:3.10.2", "resources": {"requests": {side.ern: "2"},
                                                                                   "limits": {side.ern: "2"}}},
        ]
        created = core_v1.create_namespaced_pod(namespace, pod)
        assert wait_bound(core_v1, namespace, f"p-{side.tag}", timeout=60) == nodes[1]
        uid = created.metadata.uid
        (claim,) = wait_for(lambda uid=uid: _extended_claims(resource_api, namespace, uid), timeout=30,
                            desc="the extended-resource claim")
        p = wait_for(lambda side=side: (q := _pod(core_v1, namespace, f"p-{side.tag}"))["status"].get(
            "extendedResourceClaimStatus") and q, timeout=30, desc="the pod's extendedResourceClaimStatus")
        meta = claim["metadata"]
        assert meta["name"].startswith(f"p-{side.tag}-extended-resources-")
        assert meta["generateName"] == f"p-{side.tag}-extended-resources-"
        assert p["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == meta["name"]
        status = claim["status"]
        assert status["allocation"]["allocationTimestamp"]
        assert status["reservedFor"] == [{"resource": "pods", "name": f"p-{side.tag}", "uid": uid}]
        seen[side.who] = _neutral(side, {
            "annotations": meta.get("annotations"),
            "finalizers": meta.get("finalizers"),
            "owners": [{k: v for k, v in o.items() if k != "uid"} for o in meta["ownerReferences"]],
            "spec": claim["spec"],
            "results": status["allocation"]["devices"]["results"],
            "nodeSelector": status["allocation"].get("nodeSelector"),
            "mappings": p["status"]["extendedResourceClaimStatus"]["requestMappings"],
            "nominated": p["status"].get("nominatedNodeName"),
        })
    assert seen["py"] == seen["ref"]
    # What the binary wrote, for the record of what "the same" means here.
    assert seen["ref"]["spec"]["devices"]["requests"] == [
        {"name": "container-0-request-0",
         "exactly": {"deviceClassName": "gpu-<side>", "allocationMode": "ExactCount", "count": 1}},
        {"name": "container-1-request-0",
         "exactly": {"deviceClassName": "gpu-<side>", "allocationMode": "ExactCount", "count": 2}},
    ]
    assert seen["ref"]["mappings"] == [
        {"containerName": "a", "resourceName": "example.com/<side>-gpu", "requestName": "container-0-request-0"},
        {"containerName": "b", "resourceName": "example.com/<side>-gpu", "requestName": "container-1-request-0"},
    ]


# -- binding conditions ---------------------------------------------------------------------------

def _bc_setup(side: Side, create: Callable[[dict[str, Any]], None], core: client.CoreV1Api,
              resource: client.ResourceV1Api, namespace: str, nodes: list[str]) -> None:
    _make_nodes(create, core, nodes)
    create(_class(side.cls, side.driver))
    for n in nodes:
        create(_slice(n, n, side.driver, [{"name": "fabric-0", "bindingConditions": ["Attached"],
                                          "bindingFailureConditions": ["AttachFailed"]}]))
    resource.create_namespaced_resource_claim(namespace, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"c-{side.tag}", "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": side.cls}}]}},
    })
    pod = make_pod(f"p-{side.tag}", namespace, scheduler_name=side.scheduler,
                   resourceClaims=[{"name": "dev", "resourceClaimName": f"c-{side.tag}"}])
    core.create_namespaced_pod(namespace, pod)


def _allocated(resource: client.ResourceV1Api, ns: str, name: str) -> dict[str, Any] | None:
    c = _claim(resource, ns, name)
    st = c.get("status") or {}
    return c if st.get("allocation") and st.get("reservedFor") else None


def _report(resource: client.ResourceV1Api, ns: str, name: str, ctype: str, reason: str, message: str) -> None:
    """The driver: the allocated device's condition ``ctype`` True (retried on conflict)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def write() -> bool:
        c = _claim(resource, ns, name)
        (r,) = c["status"]["allocation"]["devices"]["results"]
        c["status"]["devices"] = [{
            "driver": r["driver"], "pool": r["pool"], "device": r["device"],
            "conditions": [{"type": ctype, "status": "True", "reason": reason, "message": message,
                            "lastTransitionTime": now}],
        }]
        try:
            resource.replace_namespaced_resource_claim_status(name, ns, c)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    wait_for(write, timeout=20, desc=f"{ctype} reported on {ns}/{name}")


def test_pod_is_bound_once_the_binding_condition_is_true(
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    cluster_objects: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    seen: dict[str, Any] = {}
    sides = _sides(namespace)
    for side in sides:
        _bc_setup(side, cluster_objects, core_v1, resource_api, namespace, [f"{side.tag}-0"])
    for side in sides:
        claim = wait_for(lambda side=side: _allocated(resource_api, namespace, f"c-{side.tag}"), timeout=60,
                         desc="claim allocated and reserved")
        # Allocated and reserved, but PreBind waits for the driver: not bound, nominated.
        pod = wait_for(lambda side=side: (p := _pod(core_v1, namespace, f"p-{side.tag}"))["status"].get(
            "nominatedNodeName") and p, timeout=20, desc="nominatedNodeName while PreBind waits")
        assert not pod["spec"].get("nodeName")
        seen[side.who] = _neutral(side, {
            "results": claim["status"]["allocation"]["devices"]["results"],
            "stamped": bool(claim["status"]["allocation"].get("allocationTimestamp")),
            "nominated": pod["status"]["nominatedNodeName"],
        })
    with contextlib.suppress(AssertionError):
        # Still unbound a few seconds later (both poll every 5s).
        wait_for(lambda: any(_pod(core_v1, namespace, f"p-{s.who}")["spec"].get("nodeName") for s in sides),
                 timeout=6, desc="a pod bound too early")
        pytest.fail("a pod was bound before its binding condition was met")
    for side in sides:
        _report(resource_api, namespace, f"c-{side.tag}", "Attached", "Attached", "")
    for side in sides:
        assert wait_bound(core_v1, namespace, f"p-{side.tag}", timeout=30) == f"{side.tag}-0"
        notes = [e.note for e in events_for(core_v1.api_client, namespace, f"p-{side.tag}",
                                            "BindingConditionsPending")]
        seen[side.who]["events"] = [side.neutral(n) for n in notes]
    assert seen["py"] == seen["ref"]
    assert seen["ref"]["results"] == [{
        "request": "dev", "driver": "<side>.dra.example.com", "pool": "<side>-0", "device": "fabric-0",
        "bindingConditions": ["Attached"], "bindingFailureConditions": ["AttachFailed"],
    }]
    assert seen["ref"]["events"] == ["waiting for binding conditions for device on node <side>-0"]


def test_failure_condition_deallocates_and_the_pod_is_rescheduled(
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    cluster_objects: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    sides = _sides(namespace)
    for side in sides:
        _bc_setup(side, cluster_objects, core_v1, resource_api, namespace, [f"{side.tag}-0"])
    for side in sides:
        wait_for(lambda side=side: _allocated(resource_api, namespace, f"c-{side.tag}"), timeout=60,
                 desc="first allocation")
        _report(resource_api, namespace, f"c-{side.tag}", "AttachFailed", "NoPath", "fabric unreachable")
    for side in sides:
        # PreBind fails; the next attempt frees the devices (PostFilter); the claim is allocated
        # again, its device status gone with the old allocation; this time the driver succeeds.
        wait_for(lambda side=side: (c := _allocated(resource_api, namespace, f"c-{side.tag}"))
                 and not c["status"].get("devices"), timeout=90, desc="a fresh allocation")
        _report(resource_api, namespace, f"c-{side.tag}", "Attached", "Attached", "")
    notes: dict[str, list[str]] = {}
    for side in sides:
        assert wait_bound(core_v1, namespace, f"p-{side.tag}", timeout=60) == f"{side.tag}-0"
        failed = events_for(core_v1.api_client, namespace, f"p-{side.tag}", "FailedScheduling")
        notes[side.who] = sorted({re.sub(r"\d+/\d+ nodes", "N nodes", side.neutral(e.note)) for e in failed})
    assert notes["py"] == notes["ref"]
    assert any('device binding failed: claim=c-<side>, reason=NoPath, message="fabric unreachable"' in n
               for n in notes["ref"])
    assert any("deallocation of ResourceClaim completed" in n for n in notes["ref"])


# -- scheduler_perf workloads ---------------------------------------------------------------------

@pytest.mark.parametrize("workload", ["SchedulingWithExtendedResource", "ExtendedResource"])
def test_scheduler_perf_workloads_place_like_the_binary(
    workload: str,
    core_v1: client.CoreV1Api,
    resource_api: client.ResourceV1Api,
    cluster_objects: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    placed: dict[str, dict[str, Any]] = {}
    tag = unique_name("w")
    for side in _sides(namespace):
        prefix = f"{tag}-{side.who}-"
        if workload == "SchedulingWithExtendedResource":
            docs = scheduling_with_extended_resource(10, 1, 10, prefix, namespace, side.scheduler)
        else:
            docs = extended_resource(10, 1, 1, 10, 10, prefix, namespace, side.scheduler,
                                     driver=f"{prefix}test-driver.cdi.k8s.io")
        pods = []
        for d in docs:
            if d["kind"] == "Pod":
                d["metadata"]["name"] = f"{side.who}-{d['metadata']['name']}"
                pods.append(d)
            else:
                cluster_objects(d)
                if d["kind"] == "Node":
                    wait_for_node_ready(core_v1, d["metadata"]["name"], timeout=60)
        for p in pods:
            core_v1.create_namespaced_pod(namespace, p)
        out = {}
        for p in pods:
            name = p["metadata"]["name"]
            node = wait_bound(core_v1, namespace, name, timeout=90)
            out[name.removeprefix(f"{side.who}-")] = node.removeprefix(prefix)
        placed[side.who] = out
    assert placed["py"] == placed["ref"]
    assert len(placed["ref"]) == 10
