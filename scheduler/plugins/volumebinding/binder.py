"""The volume binder behind VolumeBinding (upstream plugins/volumebinding/binder.go and
component-helpers storage/volume): which claims a pod has, which PVs could serve them on a
node, the assume cache that makes Reserve visible to the next cycle, and PreBind's API writes.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from scheduler.framework.listers import StorageStore
from scheduler.framework.status import go_quote
from scheduler.model.labels import NodeSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    CSINode,
    CSIStorageCapacity,
    NotFoundError,
    PersistentVolume,
    PersistentVolumeClaim,
    ephemeral_owned_by,
    volume_claim,
)
from scheduler.plugins.nodevolumelimits.translation import MIGRATION_ON, plugin_of, translated_node_affinity

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


class BinderError(Exception):
    """An error the binder returns; the plugin turns it into an Error status."""


# ---------------------------------------------------------------------------------------------
# Assume cache


class AssumeCache:
    """The informer's PVs and PVCs with the scheduler's assumed versions laid over them.

    An assumed object stays visible while the stored object keeps the resourceVersion it was
    assumed from; once the watch delivers a newer version, that version wins (upstream
    passiveAssumeCache).
    """

    __slots__ = ("pvcs", "pvs", "store")

    def __init__(self, store: StorageStore) -> None:
        self.store = store
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}

    def get_pv(self, name: str) -> PersistentVolume:
        api = self.store.get_pv(name)
        assumed = self.pvs.get(name)
        return assumed if assumed is not None and assumed.resource_version == api.resource_version else api

    def get_pvc(self, key: str) -> PersistentVolumeClaim:
        api = self.store.pvcs.get(key)
        if api is None:
            raise NotFoundError("persistentvolumeclaim", key)
        assumed = self.pvcs.get(key)
        return assumed if assumed is not None and assumed.resource_version == api.resource_version else api

    def list_pvs(self, class_name: str) -> list[PersistentVolume]:
        # Sorted by name so that ties between equal-size PVs break the same way every run.
        out = []
        for pv in sorted(self.store.pvs_of_class(class_name), key=lambda p: p.name):
            assumed = self.pvs.get(pv.name)
            out.append(assumed if assumed is not None and assumed.resource_version == pv.resource_version else pv)
        return out

    def assume_pv(self, pv: PersistentVolume) -> None:
        stored = self.store.get_pv(pv.name)
        if stored.resource_version != pv.resource_version:
            raise BinderError(
                f'"{pv.name}" is out of sync (stored: {stored.resource_version}, assume: {pv.resource_version})'
            )
        self.pvs[pv.name] = pv

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        stored = self.store.pvcs.get(pvc.key)
        if stored is None:
            raise NotFoundError("persistentvolumeclaim", pvc.key)
        if stored.resource_version != pvc.resource_version:
            raise BinderError(
                f'"{pvc.key}" is out of sync (stored: {stored.resource_version}, assume: {pvc.resource_version})'
            )
        self.pvcs[pvc.key] = pvc

    def restore_pv(self, pv: PersistentVolume) -> None:
        a = self.pvs.get(pv.name)
        if a is not None and a.resource_version == pv.resource_version:
            del self.pvs[pv.name]

    def restore_pvc(self, pvc: PersistentVolumeClaim) -> None:
        a = self.pvcs.get(pvc.key)
        if a is not None and a.resource_version == pvc.resource_version:
            del self.pvcs[pvc.key]


# ---------------------------------------------------------------------------------------------
# Results


class BindingInfo:
    __slots__ = ("pv", "pvc")

    def __init__(self, pvc: PersistentVolumeClaim, pv: PersistentVolume) -> None:
        self.pvc = pvc
        self.pv = pv


class DynamicProvision:
    __slots__ = ("capacity", "pvc")

    def __init__(self, pvc: PersistentVolumeClaim, capacity: CSIStorageCapacity | None = None) -> None:
        self.pvc = pvc
        self.capacity = capacity


class PodVolumes:
    """What a pod needs on one node: PVs to bind statically and claims to provision."""

    __slots__ = ("dynamic_provisions", "static_bindings")

    def __init__(self) -> None:
        self.static_bindings: list[BindingInfo] = []
        self.dynamic_provisions: list[DynamicProvision] = []


class PodVolumeClaims:
    __slots__ = ("bound", "candidates", "unbound_delay", "unbound_immediate", "unbound_volumes")

    def __init__(self) -> None:
        self.bound: list[PersistentVolumeClaim] = []
        self.unbound_delay: list[PersistentVolumeClaim] = []
        self.unbound_immediate: list[PersistentVolumeClaim] = []
        # storage class -> candidate PVs for the delayed-binding claims
        self.unbound_volumes: dict[str, list[PersistentVolume]] = {}
        # claim key -> its node-independent matching work, built on first use in the cycle
        self.candidates: dict[str, ClaimCandidates] = {}


# ---------------------------------------------------------------------------------------------
# component-helpers storage/volume


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    ref = pv.claim_ref
    if ref is None or ref[0] != pvc.namespace or ref[1] != pvc.name:
        return False
    return not ref[2] or ref[2] == pvc.uid


def check_node_affinity(pv: PersistentVolume, node: NodeInfo) -> bool:
    """CheckNodeAffinity: True when the PV's required node affinity admits the node."""
    if pv.node_affinity is None:
        return True
    return pv.node_affinity.matches(node.labels, node.name)


def migrated_node_affinity_ok(pv: PersistentVolume, node: NodeInfo, csi_node: CSINode | None) -> bool:
    """tryTranslatePVToCSI + CheckNodeAffinity: an in-tree PV whose plugin the node's CSINode
    lists as migrated is checked with its topology translated to the CSI driver's keys."""
    if pv.in_tree and csi_node is not None:
        plugin = plugin_of(pv.in_tree)
        if plugin in MIGRATION_ON and plugin in csi_node.migrated_plugins():
            raw = translated_node_affinity(pv)
            if raw is not None:
                sel = NodeSelector.parse(raw)
                return sel is None or sel.matches(node.labels, node.name)
    return check_node_affinity(pv, node)


def _access_modes_ok(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    have = set(pv.access_modes)
    return all(m in have for m in pvc.access_modes)


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    pvs: list[PersistentVolume],
    node: NodeInfo | None,
    excluded: Mapping[str, PersistentVolume],
    delay_binding: bool,
) -> PersistentVolume | None:
    """FindMatchingVolume (VolumeAttributesClass is GA in v1.36): the PV pre-bound to the
    claim, else the smallest available PV that fits size, mode, class, selector, node
    affinity and access modes."""
    requested = pvc.request or 0
    requested_class = pvc.storage_class
    claim_vac = pvc.volume_attributes_class or ""
    best: PersistentVolume | None = None
    best_size = 0
    for pv in pvs:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, pvc):
            continue
        size = pv.capacity or 0
        if size < requested:
            continue
        if pvc.volume_mode != pv.volume_mode:
            continue
        if claim_vac != (pv.volume_attributes_class or ""):
            continue
        if pv.deleting:
            continue
        affinity_ok = node is None or check_node_affinity(pv, node)
        if is_volume_bound_to_claim(pv, pvc):
            return pv if affinity_ok else None
        if node is None and delay_binding:
            continue
        if pv.phase != "Available":
            continue
        if pvc.selector is not None and not pvc.selector.matches(pv.labels):
            continue
        if pv.storage_class != requested_class:
            continue
        if not affinity_ok:
            continue
        if node is not None and not _access_modes_ok(pvc, pv):
            continue
        if best is None or best_size > size:
            best, best_size = pv, size
    return best


class ClaimCandidates:
    """FindMatchingVolume for one claim, split into what is the same on every node (done once
    per cycle) and the per-node part (node affinity, PVs already chosen for the pod).

    Equivalent to ``find_matching_volume(pvc, pvs, node, excluded, True)`` for any node: the
    first PV pre-bound to the claim decides alone; otherwise the smallest fitting PV (first in
    list order among equals). PVs whose affinity is a single ``key In values`` requirement are
    indexed by label value, so a node only looks at the PVs it can possibly match.
    """

    __slots__ = ("by_label", "general", "prebound")

    def __init__(self, pvc: PersistentVolumeClaim, pvs: list[PersistentVolume]) -> None:
        # PVs pre-bound to the claim, in list order: the first one not excluded decides alone.
        self.prebound: list[PersistentVolume] = []
        self.general: list[tuple[int, int, PersistentVolume]] = []
        self.by_label: dict[str, dict[str, list[tuple[int, int, PersistentVolume]]]] = {}
        requested = pvc.request or 0
        claim_vac = pvc.volume_attributes_class or ""
        for order, pv in enumerate(pvs):
            if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, pvc):
                continue
            size = pv.capacity or 0
            if size < requested or pvc.volume_mode != pv.volume_mode:
                continue
            if claim_vac != (pv.volume_attributes_class or "") or pv.deleting:
                continue
            if is_volume_bound_to_claim(pv, pvc):
                self.prebound.append(pv)
                continue
            if pv.phase != "Available":
                continue
            if pvc.selector is not None and not pvc.selector.matches(pv.labels):
                continue
            if pv.storage_class != pvc.storage_class or not _access_modes_ok(pvc, pv):
                continue
            entry = (size, order, pv)
            simple = _single_in_requirement(pv)
            if simple is None:
                self.general.append(entry)
            else:
                key, values = simple
                idx = self.by_label.setdefault(key, {})
                for v in values:
                    idx.setdefault(v, []).append(entry)

    def best(self, node: NodeInfo, excluded: Mapping[str, PersistentVolume]) -> PersistentVolume | None:
        for pv in self.prebound:
            if pv.name not in excluded:
                return pv if check_node_affinity(pv, node) else None
        best: tuple[int, int, PersistentVolume] | None = None
        for entry in self.general:
            pv = entry[2]
            if (best is None or entry[:2] < best[:2]) and pv.name not in excluded and check_node_affinity(pv, node):
                best = entry
        labels = node.labels
        for key, idx in self.by_label.items():
            value = labels.get(key)
            if value is None:
                continue
            for entry in idx.get(value, ()):
                if (best is None or entry[:2] < best[:2]) and entry[2].name not in excluded:
                    best = entry
        return best[2] if best is not None else None


def _single_in_requirement(pv: PersistentVolume) -> tuple[str, frozenset[str]] | None:
    """(key, values) when the PV's affinity is exactly one term holding one ``In`` label
    requirement; None otherwise (including no affinity, which the general list handles)."""
    na = pv.node_affinity
    if na is None or len(na.terms) != 1:
        return None
    term = na.terms[0]
    if not term.valid or term.fields or len(term.expressions) != 1:
        return None
    req = term.expressions[0]
    if req.op != "In":
        return None
    return req.key, req.values


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """GetBindVolumeToClaim: the PV with claimRef (and bound-by-controller) set; dirty flag."""
    set_by_controller = not is_volume_bound_to_claim(pv, pvc)
    raw = copy.deepcopy(dict(pv.raw))
    spec = raw.setdefault("spec", {})
    meta = raw.setdefault("metadata", {})
    dirty = False
    if pv.claim_ref is None or pv.claim_ref != (pvc.namespace, pvc.name, pvc.uid):
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": pvc.namespace,
            "name": pvc.name,
            "uid": pvc.uid,
            "apiVersion": "v1",
            "resourceVersion": pvc.resource_version,
        }
        dirty = True
    ann = meta.get("annotations") or {}
    if set_by_controller and ANN_BOUND_BY_CONTROLLER not in ann:
        meta["annotations"] = {**ann, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return PersistentVolume(raw), dirty


def is_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    return bool(pvc.volume_name) and ANN_BIND_COMPLETED in pvc.annotations


# ---------------------------------------------------------------------------------------------
# API seam for PreBind


class VolumeAPI(Protocol):
    """The API writes PreBind needs; the live app injects a client, tests a fake.

    Both return the object as the API server stored it (raw dict)."""

    async def update_persistent_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def update_persistent_volume_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]: ...


# ---------------------------------------------------------------------------------------------
# Binder


class VolumeBinder:
    def __init__(self, store: StorageStore, bind_timeout: float = 600.0) -> None:
        self.store = store
        self.cache = AssumeCache(store)
        self.bind_timeout = bind_timeout

    # -- claims of a pod ---------------------------------------------------------------------
    def _volume_bound(self, pod: PodInfo, vol: Mapping[str, Any]) -> tuple[bool, PersistentVolumeClaim | None]:
        claim = volume_claim(pod.name, vol)
        if claim is None:
            return True, None
        name, ephemeral = claim
        key = f"{pod.namespace}/{name}"
        try:
            pvc = self.cache.get_pvc(key)
        except NotFoundError as exc:
            raise BinderError(f"error getting PVC {go_quote(key)}: {exc}") from None
        if ephemeral:
            err = ephemeral_owned_by(pod, pvc)
            if err is not None:
                raise BinderError(err)
        return is_fully_bound(pvc), pvc

    def pod_volume_claims(self, pod: PodInfo) -> PodVolumeClaims:
        """GetPodVolumeClaims: the pod's claims split into bound, delayed and immediate."""
        out = PodVolumeClaims()
        for vol in pod.volumes:
            bound, pvc = self._volume_bound(pod, vol)
            if pvc is None:
                continue
            if bound:
                out.bound.append(pvc)
                continue
            if self._delay_binding(pvc) and not pvc.volume_name:
                out.unbound_delay.append(pvc)
            else:
                out.unbound_immediate.append(pvc)
        for pvc in out.unbound_delay:
            cls = pvc.storage_class
            out.unbound_volumes[cls] = self.cache.list_pvs(cls)
        return out

    def _delay_binding(self, pvc: PersistentVolumeClaim) -> bool:
        name = pvc.storage_class
        if not name:
            return False
        sc = self.store.classes.get(name)
        if sc is None:
            return False
        if sc.binding_mode is None:
            raise BinderError(f"VolumeBindingMode not set for StorageClass {go_quote(name)}")
        return sc.binding_mode == "WaitForFirstConsumer"

    # -- Filter ------------------------------------------------------------------------------
    def find_pod_volumes(self, pod: PodInfo, claims: PodVolumeClaims, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: what the pod would need on ``node`` and the reasons it cannot fit."""
        vols = PodVolumes()
        bound_ok, pvs_found, unbound_ok, storage_ok = True, True, True, True
        if claims.bound:
            bound_ok, pvs_found = self._check_bound(claims.bound, node)
        if claims.unbound_delay:
            to_match: list[PersistentVolumeClaim] = []
            to_provision: list[PersistentVolumeClaim] = []
            early_exit = False
            for pvc in claims.unbound_delay:
                selected = pvc.annotations.get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node.name:
                        unbound_ok = False
                        early_exit = True
                        break
                    to_provision.append(pvc)
                else:
                    to_match.append(pvc)
            if not early_exit:
                if to_match:
                    unbound_ok, bindings, unmatched = self._find_matching(
                        to_match, claims.unbound_volumes, node, claims.candidates
                    )
                    vols.static_bindings = bindings
                    to_provision.extend(unmatched)
                if to_provision:
                    unbound_ok, storage_ok, provisions = self._check_provisions(to_provision, node)
                    vols.dynamic_provisions = provisions
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return vols, reasons

    def _check_bound(self, claims: list[PersistentVolumeClaim], node: NodeInfo) -> tuple[bool, bool]:
        csi_node = self.store.csi_nodes.get(node.name)
        for pvc in claims:
            try:
                pv = self.cache.get_pv(pvc.volume_name)
            except NotFoundError:
                return True, False
            if not migrated_node_affinity_ok(pv, node, csi_node):
                return False, True
        return True, True

    def _find_matching(
        self,
        claims: list[PersistentVolumeClaim],
        candidates: Mapping[str, list[PersistentVolume]],
        node: NodeInfo,
        cache: dict[str, ClaimCandidates] | None = None,
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        # Smallest claims first, so that they do not take the PVs larger claims need.
        ordered = sorted(claims, key=lambda c: c.request or 0)
        chosen: dict[str, PersistentVolume] = {}
        bindings: list[BindingInfo] = []
        unmatched: list[PersistentVolumeClaim] = []
        found = True
        for pvc in ordered:
            cand = cache.get(pvc.key) if cache is not None else None
            if cand is None:
                cand = ClaimCandidates(pvc, candidates.get(pvc.storage_class, []))
                if cache is not None:
                    cache[pvc.key] = cand
            pv = cand.best(node, chosen)
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            chosen[pv.name] = pv
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unmatched

    def _check_provisions(
        self, claims: list[PersistentVolumeClaim], node: NodeInfo
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        out: list[DynamicProvision] = []
        for pvc in claims:
            cls_name = pvc.storage_class
            if not cls_name:
                raise BinderError(f"no class for claim {go_quote(pvc.key)}")
            sc = self.store.classes.get(cls_name)
            if sc is None:
                raise BinderError(f"failed to find storage class {go_quote(cls_name)}")
            prov = sc.provisioner
            if not prov or prov == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not sc.topology_matches(node.labels):
                return False, True, []
            sufficient, capacity = self._has_capacity(prov, pvc, cls_name, node)
            if not sufficient:
                return True, False, []
            out.append(DynamicProvision(pvc, capacity))
        return True, True, out

    def _has_capacity(
        self, provisioner: str, pvc: PersistentVolumeClaim, class_name: str, node: NodeInfo
    ) -> tuple[bool, CSIStorageCapacity | None]:
        if pvc.request is None:
            return True, None
        driver = self.store.csi_drivers.get(provisioner)
        if driver is None or not driver.storage_capacity:
            return True, None
        for cap in sorted(self.store.capacities.values(), key=lambda c: c.key):
            limit = cap.volume_limit()
            if (
                cap.storage_class == class_name
                and limit is not None
                and limit >= pvc.request
                and cap.node_topology is not None
                and cap.node_topology.matches(node.labels)
            ):
                return True, cap
        return False, None

    # -- Reserve / Unreserve -----------------------------------------------------------------
    def pod_volumes_bound(self, pod: PodInfo) -> bool:
        for vol in pod.volumes:
            try:
                bound, _ = self._volume_bound(pod, vol)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def assume(self, pod: PodInfo, node_name: str, vols: PodVolumes) -> bool:
        """AssumePodVolumes: lay the bindings over the cache; True when nothing is left to do."""
        if self.pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for b in vols.static_bindings:
            pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                try:
                    self.cache.assume_pv(pv)
                except (BinderError, NotFoundError):
                    self._revert(new_bindings, [])
                    raise
            new_bindings.append(BindingInfo(b.pvc, pv))
        provisions: list[DynamicProvision] = []
        for p in vols.dynamic_provisions:
            clone = p.pvc.with_annotation(ANN_SELECTED_NODE, node_name)
            try:
                self.cache.assume_pvc(clone)
            except (BinderError, NotFoundError):
                self._revert(new_bindings, [d.pvc for d in provisions])
                raise
            provisions.append(DynamicProvision(clone))
        vols.static_bindings = new_bindings
        vols.dynamic_provisions = provisions
        return False

    def _revert(self, bindings: list[BindingInfo], claims: list[PersistentVolumeClaim]) -> None:
        for b in bindings:
            self.cache.restore_pv(b.pv)
        for c in claims:
            self.cache.restore_pvc(c)

    def revert(self, vols: PodVolumes) -> None:
        self._revert(vols.static_bindings, [d.pvc for d in vols.dynamic_provisions])

    # -- PreBind -----------------------------------------------------------------------------
    async def bind(
        self,
        pod: PodInfo,
        node: NodeInfo | None,
        vols: PodVolumes,
        api: VolumeAPI,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        poll: float = 1.0,
    ) -> None:
        """BindPodVolumes: write the PV claimRefs and the PVC selected-node annotations, then
        wait until the PV controller reports every claim bound (or the timeout passes)."""
        bindings = list(vols.static_bindings)
        claims = [d.pvc for d in vols.dynamic_provisions]
        done_b = done_c = 0
        try:
            for b in bindings:
                b.pv = PersistentVolume(await api.update_persistent_volume(b.pv.raw))
                done_b += 1
            for i, c in enumerate(claims):
                claims[i] = PersistentVolumeClaim(await api.update_persistent_volume_claim(c.raw))
                done_c += 1
        finally:
            # What was not written must not stay assumed.
            self._revert(bindings[done_b:], claims[done_c:])
        deadline = time.monotonic() + self.bind_timeout
        while True:
            if self.check_bindings(pod, node, bindings, claims):
                return
            if time.monotonic() >= deadline:
                raise BinderError("binding volumes: context deadline exceeded")
            await sleep(poll)

    def check_bindings(
        self,
        pod: PodInfo,
        node: NodeInfo | None,
        bindings: list[BindingInfo],
        claims: list[PersistentVolumeClaim],
    ) -> bool:
        """checkBindings against what the watch has delivered: True when all are bound;
        raises BinderError when binding can no longer succeed."""
        if node is None:
            raise BinderError(f'failed to get node "{pod.node_name}"')
        csi_node = self.store.csi_nodes.get(node.name)
        for b in bindings:
            try:
                pv = self.store.get_pv(b.pv.name)
                pvc = self.store.pvcs[b.pvc.key]
            except (NotFoundError, KeyError) as exc:
                raise BinderError(f"failed to check binding: {exc}") from None
            if _rv(b.pv.resource_version) > _rv(pv.resource_version):
                return False
            if not migrated_node_affinity_ok(pv, node, csi_node):
                raise BinderError(
                    f"pv {go_quote(pv.name)} node affinity doesn't match node {go_quote(node.name)}: "
                    "no matching NodeSelectorTerms"
                )
            if pv.claim_ref is None or not pv.claim_ref[2]:
                raise BinderError(f"ClaimRef got reset for pv {go_quote(pv.name)}")
            if not is_fully_bound(pvc):
                return False
        for c in claims:
            pvc_now = self.store.pvcs.get(c.key)
            if pvc_now is None:
                raise BinderError(f"failed to check provisioning pvc: {NotFoundError('persistentvolumeclaim', c.key)}")
            if _rv(c.resource_version) > _rv(pvc_now.resource_version):
                return False
            selected = pvc_now.annotations.get(ANN_SELECTED_NODE)
            if selected is None and not pvc_now.annotations:
                raise BinderError(f"selectedNode annotation reset for PVC {go_quote(pvc_now.name)}")
            if selected != node.name:
                raise BinderError(f"provisioning failed for PVC {go_quote(pvc_now.name)}")
            if pvc_now.volume_name:
                pv_now = self.store.pvs.get(pvc_now.volume_name)
                if pv_now is None:
                    return False
                if not migrated_node_affinity_ok(pv_now, node, csi_node):
                    raise BinderError(
                        f"pv {go_quote(pv_now.name)} node affinity doesn't match node {go_quote(node.name)}: "
                        "no matching NodeSelectorTerms"
                    )
            if not is_fully_bound(pvc_now):
                return False
        return True


def _rv(version: str) -> int:
    try:
        return int(version)
    except ValueError:
        return 0
