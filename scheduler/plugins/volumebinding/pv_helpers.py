"""Matching PVs to claims (upstream component-helpers storage/volume pv_helpers.go and helpers.go,
and the PV controller's GetBindVolumeToClaim): whether a PV is bound to a claim, admits a node,
or is the best fit for a claim; and the PV with the claim written into it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from scheduler.model.labels import NodeSelector
from scheduler.model.node import NodeInfo
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim
from scheduler.plugins.nodevolumelimits.translation import MIGRATION_ON, plugin_of, translated_node_affinity

ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


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
