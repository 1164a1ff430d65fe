"""PreFilter: a pod labelled with a pool is only looked at on the nodes of that pool."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PreFilterPlugin, PreFilterResult
from scheduler.framework.status import SKIP, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

POOL = "example.com/pool"


class NodePool(PreFilterPlugin):
    name = "NodePool"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        pool = pod.labels.get(POOL)
        if pool is None:
            return SKIP  # nothing to restrict
        # Only these nodes go through Filter; an empty set makes the pod unschedulable at once.
        return PreFilterResult({n.name for n in nodes if n.labels.get(POOL) == pool})
