"""NodeDeclaredFeatures (upstream plugins/nodedeclaredfeatures/nodedeclaredfeatures.go).

A pod whose spec uses a feature that only some kubelets support (see ``features.py``) may only
land on nodes that list that feature in ``status.declaredFeatures``. Pods that need nothing
skip the plugin at PreFilter, so it costs nothing for them. Without the NodeDeclaredFeatures
gate (beta, on in v1.36) it skips every pod and registers no events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreFilterResult, SignPlugin
from scheduler.framework.signers import FEATURES_SIGNER, SignFragment
from scheduler.framework.status import SKIP, Code, Status, go_quote, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_node, as_pod
from scheduler.plugins.nodedeclaredfeatures.features import DEFAULT_REGISTRY
from scheduler.plugins.nodedeclaredfeatures.featureset import (
    TARGET_VERSION,
    FeatureError,
    FeatureRegistry,
    FeatureSet,
    Version,
)

if TYPE_CHECKING:
    from scheduler.framework.interface import Handle
    from scheduler.framework.snapshot import Snapshot

log = structlog.get_logger(__name__)

NAME = "NodeDeclaredFeatures"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"
_REJECT = unresolvable(ERR_REASON)
_EMPTY_SPEC: Mapping[str, Any] = {}


class _PreFilterState:
    __slots__ = ("reqs",)

    def __init__(self, reqs: FeatureSet) -> None:
        self.reqs = reqs

    def clone(self) -> _PreFilterState:
        return self  # read-only after PreFilter


def _spec(pod: PodInfo) -> Mapping[str, Any]:
    spec = pod.raw.get("spec") if isinstance(pod.raw, Mapping) else None
    return spec if isinstance(spec, Mapping) else _EMPTY_SPEC


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    """Rejects nodes that do not declare every feature the pod's spec relies on."""

    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream NodeDeclaredFeatures.SignPod: the features the pod needs (inferred even with the
        gate off, as upstream)."""
        try:
            features = self._infer(pod)
        except FeatureError as exc:
            return Status(Code.ERROR, str(exc))
        return [(FEATURES_SIGNER, str(features))]

    def __init__(
        self,
        registry: FeatureRegistry = DEFAULT_REGISTRY,
        version: Version | None = None,
        enabled: bool = True,
    ) -> None:
        self.registry = registry
        self.version = version
        self.enabled = enabled

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> NodeDeclaredFeatures:
        if args:
            raise ValueError(f"plugin {cls.name} takes no arguments")
        # Without the gate the plugin is built but does nothing (upstream New).
        return cls(DEFAULT_REGISTRY, Version.parse(TARGET_VERSION), handle.features.enable_node_declared_features)

    def _infer(self, pod: PodInfo) -> FeatureSet:
        return self.registry.infer_for_pod_scheduling(_spec(pod), self.version)

    # -- PreFilter / Filter ------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> PreFilterResult | Status | None:
        if not self.enabled:
            return SKIP
        try:
            reqs = self._infer(pod)
        except FeatureError as exc:
            return Status(Code.ERROR, str(exc))
        if reqs.is_empty():
            return SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(reqs))
        return None

    def _reqs(self, state: CycleState) -> FeatureSet | Status:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            # Upstream wraps the cycle state's ErrNotFound with its own wording.
            return Status(Code.ERROR, f"error reading {go_quote(PRE_FILTER_KEY)} from cycle-state: not found")
        if not isinstance(s, _PreFilterState):
            return Status(
                Code.ERROR,
                f"invalid PreFilter state, got type {type(s).__name__}, expected {_PreFilterState.__name__}",
            )
        return s.reqs

    def _node_bits(self, node: NodeInfo) -> int:
        return self.registry.try_map_bits(node.declared_features)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not self.enabled:
            return None
        reqs = self._reqs(state)
        if isinstance(reqs, Status):
            return reqs
        if reqs.size != len(self.registry.registered):
            return Status(Code.ERROR, f"bitmap size mismatch; {reqs.size} != {len(self.registry.registered)}")
        # A subset test only: the list of missing features is not needed for the reason.
        return None if reqs.bits & ~self._node_bits(node) == 0 else _REJECT

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        if not self.enabled:
            return None
        reqs = self._reqs(state)
        if isinstance(reqs, Status) or reqs.size != len(self.registry.registered):
            return None  # the per-node form reports the error
        want = reqs.bits
        infos = snapshot.node_infos
        bits_of = self.registry.try_map_bits
        return np.fromiter(
            (want & ~bits_of(infos[i].declared_features) == 0 for i in np.asarray(idx).tolist()),
            dtype=bool,
            count=len(idx),
        )

    # -- queueing ----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                self._after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE), self._after_pod_update),
        ]

    def _after_node_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None:
            return QueueingHint.QUEUE
        if old is not None and old.declared_features == new.declared_features:
            log.debug("node_declared_features_unchanged", pod=pod.key, node=new.name)
            return QueueingHint.QUEUE_SKIP
        log.debug("node_declared_features_changed", pod=pod.key, node=new.name)
        return QueueingHint.QUEUE

    def _after_pod_update(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old, new = as_pod(old_obj), as_pod(new_obj)
        if new is None or old is None:
            return QueueingHint.QUEUE
        if new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        # An inference error propagates; the queue requeues the pod on a failing hint.
        if self._infer(old) == self._infer(new):
            return QueueingHint.QUEUE_SKIP
        log.debug("pod_feature_requirements_changed", pod=pod.key)
        return QueueingHint.QUEUE
