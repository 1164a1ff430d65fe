"""PostBind + Score: remember where the last pod was bound and prefer the other nodes."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PostBindPlugin, ScorePlugin
from scheduler.framework.status import MAX_NODE_SCORE
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


class RoundRobin(PostBindPlugin, ScorePlugin):
    name = "RoundRobin"

    def __init__(self) -> None:
        self.last = ""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0 if node.name == self.last else MAX_NODE_SCORE

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Informational: called once the pod is bound; it cannot fail the binding.
        self.last = node_name
