"""NodeResourcesFit PreFilter/Filter, args, and filter_batch == filter.

Expected values: upstream pkg/scheduler/framework/plugins/noderesources/fit_test.go
(TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers)
and apis/config/validation/validation_pluginargs.go for the argument errors.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.fit import Fit, FitArgs
from scheduler.testing.builders import MakePod, make_node, make_pod
from scheduler.testing.framework import new_snapshot

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def res(cpu: int = 0, mem: int = 0, eph: int = 0, **scalars: int) -> dict[str, Any]:
    """A container requests map like upstream's newResourcePod (cpu in milli)."""
    r: dict[str, Any] = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(eph)}
    for k, v in scalars.items():
        r[k.replace("__", "/").replace("_", "-")] = str(v)
    return r


def pod(*containers: dict[str, Any], inits: tuple[dict[str, Any], ...] = (), name: str = "p",
        overhead: dict[str, Any] | None = None, pod_resources: dict[str, Any] | None = None) -> PodInfo:
    """st.MakePod().Req(c)...InitReq(i)...: a container per request map."""
    w = MakePod().name(name).containers([]).req(*containers).init_req(*inits)
    if overhead:
        w.overhead(overhead)
    if pod_resources:
        w.res(pod_resources)
    return w.info()


def scalar(name: str, v: int) -> dict[str, Any]:
    return {name: str(v)}


def with_(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    out.update(extra)
    return out


def enough_node(*existing: dict[str, Any]) -> NodeInfo:
    """makeAllocatableResources(10, 20, 32, 5, 20, 5) with one existing pod."""
    raw = make_node("n", cpu="10m", memory="20", pods=32, ephemeral="20", extra={EXT_A: "5", HUGE_A: "5"})
    ni = NodeInfo(raw)
    for i, r in enumerate(existing):
        ni.add_pod(pod(r, name=f"existing-{i}"))
    return ni


def run(plugin: Fit, p: PodInfo, node: NodeInfo) -> Status | None:
    state = CycleState()
    assert plugin.pre_filter(state, p, [node]) is None
    got = plugin.filter(state, p, node)
    # The batch form must agree on pass/fail.
    snap = new_snapshot([node])
    mask = plugin.filter_batch(state, p, snap, np.array([0]))
    assert bool(mask[0]) == (got is None)
    # And the batch statuses on what filter says, code and reasons in order.
    assert _same(plugin.filter_batch_statuses(state, p, snap, np.array([0]))[0], got)
    return got


def _same(a: Status | None, b: Status | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.code, a.reasons) == (b.code, b.reasons)


# (name from TestEnoughRequests, pod, node's existing pod request, args, want code, want reasons)
ENOUGH_CASES = [
    ("no resources requested always fits", PodInfo(make_pod(containers=[])), res(10, 20), None, None, ()),
    (
        "too many resources fails",
        pod(res(1, 1)),
        res(10, 20),
        None,
        U,
        ("Insufficient cpu", "Insufficient memory"),
    ),
    (
        "too many resources fails due to init container cpu",
        pod(res(1, 1), inits=(res(3, 1),)),
        res(8, 19),
        None,
        U,
        ("Insufficient cpu",),
    ),
    (
        "too many resources fails due to highest init container cpu",
        pod(res(1, 1), inits=(res(3, 1), res(2, 1))),
        res(8, 19),
        None,
        U,
        ("Insufficient cpu",),
    ),
    (
        "too many resources fails due to init container memory",
        pod(res(1, 1), inits=(res(1, 3),)),
        res(9, 19),
        None,
        U,
        ("Insufficient memory",),
    ),
    (
        "too many resources fails due to highest init container memory",
        pod(res(1, 1), inits=(res(1, 3), res(1, 2))),
        res(9, 19),
        None,
        U,
        ("Insufficient memory",),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        pod(res(1, 1), inits=(res(1, 1),)),
        res(9, 19),
        None,
        None,
        (),
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        pod(res(1, 1), inits=(res(1, 1), res(1, 1))),
        res(9, 19),
        None,
        None,
        (),
    ),
    ("both resources fit", pod(res(1, 1)), res(5, 5), None, None, ()),
    ("one resource memory fits", pod(res(2, 1)), res(9, 5), None, U, ("Insufficient cpu",)),
    ("one resource cpu fits", pod(res(1, 2)), res(5, 19), None, U, ("Insufficient memory",)),
    ("equal edge case", pod(res(5, 1)), res(5, 19), None, None, ()),
    ("equal edge case for init container", pod(res(4, 1), inits=(res(5, 1),)), res(5, 19), None, None, ()),
    ("extended resource fits", pod(with_(res(), scalar(EXT_A, 1))), res(), None, None, ()),
    (
        "extended resource fits for init container",
        pod(res(), inits=(with_(res(), scalar(EXT_A, 1)),)),
        res(),
        None,
        None,
        (),
    ),
    (
        "extended resource capacity enforced",
        pod(with_(res(1, 1), scalar(EXT_A, 10))),
        with_(res(), scalar(EXT_A, 0)),
        None,
        UU,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource capacity enforced for init container",
        pod(res(), inits=(with_(res(1, 1), scalar(EXT_A, 10)),)),
        with_(res(), scalar(EXT_A, 0)),
        None,
        UU,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource allocatable enforced",
        pod(with_(res(1, 1), scalar(EXT_A, 1))),
        with_(res(), scalar(EXT_A, 5)),
        None,
        U,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource allocatable enforced for init container",
        pod(res(), inits=(with_(res(1, 1), scalar(EXT_A, 1)),)),
        with_(res(), scalar(EXT_A, 5)),
        None,
        U,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        pod(with_(res(1, 1), scalar(EXT_A, 3)), with_(res(1, 1), scalar(EXT_A, 3))),
        with_(res(), scalar(EXT_A, 2)),
        None,
        UU,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        pod(res(), inits=(with_(res(1, 1), scalar(EXT_A, 3)), with_(res(1, 1), scalar(EXT_A, 3)))),
        with_(res(), scalar(EXT_A, 2)),
        None,
        None,
        (),
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        pod(res(), inits=(with_(res(1, 1), scalar(EXT_A, 6)), with_(res(1, 1), scalar(EXT_A, 3)))),
        with_(res(), scalar(EXT_A, 2)),
        None,
        UU,
        (f"Insufficient {EXT_A}",),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        pod(with_(res(1, 1), scalar(EXT_B, 1))),
        res(),
        None,
        UU,
        (f"Insufficient {EXT_B}",),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        pod(res(), inits=(with_(res(1, 1), scalar(EXT_B, 1)),)),
        res(),
        None,
        UU,
        (f"Insufficient {EXT_B}",),
    ),
    (
        "kubernetes.io resource capacity enforced",
        pod(with_(res(1, 1), scalar(K8S_IO_A, 10))),
        res(),
        None,
        UU,
        (f"Insufficient {K8S_IO_A}",),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        pod(res(), inits=(with_(res(1, 1), scalar(K8S_IO_B, 10)),)),
        res(),
        None,
        UU,
        (f"Insufficient {K8S_IO_B}",),
    ),
    (
        "hugepages resource capacity enforced",
        pod(with_(res(1, 1), scalar(HUGE_A, 10))),
        with_(res(), scalar(HUGE_A, 0)),
        None,
        UU,
        (f"Insufficient {HUGE_A}",),
    ),
    (
        "hugepages resource capacity enforced for init container",
        pod(res(), inits=(with_(res(1, 1), scalar(HUGE_A, 10)),)),
        with_(res(), scalar(HUGE_A, 0)),
        None,
        UU,
        (f"Insufficient {HUGE_A}",),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        pod(with_(res(1, 1), scalar(HUGE_A, 3)), with_(res(1, 1), scalar(HUGE_A, 3))),
        with_(res(), scalar(HUGE_A, 2)),
        None,
        UU,
        (f"Insufficient {HUGE_A}",),
    ),
    (
        "skip checking ignored extended resource",
        pod(with_(res(1, 1), scalar(EXT_B, 1))),
        res(),
        {"ignoredResources": [EXT_B]},
        None,
        (),
    ),
    (
        "resources + pod overhead fits",
        pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        res(5, 5),
        None,
        None,
        (),
    ),
    (
        "requests + overhead does not fit for memory",
        pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        res(5, 5),
        None,
        U,
        ("Insufficient memory",),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        pod(with_(with_(res(1, 1), scalar(EXT_B, 1)), scalar(K8S_IO_A, 1))),
        res(),
        {"ignoredResourceGroups": ["example.com"]},
        UU,
        (f"Insufficient {K8S_IO_A}",),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        pod(with_(res(1, 1), scalar(EXT_A, 0))),
        with_(res(), scalar(EXT_A, 6)),
        None,
        None,
        (),
    ),
    (
        # The existing pod over-commits cpu and memory; a zero request skips those checks.
        "skip checking resource request with quantity zero",
        pod(with_(res(), scalar(EXT_A, 1))),
        with_(res(20, 30), scalar(EXT_A, 1)),
        None,
        None,
        (),
    ),
    (
        "both pod-level and container-level resources fit",
        pod(res(1, 1), pod_resources={"requests": {"cpu": "1m", "memory": "2"}}),
        res(5, 5),
        None,
        None,
        (),
    ),
    (
        "pod-level cpu resource not fit",
        pod(res(1, 1), pod_resources={"requests": {"cpu": "7m", "memory": "2"}}),
        res(5, 5),
        None,
        U,
        ("Insufficient cpu",),
    ),
    (
        "pod-level memory resource not fit",
        pod(res(1, 1), pod_resources={"requests": {"cpu": "3m", "memory": "2"}}),
        res(5, 19),
        None,
        U,
        ("Insufficient memory",),
    ),
    (
        "pod-level hugepages resource fit",
        PodInfo(make_pod(containers=[], pod_resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}})),
        None,
        None,
        None,
        (),
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        pod(
            with_(res(1, 1), scalar(HUGE_A, 3)),
            pod_resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}},
        ),
        None,
        None,
        None,
        (),
    ),
    (
        "pod-level hugepages resource not fit",
        PodInfo(
            make_pod(
                containers=[{"name": "c", "image": "pause"}],
                pod_resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}},
            )
        ),
        None,
        None,
        UU,
        (f"Insufficient {HUGE_A}",),
    ),
    (
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        pod(res(1, 1), inits=(res(1, 1),), pod_resources={"requests": {"cpu": "3m", "memory": "2"}}),
        res(5, 19),
        None,
        U,
        ("Insufficient memory",),
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "existing", "args", "code", "reasons"), ENOUGH_CASES, ids=[c[0] for c in ENOUGH_CASES]
)
def test_enough_requests(
    name: str,
    p: PodInfo,
    existing: dict[str, Any] | None,
    args: dict[str, Any] | None,
    code: Code | None,
    reasons: tuple[str, ...],
) -> None:
    """fit_test.go TestEnoughRequests."""
    node = enough_node(existing) if existing is not None else enough_node()
    got = run(Fit(FitArgs.parse(args)), p, node)
    if code is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == code
        assert got.reasons == reasons


NOT_ENOUGH_CASES = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        PodInfo(make_pod(containers=[])),
        res(10, 20),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        pod(res(1, 1)),
        res(5, 5),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        pod(res(5, 1)),
        res(5, 19),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
        pod(res(5, 1), inits=(res(5, 1),)),
        res(5, 19),
    ),
]


@pytest.mark.parametrize(("name", "p", "existing"), NOT_ENOUGH_CASES, ids=[c[0] for c in NOT_ENOUGH_CASES])
def test_not_enough_requests(name: str, p: PodInfo, existing: dict[str, Any]) -> None:
    """fit_test.go TestNotEnoughRequests: allocatable pods = 1 and one pod already there."""
    ni = NodeInfo(make_node("n", cpu="10m", memory="20", pods=1))
    ni.add_pod(pod(existing, name="existing"))
    got = run(Fit(), p, ni)
    assert got == Status(U, "Too many pods")


STORAGE_CASES = [
    ("empty storage requested, and pod fits", pod(res(1, 1)), res(2, 10), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        pod(res(eph=25)),
        res(2, 2),
        Status(UU, "Insufficient ephemeral-storage"),
    ),
    ("ephemeral local storage is sufficient", pod(res(eph=5)), res(2, 2, eph=10), None),
    ("pod fits", pod(res(eph=10)), res(2, 2), None),
]


@pytest.mark.parametrize(("name", "p", "existing", "want"), STORAGE_CASES, ids=[c[0] for c in STORAGE_CASES])
def test_storage_requests(name: str, p: PodInfo, existing: dict[str, Any], want: Status | None) -> None:
    """fit_test.go TestStorageRequests."""
    got = run(Fit(), p, enough_node(existing))
    assert got == want
    if want is not None:
        assert got is not None and got.code == want.code


def sidecar_pod(req_m: int, sidecar_m: int) -> PodInfo:
    return PodInfo(
        make_pod(
            containers=[{"name": "regular", "resources": {"requests": {"cpu": f"{req_m}m"}}}],
            init_containers=[
                {
                    "name": "restartable-init",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": f"{sidecar_m}m"}},
                }
            ],
        )
    )


@pytest.mark.parametrize(
    ("name", "p", "sidecars_enabled", "want_prefilter", "want_filter"),
    [
        (
            "allow pod without restartable init containers if sidecar containers is disabled",
            PodInfo(make_pod(containers=[{"name": "regular"}])),
            False,
            None,
            None,
        ),
        (
            "not allow pod with restartable init containers if sidecar containers is disabled",
            sidecar_pod(0, 0),
            False,
            Status(UU, "Pod has a restartable init container and the SidecarContainers feature is disabled"),
            None,
        ),
        (
            "allow pod without restartable init containers if sidecar containers is enabled",
            PodInfo(make_pod(containers=[{"name": "regular"}])),
            True,
            None,
            None,
        ),
        (
            "allow pod with restartable init containers if sidecar containers is enabled",
            PodInfo(
                make_pod(
                    containers=[{"name": "regular"}],
                    init_containers=[{"name": "restartable-init", "restartPolicy": "Always"}],
                )
            ),
            True,
            None,
            None,
        ),
        (
            "allow pod if the total requested resources do not exceed the node's allocatable resources",
            sidecar_pod(1, 1),
            True,
            None,
            None,
        ),
        (
            "not allow pod if the total requested resources do exceed the node's allocatable resources",
            sidecar_pod(1, 2),
            True,
            None,
            Status(UU, "Insufficient cpu"),
        ),
    ],
)
def test_restartable_init_containers(
    name: str, p: PodInfo, sidecars_enabled: bool, want_prefilter: Status | None, want_filter: Status | None
) -> None:
    """fit_test.go TestRestartableInitContainers (node: 2m cpu, 0 memory, 1 pod)."""
    plugin = Fit()
    plugin.enable_sidecar_containers = sidecars_enabled
    node = NodeInfo(make_node("n", cpu="2m", memory="0", pods=1))
    state = CycleState()
    got = plugin.pre_filter(state, p, [node])
    assert got == want_prefilter
    if got is None:
        f = plugin.filter(state, p, node)
        assert f == want_filter
        if want_filter is not None:
            assert f is not None and f.code == want_filter.code


def test_filter_without_prefilter_is_error() -> None:
    """fit_test.go TestPreFilterDisabled: Filter without PreFilter state is an Error."""
    with pytest.raises(StatusError) as e:
        Fit().filter(CycleState(), pod(res(1, 1)), enough_node())
    assert e.value.status.code == Code.ERROR


# ---------------------------------------------------------------------------------------------
# Args (validation_pluginargs.go ValidateNodeResourcesFitArgs; v1 defaults)


def test_default_args() -> None:
    a = FitArgs.parse(None)
    assert a.strategy == "LeastAllocated"
    assert [(r.name, r.weight) for r in a.resources] == [("cpu", 1), ("memory", 1)]
    # v1 defaulting: missing/zero weight becomes 1, empty resources become cpu+memory.
    b = FitArgs.parse(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    )
    assert [(r.name, r.weight) for r in b.resources] == [("cpu", 1)]
    c = FitArgs.parse({"scoringStrategy": {"type": "MostAllocated"}})
    assert [(r.name, r.weight) for r in c.resources] == [("cpu", 1), ("memory", 1)]


@pytest.mark.parametrize(
    ("raw", "msg"),
    [
        (
            # least_allocated_test.go "resource with negative weight"
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
                }
            },
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]",  # noqa: E501
        ),
        (
            # least_allocated_test.go "resource weight larger than MaxNodeScore"
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",  # noqa: E501
        ),
        (
            {"scoringStrategy": {"type": "Invalid"}},
            'scoringStrategy.type: Unsupported value: "Invalid": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio",  # noqa: E501
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio",  # noqa: E501
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
        ),
        (
            {"ignoredResourceGroups": ["example.com/aaa"]},
            "ignoredResourceGroups[0]: Invalid value: \"example.com/aaa\": resource group name can't contain '/'",
        ),
        (
            {"ignoredResources": ["-bad"]},
            'ignoredResources[0]: Invalid value: "-bad": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ],
)
def test_args_validation(raw: dict[str, Any], msg: str) -> None:
    with pytest.raises(ValueError) as e:
        FitArgs.parse(raw)
    assert str(e.value) == msg


def test_args_multiple_errors_aggregate() -> None:
    raw = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "a", "weight": -1}, {"name": "b", "weight": 200}],
        }
    }
    with pytest.raises(ValueError) as e:
        FitArgs.parse(raw)
    assert str(e.value).startswith("[scoringStrategy.resources[0].weight: Invalid value: -1")
    assert "scoringStrategy.resources[1].weight: Invalid value: 200" in str(e.value)


# ---------------------------------------------------------------------------------------------
# filter_batch == filter on random clusters


SCALARS = [EXT_A, EXT_B, HUGE_A, K8S_IO_A]


def _random_node(rng: random.Random, i: int) -> dict[str, Any]:
    extra = {}
    for s in SCALARS:
        if rng.random() < 0.4:
            extra[s] = str(rng.randint(0, 8))
    eph = str(rng.randint(0, 50)) if rng.random() < 0.7 else None
    return make_node(
        f"n{i}",
        cpu=f"{rng.randint(0, 4000)}m",
        memory=str(rng.randint(0, 4000)),
        pods=rng.randint(0, 6),
        ephemeral=eph,
        extra=extra,
    )


def _random_requests(rng: random.Random, scale: int) -> dict[str, Any]:
    r: dict[str, Any] = {}
    if rng.random() < 0.7:
        r["cpu"] = f"{rng.randint(0, scale)}m"
    if rng.random() < 0.7:
        r["memory"] = str(rng.randint(0, scale))
    if rng.random() < 0.3:
        r["ephemeral-storage"] = str(rng.randint(0, 20))
    for s in SCALARS:
        if rng.random() < 0.15:
            r[s] = str(rng.randint(0, 4))
    return r


def _random_pod(rng: random.Random, name: str, scale: int) -> PodInfo:
    w = MakePod().name(name).containers([]).req(*[_random_requests(rng, scale) for _ in range(rng.randint(0, 2))])
    if rng.random() < 0.2:
        w.init_req(_random_requests(rng, scale))
    return w.info()


def random_snapshot(rng: random.Random, n_nodes: int) -> Snapshot:
    nodes = []
    for i in range(n_nodes):
        ni = NodeInfo(_random_node(rng, i))
        for k in range(rng.randint(0, 4)):
            ni.add_pod(_random_pod(rng, f"p{i}-{k}", 1200))
        nodes.append(ni)
    return new_snapshot(nodes)


@pytest.mark.parametrize("seed", range(8))
def test_filter_batch_equals_filter(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_snapshot(rng, 60)
    args_options = [None, {"ignoredResources": [EXT_A]}, {"ignoredResourceGroups": ["example.com"]}]
    failures = 0
    for k in range(40):
        plugin = Fit(FitArgs.parse(rng.choice(args_options)))
        p = _random_pod(rng, f"incoming-{k}", 1500)
        state = CycleState()
        assert plugin.pre_filter(state, p, snap.node_infos) is None
        idx = np.array(sorted(rng.sample(range(len(snap)), rng.randint(1, len(snap)))))
        mask = plugin.filter_batch(state, p, snap, idx)
        statuses = plugin.filter_batch_statuses(state, p, snap, idx)
        assert mask.dtype == bool and mask.shape == idx.shape
        assert statuses is not None and len(statuses) == len(idx)
        for j, i in enumerate(idx):
            st = plugin.filter(state, p, snap.node_infos[i])
            assert bool(mask[j]) == (st is None), (seed, k, i, st)
            assert _same(statuses[j], st), (seed, k, i, st, statuses[j])
            failures += st is not None
    assert failures > 0  # the random clusters must exercise rejections too


def test_events_to_register() -> None:
    """fit.go EventsToRegister with queueing hints and InPlacePodVerticalScaling on (the defaults)."""
    from scheduler.framework.events import ActionType, QueueingHint

    ev = Fit().events_to_register()
    assert [(e.event.resource, e.event.action) for e in ev] == [
        ("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    pod_hint, node_hint = ev[0].hint, ev[1].hint
    assert pod_hint is not None and node_hint is not None
    target = pod(res(1000, 1000))
    # fit_test.go Test_isSchedulableAfterPodEvent: deleting an unscheduled pod frees nothing.
    assert pod_hint(target, make_pod("gone", cpu="1"), None) == QueueingHint.QUEUE_SKIP
    assert pod_hint(target, make_pod("gone", cpu="1", node_name="n"), None) == QueueingHint.QUEUE
    # Test_isSchedulableAfterNodeChange: a new node too small is skipped, a big enough one queues.
    small = make_node("n", cpu="500m", memory="1Gi")
    big = make_node("n", cpu="2", memory="1Gi")
    assert node_hint(target, None, small) == QueueingHint.QUEUE_SKIP
    assert node_hint(target, None, big) == QueueingHint.QUEUE
    # An update that fits but increased nothing the pod asks for is skipped.
    assert node_hint(target, big, big) == QueueingHint.QUEUE_SKIP
    assert node_hint(target, make_node("n", cpu="1", memory="1Gi"), big) == QueueingHint.QUEUE
