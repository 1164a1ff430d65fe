"""VolumeRestrictions (upstream plugins/volumerestrictions/volume_restrictions.go).

Two rules: in-tree disks that cannot be shared between pods on one node (GCE PD unless both
read-only, AWS EBS always, RBD and iSCSI unless both read-only), and ReadWriteOncePod claims
that some scheduled pod already uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
from scheduler.framework.status import SKIP, Code, Status, unschedulable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import NotFoundError, as_pvc, pvc_claim_names
from scheduler.plugins.helper import as_pod

NAME = "VolumeRestrictions"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
_DISK_CONFLICT = unschedulable(ERR_REASON_DISK_CONFLICT)
_RWOP_CONFLICT = unschedulable(ERR_REASON_RWOP_CONFLICT)
_RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _needs_check(vol: Mapping[str, Any]) -> bool:
    return any(vol.get(k) is not None for k in _RESTRICTED)


def _not_both_ro(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return not (a.get("readOnly") and b.get("readOnly"))


def _conflicts(vol: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """isVolumeConflict for one pair of volumes."""
    a, b = vol.get("gcePersistentDisk"), other.get("gcePersistentDisk")
    if a is not None and b is not None and a.get("pdName", "") == b.get("pdName", "") and _not_both_ro(a, b):
        return True
    a, b = vol.get("awsElasticBlockStore"), other.get("awsElasticBlockStore")
    if a is not None and b is not None and a.get("volumeID", "") == b.get("volumeID", ""):
        return True
    a, b = vol.get("iscsi"), other.get("iscsi")
    if a is not None and b is not None and a.get("iqn", "") == b.get("iqn", "") and _not_both_ro(a, b):
        return True
    a, b = vol.get("rbd"), other.get("rbd")
    if a is not None and b is not None:
        mons = set(a.get("monitors") or ())
        if (
            any(m in mons for m in b.get("monitors") or ())
            and a.get("pool", "") == b.get("pool", "")
            and a.get("image", "") == b.get("image", "")
            and not (a.get("readOnly") and b.get("readOnly"))
        ):
            return True
    return False


def satisfies_volume_conflicts(pod: PodInfo, pods: Sequence[PodInfo]) -> bool:
    for vol in pod.volumes:
        if not _needs_check(vol):
            continue
        for existing in pods:
            for ev in existing.volumes:
                if _conflicts(vol, ev):
                    return False
    return True


class _State:
    __slots__ = ("conflicts", "rwop")

    def __init__(self, rwop: set[str], conflicts: int) -> None:
        self.rwop = rwop  # names of the pod's ReadWriteOncePod claims
        self.conflicts = conflicts  # how many of them scheduled pods already use

    def count_for(self, pod: PodInfo) -> int:
        return sum(1 for name in pvc_claim_names(pod.volumes) if name in self.rwop)

    def clone(self) -> _State:
        return _State(self.rwop, self.conflicts)


def used_pvc_keys(nodes: Sequence[NodeInfo]) -> set[str]:
    """Snapshot.usedPVCSet: namespace/name of every claim some pod on some node references."""
    out: set[str] = set()
    for ni in nodes:
        for p in ni.pods:
            for name in pvc_claim_names(p.volumes):
                out.add(f"{p.namespace}/{name}")
    return out


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream VolumeRestrictions.SignPod: the volumes."""
        return [(VOLUMES_SIGNER, volumes_signer(pod))]

    def __init__(self, handle: Handle | None = None, store: StorageStore | None = None) -> None:
        self.handle = handle
        self.store = store if store is not None else (handle.listers.storage if handle is not None else StorageStore())

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> VolumeRestrictions:
        if args:
            raise ValueError(f"plugin {NAME} takes no arguments")
        return cls(handle)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        if not pod.volumes:
            return SKIP
        needs_check = any(_needs_check(v) for v in pod.volumes)
        rwop: set[str] = set()
        for name in pvc_claim_names(pod.volumes):
            try:
                pvc = self.store.get_pvc(pod.namespace, name)
            except NotFoundError as exc:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
            if "ReadWriteOncePod" in pvc.access_modes:
                rwop.add(pvc.name)
        conflicts = 0
        if rwop:
            used = used_pvc_keys(nodes)  # PreFilter is handed every node of the snapshot
            conflicts = sum(1 for name in rwop if f"{pod.namespace}/{name}" in used)
        if not needs_check and conflicts == 0:
            return SKIP
        state.write(PRE_FILTER_KEY, _State(rwop, conflicts))
        return None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, _State):
            return Status(Code.ERROR, f'cannot read "{PRE_FILTER_KEY}" from cycleState')
        s.conflicts += s.count_for(pod_to_add)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, _State):
            return Status(Code.ERROR, f'cannot read "{PRE_FILTER_KEY}" from cycleState')
        s.conflicts -= s.count_for(pod_to_remove)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfies_volume_conflicts(pod, node.pods):
            return _DISK_CONFLICT
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, _State):
            return Status(Code.ERROR, f'cannot read "{PRE_FILTER_KEY}" from cycleState')
        if s.conflicts > 0:
            return _RWOP_CONFLICT
        return None

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Queueing hints are on (GA), so a Node event is only an Add.
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._after_pvc_added),
        ]

    def _after_pvc_added(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        pvc = as_pvc(new_obj)
        if pvc is None or pvc.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pvc.name in pvc_claim_names(pod.volumes) else QueueingHint.QUEUE_SKIP

    def _after_pod_deleted(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        deleted = as_pod(old_obj)
        if deleted is None or deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_volume_conflicts(pod, [deleted]):
            return QueueingHint.QUEUE
        mine = set(pvc_claim_names(pod.volumes))
        if any(name in mine for name in pvc_claim_names(deleted.volumes)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
