"""NodeResourcesFit as a PlacementScore plugin (TopologyAwareWorkloadScheduling).

Rows from upstream noderesources/fit_test.go TestScorePlacement_Resources: MostAllocated over the
placement's nodes summed, the group's proposed pods added, whatever the configured strategy.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.features import DEFAULT_FEATURES, FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Placement, PodGroupAssignments, PodGroupInfo, ProposedAssignment
from scheduler.framework.status import StatusError
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.fit import Fit, FitArgs
from scheduler.plugins.noderesources.resource_allocation import ResourceSpec
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.framework import new_snapshot

TAS = FeatureGates({"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}).features()
GPU = "nvidia.com/gpu"
CPU_MEM = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
CPU4_MEM = (ResourceSpec("cpu", 4), ResourceSpec("memory", 1))
CPU_MEM_GPU = (*CPU_MEM, ResourceSpec(GPU, 1))


def _node(name: str, gpu: bool = False) -> dict[str, Any]:
    return make_node(name, cpu="5000m", memory="5000", extra={GPU: "5"} if gpu else None)


def _pod(uid: str, cpu: str, mem: str, gpu: str | None = None, node: str = "") -> dict[str, Any]:
    req: dict[str, Any] = {"cpu": cpu, "memory": mem}
    if gpu is not None:
        req[GPU] = gpu
    return make_pod(uid, uid=uid, requests=req, node_name=node)


TWO_PODS = [_pod("foo", "1000m", "0"), _pod("bar", "2000m", "2000")]
CASES: list[tuple[str, list[str], list[str], list[dict[str, Any]], dict[str, str], list[dict[str, Any]], Any, int]] = [
    # name, nodes, placement, group pods, assignments, pre-existing pods, resources, score
    ("Computes score based on total requests", ["node1", "node2"], ["node1", "node2"], TWO_PODS,
     {"foo": "node1", "bar": "node2"}, [], CPU_MEM, 25),
    ("Computes score using weights", ["node1", "node2"], ["node1", "node2"], TWO_PODS,
     {"foo": "node1", "bar": "node2"}, [], CPU4_MEM, 28),
    ("Handles multiple pods per node", ["node1", "node2"], ["node1", "node2"], TWO_PODS,
     {"foo": "node1", "bar": "node1"}, [], CPU4_MEM, 28),
    ("Does not include nodes from outside of placement", ["node1", "node2", "node3"], ["node1", "node2"],
     TWO_PODS, {"foo": "node1", "bar": "node2"}, [], CPU_MEM, 25),
    ("Includes pre-existing pods from outside of pod group", ["node1", "node2"], ["node1", "node2"], TWO_PODS,
     {"foo": "node1", "bar": "node2"}, [_pod("baz", "1000m", "0", node="node1")], CPU_MEM, 30),
    ("Includes scalar resources if any pod in pod group has nonzero requests", ["node1", "node2"],
     ["node1", "node2"], [_pod("foo", "1000m", "0", "0"), _pod("bar", "1000m", "2000", "1")],
     {"foo": "node1", "bar": "node2"}, [_pod("baz", "1000m", "0", "0", node="node1")], CPU_MEM_GPU, 20),
    ("Does not include scalar resources if all pods in pod group have zero requests", ["node1", "node2"],
     ["node1", "node2"], [_pod("foo", "1000m", "0", "0"), _pod("bar", "1000m", "2000", "0")],
     {"foo": "node1", "bar": "node2"}, [_pod("baz", "1000m", "0", "1", node="node1")], CPU_MEM_GPU, 25),
]  # fmt: skip


@pytest.mark.parametrize(
    ("nodes", "placement", "group", "assign", "existing", "resources", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_score_placement_resources(
    nodes: list[str],
    placement: list[str],
    group: list[dict[str, Any]],
    assign: dict[str, str],
    existing: list[dict[str, Any]],
    resources: tuple[ResourceSpec, ...],
    want: int,
) -> None:
    gpu = any(r.name == GPU for r in resources)
    snap = new_snapshot([_node(n, gpu) for n in nodes], existing)
    # The configured strategy is LeastAllocated: placements are scored MostAllocated regardless.
    fit = Fit(FitArgs(resources=resources), TAS)
    pods = [PodInfo(p) for p in group]
    proposed = [ProposedAssignment(p, assign[p.uid]) for p in pods if p.uid in assign]
    pga = PodGroupAssignments(Placement("", [snap.node_map[n] for n in placement]), proposed)
    info = PodGroupInfo("default", "pg", pods)
    assert fit.score_placement(CycleState(), info, pga) == want


def test_score_placement_needs_the_gate() -> None:
    """Upstream builds the placement scorer only with the gate (the algorithm runs only then)."""
    fit = Fit(FitArgs(), DEFAULT_FEATURES)
    assert fit.placement_scorer is None
    with pytest.raises(StatusError):
        fit.score_placement(CycleState(), PodGroupInfo("default", "pg", []), PodGroupAssignments(Placement("", []), []))
