"""resourceAllocationScorer's pod side.

Expected values: upstream noderesources/resource_allocation_test.go
(TestResourceAllocationScorerCalculateRequests: the non-zero cpu/memory defaults per container
plus overhead) and the v1.36.3 wiring of the PodLevelResources flag: NewFit leaves the embedded
scorer's flag unset, so Fit scoring ignores spec.resources; NewBalancedAllocation sets it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.podrequests import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.plugins.noderesources.fit import Fit, FitArgs
from scheduler.testing.builders import MakePod, make_node
from scheduler.testing.framework import new_snapshot

ONE_MI = 1048576


def pod(
    containers: list[dict[str, str]] | None = None,
    inits: list[dict[str, str]] | None = None,
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, str] | None = None,
) -> PodInfo:
    w = MakePod().containers([]).req(*(containers or [])).init_req(*(inits or []))
    if overhead:
        w.overhead(overhead)
    if pod_level:
        w.res({"requests": pod_level})
    return w.info()


D_CPU, D_MEM = DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST
CPU_1_MEM_1MI = {"cpu": "1", "memory": "1Mi"}


@pytest.mark.parametrize(
    ("name", "p", "want"),
    [
        ("overhead only", pod(overhead=CPU_1_MEM_1MI), (1000, ONE_MI)),
        ("1x requestless container", pod([{}]), (D_CPU, D_MEM)),
        ("2x requestless container", pod([{}, {}]), (2 * D_CPU, 2 * D_MEM)),
        ("request container + requestless container", pod([CPU_1_MEM_1MI, {}]), (1000 + D_CPU, ONE_MI + D_MEM)),
        (
            "container + requestless container + overhead",
            pod([CPU_1_MEM_1MI, {}], overhead=CPU_1_MEM_1MI),
            (2000 + D_CPU, 2 * ONE_MI + D_MEM),
        ),
        (
            "init container + container + requestless container + overhead",
            pod([CPU_1_MEM_1MI, {}], inits=[{"cpu": "3"}], overhead=CPU_1_MEM_1MI),
            (4000, 2 * ONE_MI + D_MEM),
        ),
        (
            "requestless init container + small init container + small container ",
            pod([{"cpu": "3m", "memory": "3"}], inits=[{}, {"cpu": "1m", "memory": "1"}]),
            (D_CPU, D_MEM),
        ),
        (
            "requestless init container + small init container + small container + requestless container ",
            pod([{"cpu": "3m", "memory": "3"}, {}], inits=[{}, {"cpu": "1m", "memory": "1"}]),
            (3 + D_CPU, 3 + D_MEM),
        ),
    ],
)
def test_calculate_requests(name: str, p: PodInfo, want: tuple[int, int]) -> None:
    """resource_allocation_test.go TestResourceAllocationScorerCalculateRequests."""
    assert Fit().scorer.pod_requests(p) == want


# A pod whose spec.resources (cpu 3, memory 6000) differs from its containers (1 cpu, 2000).
POD_LEVEL = pod([{"cpu": "1", "memory": "2000"}], overhead={"cpu": "100m"}, pod_level={"cpu": "3", "memory": "6000"})


def test_fit_scoring_ignores_pod_level_resources() -> None:
    """v1.36.3 fit.go NewFit: only Fit.enablePodLevelResources is set; the embedded
    resourceAllocationScorer's copy stays false, so calculatePodResourceRequest skips pod-level
    resources. Containers + overhead: cpu 1100m, memory 2000."""
    assert Fit().scorer.pod_requests(POD_LEVEL) == (1100, 2000)
    # ... while the filter side (PreFilter state) uses the pod-level values plus overhead.
    st = Fit().compute_state(POD_LEVEL)
    assert (st.cpu, st.mem) == (3100, 6000)
    # Containers without cpu/memory get the non-zero defaults, as without pod-level resources.
    p = pod([{}], pod_level={"cpu": "2", "memory": "1Gi"})
    assert Fit().scorer.pod_requests(p) == (D_CPU, D_MEM)


def test_balanced_allocation_uses_pod_level_resources() -> None:
    """NewBalancedAllocation passes fts.EnablePodLevelResources to its scorer."""
    assert BalancedAllocation().scorer.pod_requests(POD_LEVEL) == (3100, 6000)


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
def test_fit_score_with_pod_level_resources(strategy: str) -> None:
    """The score equals that of the same pod without spec.resources (and batch == per node)."""
    node = NodeInfo(make_node("n1", cpu="4", memory="10000", pods=10))
    snap = new_snapshot([node])
    ss: dict[str, Any] = {"type": strategy}
    if strategy == "RequestedToCapacityRatio":
        ss["requestedToCapacityRatio"] = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
    plugin = Fit(FitArgs.parse({"scoringStrategy": ss}))
    plain = pod([{"cpu": "1", "memory": "2000"}], overhead={"cpu": "100m"})
    got = []
    for p in (POD_LEVEL, plain):
        state = CycleState()
        assert plugin.pre_score(state, p, [node]) is None
        s = plugin.score(state, p, node)
        assert plugin.score_batch(state, p, snap, np.arange(1)).tolist() == [s]
        got.append(s)
    assert got[0] == got[1]
    # LeastAllocated by hand: cpu (4000-1100)*100/4000 = 72, memory (10000-2000)*100/10000 = 80.
    if strategy == "LeastAllocated":
        assert got[0] == 76
