"""NodeResourcesBalancedAllocation.

Expected values: upstream noderesources/balanced_allocation_test.go
(TestNodeResourcesBalancedAllocation, current release: std formula, PreScore Skip for best-effort
pods) and validation_pluginargs.go ValidateNodeResourcesBalancedAllocationArgs. Every case
also checks score_batch == score; random clusters check that too.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.balanced_allocation import (
    BalancedAllocation,
    BalancedAllocationArgs,
    balanced_resource_score,
    balanced_resource_score_batch,
)
from scheduler.testing.builders import MakePod, make_node, make_pod, make_resource_node
from scheduler.testing.framework import new_snapshot

GPU = "nvidia.com/gpu"


def spec_pod(containers: list[dict[str, str]], node: str = "") -> dict:
    return MakePod().containers([]).req(*containers).node(node).obj()


CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]
CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_MEM_GPU = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}]
DEFAULT = None
WITH_GPU = {
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]
}


def build(nodes: list[dict], existing: list[dict]) -> Snapshot:
    """The nodes holding the existing pods, each given its own name."""
    named = [dict(p, metadata=dict(p["metadata"], name=f"e{i}", uid=f"uid-e{i}")) for i, p in enumerate(existing)]
    return new_snapshot(nodes, named)


def run(args: dict[str, Any] | None, pod: dict, snap: Snapshot, pre_score: bool = True) -> list[int]:
    plugin = BalancedAllocation(BalancedAllocationArgs.parse(args))
    p = PodInfo(pod)
    state = CycleState()
    if pre_score:
        assert plugin.pre_score(state, p, snap.node_infos) is None
    per_node = [plugin.score(state, p, n) for n in snap.node_infos]
    assert plugin.score_batch(state, p, snap, np.arange(len(snap))).tolist() == per_node
    return per_node


# Expected values are the v1.36.3 table: 50 + (50 + with_pod - without_pod) / 2.
CASES = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        spec_pod(CPU_AND_MEMORY),
        [make_resource_node("node1", 4000, 10000), make_resource_node("node2", 6000, 10000)],
        [],
        DEFAULT,
        True,
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        spec_pod(CPU_AND_MEMORY),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 20000)],
        [spec_pod(CPU_ONLY, "node1"), spec_pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        True,
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        spec_pod(CPU_AND_MEMORY),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 50000)],
        [spec_pod(CPU_ONLY, "node1"), spec_pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        True,
        [73, 70],
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        spec_pod([{"memory": "2000"}, {"memory": "3000"}]),
        [make_resource_node("node1", 3000, 5000), make_resource_node("node2", 3000, 5000)],
        [spec_pod(CPU_ONLY, "node1")],
        DEFAULT,
        True,
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        spec_pod(CPU_ONLY),
        [make_resource_node("node1", 6000, 10000), make_resource_node("node2", 6000, 10000)],
        [spec_pod(CPU_ONLY, "node1"), spec_pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        True,
        [62, 62],
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        spec_pod([{"cpu": "0", "memory": "0", GPU: "1"}]),
        [make_resource_node("node1", 3500, 40000, {GPU: 8}), make_resource_node("node2", 3500, 40000, {GPU: 8})],
        [spec_pod(CPU_MEM_GPU, "node1"), spec_pod(CPU_AND_MEMORY, "node2")],
        WITH_GPU,
        True,
        [75, 76],
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
        spec_pod(CPU_AND_MEMORY),
        [make_resource_node("node1", 3500, 40000, {GPU: 8}), make_resource_node("node2", 3500, 40000)],
        [],
        WITH_GPU,
        True,
        [56, 56],
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        spec_pod(CPU_AND_MEMORY),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 20000)],
        [spec_pod(CPU_ONLY, "node1"), spec_pod(CPU_AND_MEMORY, "node2")],
        DEFAULT,
        False,
        [73, 74],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "args", "pre_score", "want"), CASES, ids=[c[0] for c in CASES]
)
def test_balanced_allocation(
    name: str, pod: dict, nodes: list, existing: list, args: dict | None, pre_score: bool, want: list[int]
) -> None:
    """balanced_allocation_test.go TestNodeResourcesBalancedAllocation."""
    assert run(args, pod, build(nodes, existing), pre_score) == want


def test_best_effort_pod_skips_prescore() -> None:
    """balanced_allocation_test.go 'nothing scheduled, nothing requested, skip in PreScore'."""
    snap = build([make_resource_node("node1", 4000, 10000), make_resource_node("node2", 4000, 10000)], [])
    plugin = BalancedAllocation()
    p = PodInfo(make_pod("p", containers=[]))
    st = plugin.pre_score(CycleState(), p, snap.node_infos)
    assert st is not None and st.code == Code.SKIP
    # Without PreScore, Score computes the request itself and gives a best-effort pod 0.
    state = CycleState()
    assert [plugin.score(state, p, n) for n in snap.node_infos] == [0, 0]
    assert plugin.score_batch(state, p, snap, np.arange(2)).tolist() == [0, 0]
    # A container without requests is best-effort too (actual requests, no non-zero defaults).
    p2 = PodInfo(make_pod("p2"))
    st2 = plugin.pre_score(CycleState(), p2, snap.node_infos)
    assert st2 is not None and st2.code == Code.SKIP


def test_float_truncation_matches_go() -> None:
    # int64((1 - std) * 100) truncates: std = |1/3 - 0|/2 -> (1 - 0.1666..)*100 = 83.33.. -> 83;
    # the empty node balances at 100, so 50 + (50 + 83 - 100) / 2 = 50 + 33 / 2 = 66.
    assert balanced_resource_score([1, 0], [0, 0], [3, 5], [1, 1]) == 66
    # Both at 83 (allocated == requested): no change scores 50 + 50 / 2 = 75.
    assert balanced_resource_score([1, 0], [1, 0], [3, 5], [1, 1]) == 75
    # Node alone at 1/6 -> 91, with the pod at 1/3 -> 83: 50 + (50 + 83 - 91) / 2 = 71.
    assert balanced_resource_score([2, 0], [1, 0], [6, 5], [1, 1]) == 71
    # No resource with allocatable: both balances are 100 -> 75.
    assert balanced_resource_score([], [], [], []) == 75
    assert balanced_resource_score_batch([], [], [], [], [], 3).tolist() == [75, 75, 75]
    # Batch form on the same vectors.
    one = [np.array([1]), np.array([0])]
    zero = [np.array([0]), np.array([0])]
    alloc = [np.array([3]), np.array([5])]
    assert balanced_resource_score_batch(one, zero, alloc, [None, None], [1, 1], 1).tolist() == [66]


@pytest.mark.parametrize(
    ("raw", "msg"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight: Invalid value: 2: must be 1"),
        (
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
            'resources[1].name: Duplicate value: "cpu"',
        ),
    ],
)
def test_args_validation(raw: dict, msg: str) -> None:
    with pytest.raises(ValueError) as e:
        BalancedAllocationArgs.parse(raw)
    assert str(e.value) == msg


def test_args_defaults() -> None:
    assert [r.name for r in BalancedAllocationArgs.parse(None).resources] == ["cpu", "memory"]
    # v1 defaulting turns an unset weight into 1.
    assert BalancedAllocationArgs.parse({"resources": [{"name": "cpu"}]}).resources[0].weight == 1


# ---------------------------------------------------------------------------------------------
# score_batch == score on random clusters

SCALARS = [GPU, "example.com/aaa", "hugepages-2Mi"]


def _rand_requests(rng: random.Random) -> dict[str, str]:
    r: dict[str, str] = {}
    if rng.random() < 0.7:
        r["cpu"] = f"{rng.randint(0, 4000)}m"
    if rng.random() < 0.7:
        r["memory"] = str(rng.randint(0, 8 * 1024**3))
    if rng.random() < 0.3:
        r["ephemeral-storage"] = str(rng.randint(0, 10**9))
    for s in SCALARS:
        if rng.random() < 0.25:
            r[s] = str(rng.randint(0, 4))
    return r


def _rand_pod(rng: random.Random, name: str, node: str = "") -> dict:
    reqs = [_rand_requests(rng) for _ in range(rng.randint(0, 3))]
    return MakePod().name(name).containers([]).req(*reqs).node(node).obj()


RESOURCE_SETS = [
    None,
    {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
    {
        "resources": [
            {"name": "memory"},
            {"name": "ephemeral-storage"},
            {"name": "cpu"},
            {"name": "example.com/aaa"},
            {"name": "hugepages-2Mi"},
            {"name": "example.com/nowhere"},
        ]
    },
]


@pytest.mark.parametrize("seed", range(10))
def test_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    nodes = []
    for i in range(50):
        extra = {s: str(rng.randint(0, 8)) for s in SCALARS if rng.random() < 0.5}
        nodes.append(
            make_node(
                f"n{i}",
                cpu=f"{rng.choice([0, rng.randint(1, 32000)])}m",
                memory=str(rng.choice([0, rng.randint(1, 64 * 1024**3)])),
                ephemeral=str(rng.randint(0, 10**10)) if rng.random() < 0.7 else None,
                extra=extra,
            )
        )
    existing = [_rand_pod(rng, f"e{j}", f"n{rng.randrange(50)}") for j in range(150)]
    snap = build(nodes, existing)
    seen: set[int] = set()
    for args in RESOURCE_SETS:
        plugin = BalancedAllocation(BalancedAllocationArgs.parse(args))
        for k in range(20):
            p = PodInfo(_rand_pod(rng, f"in{k}"))
            state = CycleState()
            if rng.random() < 0.8:
                plugin.pre_score(state, p, snap.node_infos)
            idx = np.array(sorted(rng.sample(range(50), rng.randint(1, 50))))
            want = [plugin.score(state, p, snap.node_infos[i]) for i in idx]
            assert plugin.score_batch(state, p, snap, idx).tolist() == want
            seen.update(want)
    assert len(seen) > 10
