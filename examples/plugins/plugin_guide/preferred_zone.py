"""PreScore + Score: a pod that names a zone prefers nodes in it."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PreScorePlugin, ScorePlugin
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

WANT = "example.com/zone"
ZONE = "topology.kubernetes.io/zone"
STATE_KEY = "PreScorePreferredZone"


class PreferredZone(PreScorePlugin, ScorePlugin):
    name = "PreferredZone"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        zone = pod.labels.get(WANT)
        if zone is None:
            return SKIP  # no Score call, no column in simulate's table
        state.write(STATE_KEY, zone)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return MAX_NODE_SCORE if node.labels.get(ZONE) == state.read(STATE_KEY, str) else 0
