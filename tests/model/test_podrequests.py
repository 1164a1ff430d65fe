"""Pod resource requests as v1.36.3 counts them (scheduler/podrequests.py).

Tables transcribed from
  k8s.io/component-helpers@v0.36.3/resource/helpers_test.go (TestPodResourceRequests,
    TestPodLevelResourceRequests, TestAggregateContainerRequestsAndLimits),
  k8s.io/kubernetes@v1.36.3/pkg/scheduler/framework/types_test.go (TestPodInfoCalculateResources,
    TestCalculatePodResourcesWithResize, TestNodeInfoAddPod),
  pkg/scheduler/framework/events_test.go (Test_podSchedulingPropertiesChange).
Case names are the upstream ones. Expected maps compare keys too: a present zero is not a
missing key upstream.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.events import ActionType, assigned_pod_update_action, pod_update_events
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo, pod_resource_inputs
from scheduler.model.podrequests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    calculate_resource,
    pod_requests,
)
from scheduler.model.quantity import int_value, milli_value
from scheduler.plugins.noderesources.fit import spec_requests
from scheduler.plugins.noderesources.resource_allocation import scorer_pod_requests
from scheduler.testing.builders import MakePod

Raw = dict[str, Any]


def q(d: dict[str, str]) -> dict[str, int]:
    """Quantity strings in the scheduler's integer units."""
    return {k: milli_value(v) if k == "cpu" else int_value(v) for k, v in d.items()}


def ctr(name: str = "", req: dict[str, str] | None = None, lim: dict[str, str] | None = None,
        restart: bool = False) -> Raw:
    res: Raw = {}
    if req is not None:
        res["requests"] = req
    if lim is not None:
        res["limits"] = lim
    c: Raw = {"name": name, "resources": res}
    if restart:
        c["restartPolicy"] = "Always"
    return c


def cst(name: str, req: dict[str, str] | None = None, alloc: dict[str, str] | None = None,
        resources: bool = True) -> Raw:
    """A container status; ``resources=False`` leaves status.resources unset (a nil pointer)."""
    s: Raw = {"name": name}
    if resources:
        s["resources"] = {"requests": req} if req is not None else {}
    if alloc is not None:
        s["allocatedResources"] = alloc
    return s


def pod(
    containers: list[Raw] | None = None,
    inits: list[Raw] | None = None,
    *,
    overhead: dict[str, str] | None = None,
    pod_req: dict[str, str] | None = None,
    pod_lim: dict[str, str] | None = None,
    statuses: list[Raw] | None = None,
    init_statuses: list[Raw] | None = None,
    conditions: list[Raw] | None = None,
    pod_status_req: dict[str, str] | None = None,
    node: str = "",
) -> Raw:
    w = MakePod().uid("p").containers(containers or []).containers(inits or [], init=True)
    if overhead:
        w.overhead(overhead)
    if pod_req is not None or pod_lim is not None:
        w.res({**({"requests": pod_req} if pod_req is not None else {}),
               **({"limits": pod_lim} if pod_lim is not None else {})})
    if node:
        w.node(node)
    if statuses:
        w.status(containerStatuses=statuses)
    if init_statuses:
        w.status(initContainerStatuses=init_statuses)
    if conditions:
        w.status(conditions=conditions)
    if pod_status_req is not None:
        w.status(resources={"requests": pod_status_req})
    return w.obj()


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
DEFERRED = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
IN_PROGRESS = [{"type": "PodResizeInProgress", "status": "True"}]

# ---------------------------------------------------------------------------------------------
# helpers_test.go TestPodResourceRequests: (description, use status, exclude overhead, pod, want)

POD_RESOURCE_REQUESTS = [
    ("nil options, larger init container", False, False,
     pod([ctr(req={"cpu": "1"})], [ctr(req={"cpu": "4"})]), {"cpu": "4"}),
    ("nil options, larger containers", False, False,
     pod([ctr(req={"cpu": "2"}), ctr(req={"cpu": "3"})], [ctr(req={"cpu": "2"})]), {"cpu": "5"}),
    ("pod overhead excluded", False, True,
     pod([ctr(req={"cpu": "2"}), ctr(req={"cpu": "3"})], [ctr(req={"cpu": "2"})], overhead={"cpu": "1"}),
     {"cpu": "5"}),
    ("pod overhead included", False, False,
     pod([ctr(req={"cpu": "2"}), ctr(req={"cpu": "3"})], [ctr(req={"cpu": "2"}, lim={"cpu": "2"})],
         overhead={"cpu": "1", "memory": "1Gi"}),
     {"cpu": "6", "memory": "1Gi"}),
    ("resized, infeasible", True, False,
     pod([ctr("container-1", {"cpu": "4"})], statuses=[cst("container-1", {"cpu": "2"})], conditions=INFEASIBLE),
     {"cpu": "2"}),
    ("resized, infeasible & in-progress", True, False,
     pod([ctr("container-1", {"cpu": "6"})], statuses=[cst("container-1", {"cpu": "2"}, {"cpu": "4"})],
         conditions=INFEASIBLE),
     {"cpu": "4"}),
    ("resized, no resize status", True, False,
     pod([ctr("container-1", {"cpu": "4"})], statuses=[cst("container-1", {"cpu": "2"})]), {"cpu": "4"}),
    ("resized: per-resource 3-way maximum", True, False,
     pod([ctr("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
         statuses=[cst("container-1", {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                       {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"})]),
     {"cpu": "30m", "memory": "30M", "ephemeral-storage": "30G"}),
    ("resized, infeasible, but don't use status", False, False,
     pod([ctr("container-1", {"cpu": "4"})], statuses=[cst("container-1", {"cpu": "2"})], conditions=INFEASIBLE),
     {"cpu": "4"}),
    ("resized, restartable init container, infeasible", True, False,
     pod([], [ctr("restartable-init-1", {"cpu": "4"}, restart=True)],
         init_statuses=[cst("restartable-init-1", {"cpu": "2"})], conditions=INFEASIBLE),
     {"cpu": "2"}),
    ("resized, restartable init container, no resize status", True, False,
     pod([], [ctr("restartable-init-1", {"cpu": "4"}, restart=True)],
         init_statuses=[cst("restartable-init-1", {"cpu": "2"})]),
     {"cpu": "4"}),
    ("resized, restartable init container, infeasible, but don't use status", False, False,
     pod([], [ctr("restartable-init-1", {"cpu": "4"}, restart=True)],
         init_statuses=[cst("restartable-init-1", {"cpu": "2"})], conditions=INFEASIBLE),
     {"cpu": "4"}),
    ("restartable init container", False, False,
     pod([ctr("container-1", {"cpu": "1"})], [ctr("restartable-init-1", {"cpu": "1"}, restart=True)]),
     {"cpu": "2"}),
    ("multiple restartable init containers", False, False,
     pod([ctr("container-1", {"cpu": "1"})],
         [ctr("init-1", {"cpu": "5"}), ctr("restartable-init-1", {"cpu": "1"}, restart=True),
          ctr("restartable-init-2", {"cpu": "2"}, restart=True),
          ctr("restartable-init-3", {"cpu": "3"}, restart=True)]),
     {"cpu": "7"}),
    ("multiple restartable and regular init containers", False, False,
     pod([ctr("container-1", {"cpu": "1"})],
         [ctr("init-1", {"cpu": "5"}), ctr("restartable-init-1", {"cpu": "1"}, restart=True),
          ctr("restartable-init-2", {"cpu": "2"}, restart=True), ctr("init-2", {"cpu": "5"}),
          ctr("restartable-init-3", {"cpu": "3"}, restart=True)]),
     {"cpu": "8"}),
    ("restartable-init, init and regular", False, False,
     pod([ctr("container-1", {"cpu": "100"})],
         [ctr("restartable-init-1", {"cpu": "10"}, restart=True), ctr("init-1", {"cpu": "200"})]),
     {"cpu": "210"}),
]


@pytest.mark.parametrize(
    ("use_status", "exclude_overhead", "raw", "want"),
    [c[1:] for c in POD_RESOURCE_REQUESTS],
    ids=[c[0] for c in POD_RESOURCE_REQUESTS],
)
def test_pod_resource_requests(use_status: bool, exclude_overhead: bool, raw: Raw, want: dict[str, str]) -> None:
    got = pod_requests(pod_resource_inputs(raw), use_status=use_status, exclude_overhead=exclude_overhead)
    assert got == q(want)


# ---------------------------------------------------------------------------------------------
# helpers_test.go TestPodLevelResourceRequests: (name, skip pod level, pod, want)

C_3MI_2M = ctr(req={"memory": "3Mi", "cpu": "2m"})
POD_LEVEL_REQUESTS = [
    ("nil", False, pod(pod_req={}), {}),
    ("pod level memory resource with SkipPodLevelResources true", True, pod(pod_req={"memory": "2Mi"}), {}),
    ("pod level memory resource with SkipPodLevelResources false", False, pod(pod_req={"memory": "2Mi"}),
     {"memory": "2Mi"}),
    ("pod level memory and container level cpu resources with SkipPodLevelResources false", False,
     pod([ctr(req={"cpu": "2m"})], pod_req={"memory": "2Mi"}), {"memory": "2Mi", "cpu": "2m"}),
    ("pod level unsupported resources set at both pod-level and container-level with SkipPodLevelResources false",
     False, pod([ctr(req={"storage": "3Mi"})], pod_req={"storage": "2Mi"}), {"storage": "3Mi"}),
    ("pod level unsupported resources set at pod-level with SkipPodLevelResources false", False,
     pod([ctr(req={"memory": "3Mi"})], pod_req={"storage": "2Mi"}), {"memory": "3Mi"}),
    ("only container level resources set with SkipPodLevelResources false", False, pod([C_3MI_2M]),
     {"memory": "3Mi", "cpu": "2m"}),
    ("both container-level and pod-level resources set with SkipPodLevelResources false", False,
     pod([C_3MI_2M], pod_req={"memory": "6Mi", "cpu": "8m"}), {"memory": "6Mi", "cpu": "8m"}),
    ("container-level resources and init container set with SkipPodLevelResources false", False,
     pod([C_3MI_2M], [ctr(req={"memory": "5Mi", "cpu": "4m"})]), {"memory": "5Mi", "cpu": "4m"}),
    ("container-level resources and init container set with SkipPodLevelResources false (skip true)", True,
     pod([C_3MI_2M], [ctr(req={"memory": "5Mi", "cpu": "4m"})]), {"memory": "5Mi", "cpu": "4m"}),
    ("container-level resources and sidecar container set with SkipPodLevelResources false", False,
     pod([C_3MI_2M], [ctr(req={"memory": "5Mi", "cpu": "4m"}, restart=True)]), {"memory": "8Mi", "cpu": "6m"}),
    ("container-level resources, init and sidecar container set with SkipPodLevelResources false", False,
     pod([C_3MI_2M], [ctr(req={"memory": "5Mi", "cpu": "4m"}, restart=True),
                      ctr(req={"memory": "6Mi", "cpu": "8m"})]),
     {"memory": "11Mi", "cpu": "12m"}),
    ("pod-level resources, container-level resources, init and sidecar container set with "
     "SkipPodLevelResources false", False,
     pod([C_3MI_2M], [ctr(req={"memory": "5Mi", "cpu": "4m"}, restart=True),
                      ctr(req={"memory": "6Mi", "cpu": "8m"})], pod_req={"memory": "15Mi", "cpu": "18m"}),
     {"memory": "15Mi", "cpu": "18m"}),
    ("pod-level resources, hugepage request/limit single page size", False,
     pod(pod_req={"memory": "10Mi", "hugepages-2Mi": "2Mi"}, pod_lim={"hugepages-2Mi": "2Mi"}),
     {"memory": "10Mi", "hugepages-2Mi": "2Mi"}),
    ("pod-level resources, hugepage request/limit multiple page sizes", False,
     pod(pod_req={"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
         pod_lim={"hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"}),
     {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"}),
    ("pod-level resources, container-level resources, hugepage request/limit single page size", False,
     pod([ctr(req={"hugepages-2Mi": "6Mi"}, lim={"hugepages-2Mi": "6Mi"})],
         pod_req={"cpu": "1", "hugepages-2Mi": "10Mi"}, pod_lim={"hugepages-2Mi": "10Mi"}),
     {"cpu": "1", "hugepages-2Mi": "10Mi"}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes", False,
     pod([ctr(req={"cpu": "1", "hugepages-1Gi": "2Gi"}, lim={"hugepages-1Gi": "2Gi"})],
         pod_req={"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
         pod_lim={"hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"}),
     {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes between "
     "pod-level and container-level", False,
     pod([ctr(req={"memory": "4Mi", "hugepages-1Gi": "1Gi"}, lim={"hugepages-1Gi": "1Gi"})],
         pod_req={"cpu": "1", "hugepages-2Mi": "10Mi"}, pod_lim={"hugepages-2Mi": "10Mi"}),
     {"cpu": "1", "memory": "4Mi", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "1Gi"}),
]


@pytest.mark.parametrize(
    ("skip_pod_level", "raw", "want"), [c[1:] for c in POD_LEVEL_REQUESTS], ids=[c[0] for c in POD_LEVEL_REQUESTS]
)
def test_pod_level_resource_requests(skip_pod_level: bool, raw: Raw, want: dict[str, str]) -> None:
    got = pod_requests(pod_resource_inputs(raw), use_status=False, pod_level=not skip_pod_level)
    assert got == q(want)


# helpers_test.go TestAggregateContainerRequestsAndLimits, the request side. The limits-only
# cases are left out: the helper sees API-defaulted pods, and PodInfo applies that defaulting
# (a limit with no request requests the limit) itself.
AGGREGATE = [
    ("one container with requests", pod([ctr(req={"cpu": "9"})]), False, {"cpu": "9"}),
    ("two containers with requests", pod([ctr(req={"cpu": "9"}), ctr(req={"cpu": "9"})]), False, {"cpu": "18"}),
    ("regular and init containers with requests", pod([ctr(req={"cpu": "9"})], [ctr(req={"cpu": "9"})]), False,
     {"cpu": "9"}),
    ("regular, init and sidecar containers with requests",
     pod([ctr(req={"cpu": "9"})], [ctr(req={"cpu": "8"}, restart=True), ctr(req={"cpu": "6"})]), False,
     {"cpu": "17"}),
    ("regularcontainers with empty requests, but status with non-empty requests",
     pod([ctr("container-1")], statuses=[cst("container-1", {"cpu": "2"})]), True, {"cpu": "2"}),
    ("always-restart init containers with empty requests, but status with non-empty requests",
     pod([], [ctr("container-1", restart=True)], init_statuses=[cst("container-1", {"cpu": "2"})]), True,
     {"cpu": "2"}),
]


@pytest.mark.parametrize(("raw", "use_status", "want"), [c[1:] for c in AGGREGATE], ids=[c[0] for c in AGGREGATE])
def test_aggregate_container_requests(raw: Raw, use_status: bool, want: dict[str, str]) -> None:
    got = pod_requests(pod_resource_inputs(raw), use_status=use_status, pod_level=False, exclude_overhead=True)
    assert got == q(want)


# ---------------------------------------------------------------------------------------------
# types_test.go TestPodInfoCalculateResources: (name, pod, (cpu, memory, ephemeral), non0 cpu, non0 mem)
# The DRANodeAllocatableResources cases need that alpha gate on and are left out, except the
# gate-off one.

MI = 2**20
D_CPU, D_MEM = DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST
C500 = {"cpu": "500m", "memory": "500Mi"}
CALCULATE_RESOURCES = [
    ("requestless container", pod([ctr()]), (0, 0, 0), D_CPU, D_MEM),
    ("1X container with requests", pod([ctr(req=C500)]), (500, 500 * MI, 0), 500, 500 * MI),
    ("2X container with requests", pod([ctr(req=C500), ctr(req={"cpu": "700m", "memory": "800Mi"})]),
     (1200, 1300 * MI, 0), 1200, 1300 * MI),
    ("1X container and 1X init container with pod-level requests",
     pod([ctr(req=C500)], [ctr(req=C500)], pod_req={"cpu": "1200m", "memory": "1200Mi"}),
     (1200, 1200 * MI, 0), 1200, 1200 * MI),
    ("1X container and 1X sidecar container with pod-level requests",
     pod([ctr(req=C500)], [ctr(req=C500, restart=True)], pod_req={"cpu": "1200m", "memory": "1200Mi"}),
     (1200, 1200 * MI, 0), 1200, 1200 * MI),
    ("1X container with pod-level memory requests", pod([ctr()], [ctr()], pod_req={"memory": "1200Mi"}),
     (0, 1200 * MI, 0), D_CPU, 1200 * MI),
    ("1X container with pod-level cpu requests", pod([ctr()], [ctr()], pod_req={"cpu": "500m"}),
     (500, 0, 0), 500, D_MEM),
    ("1X container unsupported resources and pod-level supported resources",
     pod([ctr(req={"ephemeral-storage": "800Mi"})], [ctr(req={"ephemeral-storage": "500Mi"})],
         pod_req={"cpu": "500m"}),
     (500, 0, 800 * MI), 500, D_MEM),
    ("DRA gate disabled, with node allocatable resource claim",
     {**pod([ctr(req=C500)]), "status": {"nodeAllocatableResourceClaimStatuses": [
         {"resourceClaimName": "node-allocatable-claim", "resources": {"cpu": "100m", "memory": "200Mi"}}]}},
     (500, 500 * MI, 0), 500, 500 * MI),
    # issue 8: with pod-level requests, the defaults apply only to a resource the whole pod lacks;
    # here cpu is present (500m), so container B adds nothing.
    ("pod-level memory only, one container without cpu (defaults only for what the pod lacks)",
     pod([ctr("a", {"cpu": "500m"}), ctr("b")], pod_req={"memory": "1Gi"}), (500, 1024 * MI, 0), 500, 1024 * MI),
    ("pod-level memory only, overhead cpu counts as present",
     pod([ctr("a"), ctr("b")], pod_req={"memory": "1Gi"}, overhead={"cpu": "50m"}), (50, 1024 * MI, 0), 50,
     1024 * MI),
    ("pod-level memory only, an explicit zero cpu counts as present",
     pod([ctr("a", {"cpu": "0"}), ctr("b")], pod_req={"memory": "1Gi"}), (0, 1024 * MI, 0), 0, 1024 * MI),
    ("pod-level memory only, no cpu anywhere: every container without cpu gets the default",
     pod([ctr("a"), ctr("b")], [ctr("i"), ctr("s", restart=True)], pod_req={"memory": "1Gi"}),
     (0, 1024 * MI, 0), 3 * D_CPU, 1024 * MI),
    ("no pod-level: sidecar and init containers get the defaults per container",
     pod([ctr("a", {"cpu": "1"})], [ctr("s", restart=True), ctr("i", {"cpu": "3"})]),
     (3000, 0, 0), 3100, 2 * D_MEM),
]


@pytest.mark.parametrize(
    ("raw", "res", "non0_cpu", "non0_mem"),
    [c[1:] for c in CALCULATE_RESOURCES],
    ids=[c[0] for c in CALCULATE_RESOURCES],
)
def test_pod_info_calculate_resources(raw: Raw, res: tuple[int, int, int], non0_cpu: int, non0_mem: int) -> None:
    p = PodInfo(raw)
    assert (p.requests.milli_cpu, p.requests.memory, p.requests.ephemeral_storage) == res
    assert (p.non0_cpu, p.non0_mem) == (non0_cpu, non0_mem)


# ---------------------------------------------------------------------------------------------
# types_test.go TestCalculatePodResourcesWithResize:
# (name, pod-level spec, pod-level status, spec, status, init spec, init status, sidecar spec,
#  sidecar status, conditions, cpu, memory)

def _resize_pod(
    pod_req: dict[str, str] | None, pod_st: dict[str, str] | None, req: dict[str, str], st: dict[str, str],
    init_req: dict[str, str] | None, init_st: dict[str, str] | None, side_req: dict[str, str] | None,
    side_st: dict[str, str] | None, conditions: list[Raw] | None,
) -> Raw:
    inits, init_statuses = [], []
    if init_req is not None:
        inits.append(ctr("i1", init_req))
    if init_st is not None:
        init_statuses.append(cst("i1", init_st))
    if side_req is not None:
        inits.append(ctr("s1", side_req, restart=True))
    if side_st is not None:
        init_statuses.append(cst("s1", side_st))
    raw = pod([ctr("c1", req)], inits, pod_req=pod_req, statuses=[cst("c1", st)], init_statuses=init_statuses,
              conditions=conditions, pod_status_req=pod_st, node="node")
    raw["status"]["phase"] = "Running"
    return raw


M5 = {"cpu": "500m", "memory": "500Mi"}
M7 = {"cpu": "700m", "memory": "500Mi"}
M78 = {"cpu": "700m", "memory": "800Mi"}
WITH_RESIZE = [
    ("Pod with no pending resize", None, None, M5, M5, None, None, None, None, None, 500, 500 * MI),
    ("Pod with pod-level resources no pending resize", M7, M5, M5, M7, None, None, None, None, None,
     700, 500 * MI),
    ("Pod with resize in progress", None, None, M5, M5, None, None, None, None, IN_PROGRESS, 500, 500 * MI),
    ("Pod with pod-level resources and resize in progress", M7, M5, M5, M7, None, None, None, None, IN_PROGRESS,
     700, 500 * MI),
    ("Pod with deferred resize", None, None, M78, M5, None, None, None, None, DEFERRED, 700, 800 * MI),
    ("Pod with pod-level resources and with deferred resize", M78, M5, M5, M5, None, None, None, None, DEFERRED,
     700, 800 * MI),
    ("Pod with infeasible resize", None, None, M78, M5, None, None, None, None, INFEASIBLE, 500, 500 * MI),
    ("Pod with init container and no pending resize", None, None, M5, M5, M78, M78, None, None, None,
     700, 800 * MI),
    ("Pod with sider container and no pending resize", None, None, M5, M5, M78, M78, M78, M78, None,
     1200, 1300 * MI),
    # Beyond the upstream table, same rules: an infeasible pod-level resize counts what is actuated.
    ("Pod with pod-level resources and infeasible resize", M78, M5, M5, M5, None, None, None, None, INFEASIBLE,
     500, 500 * MI),
]


@pytest.mark.parametrize(
    ("pod_req", "pod_st", "req", "st", "init_req", "init_st", "side_req", "side_st", "conds", "cpu", "mem"),
    [c[1:] for c in WITH_RESIZE],
    ids=[c[0] for c in WITH_RESIZE],
)
def test_calculate_pod_resources_with_resize(
    pod_req: dict[str, str] | None, pod_st: dict[str, str] | None, req: dict[str, str], st: dict[str, str],
    init_req: dict[str, str] | None, init_st: dict[str, str] | None, side_req: dict[str, str] | None,
    side_st: dict[str, str] | None, conds: list[Raw] | None, cpu: int, mem: int,
) -> None:
    raw = _resize_pod(pod_req, pod_st, req, st, init_req, init_st, side_req, side_st, conds)
    requests, non0_cpu, non0_mem = calculate_resource(pod_resource_inputs(raw))
    assert (requests.get("cpu"), requests.get("memory")) == (cpu, mem)
    assert (non0_cpu, non0_mem) == (cpu, mem)
    p = PodInfo(raw)
    assert (p.requests.milli_cpu, p.requests.memory, p.non0_cpu, p.non0_mem) == (cpu, mem, cpu, mem)


def test_status_without_resources_is_ignored() -> None:
    """A status entry whose resources pointer is nil counts nothing, allocatedResources included
    (AggregateContainerRequests checks cs.Resources != nil)."""
    raw = pod([ctr("c", {"cpu": "1"})], statuses=[cst("c", alloc={"cpu": "3"}, resources=False)])
    assert PodInfo(raw).requests.milli_cpu == 1000
    # With resources present, the allocated value joins the max.
    raw = pod([ctr("c", {"cpu": "1"})], statuses=[cst("c", alloc={"cpu": "3"})])
    assert PodInfo(raw).requests.milli_cpu == 3000


def test_regular_init_container_status_is_ignored() -> None:
    """Only sidecars' (restartable init containers') status resources count."""
    raw = pod([ctr("c", {"cpu": "1"})], [ctr("i", {"cpu": "2"})], init_statuses=[cst("i", {"cpu": "5"})])
    assert PodInfo(raw).requests.milli_cpu == 2000


# ---------------------------------------------------------------------------------------------
# types_test.go TestNodeInfoAddPod: Requested and NonZeroRequested after the three pods.

def test_node_info_add_pod() -> None:
    ports = [{"hostIP": "127.0.0.1", "hostPort": 80, "containerPort": 80, "protocol": "TCP"}]
    p1 = pod([{**ctr(req={"cpu": "100m", "memory": "500"}), "ports": ports}], overhead={"cpu": "500m"},
             node="test-node")
    p2 = pod([ctr(req={"cpu": "200m"})], overhead={"cpu": "500m", "memory": "500"}, node="test-node")
    p3 = pod([ctr(req={"cpu": "200m"})], [ctr(req={"cpu": "500m", "memory": "200Mi"})],
             overhead={"cpu": "500m", "memory": "500"}, node="test-node")
    ni = NodeInfo(name="test-node")
    for i, raw in enumerate((p1, p2, p3)):
        raw["metadata"]["uid"] = f"test-{i + 1}"
        ni.add_pod(PodInfo(raw))
    assert (ni.requested.milli_cpu, ni.requested.memory) == (2300, 209716700)
    assert (ni.non0_cpu, ni.non0_mem) == (2300, 419431900)


def test_node_info_counts_resized_pod_and_removes_the_same() -> None:
    """A running pod resized down in spec but not yet actuated still holds its actuated amount
    on the node (max of spec, actuated, allocated); removal subtracts what was added."""
    raw = pod([ctr("c", {"cpu": "1", "memory": "1Gi"})], statuses=[cst("c", {"cpu": "2", "memory": "1Gi"},
                                                                          {"cpu": "1", "memory": "1Gi"})],
              node="n")
    ni = NodeInfo(name="n")
    p = PodInfo(raw)
    ni.add_pod(p)
    assert (ni.requested.milli_cpu, ni.non0_cpu) == (2000, 2000)
    assert ni.remove_pod(p)
    assert (ni.requested.milli_cpu, ni.non0_cpu, ni.non0_mem) == (0, 0, 0)


# ---------------------------------------------------------------------------------------------
# The views other call sites take of the incoming pod.

def test_issue_example_views() -> None:
    """Pod level sets memory only; container A asks 500m cpu, B nothing.
    NodeInfo (CalculateResource) counts 500m; Fit's scorer (no pod-level, NonMissing defaults for
    every container: calculatePodResourceRequest with its flags off) sees 600m and the
    container-level memory default 2x200Mi; BalancedAllocation (actual requests) sees 500m."""
    raw = pod([ctr("a", {"cpu": "500m"}), ctr("b")], pod_req={"memory": "1Gi"})
    p = PodInfo(raw)
    assert (p.non0_cpu, p.non0_mem) == (500, 1024 * MI)
    _, cpu, mem = scorer_pod_requests(p, pod_level=False, non_zero=True)
    assert (cpu, mem) == (600, 2 * D_MEM)
    req, _, _ = scorer_pod_requests(p, pod_level=True, non_zero=False)
    assert (req.milli_cpu, req.memory) == (500, 1024 * MI)
    # A pod-level-aware non-zero view puts the default on every container lacking cpu, then
    # pod level overrides memory.
    _, cpu, mem = scorer_pod_requests(p, pod_level=True, non_zero=True)
    assert (cpu, mem) == (600, 1024 * MI)


def test_views_of_a_pod_with_status_resources() -> None:
    """Fit's filter (computePodResourceRequest) and Fit's scorer read the spec only; NodeInfo
    and BalancedAllocation use the status as well."""
    raw = pod([ctr("c", {"cpu": "1"})], statuses=[cst("c", {"cpu": "3"})])
    p = PodInfo(raw)
    assert p.requests.milli_cpu == 3000
    assert spec_requests(p).milli_cpu == 1000
    req, cpu, _ = scorer_pod_requests(p, pod_level=False, non_zero=True)
    assert (req.milli_cpu, cpu) == (1000, 1000)
    req, _, _ = scorer_pod_requests(p, pod_level=True, non_zero=False)
    assert req.milli_cpu == 3000


# ---------------------------------------------------------------------------------------------
# events_test.go Test_podSchedulingPropertiesChange, the scale-down cases (the upstream pods set
# allocatedResources without status.resources, which PodRequests therefore ignores).

def _events_pod(cpu: str, labels: dict[str, str] | None = None) -> PodInfo:
    raw = pod([ctr("app", {"cpu": cpu})], statuses=[cst("app", alloc={"cpu": cpu}, resources=False)])
    if labels:
        raw["metadata"]["labels"] = labels
    return PodInfo(raw)


BIG, SMALL, SMALL_LABEL = _events_pod("101m"), _events_pod("100m"), _events_pod("100m", {"foo": "bar"})


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (BIG, SMALL, ActionType.UPDATE_POD_SCALE_DOWN),
        (SMALL, BIG, None),
        (BIG, SMALL_LABEL, ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_SCALE_DOWN),
    ],
    ids=[
        "pod's resource request is scaled down",
        "pod's resource request is scaled up",
        "both pod's resource request and label are updated",
    ],
)
def test_pod_scheduling_properties_change(old: PodInfo, new: PodInfo, want: ActionType | None) -> None:
    events = pod_update_events(old, new)
    if want is None:
        assert events == []
    else:
        assert [e.action for e in events] == [want]


def test_actuated_scale_down_of_assigned_pod_is_an_event() -> None:
    """The kubelet actuating a resize (status resources falling from 2 to 1 cpu, spec already 1)
    frees room: UpdatePodScaleDown, as extractPodScaleDown with UseStatusResources."""
    old = PodInfo(pod([ctr("c", {"cpu": "1"})], statuses=[cst("c", {"cpu": "2"}, {"cpu": "1"})], node="n"))
    new = PodInfo(pod([ctr("c", {"cpu": "1"})], statuses=[cst("c", {"cpu": "1"}, {"cpu": "1"})], node="n"))
    assert assigned_pod_update_action(old, new) & ActionType.UPDATE_POD_SCALE_DOWN
    assert not assigned_pod_update_action(new, old) & ActionType.UPDATE_POD_SCALE_DOWN


# ---------------------------------------------------------------------------------------------
# PodInfo keeps the requests of pods whose status reports no resources by their spec's resource
# fields (scheduler.model.pod._requests_memo). Every case above, built twice (the second from the memo
# where it applies), must give what the computation gives.

@pytest.mark.parametrize(
    "raw",
    [c[1] for c in CALCULATE_RESOURCES] + [_resize_pod(*c[1:10]) for c in WITH_RESIZE],
    ids=[c[0] for c in CALCULATE_RESOURCES] + [c[0] for c in WITH_RESIZE],
)
def test_kept_requests_are_the_computed_ones(raw: Raw) -> None:
    requests, non0_cpu, non0_mem = calculate_resource(pod_resource_inputs(raw))
    for _ in range(2):
        p = PodInfo(raw)
        assert {k: p.requests.get(k) for k in requests} == requests
        assert (p.non0_cpu, p.non0_mem) == (non0_cpu, non0_mem)


def test_status_resources_bypass_kept_requests() -> None:
    # types_test.go "Pod with infeasible resize": spec 700m/800Mi, actuated 500m/500Mi. The same
    # spec without status resources counts the spec: neither answer may leak into the other.
    resized = _resize_pod(None, None, M78, M5, None, None, None, None, INFEASIBLE)
    plain = pod([ctr("c1", M78)])
    for order in ((plain, resized), (resized, plain)):
        got = [(PodInfo(r).requests.milli_cpu, PodInfo(r).requests.memory) for r in order]
        want = [(500, 500 * MI) if r is resized else (700, 800 * MI) for r in order]
        assert got == want


def test_pods_of_one_workload_compute_their_requests_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler.model.pod as pod_module

    calls = []
    real = pod_module.calculate_resource
    monkeypatch.setattr(pod_module, "_requests_memo", {})
    monkeypatch.setattr(pod_module, "calculate_resource", lambda inp: calls.append(1) or real(inp))
    for i in range(5):
        raw = pod([{**ctr("c", {"cpu": "100m", "memory": "500Mi"}),
                    "volumeMounts": [{"name": f"kube-api-access-{i}", "mountPath": "/var/run/secrets"}]}])
        raw["metadata"] = {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}
        assert (PodInfo(raw).requests.milli_cpu, PodInfo(raw).requests.memory) == (100, 500 * MI)
    assert len(calls) == 1
    # A distinct amount is computed, not taken from the memo.
    assert PodInfo(pod([ctr("c", {"cpu": "200m"})])).requests.milli_cpu == 200
    assert len(calls) == 2
