"""NodeResourcesFit scoring: LeastAllocated, MostAllocated, RequestedToCapacityRatio.

Expected values: upstream noderesources least_allocated_test.go (TestLeastAllocatedScoringStrategy),
most_allocated_test.go (TestMostAllocatedScoringStrategy), requested_to_capacity_ratio_test.go
(TestRequestedToCapacityRatioScoringStrategy, TestBrokenLinearFunction,
TestResourceBinPackingSingleExtended) and fit_test.go (TestFitScore). Every case also checks
score_batch == score; random clusters check that for every strategy.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.fit import Fit, FitArgs
from scheduler.plugins.noderesources.requested_to_capacity_ratio import ShapePoint, broken_linear
from scheduler.testing.builders import MakeNode, MakePod, make_node, make_resource_node
from scheduler.testing.framework import new_snapshot

EXT = "abc.com/xyz"  # upstream test_util.go extendedRes


def st_pod(
    *reqs: dict[str, str], node: str = "", sidecar: dict[str, str] | None = None, name: str = "p"
) -> dict:
    """st.MakePod().Req(...)...: one container per Req call; no Req means no containers."""
    w = MakePod().name(name).containers([]).req(*reqs).node(node)
    if sidecar is not None:
        w.container(sidecar, init=True, name="sidecar", restartPolicy="Always")
    return w.obj()


def st_node(name: str, cap: dict[str, str]) -> dict:
    """st.MakeNode().Capacity(...): allocatable = capacity (a resource not given is 0)."""
    return MakeNode().name(name).capacity(cap).obj()


def build(nodes: list[dict], existing: list[dict]) -> Snapshot:
    """The nodes holding the existing pods, each given its own name."""
    named = [dict(p, metadata=dict(p["metadata"], name=f"existing-{i}", uid=f"uid-existing-{i}"))
             for i, p in enumerate(existing)]
    return new_snapshot(nodes, named)


def scores(plugin: Fit, pod: dict, snap: Snapshot, pre_score: bool = True) -> list[int]:
    p = PodInfo(pod)
    state = CycleState()
    if pre_score:
        assert plugin.pre_score(state, p, snap.node_infos) is None
    per_node = [plugin.score(state, p, n) for n in snap.node_infos]
    batch = plugin.score_batch(state, p, snap, np.arange(len(snap)))
    assert batch.dtype == np.int64
    assert batch.tolist() == per_node
    return per_node


def fit(
    strategy: str, resources: list[dict[str, Any]] | None = None, shape: list[tuple[int, int]] | None = None
) -> Fit:
    ss: dict[str, Any] = {"type": strategy}
    if resources is not None:
        ss["resources"] = resources
    if shape is not None:
        ss["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    return Fit(FitArgs.parse({"scoringStrategy": ss}))


DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = [*DEFAULT, {"name": EXT, "weight": 1}]
N4_10 = [
    st_node("node1", {"cpu": "4000", "memory": "10000"}),
    st_node("node2", {"cpu": "4000", "memory": "10000"}),
]
N4_6 = [
    st_node("node1", {"cpu": "4000", "memory": "10000"}),
    st_node("node2", {"cpu": "6000", "memory": "10000"}),
]
N10_20 = [
    st_node("node1", {"cpu": "10000", "memory": "20000"}),
    st_node("node2", {"cpu": "10000", "memory": "20000"}),
]
REQ_3_5 = st_pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
CPU3K = {"cpu": "3000", "memory": "0"}
CPU3K_MEM5K = {"cpu": "3000", "memory": "5000"}
N_EXT = [
    st_node("node1", {"cpu": "6000", "memory": "10000", EXT: "4"}),
    st_node("node2", {"cpu": "6000", "memory": "10000", EXT: "10"}),
]

# (test name, pod, nodes, existing pods, resources, expected)
LEAST_CASES = [
    ("nothing scheduled, nothing requested", st_pod(), N4_10, [], DEFAULT, [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", REQ_3_5, N4_6, [], DEFAULT, [37, 50]),
    (
        "no resources requested, pods scheduled",
        st_pod(),
        N4_10,
        [st_pod(node="node1"), st_pod(node="node1"), st_pod(node="node2"), st_pod(node="node2")],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        st_pod(),
        N10_20,
        [
            st_pod(CPU3K, node="node1"),
            st_pod(CPU3K, node="node1"),
            st_pod(CPU3K, node="node2"),
            st_pod(CPU3K_MEM5K, node="node2"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ_3_5,
        N10_20,
        [st_pod(CPU3K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        REQ_3_5,
        [
            st_node("node1", {"cpu": "10000", "memory": "20000"}),
            st_node("node2", {"cpu": "10000", "memory": "50000"}),
        ],
        [st_pod(CPU3K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        st_pod(CPU3K),
        N4_10,
        [st_pod(CPU3K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        st_pod(),
        [st_node("node1", {}), st_node("node2", {})],
        [st_pod(CPU3K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        DEFAULT,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        REQ_3_5,
        N4_6,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        REQ_3_5,
        [
            st_node("node1", {"cpu": "6000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
        ],
        [],
        EXT_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        st_pod({"cpu": "3000", "memory": "5000", EXT: "2"}),
        N_EXT,
        [],
        EXT_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}),
        [
            st_node("node1", {"cpu": "6000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
        ],
        [],
        [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "resources", "want"), LEAST_CASES, ids=[c[0] for c in LEAST_CASES]
)
def test_least_allocated(
    name: str, pod: dict, nodes: list, existing: list, resources: list, want: list[int]
) -> None:
    """least_allocated_test.go TestLeastAllocatedScoringStrategy."""
    assert scores(fit("LeastAllocated", resources), pod, build(nodes, existing)) == want


MOST_CASES = [
    ("nothing scheduled, nothing requested", st_pod(), N4_10, [], DEFAULT, [0, 0]),
    ("nothing scheduled, resources requested, differently sized nodes", REQ_3_5, N4_6, [], DEFAULT, [62, 50]),
    (
        "no resources requested, pods scheduled with resources",
        st_pod(),
        N10_20,
        [
            st_pod(CPU3K, node="node1"),
            st_pod(CPU3K, node="node1"),
            st_pod(CPU3K, node="node2"),
            st_pod(CPU3K_MEM5K, node="node2"),
        ],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ_3_5,
        N10_20,
        [st_pod(CPU3K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        st_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [
            st_node("node1", {"cpu": "5000", "memory": "10000"}),
            st_node("node2", {"cpu": "10000", "memory": "9000"}),
        ],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (memory weight 2)",
        REQ_3_5,
        N4_6,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        st_pod({}),
        [
            st_node("node1", {"cpu": "250m", "memory": "1000Mi"}),
            st_node("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [st_pod({}, node="node1"), st_pod({}, node="node1")],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        REQ_3_5,
        [
            st_node("node1", {"cpu": "6000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
        ],
        [],
        EXT_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        st_pod({"cpu": "3000", "memory": "5000", EXT: "2"}),
        N_EXT,
        [],
        EXT_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}),
        [
            st_node("node1", {"cpu": "6000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
        ],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "resources", "want"), MOST_CASES, ids=[c[0] for c in MOST_CASES]
)
def test_most_allocated(
    name: str, pod: dict, nodes: list, existing: list, resources: list, want: list[int]
) -> None:
    """most_allocated_test.go TestMostAllocatedScoringStrategy."""
    assert scores(fit("MostAllocated", resources), pod, build(nodes, existing)) == want


LEAST_SHAPE = [(0, 10), (100, 0)]
RTCR_CASES = [
    (
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        st_pod(),
        N4_10,
        [st_pod(node="node1"), st_pod(node="node1")],
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)",  # noqa: E501
        REQ_3_5,
        N4_6,
        [st_pod(node="node1"), st_pod(node="node1")],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        st_pod(),
        N4_6,
        [st_pod(CPU3K_MEM5K, node="node1"), st_pod(CPU3K_MEM5K, node="node2")],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want"), RTCR_CASES, ids=[c[0] for c in RTCR_CASES]
)
def test_requested_to_capacity_ratio(
    name: str, pod: dict, nodes: list, existing: list, want: list[int]
) -> None:
    """requested_to_capacity_ratio_test.go TestRequestedToCapacityRatioScoringStrategy."""
    assert scores(fit("RequestedToCapacityRatio", DEFAULT, LEAST_SHAPE), pod, build(nodes, existing)) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    """requested_to_capacity_ratio_test.go TestBrokenLinearFunction."""
    shape = [ShapePoint(u, s) for u, s in points]
    for p, want in assertions:
        assert broken_linear(shape, p) == want, p


def test_broken_linear_negative_slope_truncates_toward_zero() -> None:
    # Go int64 division truncates: 10 + (0-10)*(15-0)/(40-0) = 10 + (-150/40 -> -3) = 7, not 6.
    assert broken_linear([ShapePoint(0, 10), ShapePoint(40, 0)], 15) == 7


FOO = "intel.com/foo"
BINPACK_NODES = [
    make_resource_node("node1", 4000, 10000 * 1024 * 1024, {FOO: 8}),
    make_resource_node("node2", 4000, 10000 * 1024 * 1024, {FOO: 4}),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing", "want"),
    [
        ("nothing scheduled, nothing requested", st_pod(), [], [0, 0]),
        ("resources requested, pods scheduled with less resources", st_pod({FOO: "2"}), [], [2, 5]),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running ",
            st_pod({FOO: "2"}),
            [st_pod({FOO: "2"}, node="node2")],
            [2, 10],
        ),
        ("resources requested, pods scheduled with more resources", st_pod({FOO: "4"}), [], [5, 10]),
    ],
)
def test_resource_bin_packing_single_extended(name: str, pod: dict, existing: list, want: list[int]) -> None:
    """requested_to_capacity_ratio_test.go TestResourceBinPackingSingleExtended."""
    plugin = fit("RequestedToCapacityRatio", [{"name": FOO, "weight": 1}], [(0, 0), (100, 1)])
    assert scores(plugin, pod, build(BINPACK_NODES, existing)) == want


FIT_SCORE_EXISTING = [
    st_pod({"cpu": "2000", "memory": "4000"}, node="node1"),
    st_pod({"cpu": "1000", "memory": "2000"}, node="node2"),
]


@pytest.mark.parametrize("pre_score", [True, False])
@pytest.mark.parametrize(
    ("name", "pod", "plugin", "want"),
    [
        (
            "test case for ScoringStrategy RequestedToCapacityRatio case1",
            st_pod({"cpu": "3000", "memory": "5000"}),
            fit("RequestedToCapacityRatio", DEFAULT, [(0, 10), (100, 0)]),
            [10, 32],
        ),
        (
            "test case for ScoringStrategy RequestedToCapacityRatio case2",
            st_pod({"cpu": "3000", "memory": "5000"}),
            fit("RequestedToCapacityRatio", DEFAULT, [(0, 0), (100, 10)]),
            [95, 68],
        ),
        (
            "test case for ScoringStrategy MostAllocated",
            st_pod({"cpu": "1000", "memory": "2000"}),
            fit("MostAllocated", DEFAULT),
            [67, 36],
        ),
        (
            "test case for ScoringStrategy LeastAllocated",
            st_pod({"cpu": "1000", "memory": "2000"}),
            fit("LeastAllocated", DEFAULT),
            [32, 63],
        ),
    ],
)
def test_fit_score(name: str, pod: dict, plugin: Fit, want: list[int], pre_score: bool) -> None:
    """fit_test.go TestFitScore (and its '... if PreScore is not called' variants)."""
    assert scores(plugin, pod, build(N4_6, FIT_SCORE_EXISTING), pre_score=pre_score) == want


@pytest.mark.parametrize(
    ("name", "strategy", "want"),
    [
        ("test case for ScoringStrategy MostAllocated with sidecar container", "MostAllocated", [67, 45]),
        ("test case for ScoringStrategy LeastAllocated with sidecar container", "LeastAllocated", [32, 55]),
    ],
)
def test_fit_score_with_sidecar(name: str, strategy: str, want: list[int]) -> None:
    """fit_test.go TestFitScore '... with sidecar container'."""
    existing = [
        st_pod({"cpu": "1000", "memory": "2000"}, node="node1", sidecar={"cpu": "1000", "memory": "2000"}),
        st_pod({"cpu": "1000", "memory": "2000"}, node="node2"),
    ]
    snap = build(N4_10, existing)
    assert scores(fit(strategy, DEFAULT), st_pod({"cpu": "1000", "memory": "2000"}), snap) == want


# ---------------------------------------------------------------------------------------------
# score_batch == score on random clusters, every strategy


SCALARS = ["example.com/aaa", "hugepages-2Mi", "example.com/bbb"]


def _rand_requests(rng: random.Random) -> dict[str, str]:
    r: dict[str, str] = {}
    if rng.random() < 0.6:
        r["cpu"] = f"{rng.choice([0, rng.randint(0, 3000)])}m"
    if rng.random() < 0.6:
        r["memory"] = str(rng.choice([0, rng.randint(0, 3 * 1024**3)]))
    if rng.random() < 0.3:
        r["ephemeral-storage"] = str(rng.randint(0, 10**9))
    for s in SCALARS:
        if rng.random() < 0.2:
            r[s] = str(rng.randint(0, 5))
    return r


def _rand_pod(rng: random.Random, name: str, node: str = "") -> dict:
    w = MakePod().name(name).containers([]).req(*[_rand_requests(rng) for _ in range(rng.randint(0, 3))])
    if rng.random() < 0.2:
        reqs = _rand_requests(rng)
        w.container(reqs, init=True, name="i", **({"restartPolicy": "Always"} if rng.random() < 0.5 else {}))
    return w.node(node).obj()


def random_cluster(rng: random.Random, n: int) -> Snapshot:
    nodes = []
    for i in range(n):
        extra = {s: str(rng.randint(0, 10)) for s in SCALARS if rng.random() < 0.5}
        eph = str(rng.choice([0, rng.randint(1, 10**10)])) if rng.random() < 0.8 else None
        nodes.append(
            make_node(
                f"n{i}",
                cpu=f"{rng.choice([0, rng.randint(1, 16000)])}m",
                memory=str(rng.choice([0, rng.randint(1, 64 * 1024**3)])),
                ephemeral=eph,
                extra=extra,
            )
        )
    existing = [_rand_pod(rng, f"e{j}", f"n{rng.randrange(n)}") for j in range(n * 3)]
    return build(nodes, existing)


STRATEGIES = [
    ("LeastAllocated", None),
    ("MostAllocated", None),
    ("RequestedToCapacityRatio", [(0, 10), (100, 0)]),
    ("RequestedToCapacityRatio", [(0, 0), (100, 10)]),
    ("RequestedToCapacityRatio", [(10, 2), (40, 9), (70, 3), (95, 7)]),
    ("RequestedToCapacityRatio", [(50, 5)]),
]
RESOURCE_SETS = [
    None,
    [{"name": "memory", "weight": 3}, {"name": "cpu", "weight": 1}],
    [
        {"name": "cpu", "weight": 2},
        {"name": "memory", "weight": 1},
        {"name": "ephemeral-storage", "weight": 5},
        {"name": "example.com/aaa", "weight": 7},
        {"name": "hugepages-2Mi", "weight": 1},
        {"name": "example.com/nowhere", "weight": 4},
        {"name": "pods", "weight": 1},
    ],
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("strategy", "shape"), STRATEGIES)
def test_score_batch_equals_score(seed: int, strategy: str, shape: list[tuple[int, int]] | None) -> None:
    rng = random.Random(seed * 31 + len(strategy))
    snap = random_cluster(rng, 50)
    seen: set[int] = set()
    for resources in RESOURCE_SETS:
        plugin = fit(strategy, resources, shape)
        for k in range(15):
            pod = _rand_pod(rng, f"incoming-{k}")
            idx = np.array(sorted(rng.sample(range(len(snap)), rng.randint(1, len(snap)))))
            p = PodInfo(pod)
            state = CycleState()
            if rng.random() < 0.8:
                plugin.pre_score(state, p, snap.node_infos)
            got = plugin.score_batch(state, p, snap, idx)
            want = [plugin.score(state, p, snap.node_infos[i]) for i in idx]
            assert got.tolist() == want
            seen.update(want)
    if shape is None or len(shape) > 1:  # a one-point shape is constant by design
        assert len(seen) > 5  # the random cases must not all collapse to one score


BAR_X = "intel.com/bar"
MULTI_NODES = [
    make_resource_node("node1", 4000, 10000 * 1024 * 1024, {FOO: 8, BAR_X: 4}),
    make_resource_node("node2", 4000, 10000 * 1024 * 1024, {FOO: 4, BAR_X: 8}),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing", "want"),
    [
        ("nothing scheduled, nothing requested", st_pod(), [], [0, 0]),
        ("resources requested, pods scheduled with less resources", st_pod({FOO: "2", BAR_X: "2"}), [], [4, 3]),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running ",
            st_pod({FOO: "2", BAR_X: "2"}),
            [st_pod({FOO: "4", BAR_X: "2"}, node="node2")],
            [4, 7],
        ),
        ("resources requested, pods scheduled with more resources", st_pod({FOO: "4", BAR_X: "2"}), [], [5, 5]),
    ],
)
def test_resource_bin_packing_multiple_extended(name: str, pod: dict, existing: list, want: list[int]) -> None:
    """requested_to_capacity_ratio_test.go TestResourceBinPackingMultipleExtended (weights foo 3,
    bar 5; shape 0->0, 100->1)."""
    plugin = fit(
        "RequestedToCapacityRatio", [{"name": FOO, "weight": 3}, {"name": BAR_X, "weight": 5}], [(0, 0), (100, 1)]
    )
    assert scores(plugin, pod, build(MULTI_NODES, existing)) == want
