"""TaintToleration (upstream plugins/tainttoleration/taint_toleration.go)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.signers import TOLERATIONS_SIGNER, SignFragment, tolerations_signer
from scheduler.framework.status import MAX_NODE_SCORE, Status, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.taints import Taint, Toleration, find_untolerated_taint, tolerates_taint
from scheduler.plugins.helper import DO_NOT_SCHEDULE_EFFECTS, as_node, as_pod, default_normalize_score

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scheduler.framework.snapshot import Snapshot

NAME = "TaintToleration"
PRE_SCORE_KEY = "PreScore" + NAME
# Current releases no longer print the taint's key and value (older ones did:
# "node(s) had untolerated taint {key: value}").
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
_REJECT = unresolvable(ERR_REASON_UNTOLERATED)


class _PreScoreState:
    __slots__ = ("tolerations",)

    def __init__(self, tolerations: tuple[Toleration, ...]) -> None:
        self.tolerations = tolerations


def prefer_no_schedule_tolerations(tolerations: tuple[Toleration, ...]) -> tuple[Toleration, ...]:
    # An empty effect covers every effect, PreferNoSchedule included.
    return tuple(t for t in tolerations if t.effect in ("", "PreferNoSchedule"))


def count_intolerable_prefer_taints(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], comparison: bool = False
) -> int:
    return sum(
        1 for t in taints if t.effect == "PreferNoSchedule" and not tolerates_taint(tolerations, t, comparison)
    )


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    """Filter: NoSchedule/NoExecute taints must be tolerated. Score: fewer intolerable
    PreferNoSchedule taints is better (normalized in reverse)."""

    name = NAME
    has_normalize = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream TaintToleration.SignPod: the tolerations."""
        return [(TOLERATIONS_SIGNER, tolerations_signer(pod))]

    def __init__(self, comparison: bool = False) -> None:
        # Lt/Gt tolerations (the TaintTolerationComparisonOperators gate).
        self.comparison = comparison

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> TaintToleration:
        if args:
            raise ValueError(f"plugin {cls.name} takes no arguments")
        return cls(handle.features.enable_taint_toleration_comparison_operators)

    def _untolerated(self, node: NodeInfo, tolerations: tuple[Toleration, ...]) -> bool:
        return find_untolerated_taint(node.taints, tolerations, DO_NOT_SCHEDULE_EFFECTS, self.comparison) is not None

    # -- Filter --------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return _REJECT if self._untolerated(node, pod.tolerations) else None

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray:
        idx = np.asarray(idx)
        hard = snapshot.columns.has_hard_taint[idx]
        out = np.ones(len(idx), dtype=bool)
        if not hard.any():
            return out
        infos = snapshot.node_infos
        tolerations = pod.tolerations
        # Nodes sharing a taint list (common: a tainted node pool) are decided once.
        seen: dict[tuple[Taint, ...], bool] = {}
        for j in np.flatnonzero(hard):
            taints = infos[idx[j]].taints
            ok = seen.get(taints)
            if ok is None:
                ok = find_untolerated_taint(taints, tolerations, DO_NOT_SCHEDULE_EFFECTS, self.comparison) is None
                seen[taints] = ok
            out[j] = ok
        return out

    # -- Score ---------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, _PreScoreState(prefer_no_schedule_tolerations(pod.tolerations)))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = state.read(PRE_SCORE_KEY, _PreScoreState)
        return count_intolerable_prefer_taints(node.taints, s.tolerations, self.comparison)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        s = state.read(PRE_SCORE_KEY, _PreScoreState)
        idx = np.asarray(idx)
        out = np.zeros(len(idx), dtype=np.int64)
        prefer = snapshot.columns.has_prefer_taint[idx]
        if not prefer.any():
            return out
        infos = snapshot.node_infos
        seen: dict[tuple[Taint, ...], int] = {}
        for j in np.flatnonzero(prefer):
            taints = infos[idx[j]].taints
            n = seen.get(taints)
            if n is None:
                n = count_intolerable_prefer_taints(taints, s.tolerations, self.comparison)
                seen[taints] = n
            out[j] = n
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        default_normalize_score(scores, MAX_NODE_SCORE, reverse=True)
        return None

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION), self._after_pod_toleration_change
            ),
        ]

    def _after_node_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        # Queue only on an untolerated -> tolerated transition (a new node counts as untolerated before).
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None:
            return QueueingHint.QUEUE_SKIP
        was_untolerated = old is None or self._untolerated(old, pod.tolerations)
        if was_untolerated and not self._untolerated(new, pod.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        modified = as_pod(new_obj)
        if modified is not None and modified.uid == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
