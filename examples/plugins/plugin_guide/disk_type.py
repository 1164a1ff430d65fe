"""PreFilter + Filter + queueing hints: a pod that asks for a disk type fits only nodes that have it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreFilterResult
from scheduler.framework.status import SKIP, Status, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_node

WANT = "example.com/disk"  # on the pod
HAVE = "disktype"  # on the node
STATE_KEY = "PreFilterDiskType"
REASON = "node(s) didn't have the requested disk type"


class DiskType(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = "DiskType"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        want = pod.labels.get(WANT)
        if want is None:
            return SKIP  # Filter is not called for this pod
        state.write(STATE_KEY, want)  # computed once per attempt, read for every node
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        want = state.read(STATE_KEY, str)
        if node.labels.get(HAVE) == want:
            return None
        # Unresolvable: evicting pods cannot help, so DefaultPreemption does not try.
        return unresolvable(REASON)

    # A pod this plugin rejected waits until a node is added or relabelled; the hint lets
    # through only events that bring a node with the wanted disk.
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL), node_may_fit)
        ]


def node_may_fit(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    node = as_node(new)
    if node is not None and node.labels.get(HAVE) == pod.labels.get(WANT):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
