"""VolumeZone (upstream plugins/volumezone/volume_zone.go): a pod's bound PVs labelled with a
zone or region only fit nodes carrying a matching label (beta labels fall back to GA ones).
Upstream v1.36.3 has no Score for this plugin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    SignPlugin,
)
from scheduler.framework.listers import StorageStore
from scheduler.framework.signers import VOLUMES_SIGNER, SignFragment, volumes_signer
from scheduler.framework.status import SKIP, Status, go_quote, unresolvable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import NotFoundError, PersistentVolume, as_pv, as_pvc, as_storage_class, pvc_claim_names

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "VolumeZone"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
_CONFLICT = unresolvable(ERR_REASON_CONFLICT)

_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_ZONE = "topology.kubernetes.io/zone"
_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (_BETA_ZONE, _BETA_REGION, _ZONE, _REGION)
_TO_GA = {_BETA_REGION: _REGION, _BETA_ZONE: _ZONE}
# cloud-provider volume helpers: several zones in one label value are joined with "__".
_MULTI_ZONE_DELIMITER = "__"


def _zones(value: str) -> frozenset[str] | None:
    """LabelZonesToSet; None when some part is empty (upstream then ignores the label)."""
    out = set()
    for part in value.split(_MULTI_ZONE_DELIMITER):
        z = part.strip()
        if not z:
            return None
        out.add(z)
    return frozenset(out)


def pv_topologies(pv: PersistentVolume) -> list[tuple[str, frozenset[str]]]:
    """getPVTopologies: (label key, allowed values) for each topology label the PV carries."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        zones = _zones(value)
        if zones is not None:
            out.append((key, zones))
    return out


def _fits(topo: list[tuple[str, frozenset[str]]], labels: Mapping[str, str]) -> bool:
    """A node without any zone/region label fits; otherwise every PV topology must match."""
    if not topo:
        return True
    if not any(k in labels for k in TOPOLOGY_LABELS):
        return True
    for key, values in topo:
        v = labels.get(key)
        if v is None:
            v = labels.get(_TO_GA.get(key, key))
        if v is None or v not in values:
            return False
    return True


class _State:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[tuple[str, frozenset[str]]]) -> None:
        self.topologies = topologies

    def clone(self) -> _State:
        return self


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream VolumeZone.SignPod: the volumes."""
        return [(VOLUMES_SIGNER, volumes_signer(pod))]

    def __init__(self, store: StorageStore | None = None) -> None:
        self.store = store if store is not None else StorageStore()
        self._cols: dict[str, np.ndarray] = {}
        self._cols_key: tuple[int, int, int] | None = None

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> VolumeZone:
        if args:
            raise ValueError(f"plugin {NAME} takes no arguments")
        return cls(handle.listers.storage)

    def _pv_topologies(self, pod: PodInfo) -> list[tuple[str, frozenset[str]]] | Status:
        out: list[tuple[str, frozenset[str]]] = []
        st = self.store
        for claim in pvc_claim_names(pod.volumes):
            if not claim:
                return unresolvable("PersistentVolumeClaim had no name")
            try:
                pvc = st.get_pvc(pod.namespace, claim)
                if not pvc.volume_name:
                    cls_name = pvc.storage_class
                    if not cls_name:
                        return unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                    sc = st.get_class(cls_name)
                    if sc.binding_mode is None:
                        return unresolvable(f"VolumeBindingMode not set for StorageClass {go_quote(cls_name)}")
                    if sc.binding_mode == "WaitForFirstConsumer":
                        # Not bound yet: VolumeBinding decides where it may be provisioned.
                        continue
                    return unresolvable("PersistentVolume had no name")
                pv = st.get_pv(pvc.volume_name)
            except NotFoundError as exc:
                return unresolvable(str(exc))
            out.extend(pv_topologies(pv))
        return out

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        if not pod.volumes:
            return SKIP
        topo = self._pv_topologies(pod)
        if isinstance(topo, Status):
            return topo
        if not topo:
            return SKIP
        state.write(PRE_FILTER_KEY, _State(topo))
        return None

    def _topologies(self, state: CycleState, pod: PodInfo) -> list[tuple[str, frozenset[str]]] | Status:
        s = state.get(PRE_FILTER_KEY)
        if isinstance(s, _State):
            return s.topologies
        # Without PreFilter state (it was skipped or failed) recompute, as upstream does.
        return self._pv_topologies(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        topo = self._topologies(state, pod)
        if isinstance(topo, Status):
            return topo
        return None if _fits(topo, node.labels) else _CONFLICT

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        if not pod.volumes:
            return np.ones(len(idx), dtype=bool)
        topo = self._topologies(state, pod)
        if isinstance(topo, Status):
            return None  # the per-node form reports it
        if not topo:
            return np.ones(len(idx), dtype=bool)
        cols = self._label_columns(snapshot)
        out = ~cols[""][idx]  # nodes without any zone/region label fit
        ok = np.ones(len(idx), dtype=bool)
        for key, values in topo:
            v = cols[key][idx]
            ga = _TO_GA.get(key)
            if ga is not None:
                missing = v == None  # noqa: E711  (elementwise on an object array)
                v = np.where(missing, cols[ga][idx], v)
            # Set membership in Python: the values may mix None and strings, which numpy's
            # sorting-based isin cannot order.
            ok &= np.fromiter((x in values for x in v.tolist()), dtype=bool, count=len(v))
        return out | ok

    def _label_columns(self, snapshot: Snapshot) -> dict[str, np.ndarray]:
        """Per topology label, each node's value (None when absent), plus "" = has any of
        them; rebuilt only when the node list or some node's labels change."""
        seq = snapshot.label_seq
        key = (id(snapshot), snapshot.epoch, int(seq.max()) if len(seq) else 0)
        if self._cols_key == key:
            return self._cols
        infos = snapshot.node_infos
        cols: dict[str, np.ndarray] = {}
        for label in TOPOLOGY_LABELS:
            cols[label] = np.array([ni.labels.get(label) for ni in infos] + [None], dtype=object)[:-1]
        cols[""] = np.array([any(k in ni.labels for k in TOPOLOGY_LABELS) for ni in infos], dtype=bool)
        self._cols, self._cols_key = cols, key
        return cols

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD), self._after_class_added),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE), self._after_pvc_change
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE), self._after_pv_change
            ),
        ]

    def _after_pvc_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        pvc = as_pvc(new_obj)
        if pvc is not None and pvc.namespace == pod.namespace and pvc.name in pvc_claim_names(pod.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_class_added(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        sc = as_storage_class(new_obj)
        if sc is None or sc.binding_mode != "WaitForFirstConsumer":
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_pv_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old, new = as_pv(old_obj), as_pv(new_obj)
        if old is None or new is None:
            return QueueingHint.QUEUE
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
