"""The volume binder behind VolumeBinding (upstream plugins/volumebinding/binder.go): which
claims a pod has, which PVs could serve them on a node (matched by pv_helpers.py), what Reserve
assumes (in assume_cache.py, so that the next cycle sees it), and PreBind's API writes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from scheduler.framework.listers import StorageStore
from scheduler.framework.status import go_quote
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    CSIStorageCapacity,
    NotFoundError,
    PersistentVolume,
    PersistentVolumeClaim,
    ephemeral_owned_by,
    volume_claim,
)
from scheduler.plugins.volumebinding.assume_cache import AssumeCache
from scheduler.plugins.volumebinding.errors import BinderError
from scheduler.plugins.volumebinding.pv_helpers import (
    ClaimCandidates,
    bind_volume_to_claim,
    migrated_node_affinity_ok,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


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
