"""DynamicResources with extended resources backed by DRA (DRAExtendedResource).

Cases from upstream v1.36.3, pkg/scheduler/framework/plugins/dynamicresources/:
  extendeddynamicresources_test.go  Test_createRequestsAndMappings_requests / _mappings
  dynamicresources_test.go          TestPlugin cases "extended-resource-*",
                                    "implicit-extended-resource-*", "non-DRA-extended-resource-*"
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code
from scheduler.model.dra import DEVICE_CLASS_PREFIX, DeviceClass, ExtendedResourceCache
from scheduler.plugins.dynamicresources.extended import SPECIAL_CLAIM_NAME, create_requests_and_mappings
from scheduler.testing.builders import MakePod
from tests.plugins.dynamicresources.fixtures import (
    CLASS,
    EXT_ANNOTATION,
    GPU,
    GPU2,
    IMPLICIT_GPU,
    NAMESPACE,
    NODE,
    NODE_SELECTOR,
    POD_OWNER,
    POD_REF,
    claim,
    cycle,
    device_class,
    ext_request,
    node_slice,
    plugin,
    pod_with,
    result,
    worker,
)

# ---------------------------------------------------------------------------------------------
# createRequestsAndMappings (extendeddynamicresources_test.go)

ER = "example.com/gpu"  # the test file's extendedResourceName


def _cache(mapping: dict[str, str]) -> ExtendedResourceCache:
    """mockDeviceClassResolver: resource name -> class name."""
    cache = ExtendedResourceCache()
    for res, cls in mapping.items():
        c = DeviceClass({"metadata": {"name": cls}, "spec": {"extendedResourceName": res}})
        cache._by_resource[res] = c
    return cache


def _pod(*steps: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """Res (a container "con<i>"), InitReq ("init-con<i>") and SidecarReq ("sidecar-con<i>", an
    init container that keeps running), i counting the list it joins."""
    containers: list[dict[str, Any]] = []
    inits: list[dict[str, Any]] = []
    for kind, reqs in steps:
        if kind == "res":
            containers.append({"name": f"con{len(containers)}", "resources": {"requests": reqs}})
        elif kind == "init":
            inits.append({"name": f"init-con{len(inits)}", "resources": {"requests": reqs}})
        else:
            inits.append({"name": f"sidecar-con{len(inits)}", "restartPolicy": "Always",
                          "resources": {"requests": reqs}})
    return MakePod().name("my-pod").containers(containers).containers(inits, init=True).obj()


POD1 = _pod(("res", {ER: "1", ER + "1": "2"}))
POD2 = _pod(("res", {ER: "1"}), ("res", {ER + "1": "2"}))
POD_INIT = _pod(("res", {ER: "1"}), ("init", {ER + "init": "2"}))
POD_INIT2 = _pod(("res", {ER: "1"}), ("init", {ER + "init": "1"}), ("init", {ER + "init": "2"}))
POD_INIT3 = _pod(("res", {ER: "1"}), ("init", {ER + "init": "1"}), ("sidecar", {ER + "init": "1"}),
                 ("init", {ER + "init": "2"}))
POD1_INIT_IMPLICIT = _pod(("init", {ER + "init": "1", DEVICE_CLASS_PREFIX + "classInit": "2"}))
POD_INIT_IMPLICIT = _pod(("res", {ER: "1"}), ("init", {ER + "init": "1"}),
                         ("init", {DEVICE_CLASS_PREFIX + "classInit": "2"}))

RES = {ER: 1}
RES2 = {ER: 1, ER + "1": 2}
RES_INIT = {ER: 1, ER + "init": 2}
RES_INIT_IMPLICIT = {ER: 1, ER + "init": 2, DEVICE_CLASS_PREFIX + "classInit": 2}
DEV_MAP = {ER: "class"}
DEV_MAP2 = {ER: "class", ER + "1": "class1"}
DEV_MAP_INIT = {ER: "class", ER + "init": "classInit", DEVICE_CLASS_PREFIX + "classInit": "classInit"}


@pytest.mark.parametrize(
    ("case", "pod", "extended", "mapping", "want"),
    [
        ("nil", POD1, {}, {}, []),
        ("one resource match", POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)]),
        ("one resource match, one resource not match", POD1, RES2, DEV_MAP, [("container-0-request-0", "class", 1)]),
        ("two resources match", POD1, RES2, DEV_MAP2,
         [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)]),
        ("two containers match", POD2, RES2, DEV_MAP2,
         [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)]),
        ("one init container, one regular container", POD_INIT, RES_INIT, DEV_MAP_INIT,
         [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)]),
        ("two init containers, one regular container", POD_INIT2, RES_INIT, DEV_MAP_INIT,
         [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)]),
        ("three init containers, one sidecar, one regular container", POD_INIT3, RES_INIT, DEV_MAP_INIT,
         [("container-1-request-0", "classInit", 1), ("container-2-request-0", "classInit", 2),
          ("container-3-request-0", "class", 1)]),
    ],
)
def test_create_requests(case: str, pod: dict[str, Any], extended: dict[str, int], mapping: dict[str, str],
                         want: list[tuple[str, str, int]]) -> None:
    reqs, _ = create_requests_and_mappings(pod, extended, _cache(mapping))
    got = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in reqs]
    assert got == want
    assert all(r["exactly"]["allocationMode"] == "ExactCount" for r in reqs)


@pytest.mark.parametrize(
    ("case", "pod", "extended", "mapping", "want"),
    [
        ("one container, two requests", POD1, RES2, DEV_MAP2,
         [("container-0-request-0", "con0", ER), ("container-0-request-1", "con0", ER + "1")]),
        ("one container, one explicit and one implicit request", POD1_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
         [("container-0-request-0", "init-con0", DEVICE_CLASS_PREFIX + "classInit"),
          ("container-0-request-1", "init-con0", ER + "init")]),
        ("two containers, two requests", POD2, RES2, DEV_MAP2,
         [("container-0-request-0", "con0", ER), ("container-1-request-0", "con1", ER + "1")]),
        ("one init container, one regular container, one request", POD_INIT, RES_INIT, DEV_MAP_INIT,
         [("container-0-request-0", "init-con0", ER + "init"), ("container-1-request-0", "con0", ER)]),
        ("three containers (two are init container), two requests", POD_INIT2, RES_INIT, DEV_MAP_INIT,
         [("container-1-request-0", "init-con0", ER + "init"), ("container-1-request-0", "init-con1", ER + "init"),
          ("container-2-request-0", "con0", ER)]),
        ("three containers (two are init container), both explicit and implicit resources", POD_INIT_IMPLICIT,
         RES_INIT_IMPLICIT, DEV_MAP_INIT,
         [("container-0-request-0", "init-con0", ER + "init"),
          ("container-1-request-0", "init-con1", DEVICE_CLASS_PREFIX + "classInit"),
          ("container-2-request-0", "con0", ER)]),
        ("four containers (two are init container, one sidecar), three requests", POD_INIT3, RES_INIT, DEV_MAP_INIT,
         [("container-1-request-0", "init-con0", ER + "init"), ("container-1-request-0", "sidecar-con1", ER + "init"),
          ("container-2-request-0", "init-con2", ER + "init"), ("container-3-request-0", "con0", ER)]),
    ],
)
def test_create_mappings(case: str, pod: dict[str, Any], extended: dict[str, int], mapping: dict[str, str],
                         want: list[tuple[str, str, str]]) -> None:
    _, maps = create_requests_and_mappings(pod, extended, _cache(mapping))
    got = sorted((m["requestName"], m["containerName"], m["resourceName"]) for m in maps)
    assert got == want


# ---------------------------------------------------------------------------------------------
# The plugin (TestPlugin)

CLASS_GPU = ("DeviceClass", device_class(CLASS, GPU))
CLASS_GPU2 = ("DeviceClass", device_class(CLASS + "2", GPU2))
WORKER_SLICE = ("ResourceSlice", node_slice("instance-1"))
LARGE_SLICE = ("ResourceSlice", node_slice("instance-1", "instance-2", "instance-3", "instance-4"))


def _created_claim(requests: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    """What the API holds after PreBind: extendedResourceClaim with its allocation, reserved for
    the pod (the finalizer added by PreBind's update)."""
    return {
        "metadata": {
            "namespace": NAMESPACE,
            "name": "my-pod-extended-resources-0",
            "generateName": "my-pod-extended-resources-",
            "ownerReferences": [POD_OWNER],
            "annotations": EXT_ANNOTATION,
            "finalizers": ["resource.kubernetes.io/delete-protection"],
        },
        "spec": {"devices": {"requests": requests}},
        "status": {
            "allocation": {"devices": {"results": results}, "nodeSelector": NODE_SELECTOR},
            "reservedFor": [POD_REF],
        },
    }


def _strip(raw: dict[str, Any]) -> dict[str, Any]:
    """The parts the upstream test compares (no uid/resourceVersion/timestamps)."""
    meta = {k: v for k, v in raw["metadata"].items() if k not in ("uid", "resourceVersion")}
    status = dict(raw.get("status") or {})
    alloc = dict(status.get("allocation") or {})
    assert alloc.pop("allocationTimestamp", None)  # addAllocationTimestamp: set by PreBind
    status["allocation"] = alloc
    return {"metadata": meta, "spec": raw["spec"], "status": status}


@pytest.mark.parametrize(
    ("case", "pod", "objects", "node_caps", "requests", "results", "mappings"),
    [
        (
            "extended-resource-name-with-resources",
            pod_with({GPU: "1"}),
            [CLASS_GPU, WORKER_SLICE],
            None,
            [ext_request("container-0-request-0")],
            [result("container-0-request-0")],
            [{"containerName": "con0", "resourceName": GPU, "requestName": "container-0-request-0"}],
        ),
        (
            "extended-resource-name-with-zero-allocatable",
            pod_with({GPU: "1"}),
            [CLASS_GPU, WORKER_SLICE],
            {GPU: "0"},
            [ext_request("container-0-request-0")],
            [result("container-0-request-0")],
            [{"containerName": "con0", "resourceName": GPU, "requestName": "container-0-request-0"}],
        ),
        (
            "extended-resource-one-device-plugin-one-dra",
            pod_with({GPU: "1", GPU2: "1"}),
            [CLASS_GPU, CLASS_GPU2, WORKER_SLICE],
            {GPU: "1"},
            [ext_request("container-0-request-1", cls=CLASS + "2")],
            [result("container-0-request-1")],
            [{"containerName": "con0", "resourceName": GPU2, "requestName": "container-0-request-1"}],
        ),
        (
            "implicit-extended-resource-name-with-resources",
            pod_with({IMPLICIT_GPU: "1", GPU: "2"}),
            [CLASS_GPU, LARGE_SLICE],
            None,
            [ext_request("container-0-request-0"), ext_request("container-0-request-1", 2)],
            [result("container-0-request-0"), result("container-0-request-1", "instance-2"),
             result("container-0-request-1", "instance-3")],
            [{"containerName": "con0", "resourceName": IMPLICIT_GPU, "requestName": "container-0-request-0"},
             {"containerName": "con0", "resourceName": GPU, "requestName": "container-0-request-1"}],
        ),
        (
            "implicit-extended-resource-name-two-containers-with-resources",
            pod_with({IMPLICIT_GPU: "1"}, {GPU: "2"}),
            [CLASS_GPU, LARGE_SLICE],
            None,
            [ext_request("container-0-request-0"), ext_request("container-1-request-0", 2)],
            [result("container-0-request-0"), result("container-1-request-0", "instance-2"),
             result("container-1-request-0", "instance-3")],
            [{"containerName": "con0", "resourceName": IMPLICIT_GPU, "requestName": "container-0-request-0"},
             {"containerName": "con1", "resourceName": GPU, "requestName": "container-1-request-0"}],
        ),
    ],
)
def test_extended_resource_claim_created_in_pre_bind(
    case: str, pod: Any, objects: list[Any], node_caps: dict[str, str] | None,
    requests: list[dict[str, Any]], results: list[dict[str, Any]], mappings: list[dict[str, str]],
) -> None:
    pl, api, metrics = plugin(*objects)
    node = worker(node_caps)
    state, pre, filt = cycle(pl, pod, [node])
    assert pre is None and filt == {NODE: None}
    assert pl.reserve(state, pod, NODE) is None
    # Reserve: the node's variant of the in-memory claim is in flight (inFlightClaims).
    (in_flight,) = pl.store.in_flight.values()
    assert in_flight.name == SPECIAL_CLAIM_NAME
    assert in_flight.raw["spec"]["devices"]["requests"] == requests
    assert in_flight.allocation is not None and in_flight.allocation["devices"]["results"] == results
    assert pl.pre_bind_pre_flight(state, pod, NODE) == (True, None)
    assert asyncio.run(pl.pre_bind(state, pod, NODE)) is None
    # The claim as created: no name or uid of its own (the API server generates them).
    created = api.writes[0]
    assert created[0] == "create" and "name" not in created[1]["metadata"] and "uid" not in created[1]["metadata"]
    assert created[1]["metadata"]["generateName"] == "my-pod-extended-resources-"
    assert api.kinds() == ["create", "update", "status", "pod-status"]
    stored = pl.store.get_claim(NAMESPACE, "my-pod-extended-resources-0")
    assert _strip(stored.raw) == _created_claim(requests, results)
    assert api.last("pod-status") == {
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": mappings,
                "resourceClaimName": "my-pod-extended-resources-0",
            }
        }
    }
    assert metrics.claims == ["success"]
    assert not pl.store.in_flight


def test_extended_resource_name_with_node_resource() -> None:
    # "extended-resource-name-with-node-resource": the node's device plugin provides it; DRA
    # writes nothing, creates no claim.
    pl, api, metrics = plugin(CLASS_GPU)
    pod = pod_with({GPU: "1"})
    state, pre, filt = cycle(pl, pod, [worker({GPU: "1"})])
    assert pre is None and filt == {NODE: None}
    assert pl.reserve(state, pod, NODE) is None
    assert asyncio.run(pl.pre_bind(state, pod, NODE)) is None
    assert api.writes == [] and metrics.claims == []


def test_non_dra_extended_resource_name_with_zero_allocatable() -> None:
    # "non-DRA-extended-resource-name-with-zero-allocatable": the class has no
    # extendedResourceName, so nothing maps example.com/gpu: PreFilter and PreBindPreFlight Skip.
    pl, _, _ = plugin(("DeviceClass", device_class(CLASS)), WORKER_SLICE)
    pod = pod_with({GPU: "1"})
    state, pre, _ = cycle(pl, pod, [worker({GPU: "0"})])
    assert pre is not None and pre.code == Code.SKIP
    _allow, st = pl.pre_bind_pre_flight(state, pod, NODE)
    assert st is not None and st.code == Code.SKIP


def test_extended_resource_gate_off_changes_nothing() -> None:
    # DRAExtendedResource off: the pod is not DynamicResources' business at all.
    pl, _, _ = plugin(CLASS_GPU, WORKER_SLICE, enable_dra_extended_resource=False)
    _, pre, _ = cycle(pl, pod_with({GPU: "1"}), [worker()])
    assert pre is not None and pre.code == Code.SKIP


def test_extended_resource_name_no_resource() -> None:
    # "extended-resource-name-no-resource": no slice for the node.
    pl, _api, metrics = plugin(CLASS_GPU)
    pod = pod_with({GPU: "1"})
    state, pre, filt = cycle(pl, pod, [worker()])
    st = filt[NODE]
    assert pre is None and (st.code, st.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    _, pst = pl.post_filter(state, pod, NodeToStatus())
    assert pst is not None and (pst.code, pst.message) == (Code.UNSCHEDULABLE, "still not schedulable")
    assert metrics.claims == []


def test_resource_neither_from_device_plugin_nor_dra_does_not_fit() -> None:
    # filterExtendedResources: a mapped resource is satisfied, an unmapped one missing from the
    # node's allocatable is not ("cannot fit resource").
    pl, _, _ = plugin(CLASS_GPU, WORKER_SLICE)
    _, pre, filt = cycle(pl, pod_with({GPU: "1", "example.com/other": "1"}), [worker()])
    st = filt[NODE]
    assert pre is None and (st.code, st.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot fit resource")


@pytest.mark.parametrize(
    ("case", "allocated_on"),
    [
        ("extended-resource-name-with-resources-has-claim", NODE),
        ("extended-resource-name-with-resources-delete-claim", "worker-2"),
    ],
)
def test_claim_from_earlier_attempt_is_deleted(case: str, allocated_on: str) -> None:
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [allocated_on]}]}]}
    old = claim(
        "my-pod-extended-resources-0",
        requests=[ext_request("container-0-request-0")],
        allocation={"devices": {"results": [result("container-0-request-0")]}, "nodeSelector": selector},
        meta={"generateName": "my-pod-extended-resources-", "annotations": EXT_ANNOTATION,
              "ownerReferences": [POD_OWNER]},
    )
    pl, _api, metrics = plugin(CLASS_GPU, WORKER_SLICE, ("ResourceClaim", old), api=False)
    pod = pod_with({GPU: "1"})
    state, pre, filt = cycle(pl, pod, [worker()])
    st = filt[NODE]
    assert pre is None
    assert (st.code, st.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot schedule extended resource claim")
    _, pst = pl.post_filter(state, pod, NodeToStatus())
    assert pst is not None and (pst.code, pst.message) == (Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
    assert pl.store.get_claim_or_none(NAMESPACE, "my-pod-extended-resources-0") is None
    assert metrics.claims == []


def test_claim_from_earlier_attempt_is_deleted_through_the_api() -> None:
    # The same against the API: the finalizer goes first (an update), then the delete.
    old = claim(
        "my-pod-extended-resources-0",
        requests=[ext_request("container-0-request-0")],
        meta={"generateName": "my-pod-extended-resources-", "annotations": EXT_ANNOTATION,
              "ownerReferences": [POD_OWNER], "finalizers": ["resource.kubernetes.io/delete-protection"]},
    )
    pl, api, _ = plugin(CLASS_GPU, WORKER_SLICE, ("ResourceClaim", old))
    pod = pod_with({GPU: "1"})

    async def run() -> None:
        state, _, _ = cycle(pl, pod, [worker()])
        _, pst = pl.post_filter(state, pod, NodeToStatus())
        assert pst is not None and pst.message == "deletion of ResourceClaim completed"
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(run())
    assert api.kinds() == ["update", "delete"]
    assert api.writes[0][1]["metadata"]["finalizers"] == []
    assert pl.store.get_claim_or_none(NAMESPACE, "my-pod-extended-resources-0") is None


def test_extended_resource_name_bind_failure_deletes_the_created_claim() -> None:
    # "extended-resource-name-bind-failure": PreBind created the claim; a later failure's
    # Unreserve deletes it.
    pl, api, metrics = plugin(CLASS_GPU, WORKER_SLICE)
    pod = pod_with({GPU: "1"})

    async def run() -> None:
        state, _, _ = cycle(pl, pod, [worker()])
        assert pl.reserve(state, pod, NODE) is None
        assert await pl.pre_bind(state, pod, NODE) is None
        pl.unreserve(state, pod, NODE)
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(run())
    assert api.kinds()[-1] == "delete" and api.writes[-1][1] == f"{NAMESPACE}/my-pod-extended-resources-0"
    assert pl.store.get_claim_or_none(NAMESPACE, "my-pod-extended-resources-0") is None
    assert metrics.claims == ["success"]


def test_extended_resource_name_skip_bind() -> None:
    # "extended-resource-name-skip-bind": Unreserve before PreBind forgets the in-flight claim
    # and deletes nothing (it only ever existed in memory).
    pl, api, _ = plugin(CLASS_GPU, WORKER_SLICE)
    pod = pod_with({GPU: "1"})
    state, _, _ = cycle(pl, pod, [worker()])
    assert pl.reserve(state, pod, NODE) is None and pl.store.in_flight
    pl.unreserve(state, pod, NODE)
    assert not pl.store.in_flight and api.writes == []


@pytest.mark.parametrize(
    ("case", "fail", "message", "created", "claims"),
    [
        # The API refuses the claim: nothing exists, nothing to delete.
        ("extended-resource-name-claim-creation-failure", "fail_create",
         "create claim for extended resources default/: claim creation errors", False, ["failure"]),
        # The claim is created and reserved, the pod's status patch fails, so does PreBind.
        ("extended-resource-name-with-resources-fail-patch", "fail_pod_patch",
         "update pod default/my-pod ExtendedResourceClaimStatus: patch error", True, ["success"]),
    ],
)
def test_pre_bind_failures(case: str, fail: str, message: str, created: bool, claims: list[str]) -> None:
    pl, api, metrics = plugin(CLASS_GPU, WORKER_SLICE)
    setattr(api, fail, message.rsplit(": ", 1)[1])
    pod = pod_with({GPU: "1"})
    state, _, _ = cycle(pl, pod, [worker()])
    assert pl.reserve(state, pod, NODE) is None
    st = asyncio.run(pl.pre_bind(state, pod, NODE))
    assert st is not None and (st.code, st.message) == (Code.ERROR, message)
    assert metrics.claims == claims
    assert not pl.store.in_flight
    stored = pl.store.get_claim_or_none(NAMESPACE, "my-pod-extended-resources-0")
    assert (stored is not None and stored.reserved_for == [POD_REF]) is created


def test_offline_pre_bind_creates_the_claim_in_the_store() -> None:
    # simulate: the store stands in for the API; the name gets a generated suffix.
    pl, _, metrics = plugin(CLASS_GPU, WORKER_SLICE, api=False)
    pod = pod_with({GPU: "1"})
    state, _, _ = cycle(pl, pod, [worker()])
    assert pl.reserve(state, pod, NODE) is None
    assert asyncio.run(pl.pre_bind(state, pod, NODE)) is None
    (created,) = [c for c in pl.store.all_claims() if c.is_extended_resource_claim()]
    assert created.name.startswith("my-pod-extended-resources-") and len(created.name) == len(
        "my-pod-extended-resources-") + 5
    assert created.reserved_for == [POD_REF] and created.allocation is not None
    assert metrics.claims == ["success"]
    # The next attempt for the same pod finds it (findExtendedResourceClaim).
    assert pl.store.extended_claim_for("my-pod", "1234") is created


def test_user_claim_and_extended_resource_together() -> None:
    # A pod with its own claim and an extended resource backed by DRA: both allocated on the
    # node in one go (the extended-resource claim comes last), both written in PreBind.
    two = ("ResourceSlice", node_slice("instance-1", "instance-2"))
    pl, api, _ = plugin(CLASS_GPU, two, ("ResourceClaim", claim()))
    pod = pod_with({GPU: "1"}, claims=("my-pod-my-resource",))
    state, pre, filt = cycle(pl, pod, [worker()])
    assert pre is None and filt == {NODE: None}
    assert pl.reserve(state, pod, NODE) is None
    assert asyncio.run(pl.pre_bind(state, pod, NODE)) is None
    user = pl.store.get_claim(NAMESPACE, "my-pod-my-resource")
    ext = pl.store.get_claim(NAMESPACE, "my-pod-extended-resources-0")
    devices = {r["device"] for c in (user, ext) for r in c.allocation["devices"]["results"]}  # type: ignore[index]
    assert devices == {"instance-1", "instance-2"}
    assert api.kinds() == ["update", "status", "create", "update", "status", "pod-status"]


def test_driver_taken_devices_are_not_offered_again() -> None:
    # Reserve puts the extended-resource allocation in flight: the next pod's Filter sees the
    # only device taken.
    pl, _, _ = plugin(CLASS_GPU, WORKER_SLICE)
    pod = pod_with({GPU: "1"})
    state, _, _ = cycle(pl, pod, [worker()])
    assert pl.reserve(state, pod, NODE) is None
    other = MakePod().name("other").uid("o").container({GPU: "1"}).info()
    _, _, filt = cycle(pl, other, [worker()])
    assert filt[NODE].message == "cannot allocate all claims"


def test_claims_for_other_pods_are_not_found() -> None:
    # findExtendedResourceClaim matches the annotation and the controller (name and uid).
    mine = claim("mine", meta={"annotations": EXT_ANNOTATION, "ownerReferences": [POD_OWNER]})
    other_uid = claim("other-uid", meta={"annotations": EXT_ANNOTATION,
                                         "ownerReferences": [{**POD_OWNER, "uid": "999"}]})
    not_annotated = claim("plain", meta={"ownerReferences": [POD_OWNER]})
    pl, _, _ = plugin(("ResourceClaim", other_uid), ("ResourceClaim", not_annotated))
    assert pl.store.extended_claim_for("my-pod", "1234") is None
    pl.store.apply("ResourceClaim", mine)
    found = pl.store.extended_claim_for("my-pod", "1234")
    assert found is not None and found.name == "mine"
    pl.store.on_event("ResourceClaim", "DELETED", mine)
    assert pl.store.extended_claim_for("my-pod", "1234") is None
