"""TopologyPlacementGenerator: one placement per topology domain of the PodGroup's constraint.

Upstream: pkg/scheduler/framework/plugins/topologyaware/topology_placement_test.go
(TestGeneratePlacements). Upstream's placements come out of a map (any order); here they come in
the order their domain is first seen among the parent placement's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Placement, PodGroupInfo
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.plugins.topologyaware import TopologyPlacement
from scheduler.testing.builders import make_node
from tests.plugins._podgroup_helpers import Env, group_pod, make_pod_group


def node(name: str, **labels: str) -> dict[str, Any]:
    return make_node(name, labels=labels)


@dataclass
class Case:
    name: str
    group: dict[str, Any]
    placement_nodes: list[dict[str, Any]]
    other_nodes: list[dict[str, Any]] = field(default_factory=list)
    scheduled: dict[str, str] = field(default_factory=dict)  # pod -> node
    want: dict[str, list[str]] | None = None  # None: an Error status
    error: str = ""


PG = "pg1"
CASES = [
    Case(
        "without constraint returns placement matching all nodes",
        make_pod_group(PG, min_count=1),
        [node("node1"), node("node2", foo="bar")],
        other_nodes=[node("node3")],
        want={"test-placement": ["node1", "node2"]},
    ),
    Case(
        "with topology key constraint, returns placement for each topology domain",
        make_pod_group(PG, min_count=1, topology="topology1"),
        [
            node("node0", topology2="d1"),
            node("node1", topology2="d4"),
            node("node2", topology1="d1"),
            node("node3", topology1="d2"),
            node("node4", topology1="d1"),
            node("node5", topology1="d3"),
        ],
        want={"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]},
    ),
    Case(
        "without matching topology label, returns empty",
        make_pod_group(PG, min_count=1, topology="topology3"),
        [node("node0", topology2="d1"), node("node2", topology1="d1")],
        want={},
    ),
    Case(
        "with pods already scheduled in a single domain, returns that domain",
        make_pod_group(PG, min_count=1, topology="topology"),
        [node("node0", topology="d2"), node("node1", topology="d1")],
        other_nodes=[node("node2", topology="d1"), node("node3", topology="d1")],
        scheduled={"pod1": "node2", "pod2": "node3"},
        want={"d1": ["node1"]},
    ),
    Case(
        "with pods already scheduled in a single domain not present in current placement, returns empty",
        make_pod_group(PG, min_count=1, topology="topology"),
        [node("node0", topology="d2")],
        other_nodes=[node("node2", topology="d1"), node("node3", topology="d1")],
        scheduled={"pod1": "node2", "pod2": "node3"},
        want={},
    ),
    Case(
        "with pods already scheduled in conflicting domains, returns error",
        make_pod_group(PG, min_count=1, topology="topology"),
        [node("node0", topology="d2"), node("node1", topology="d1")],
        other_nodes=[node("node2", topology="d0"), node("node3", topology="d1")],
        scheduled={"pod1": "node2", "pod2": "node3"},
        error="cannot determine domain for already scheduled pods: more than 1 domain found for pod group: d0, d1",
    ),
    Case(
        "with already scheduled pod on node outside of snapshot, returns error",
        make_pod_group(PG, min_count=1, topology="topology"),
        [node("node0", topology="d2"), node("node1", topology="d1")],
        other_nodes=[node("node2", topology="d1"), node("node3", topology="d1")],
        scheduled={"pod1": "node2", "pod2": "node4"},
        error="cannot determine domain for already scheduled pods: getting node for pod default/pod2: "
        'nodeinfo not found for node name "node4"',
    ),
    Case(
        "with already scheduled pod on node without topology label, returns error",
        make_pod_group(PG, min_count=1, topology="topology"),
        [node("node1", topology="d2")],
        other_nodes=[node("node2", foo="bar")],
        scheduled={"pod1": "node2"},
        error="cannot determine domain for already scheduled pods: no topology domain found for pod default/pod1",
    ),
]


@pytest.mark.parametrize("tc", CASES, ids=[c.name for c in CASES])
def test_generate_placements(tc: Case) -> None:
    env = Env(nodes=[*tc.placement_nodes, *tc.other_nodes], groups=[tc.group])
    env.pending(group_pod("unscheduled", PG))
    for pod, on in tc.scheduled.items():
        env.bound(group_pod(pod, PG, node_name=on))
    env.sync()
    pl = TopologyPlacement.new(None, env.handle)
    assert isinstance(pl, TopologyPlacement)
    parent = Placement("test-placement", [NodeInfo(n) for n in tc.placement_nodes])
    got = pl.generate_placements(CycleState(), PodGroupInfo("default", PG), parent)
    if tc.want is None:
        assert isinstance(got, Status) and got.code == Code.ERROR
        assert got.message == tc.error
        return
    assert isinstance(got, list)
    assert {p.name: [n.name for n in p.nodes] for p in got} == tc.want
    if not tc.group["spec"].get("schedulingConstraints"):
        assert got == [parent]  # the parent placement itself


def test_missing_pod_group_is_an_error() -> None:
    env = Env(nodes=[node("n")])
    pl = TopologyPlacement.new(None, env.handle)
    assert isinstance(pl, TopologyPlacement)
    got = pl.generate_placements(CycleState(), PodGroupInfo("default", PG), Placement("", []))
    assert got == Status(Code.ERROR, 'podgroup.scheduling.k8s.io "pg1" not found')
