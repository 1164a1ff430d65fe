"""PodGroupPodsCount (upstream plugins/podgrouppodscount/podgroup_pods_count.go,
TopologyAwareWorkloadScheduling gate).

A PlacementScore plugin that prefers the placement holding more of the group's pods: its score
is the group's already scheduled pods plus the placement's proposed assignments, normalized
against the best placement (not against minCount, so close counts get close scores).
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    PlacementScore,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
)
from scheduler.framework.podgroupstate import PodGroupStateNotFound
from scheduler.framework.status import MAX_NODE_SCORE, MIN_NODE_SCORE, Code, Status, StatusError
from scheduler.plugins.helper import HandlePlugin

NAME = "PodGroupPodsCount"


class PodGroupPodsCount(HandlePlugin, PlacementScorePlugin):
    name = NAME
    has_normalize_placement: ClassVar[bool] = True

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo, assignments: PodGroupAssignments) -> int:
        try:
            st = self.handle.snapshot.pod_group_state_lister().get(pod_group.namespace, pod_group.name)
        except PodGroupStateNotFound as exc:
            raise StatusError(Status(Code.ERROR, str(exc), err=exc)) from None
        return st.scheduled_pods_count() + len(assignments.proposed_assignments)

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        top = max((s.score for s in scores), default=0)
        top = max(top, 0)
        if top == 0:
            return Status(Code.ERROR, "no pods from pod group are assigned to any of the candidate placements")
        for s in scores:
            # Go's integer division truncates; counts are never negative.
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // top
        return None
