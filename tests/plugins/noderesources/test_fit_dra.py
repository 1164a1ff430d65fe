"""NodeResourcesFit (and BalancedAllocation's scorer) with extended resources backed by DRA
(DRAExtendedResource).

Cases from upstream v1.36.3 pkg/scheduler/framework/plugins/noderesources/:
  fit_test.go                  TestEnoughRequests (the "extended resource ..." cases),
                               TestFitScore ("... with Extended resources"),
                               Test_isSchedulableAfterDeviceClassChange,
                               TestHaveAnyRequestedResourcesIncreased ("requested-resources-dra-*"),
                               TestEventsToRegister
  resource_allocation_test.go  TestCalculateResourceAllocatableRequest
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from scheduler.config.features import DEFAULT_FEATURES
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, QueueingHint
from scheduler.framework.listers import DraStore
from scheduler.framework.status import Code
from scheduler.model.dra import DeviceClass
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation, BalancedAllocationArgs
from scheduler.plugins.noderesources.fit import Fit, FitArgs, _requested_increased
from scheduler.testing.builders import MakeNode, MakePod, make_node
from scheduler.testing.framework import new_snapshot

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
DRA_RES = "extended.resource.dra.io/something"
CLASS = "device-class-name"
IMPLICIT = "deviceclass.resource.kubernetes.io/" + CLASS

ON = replace(DEFAULT_FEATURES, enable_dra_extended_resource=True)
OFF = replace(DEFAULT_FEATURES, enable_dra_extended_resource=False)


def _store(*objects: tuple[str, dict[str, Any]], cls: bool = True) -> DraStore:
    s = DraStore()
    if cls:
        s.apply("DeviceClass", {"metadata": {"name": CLASS}, "spec": {"extendedResourceName": DRA_RES}})
    for kind, raw in objects:
        s.apply(kind, raw)
    return s


def _slice(node: str, *devices: str, driver: str = "test-driver", **spec: Any) -> tuple[str, dict[str, Any]]:
    return ("ResourceSlice", {
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": d} for d in devices], **spec},
    })


def _claim(name: str, device: str, pool: str, share: str | None = None) -> tuple[str, dict[str, Any]]:
    r: dict[str, Any] = {"request": "req-1", "driver": "test-driver", "pool": pool, "device": device}
    if share is not None:
        r["shareID"] = share
    return ("ResourceClaim", {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": CLASS}}]}},
        "status": {"allocation": {"devices": {"results": [r]}}},
    })


def _pod(scalars: dict[str, int]) -> PodInfo:
    """newResourcePod with cpu 1m and memory 1 (the cases' pods) plus the given scalars."""
    reqs: dict[str, Any] = {"cpu": "1m", "memory": "1"}
    reqs.update({k: str(v) for k, v in scalars.items()})
    return MakePod().containers([]).container(reqs).info()


def _enough_node() -> NodeInfo:
    """makeAllocatableResources(10, 20, 32, 5, 20, 5): example.com/aaa 5, no DRA resource."""
    return NodeInfo(make_node("n", cpu="10m", memory="20", pods=32, ephemeral="20",
                              extra={EXT_A: "5", "hugepages-2Mi": "5"}))


def _filter(fit: Fit, pod: PodInfo, node: NodeInfo) -> Any:
    state = CycleState()
    assert fit.pre_filter(state, pod, [node]) is None
    got = fit.filter(state, pod, node)
    snap = new_snapshot([node])
    mask = fit.filter_batch(state, pod, snap, np.array([0]))
    assert bool(mask[0]) == (got is None)  # the batch form agrees
    batch = fit.filter_batch_statuses(state, pod, snap, np.array([0]))
    assert batch is not None
    assert (batch[0] is None) == (got is None)  # and so do its statuses
    assert batch[0] is None or (batch[0].code, batch[0].reasons) == (got.code, got.reasons)
    return got


@pytest.mark.parametrize(
    ("case", "pod", "features", "store", "want"),
    [
        ("extended resource backed by device plugin", _pod({EXT_A: 1}), ON, True, None),
        ("extended resource backed by DRA", _pod({DRA_RES: 1}), ON, True, None),
        ("extended resource backed by DRA, nil draManager", _pod({EXT_A: 1}), ON, False, None),
        (
            "extended resource backed by DRA not enabled",
            _pod({DRA_RES: 1}),
            OFF,
            True,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient extended.resource.dra.io/something",)),
        ),
        (
            "extended resource NOT backed by DRA",
            _pod({EXT_B: 1}),
            ON,
            True,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/bbb",)),
        ),
    ],
)
def test_enough_requests_with_dra(case: str, pod: PodInfo, features: Any, store: bool, want: Any) -> None:
    fit = Fit(FitArgs(), features, _store() if store else None)
    got = _filter(fit, pod, _enough_node())
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons) == want


def test_node_advertising_the_resource_is_checked_as_usual() -> None:
    # "extended resource was backed by Device Plugin (Allocatable: 0)": zero allocatable is
    # delegated; a positive one is a device plugin's, checked against what is free.
    fit = Fit(FitArgs(), ON, _store())
    pod = _pod({DRA_RES: 2})
    zero = NodeInfo(make_node("z", extra={DRA_RES: "0"}))
    one = NodeInfo(make_node("o", extra={DRA_RES: "1"}))
    two = NodeInfo(make_node("t", extra={DRA_RES: "2"}))
    assert _filter(fit, pod, zero) is None
    got = _filter(fit, pod, one)
    assert got is not None and got.reasons == (f"Insufficient {DRA_RES}",)
    assert _filter(fit, pod, two) is None
    # The batch form over the three at once.
    state = CycleState()
    fit.pre_filter(state, pod, [zero, one, two])
    snap = new_snapshot([zero, one, two])
    mask = fit.filter_batch(state, pod, snap, np.arange(3))
    assert mask.tolist() == [True, False, True]
    statuses = fit.filter_batch_statuses(state, pod, snap, np.arange(3))
    assert statuses is not None and statuses[0] is None and statuses[2] is None
    assert statuses[1] is not None and statuses[1].reasons == (f"Insufficient {DRA_RES}",)


@pytest.mark.parametrize(("run_pre_score",), [(True,), (False,)])
def test_fit_score_least_allocated_with_extended_resources(run_pre_score: bool) -> None:
    # "test case for ScoringStrategy LeastAllocated with Extended resources" (and "... if
    # PreScore is not called"): node1 has 3 devices of the class, node2 has 2.
    store = _store(_slice("node1", "device-1", "device-2", "device-3"), _slice("node2", "device-1", "device-2"))
    args = FitArgs.parse({"scoringStrategy": {"type": "LeastAllocated",
                                              "resources": [{"name": DRA_RES, "weight": 1}]}})
    fit = Fit(args, ON, store)
    pod = MakePod().containers([]).container({DRA_RES: "1"}).info()
    nodes = [MakeNode().name("node1").info(), MakeNode().name("node2").info()]
    state = CycleState()
    if run_pre_score:
        assert fit.pre_score(state, pod, nodes) is None
        assert fit.score_batch(state, pod, new_snapshot(nodes), np.arange(2)) is None  # per node
    assert [fit.score(state, pod, n) for n in nodes] == [66, 50]


def test_balanced_allocation_counts_the_devices_too() -> None:
    # NewBalancedAllocation gives its scorer the DRA manager as well. cpu 2 of 4 with the pod;
    # devices: 1 of 4 in use, 2 with the pod. Balance with the pod: 0.5/0.5 -> 100; without:
    # 0/0.25 -> std 0.125 -> 87; the change 13 -> 50 + (50 + 13) // 2 = 81.
    store = _store(_slice("n", "d1", "d2", "d3", "d4"), _claim("c", "d1", "n"))
    args = BalancedAllocationArgs.parse({"resources": [{"name": "cpu"}, {"name": DRA_RES}]})
    pod = MakePod().containers([]).container({"cpu": "2", DRA_RES: "1"}).info()
    node = MakeNode().name("n").capacity({"cpu": "4", "memory": "32Gi", "pods": "110"}).info()
    scores = []
    for features in (ON, OFF):
        ba = BalancedAllocation(args, features, store)
        state = CycleState()
        assert ba.pre_score(state, pod, [node]) is None
        scores.append(ba.score(state, pod, node))
    # Without the gate the resource has no allocatable on the node: only cpu counts (100 both
    # ways, the change 0 -> 75).
    assert scores == [81, 75]


CEL = ('device.driver == "test-driver" && device.capacity["test-driver"].memory.compareTo(quantity("8Gi")) >= 0 '
       '&& device.attributes["test-driver"].model.startsWith("SOME-")')


def _per_device_slice() -> tuple[str, dict[str, Any]]:
    zone_sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                             "values": ["us-east-1a"]}]}]}
    return ("ResourceSlice", {
        "metadata": {"name": "per-device-slice"},
        "spec": {
            "driver": "test-driver",
            "pool": {"name": "per-device-pool", "resourceSliceCount": 1},
            "perDeviceNodeSelection": True,
            "devices": [
                {"name": "device-1", "nodeName": "resource-node", "attributes": {"model": {"string": "SOME-XYZ"}},
                 "capacity": {"memory": {"value": "16Gi"}}},
                {"name": "device-2", "nodeName": "other-node", "attributes": {"model": {"string": "SOME-ZYX"}},
                 "capacity": {"memory": {"value": "12Gi"}}},
                {"name": "device-3", "nodeSelector": zone_sel, "attributes": {"model": {"string": "SOME-XZY"}},
                 "capacity": {"memory": {"value": "24Gi"}}},
            ],
        },
    })


@pytest.mark.parametrize(
    ("case", "gate", "resource", "node_caps", "objects", "cls", "want"),
    [
        ("device-plugin-resource-feature-disabled", False, DRA_RES, {DRA_RES: "4"}, [], True, (4, 0)),
        ("device-plugin-resource-feature-enabled", True, DRA_RES, {DRA_RES: "4"}, [], True, (4, 0)),
        ("DRA-backed-resource-explicit", True, DRA_RES, {}, [_slice("resource-node", "device-1")], True, (1, 0)),
        (
            "DRA-backed-resource-implicit",
            True,
            IMPLICIT,
            {},
            [("DeviceClass", {"metadata": {"name": CLASS}}), _slice("resource-node", "device-1")],
            False,
            (1, 0),
        ),
        ("DRA-backed-resource-no-slices", True, DRA_RES, {}, [], True, (0, 0)),
        (
            "DRA-backed-resource-with-allocated-device",
            True, DRA_RES, {},
            [_slice("resource-node", "device-1", "device-2"), _claim("test-claim", "device-1", "resource-node")],
            True, (2, 1),
        ),
        (
            "DRA-backed-resource-with-shared-device-allocation",
            True, DRA_RES, {},
            [_slice("resource-node", "device-1", "device-2"),
             _claim("test-claim", "device-1", "resource-node", "share-123")],
            True, (2, 1),
        ),
        (
            "DRA-backed-resource-multiple-devices-mixed-allocation",
            True, DRA_RES, {},
            [_slice("resource-node", "device-1", "device-2", "device-3"),
             _claim("test-claim-1", "device-1", "resource-node"),
             _claim("test-claim-2", "device-2", "resource-node", "share-456")],
            True, (3, 2),
        ),
        (
            "DRA-backed-resource-with-per-device-node-selection",
            True, DRA_RES, {},
            [("DeviceClass", {"metadata": {"name": CLASS},
                              "spec": {"extendedResourceName": DRA_RES, "selectors": [{"cel": {"expression": CEL}}]}}),
             _per_device_slice(), _claim("test-claim", "device-1", "per-device-pool")],
            False, (2, 1),
        ),
    ],
)
def test_calculate_resource_allocatable_request(
    case: str, gate: bool, resource: str, node_caps: dict[str, str], objects: list[Any], cls: bool,
    want: tuple[int, int],
) -> None:
    store = _store(*objects, cls=cls)
    fit = Fit(FitArgs.parse({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": resource}]}}),
              ON if gate else OFF, store)
    node = MakeNode().name("resource-node").label("zone", "us-east-1a").capacity(
        {"cpu": "4", "memory": "32Gi", "pods": "110", **node_caps}).info()
    dra = fit.scorer.dra_pre_score()
    assert fit.scorer._alloc_req(node, 0, 1, dra) == want


@pytest.mark.parametrize(
    ("case", "pod_scalars", "old", "new", "want"),
    [
        ("backoff-wrong-new-object", {}, None, "not-a-class", QueueingHint.QUEUE),
        ("backoff-wrong-old-object", {}, "not-a-class", {}, QueueingHint.QUEUE),
        ("skip-queue-on-class-nil-extended-resource-name-pointer", {}, {}, {}, QueueingHint.QUEUE_SKIP),
        ("skip-queue-on-class-same-extended-resource-name", {}, {"ern": "example.com/gpu"},
         {"ern": "example.com/gpu"}, QueueingHint.QUEUE_SKIP),
        ("queue-on-class-add-with-implicit-extended-resource-name",
         {"deviceclass.resource.kubernetes.io/gpuclass": 1}, None, {"name": "gpuclass", "ern": "example.com/gpu"},
         QueueingHint.QUEUE),
        ("skip-on-class-add-with-implicit-extended-resource-name-not-matching",
         {"deviceclass.resource.kubernetes.io/gpuclass": 1}, None, {"name": "myclass", "ern": "example.com/gpu"},
         QueueingHint.QUEUE_SKIP),
        ("skip-on-class-add-with-explicit-extended-resource-name-not-matching", {"example.com/othergpu": 1}, None,
         {"name": "myclass", "ern": "example.com/gpu"}, QueueingHint.QUEUE_SKIP),
        ("skip-on-class-update-with-implicit-extended-resource-name",
         {"deviceclass.resource.kubernetes.io/gpuclass": 1}, {"name": "gpuclass"},
         {"name": "gpuclass", "ern": "example.com/gpu"}, QueueingHint.QUEUE_SKIP),
        ("queue-on-class-add-with-extended-resource-name", {"example.com/gpu": 1}, None, {"ern": "example.com/gpu"},
         QueueingHint.QUEUE),
        ("queue-on-class-update-with-extended-resource-name", {"example.com/gpu": 1}, {"ern": "example.com/gpu1"},
         {"ern": "example.com/gpu"}, QueueingHint.QUEUE),
    ],
)
def test_is_schedulable_after_device_class_change(
    case: str, pod_scalars: dict[str, int], old: Any, new: Any, want: QueueingHint
) -> None:
    def cls(spec: Any) -> Any:
        if not isinstance(spec, dict):
            return spec
        raw: dict[str, Any] = {"metadata": {"name": spec.get("name", "")}, "spec": {}}
        if "ern" in spec:
            raw["spec"]["extendedResourceName"] = spec["ern"]
        return DeviceClass(raw)

    reqs = {"memory": "2", **{k: str(v) for k, v in pod_scalars.items()}}
    pod = MakePod().containers([]).container(reqs).info()
    fit = Fit(FitArgs(), ON, DraStore())
    assert fit._after_device_class_event(pod, cls(old), cls(new)) == want


@pytest.mark.parametrize(
    ("case", "pod_req", "old_caps", "new_caps", "gate", "want"),
    [
        ("requested-resources-dra-in-node", {"cpu": "2m", "memory": "2", "ephemeral-storage": "2", DRA_RES: "2"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "3", DRA_RES: "4"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "1", DRA_RES: "1"}, True, False),
        ("requested-resources-dra-not-in-node", {"cpu": "2m", "memory": "2", "ephemeral-storage": "2", DRA_RES: "2"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "3"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "1"}, True, True),
        ("requested-resources-dra-zero-capacity", {DRA_RES: "1"}, {DRA_RES: "0"}, {DRA_RES: "0"}, True, True),
        ("scalar-resources-not-in-node", {"cpu": "2m", "memory": "2", "ephemeral-storage": "2", EXT_A: "2"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "3"},
         {"cpu": "1", "memory": "2", "ephemeral-storage": "1"}, False, False),
    ],
)
def test_have_any_requested_resources_increased(
    case: str, pod_req: dict[str, str], old_caps: dict[str, str], new_caps: dict[str, str], gate: bool, want: bool
) -> None:
    pod = MakePod().containers([]).container(pod_req).info()

    def node(caps: dict[str, str]) -> NodeInfo:
        # st.MakeNode().Capacity(...): only what is listed (pods 0).
        return NodeInfo({"metadata": {"name": "n"}, "status": {"capacity": caps, "allocatable": caps}})

    assert _requested_increased(pod, node(old_caps), node(new_caps), True, _store() if gate else None) is want


@pytest.mark.parametrize(("features", "want"), [(ON, True), (OFF, False)])
def test_events_to_register_device_class(features: Any, want: bool) -> None:
    # "Register events with DRAExtendedResource feature enabled/disabled"
    fit = Fit(FitArgs(), features, DraStore())
    kinds = {(e.event.resource, int(e.event.action)) for e in fit.events_to_register()}
    assert (("DeviceClass", int(ActionType.ADD | ActionType.UPDATE)) in kinds) is want


def test_node_added_without_the_resource_fits_when_dra_provides_it() -> None:
    # isSchedulableAfterNodeChange: isFit delegates as Filter does.
    pod = MakePod().containers([]).container({DRA_RES: "1"}).info()
    node = MakeNode().name("n").info()
    assert Fit(FitArgs(), ON, _store())._after_node_change(pod, None, node) == QueueingHint.QUEUE
    assert Fit(FitArgs(), OFF, _store())._after_node_change(pod, None, node) == QueueingHint.QUEUE_SKIP
