"""NodeName (upstream plugins/nodename/node_name.go)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin, SignPlugin
from scheduler.framework.signers import NODE_NAME_SIGNER, SignFragment, pod_spec
from scheduler.framework.status import Status, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

ERR_REASON = "node(s) didn't match the requested node name"
_REJECT = unresolvable(ERR_REASON)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node.name


class NodeName(FilterPlugin, EnqueueExtensions, SignPlugin):
    """A pod that already names its node (spec.nodeName) fits only that node."""

    name = "NodeName"

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream NodeName.SignPod: spec.nodeName."""
        return [(NODE_NAME_SIGNER, str(pod_spec(pod).get("nodeName") or ""))]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if fits(pod, node) else _REJECT

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray:
        if not pod.node_name:
            return np.ones(len(idx), dtype=bool)
        target = snapshot.node_map.get(pod.node_name)
        if target is None:
            return np.zeros(len(idx), dtype=bool)
        return np.asarray(idx) == target.index

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # No hint, as upstream: every node addition retries the pod (through backoff).
        return [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD))]
