"""NodeVolumeLimits (upstream plugins/nodevolumelimits/csi.go): a node's CSINode allocatable
count per driver caps the attachable volumes of that driver (pods' PVC, generic ephemeral and
migrated in-tree volumes, plus VolumeAttachments on the node)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

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
from scheduler.framework.status import SKIP, Code, Status, StatusError, unschedulable
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import (
    CSINode,
    NotFoundError,
    PersistentVolumeClaim,
    as_pvc,
    ephemeral_owned_by,
    volume_claim,
)
from scheduler.plugins.helper import as_pod
from scheduler.plugins.nodevolumelimits.translation import (
    MIGRATION_ON,
    csi_driver_of_plugin,
    inline_csi,
    inline_source,
    is_migratable_plugin,
    plugin_of,
    pv_csi,
)

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

_K = TypeVar("_K")
_V = TypeVar("_V")

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_EXCEEDED = unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


class _LookupError(Exception):
    """An error filterAttachableVolumes returns; ``not_found`` makes it unresolvable."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def _migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    return csi_node is not None and plugin in MIGRATION_ON


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    return csi_node.limits if csi_node is not None else {}


def _unlink(multimap: dict[_K, set[_V]], key: _K, member: _V) -> None:
    """Take ``member`` out of ``multimap[key]``, and the key with its last member."""
    members = multimap.get(key)
    if members is not None:
        members.discard(member)
        if not members:
            del multimap[key]


class _Columns:
    """NodeVolumeLimits' per-position view of the snapshot: volume counts and limits per
    driver (limit -1 = none reported), and where each volume is attached."""

    __slots__ = ("attached_at", "attached_by_pos", "exact", "key", "limit", "n", "seq", "used")

    def __init__(self, key: tuple[int, int], n: int) -> None:
        self.key = key
        self.n = n
        self.seq = np.full(n, -1, dtype=np.int64)
        self.used: dict[str, np.ndarray] = {}
        self.limit: dict[str, np.ndarray] = {}
        self.attached_at: dict[str, set[int]] = {}
        self.attached_by_pos: dict[int, tuple[str, ...]] = {}
        self.exact: set[int] = set()

    def column(self, table: dict[str, np.ndarray], driver: str, fill: int) -> np.ndarray:
        col = table.get(driver)
        if col is None:
            col = table[driver] = np.full(self.n, fill, dtype=np.int64)
        return col

    def clear(self, p: int) -> None:
        for col in self.used.values():
            col[p] = 0
        for col in self.limit.values():
            col[p] = -1
        for unique in self.attached_by_pos.pop(p, ()):
            _unlink(self.attached_at, unique, p)
        self.exact.discard(p)


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream CSILimits.SignPod: the volumes."""
        return [(VOLUMES_SIGNER, volumes_signer(pod))]

    def __init__(
        self, store: StorageStore | None = None, volume_id_prefix: str | None = None, limit_scaling: bool = False
    ) -> None:
        self.store = store if store is not None else StorageStore()
        # VolumeLimitScaling (alpha): a driver that opts in (preventPodSchedulingIfMissing) must be
        # installed on the node.
        self.limit_scaling = limit_scaling
        # Unbound claims get a made-up handle "<prefix>-<ns>/<name>" that never collides with
        # a real one (upstream: a random 32-character string per plugin instance).
        self.prefix = volume_id_prefix if volume_id_prefix is not None else secrets.token_hex(16)
        # node name -> ((has CSINode, pod uids), attached volumes, count per driver); an entry
        # goes when a storage object it was worked out from changes (see _sync).
        self._usage_cache: dict[str, tuple[tuple[bool, tuple[str, ...]], dict[str, str], dict[str, int]]] = {}
        # (kind, key) of a storage object -> the nodes whose usage read it, and back.
        self._dep_nodes: dict[tuple[str, str], set[str]] = {}
        self._node_deps: dict[str, list[tuple[str, str]]] = {}
        self._store_seen = -1
        # Nodes whose usage went stale since _columns last looked (None: all of them).
        self._stale: set[str] | None = None
        self._cols: _Columns | None = None

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> NodeVolumeLimits:
        if args:
            raise ValueError(f"plugin {NAME} takes no arguments")
        return cls(handle.listers.storage, limit_scaling=handle.features.enable_volume_limit_scaling)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        for vol in pod.volumes:
            if vol.get("persistentVolumeClaim") is not None or vol.get("ephemeral") is not None:
                return None
            if inline_source(vol):
                return None
        return SKIP

    # -- volume accounting -------------------------------------------------------------------
    def _from_class(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str] | None:
        name = pvc.storage_class
        if not name:
            return None
        sc = self.store.classes.get(name)
        if sc is None:
            return None
        handle = f"{self.prefix}-{pvc.namespace}/{pvc.name}"
        prov = sc.provisioner
        if is_migratable_plugin(prov):
            if not _migration_on(csi_node, prov):
                return None
            return csi_driver_of_plugin(prov), handle
        return prov, handle

    def _driver_info(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str] | None:
        if not pvc.volume_name:
            return self._from_class(csi_node, pvc)
        pv = self.store.pvs.get(pvc.volume_name)
        if pv is None:
            return self._from_class(csi_node, pvc)
        if pv.csi_driver:
            return pv.csi_driver, pv.csi_handle
        if not pv.in_tree or not _migration_on(csi_node, plugin_of(pv.in_tree)):
            return None
        return pv_csi(pv)

    def _attachable(
        self,
        pod: PodInfo,
        csi_node: CSINode | None,
        new_pod: bool,
        out: dict[str, str],
        deps: list[tuple[str, str]] | None = None,
    ) -> None:
        """filterAttachableVolumes: unique volume name -> driver, into ``out``; the PVCs and PVs
        read go to ``deps`` (StorageClasses are not tracked: any change to one drops all)."""
        for vol in pod.volumes:
            claim = volume_claim(pod.name, vol)
            if claim is None:
                key = inline_source(vol)
                if not key or not _migration_on(csi_node, plugin_of(key)):
                    continue
                got = inline_csi(vol)
                if got is None:
                    raise _LookupError(f"converting volume({vol.get('name', '')}) from inline to csi")
                out[f"{got[0]}/{got[1]}"] = got[0]
                continue
            name, ephemeral = claim
            if not name:
                raise _LookupError("PersistentVolumeClaim had no name")
            if deps is not None:
                deps.append(("PersistentVolumeClaim", f"{pod.namespace}/{name}"))
            try:
                pvc = self.store.get_pvc(pod.namespace, name)
            except NotFoundError as exc:
                if new_pod:
                    raise _LookupError(f"looking up PVC {pod.namespace}/{name}: {exc}", not_found=True) from None
                continue
            if ephemeral:
                err = ephemeral_owned_by(pod, pvc)
                if err is not None:
                    raise _LookupError(err)
            if deps is not None and pvc.volume_name:
                deps.append(("PersistentVolume", pvc.volume_name))
            info = self._driver_info(csi_node, pvc)
            if info is None or not info[0] or not info[1]:
                continue
            out[f"{info[0]}/{info[1]}"] = info[0]

    def _attachments(self, node_name: str, deps: list[tuple[str, str]]) -> dict[str, str]:
        out: dict[str, str] = {}
        for va in self.store.volume_attachments.values():
            if va.node_name != node_name or not va.attacher or va.pv_name is None:
                continue
            deps.append(("PersistentVolume", va.pv_name))
            pv = self.store.pvs.get(va.pv_name)
            if pv is None or not pv.csi_driver:
                continue
            out[f"{va.attacher}/{pv.csi_handle}"] = va.attacher
        return out

    def _new_volumes(self, pod: PodInfo, csi_node: CSINode | None) -> dict[str, str] | Status:
        new: dict[str, str] = {}
        try:
            self._attachable(pod, csi_node, True, new)
        except _LookupError as exc:
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if exc.not_found else Code.ERROR
            return Status(code, str(exc))
        return new

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        csi_node = self.store.csi_nodes.get(node.name)
        new = self._new_volumes(pod, csi_node)
        if isinstance(new, Status):
            return new
        if self.limit_scaling:
            for driver in new.values():
                if not self._driver_installed(driver, csi_node):
                    return Status(Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node")
        return self._check_node(new, node, csi_node)

    def _driver_installed(self, driver: str, csi_node: CSINode | None) -> bool:
        """checkCSIDriverOnNode: true unless the CSIDriver opts in and the node lacks it."""
        d = self.store.csi_drivers.get(driver)
        if d is None or not d.prevent_if_missing:
            return True
        return csi_node is not None and any(x.name == driver for x in csi_node.drivers)

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        if not pod.volumes:
            return np.ones(len(idx), dtype=bool)
        # The pod's own volumes depend on the node only through "has a CSINode" (migration),
        # and lookup failures not at all; nodes without a CSINode have no limits.
        without = self._new_volumes(pod, None)
        if isinstance(without, Status):
            if without.code == Code.ERROR:
                raise StatusError(without)
            return np.zeros(len(idx), dtype=bool)
        if self.limit_scaling and any(d.prevent_if_missing for d in self.store.csi_drivers.values()):
            return None  # the per-node form checks where an opted-in driver is installed
        if not self.store.csi_nodes:
            return np.ones(len(idx), dtype=bool)
        cols = self._columns(snapshot)
        new = self._new_volumes(pod, next(iter(self.store.csi_nodes.values())))
        if isinstance(new, Status):  # cannot differ from ``without``; kept for safety
            if new.code == Code.ERROR:
                raise StatusError(new)
            return np.zeros(len(idx), dtype=bool)
        if not new:
            return np.ones(len(idx), dtype=bool)
        wanted: dict[str, int] = {}
        for driver in new.values():
            wanted[driver] = wanted.get(driver, 0) + 1
        fail = np.zeros(len(idx), dtype=bool)
        for driver, count in wanted.items():
            lim = cols.limit.get(driver)
            if lim is None:
                continue
            lim_i = lim[idx]
            used = cols.used.get(driver)
            used_i = used[idx] if used is not None else 0
            fail |= (lim_i >= 0) & (used_i + count > lim_i)
        out = ~fail
        # Nodes where one of the pod's volumes is already attached (it does not count twice),
        # or whose usage could not be read, get the exact per-node check.
        exact: set[int] = set(cols.exact)
        for unique in new:
            exact |= cols.attached_at.get(unique, set())
        if exact:
            infos = snapshot.node_infos
            csi_nodes = self.store.csi_nodes
            pos = {p: j for j, p in enumerate(idx.tolist())}
            for p in exact:
                j = pos.get(p)
                if j is None:
                    continue
                ni = infos[p]
                st = self._check_node(new, ni, csi_nodes.get(ni.name))
                if st is not None and st.code == Code.ERROR:
                    raise StatusError(st)
                out[j] = st is None
        return out

    def _columns(self, snapshot: Snapshot) -> _Columns:
        """Per-driver used counts and limits over the snapshot's node positions, refreshed for
        the positions whose NodeInfo changed since the last call."""
        self._sync()
        stale, self._stale = self._stale, set()
        c = self._cols
        key = (id(snapshot), snapshot.epoch)
        if c is None or c.key != key or stale is None:
            c = self._cols = _Columns(key, len(snapshot.node_infos))
            changed: list[int] = list(range(len(snapshot.node_infos)))
        else:
            changed = np.flatnonzero(snapshot.node_seq != c.seq).tolist()
            if stale:
                node_map = snapshot.node_map
                extra = {ni.index for name in stale if (ni := node_map.get(name)) is not None}
                changed = sorted(extra.union(changed))
        if changed:
            infos = snapshot.node_infos
            csi_nodes = self.store.csi_nodes
            for p in changed:
                ni = infos[p]
                csi_node = csi_nodes.get(ni.name)
                c.clear(p)
                if csi_node is None:
                    continue
                for driver, limit in csi_node.limits.items():
                    c.column(c.limit, driver, -1)[p] = limit
                try:
                    attached, used = self._usage(ni, csi_node)
                except _LookupError:
                    c.exact.add(p)
                    continue
                for driver, count in used.items():
                    c.column(c.used, driver, 0)[p] = count
                for unique in attached:
                    c.attached_at.setdefault(unique, set()).add(p)
                c.attached_by_pos[p] = tuple(attached)
            c.seq = snapshot.node_seq.copy()
        return c

    def _sync(self) -> None:
        """Drop the usage worked out from storage objects that changed since the last look."""
        store = self.store
        if store.version == self._store_seen:
            return
        changes = store.changes_since(self._store_seen)
        self._store_seen = store.version
        if changes is None or any(kind == "StorageClass" for kind, _ in changes):
            self._usage_cache.clear()
            self._dep_nodes.clear()
            self._node_deps.clear()
            self._stale = None
            return
        dep_nodes = self._dep_nodes
        stale = self._stale
        for change in changes:
            names = dep_nodes.get(change)
            if names:
                for name in list(names):
                    self._forget(name)
                    if stale is not None:
                        stale.add(name)
            if change[0] == "CSINode" and stale is not None:
                # Its limits are columns too, also on a node whose usage was never read.
                stale.add(change[1])

    def _forget(self, name: str) -> None:
        self._usage_cache.pop(name, None)
        for dep in self._node_deps.pop(name, ()):
            _unlink(self._dep_nodes, dep, name)

    def _usage(self, node: NodeInfo, csi_node: CSINode | None) -> tuple[dict[str, str], dict[str, int]]:
        """The node's attached volumes (unique name -> driver) from its pods, and the volume
        count per driver including VolumeAttachments; cached per pod set until a storage
        object it read changes."""
        self._sync()
        name = node.name
        key = (csi_node is not None, tuple(p.uid for p in node.pods))
        hit = self._usage_cache.get(name)
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        self._forget(name)
        # What this node's usage reads, kept even when it fails (the failure depends on it too).
        deps: list[tuple[str, str]] = [("CSINode", name), ("VolumeAttachment", name)]
        try:
            attached: dict[str, str] = {}
            for existing in node.pods:
                self._attachable(existing, csi_node, False, attached, deps)
            used: dict[str, int] = {}
            for driver in attached.values():
                used[driver] = used.get(driver, 0) + 1
            for unique, driver in self._attachments(name, deps).items():
                if unique not in attached:
                    used[driver] = used.get(driver, 0) + 1
        finally:
            self._node_deps[name] = deps
            for dep in deps:
                self._dep_nodes.setdefault(dep, set()).add(name)
        self._usage_cache[name] = (key, attached, used)
        return attached, used

    def _check_node(self, new: dict[str, str], node: NodeInfo, csi_node: CSINode | None) -> Status | None:
        if not new:
            return None
        limits = volume_limits(csi_node)
        if not limits:
            return None
        try:
            attached, used = self._usage(node, csi_node)
        except _LookupError as exc:
            return Status(Code.ERROR, str(exc))
        wanted: dict[str, int] = {}
        for unique, driver in new.items():
            if unique not in attached:
                wanted[driver] = wanted.get(driver, 0) + 1
        for driver, count in wanted.items():
            limit = limits.get(driver)
            if limit is not None and used.get(driver, 0) + count > limit:
                return _EXCEEDED
        return None

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), self._after_csinode_updated),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._after_pvc_added),
            ClusterEventWithHint(ClusterEvent("VolumeAttachment", ActionType.DELETE), self._after_attachment_deleted),
        ]

    def _after_pod_deleted(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        deleted = as_pod(old_obj)
        if deleted is None or not deleted.volumes:
            return QueueingHint.QUEUE_SKIP
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        for vol in deleted.volumes:
            if volume_claim(deleted.name, vol) is not None or inline_source(vol):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_pvc_added(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        pvc = as_pvc(new_obj)
        if pvc is None or pvc.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for vol in pod.volumes:
            claim = volume_claim(pod.name, vol)
            if claim is not None and claim[0] == pvc.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_attachment_deleted(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        raw = old_obj.raw if hasattr(old_obj, "raw") else old_obj
        attacher = str(((raw or {}).get("spec") or {}).get("attacher") or "")
        for vol in pod.volumes:
            if vol.get("persistentVolumeClaim") is not None:
                return QueueingHint.QUEUE
            got = inline_csi(vol)
            if got is not None and got[0] == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_csinode_updated(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old = old_obj if isinstance(old_obj, CSINode) else CSINode(old_obj or {})
        new = new_obj if isinstance(new_obj, CSINode) else CSINode(new_obj or {})
        before = {d.name: d.allocatable or 0 for d in old.drivers}
        for d in new.drivers:
            if (d.allocatable or 0) > before.get(d.name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
