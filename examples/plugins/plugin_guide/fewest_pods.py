"""Score + NormalizeScore: raw score is the node's pod count; normalising turns it around."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import ScorePlugin
from scheduler.framework.status import Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import default_normalize_score


class FewestPods(ScorePlugin):
    name = "FewestPods"
    has_normalize = True  # the runtime calls normalize_score only when this is set

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return len(node.pods)  # any non-negative int; NormalizeScore maps it into [0, 100]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        # In place: the busiest node gets 0, an empty node 100 (upstream DefaultNormalizeScore).
        default_normalize_score(scores, reverse=True)
        return None
