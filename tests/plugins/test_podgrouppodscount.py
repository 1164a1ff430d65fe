"""PodGroupPodsCount: scheduled pods plus the placement's proposed assignments, normalized
against the best placement.

Upstream: pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count_test.go
(TestScorePlacement, TestNormalizePlacementScore).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    Placement,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    ProposedAssignment,
)
from scheduler.framework.status import Code, Status, StatusError
from scheduler.plugins.podgrouppodscount import PodGroupPodsCount
from tests.plugins._podgroup_helpers import Env, group_pod

PG = "pg1"
PROPOSED = [group_pod("proposed-pod-1", PG), group_pod("proposed-pod-2", PG)]

SCORE_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], int]] = [
    (
        "existing assigned and assumed pods",
        [group_pod("p2", PG, node_name="node2"), group_pod("p3", PG, node_name="node3")],
        [group_pod("p1", PG, node_name="node1")],
        5,  # 1 assumed + 2 assigned + 2 proposed
    ),
    ("no assumed pods", [group_pod("p1", PG, node_name="node1")], [], 3),
    ("no assigned pods", [], [group_pod("p1", PG, node_name="node1")], 3),
    ("no assigned pods, no assumed pods", [], [], 2),
]


def plugin(env: Env) -> PodGroupPodsCount:
    pl = PodGroupPodsCount.new(None, env.handle)
    assert isinstance(pl, PodGroupPodsCount)
    return pl


@pytest.mark.parametrize(("assigned", "assumed", "want"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES])
def test_score_placement(assigned: list[dict[str, Any]], assumed: list[dict[str, Any]], want: int) -> None:
    env = Env()
    for raw in assigned:
        env.bound(raw)
    for raw in assumed:
        pod = env.pending(raw)
        env.cache.assume_pod(pod, pod.node_name)
    proposals = []
    for raw, node in zip(PROPOSED, ("node1", "node2")):
        proposals.append(ProposedAssignment(env.pending(raw), node))
    env.sync()
    pga = PodGroupAssignments(Placement("", []), proposals)
    assert plugin(env).score_placement(CycleState(), PodGroupInfo("default", PG), pga) == want


def test_score_placement_without_group_state_fails() -> None:
    env = Env()
    env.sync()
    with pytest.raises(StatusError) as ei:
        plugin(env).score_placement(
            CycleState(), PodGroupInfo("default", PG), PodGroupAssignments(Placement("", []), [])
        )
    assert ei.value.status == Status(Code.ERROR, "pod group state not found for pod group default/pg1")


NORMALIZE_CASES = [
    ("distinct scores", [10, 50, 110], [9, 45, 100]),
    ("equal scores", [50, 50], [100, 100]),
    ("single score", [50], [100]),
    # A minimal score far from a close group is not spread evenly.
    ("some minimal score that is far from a group of scores located closely", [11, 100, 101, 102], [10, 98, 99, 100]),
]


@pytest.mark.parametrize(("scores", "want"), [c[1:] for c in NORMALIZE_CASES], ids=[c[0] for c in NORMALIZE_CASES])
def test_normalize_placement_score(scores: list[int], want: list[int]) -> None:
    ps = [PlacementScore(Placement(str(i), []), s) for i, s in enumerate(scores)]
    assert plugin(Env()).normalize_placement_score(CycleState(), PodGroupInfo("default", PG), ps) is None
    assert [p.score for p in ps] == want


def test_normalize_zero_scores() -> None:
    ps = [PlacementScore(Placement("a", []), 0), PlacementScore(Placement("b", []), 0)]
    s = plugin(Env()).normalize_placement_score(CycleState(), PodGroupInfo("default", PG), ps)
    assert s == Status(Code.ERROR, "no pods from pod group are assigned to any of the candidate placements")
