"""The part of k8s.io/csi-translation-lib the volume plugins need: which in-tree volume types
migrate to CSI, their driver names, and the CSI volume handle a translated volume gets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.model.storage import IN_TREE_BY_PLUGIN, IN_TREE_SOURCES, PersistentVolume

# nodevolumelimits isCSIMigrationOn / volumebinding isCSIMigrationOnForPlugin: migration is
# always on for these in-tree plugins (their gates are locked on).
MIGRATION_ON = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
        "kubernetes.io/portworx-volume",
    }
)
_UNSPECIFIED = "UNSPECIFIED"


def inline_source(vol: Mapping[str, Any]) -> str:
    """The in-tree source key of an inline pod volume that can migrate, or ''."""
    for key in IN_TREE_SOURCES:
        if vol.get(key) is not None:
            return key
    return ""


def plugin_of(source_key: str) -> str:
    return IN_TREE_SOURCES[source_key][0]


def csi_driver_of_plugin(plugin: str) -> str:
    return IN_TREE_BY_PLUGIN.get(plugin, "")


def is_migratable_plugin(plugin: str) -> bool:
    return plugin in IN_TREE_BY_PLUGIN


def _ebs_id(volume_id: str) -> str | None:
    # "aws://<zone>/<vol-id>" or a bare "vol-..." id.
    if not volume_id.startswith("aws://"):
        return volume_id
    rest = volume_id[len("aws://") :]
    _, _, path = rest.partition("/")
    vid = path.strip("/")
    return vid or None


def _gce_region(zones: list[str]) -> str | None:
    region = None
    for z in zones:
        r = z[: z.rfind("-")] if "-" in z else None
        if r is None or (region is not None and r != region):
            return None
        region = r
    return region


def _handle(source_key: str, src: Mapping[str, Any], labels: Mapping[str, str] | None) -> str | None:
    if source_key == "awsElasticBlockStore":
        return _ebs_id(str(src.get("volumeID") or ""))
    if source_key == "gcePersistentDisk":
        pd = str(src.get("pdName") or "")
        if labels is None:
            return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{pd}"
        zl = labels.get("failure-domain.beta.kubernetes.io/zone") or labels.get("topology.kubernetes.io/zone") or ""
        zones = zl.split("__")
        if len(zones) == 1 and zones[0]:
            return f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{pd}"
        if len(zones) > 1:
            region = _gce_region(zones)
            return None if region is None else f"projects/{_UNSPECIFIED}/regions/{region}/disks/{pd}"
        return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{pd}"
    if source_key == "azureDisk":
        return str(src.get("diskURI") or "")
    if source_key in ("cinder", "portworxVolume"):
        return str(src.get("volumeID") or "")
    if source_key == "vsphereVolume":
        return str(src.get("volumePath") or "")
    if source_key == "azureFile":
        return str(src.get("shareName") or "")
    return None


def inline_csi(vol: Mapping[str, Any]) -> tuple[str, str] | None:
    """(driver, handle) of an inline in-tree volume translated to CSI."""
    key = inline_source(vol)
    if not key:
        return None
    h = _handle(key, vol[key], None)
    return None if h is None else (IN_TREE_SOURCES[key][1], h)


def pv_csi(pv: PersistentVolume) -> tuple[str, str] | None:
    """(driver, handle) of a PV: its CSI source, or its in-tree source translated."""
    if pv.csi_driver:
        return pv.csi_driver, pv.csi_handle
    if not pv.in_tree:
        return None
    src = (pv.raw.get("spec") or {}).get(pv.in_tree) or {}
    h = _handle(pv.in_tree, src, pv.labels)
    return None if h is None else (IN_TREE_SOURCES[pv.in_tree][1], h)


# ---------------------------------------------------------------------------------------------
# Node affinity of a migrated in-tree PV (csi-translation-lib translateTopologyFromInTreeToCSI)

# In-tree plugin -> the CSI driver's zone topology key, for the translators that rewrite
# topology (AWS EBS, GCE PD, Cinder); the others keep the PV's affinity as it is.
CSI_TOPOLOGY_KEY = {
    "kubernetes.io/aws-ebs": "topology.ebs.csi.aws.com/zone",
    "kubernetes.io/gce-pd": "topology.gke.io/zone",
    "kubernetes.io/cinder": "topology.cinder.csi.openstack.org/zone",
}
_GA_ZONE = "topology.kubernetes.io/zone"
_GA_REGION = "topology.kubernetes.io/region"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def _terms(pv: PersistentVolume) -> list[dict[str, Any]]:
    req = (((pv.raw.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    return [dict(t) for t in req or ()]


def _has_key(terms: list[dict[str, Any]], key: str) -> bool:
    return any(e.get("key") == key for t in terms for e in t.get("matchExpressions") or ())


def _rename(terms: list[dict[str, Any]], old: str, new: str) -> None:
    for t in terms:
        t["matchExpressions"] = [
            {**e, "key": new} if e.get("key") == old else e for e in t.get("matchExpressions") or ()
        ]


def translated_node_affinity(pv: PersistentVolume) -> dict[str, Any] | None:
    """The PV's ``spec.nodeAffinity.required`` after in-tree-to-CSI translation, or None when
    the translator leaves topology alone (the caller then keeps the PV's own affinity)."""
    key = CSI_TOPOLOGY_KEY.get(plugin_of(pv.in_tree)) if pv.in_tree else None
    if key is None:
        return None
    terms = _terms(pv)
    if _has_key(terms, _GA_ZONE):
        zone_label, region_label = _GA_ZONE, _GA_REGION
    elif _has_key(terms, _BETA_ZONE):
        zone_label, region_label = _BETA_ZONE, _BETA_REGION
    elif _GA_ZONE in pv.labels:
        zone_label, region_label = _GA_ZONE, _GA_REGION
    elif _BETA_ZONE in pv.labels:
        zone_label, region_label = _BETA_ZONE, _BETA_REGION
    else:
        zone_label, region_label = _GA_ZONE, _GA_REGION
    if _has_key(terms, zone_label):
        _rename(terms, zone_label, key)
    elif zone_label in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone_label].split("__") if z.strip()})
        if zones:
            if not terms:
                terms = [{}]
            req = {"key": key, "operator": "In", "values": zones}
            for t in terms:
                t["matchExpressions"] = [*(t.get("matchExpressions") or ()), req]
    if region_label == _BETA_REGION and _has_key(terms, _BETA_REGION):
        _rename(terms, _BETA_REGION, _GA_REGION)
    if not terms:
        return None
    return {"nodeSelectorTerms": terms}
