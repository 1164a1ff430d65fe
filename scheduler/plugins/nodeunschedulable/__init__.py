"""NodeUnschedulable (upstream plugins/nodeunschedulable/node_unschedulable.go)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin, SignPlugin
from scheduler.framework.signers import TOLERATIONS_SIGNER, SignFragment, tolerations_signer
from scheduler.framework.status import Status, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.taints import TAINT_NODE_UNSCHEDULABLE, Taint, tolerates_taint
from scheduler.plugins.helper import as_node, as_pod

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_REJECT = unresolvable(ERR_REASON_UNSCHEDULABLE)
# spec.unschedulable is treated like this taint: a pod tolerating it may still land there.
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


def tolerates_unschedulable(pod: PodInfo) -> bool:
    return tolerates_taint(pod.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable(FilterPlugin, EnqueueExtensions, SignPlugin):
    """Rejects cordoned nodes unless the pod tolerates the unschedulable taint."""

    name = "NodeUnschedulable"

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream NodeUnschedulable.SignPod: the tolerations."""
        return [(TOLERATIONS_SIGNER, tolerations_signer(pod))]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.unschedulable or tolerates_unschedulable(pod):
            return None
        return _REJECT

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray:
        if tolerates_unschedulable(pod):
            return np.ones(len(idx), dtype=bool)
        return ~snapshot.columns.unschedulable[idx]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION), self._after_pod_toleration_change
            ),
        ]

    @staticmethod
    def _after_node_change(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        # Queue only when a node appears schedulable or gets uncordoned.
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None or new.unschedulable:
            return QueueingHint.QUEUE_SKIP
        if old is None or old.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        modified = as_pod(new_obj)
        if modified is not None and modified.uid == pod.uid and tolerates_unschedulable(modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
