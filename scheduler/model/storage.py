"""Storage objects the volume plugins read (PV, PVC, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity, VolumeAttachment), parsed once from API JSON, and the claims a pod's volumes
name. The store that holds them is scheduler.framework.listers.StorageStore.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.model.kinds import Raw, metadata
from scheduler.model.labels import LabelSelector, NodeSelector
from scheduler.model.quantity import QuantityError, int_value
from scheduler.model.schema import ANY, BOOL, STR

# Annotations (component-helpers storage/volume).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"


class NotFoundError(LookupError):
    """An object a lister did not find; ``str()`` is apimachinery's NotFound message."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


def _storage_bytes(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int_value(value)
    except (QuantityError, ValueError, TypeError):
        return None


# In-tree PV / inline volume sources: spec key -> (in-tree plugin name, CSI driver name).
IN_TREE_SOURCES: dict[str, tuple[str, str]] = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "azureFile": ("kubernetes.io/azure-file", "file.csi.azure.com"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
IN_TREE_BY_PLUGIN: dict[str, str] = {plugin: csi for plugin, csi in IN_TREE_SOURCES.values()}


class PersistentVolume:
    __slots__ = (
        "access_modes",
        "annotations",
        "capacity",
        "claim_ref",
        "csi_driver",
        "csi_handle",
        "deleting",
        "in_tree",
        "labels",
        "name",
        "node_affinity",
        "phase",
        "raw",
        "resource_version",
        "storage_class",
        "volume_attributes_class",
        "volume_mode",
    )

    def __init__(self, raw: Raw) -> None:
        meta, spec = metadata(raw), raw.get("spec") or {}
        self.raw = raw
        self.name = str(meta.get("name", ""))
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.labels: dict[str, str] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        self.annotations: dict[str, str] = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.capacity = _storage_bytes((spec.get("capacity") or {}).get("storage"))
        self.access_modes: tuple[str, ...] = tuple(str(m) for m in spec.get("accessModes") or ())
        # GetPersistentVolumeClass: the beta annotation wins over the spec field.
        ann_class = self.annotations.get(ANN_BETA_STORAGE_CLASS)
        self.storage_class = ann_class if ann_class is not None else str(spec.get("storageClassName") or "")
        self.volume_attributes_class: str | None = spec.get("volumeAttributesClassName")
        self.volume_mode = str(spec.get("volumeMode") or "Filesystem")
        cr = spec.get("claimRef")
        # (namespace, name, uid) of the claim this PV is reserved for or bound to.
        self.claim_ref: tuple[str, str, str] | None = (
            (str(cr.get("namespace") or ""), str(cr.get("name") or ""), str(cr.get("uid") or "")) if cr else None
        )
        na = (spec.get("nodeAffinity") or {}).get("required")
        self.node_affinity: NodeSelector | None = NodeSelector.parse(na) if na is not None else None
        self.phase = str((raw.get("status") or {}).get("phase") or "")
        csi = spec.get("csi")
        self.csi_driver = str(csi.get("driver") or "") if csi else ""
        self.csi_handle = str(csi.get("volumeHandle") or "") if csi else ""
        self.in_tree = next((k for k in IN_TREE_SOURCES if spec.get(k) is not None), "")


class PersistentVolumeClaim:
    __slots__ = (
        "access_modes",
        "annotations",
        "deleting",
        "has_class_field",
        "key",
        "name",
        "namespace",
        "owner_uids",
        "phase",
        "raw",
        "request",
        "resource_version",
        "selector",
        "spec_class",
        "uid",
        "volume_attributes_class",
        "volume_mode",
        "volume_name",
    )

    def __init__(self, raw: Raw) -> None:
        meta, spec = metadata(raw), raw.get("spec") or {}
        self.raw = raw
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        self.uid = str(meta.get("uid") or "")
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.annotations: dict[str, str] = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.owner_uids: tuple[tuple[str, bool], ...] = tuple(
            (str(o.get("uid") or ""), bool(o.get("controller"))) for o in meta.get("ownerReferences") or ()
        )
        self.access_modes: tuple[str, ...] = tuple(str(m) for m in spec.get("accessModes") or ())
        self.has_class_field = spec.get("storageClassName") is not None
        self.spec_class = str(spec.get("storageClassName") or "")
        self.volume_attributes_class: str | None = spec.get("volumeAttributesClassName")
        self.volume_name = str(spec.get("volumeName") or "")
        self.volume_mode = str(spec.get("volumeMode") or "Filesystem")
        req = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        self.request = _storage_bytes(req)
        self.selector = LabelSelector.parse(spec.get("selector")) if spec.get("selector") is not None else None
        self.phase = str((raw.get("status") or {}).get("phase") or "")

    @property
    def storage_class(self) -> str:
        """GetPersistentVolumeClaimClass: the beta annotation wins over the spec field."""
        ann = self.annotations.get(ANN_BETA_STORAGE_CLASS)
        if ann is not None:
            return ann
        return self.spec_class

    def with_annotation(self, key: str, value: str) -> PersistentVolumeClaim:
        """A copy with one more annotation (what the assume cache stores)."""
        raw = dict(self.raw)
        meta = dict(raw.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), key: value}
        raw["metadata"] = meta
        return PersistentVolumeClaim(raw)


class TopologyRequirement:
    """One matchLabelExpressions entry of a TopologySelectorTerm."""

    __slots__ = ("key", "values")

    def __init__(self, key: str, values: frozenset[str]) -> None:
        self.key = key
        self.values = values


class StorageClass:
    __slots__ = ("allowed_topologies", "binding_mode", "name", "parameters", "provisioner", "raw")

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        self.name = str(metadata(raw).get("name", ""))
        self.provisioner = str(raw.get("provisioner") or "")
        mode = raw.get("volumeBindingMode")
        self.binding_mode: str | None = str(mode) if mode is not None else None
        self.parameters: dict[str, str] = {str(k): str(v) for k, v in (raw.get("parameters") or {}).items()}
        self.allowed_topologies: tuple[tuple[TopologyRequirement, ...], ...] = tuple(
            tuple(
                TopologyRequirement(str(e.get("key", "")), frozenset(str(v) for v in e.get("values") or ()))
                for e in term.get("matchLabelExpressions") or ()
            )
            for term in raw.get("allowedTopologies") or ()
        )

    def topology_matches(self, labels: Mapping[str, str]) -> bool:
        """v1helper.MatchTopologySelectorTerms: no terms match all; terms are ORed; an empty
        term matches nothing."""
        if not self.allowed_topologies:
            return True
        for term in self.allowed_topologies:
            if term and all(labels.get(r.key) in r.values for r in term):
                return True
        return False


class CSINodeDriver:
    __slots__ = ("allocatable", "name", "node_id", "topology_keys")

    def __init__(self, raw: Raw) -> None:
        self.name = str(raw.get("name") or "")
        self.node_id = str(raw.get("nodeID") or "")
        count = (raw.get("allocatable") or {}).get("count")
        self.allocatable: int | None = int(count) if count is not None else None
        self.topology_keys: tuple[str, ...] = tuple(str(k) for k in raw.get("topologyKeys") or ())


class CSINode:
    __slots__ = ("annotations", "drivers", "limits", "name", "raw")

    def __init__(self, raw: Raw) -> None:
        meta = metadata(raw)
        self.raw = raw
        self.name = str(meta.get("name", ""))
        self.annotations: dict[str, str] = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        self.drivers: tuple[CSINodeDriver, ...] = tuple(
            CSINodeDriver(d) for d in (raw.get("spec") or {}).get("drivers") or ()
        )
        # Driver -> allocatable volume count, for the drivers that report one.
        self.limits: dict[str, int] = {d.name: d.allocatable for d in self.drivers if d.allocatable is not None}

    def migrated_plugins(self) -> set[str]:
        ann = self.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return set(ann.split(",")) if ann else set()


class CSIDriver:
    __slots__ = ("attach_required", "name", "prevent_if_missing", "raw", "storage_capacity")

    def __init__(self, raw: Raw) -> None:
        spec = raw.get("spec") or {}
        self.raw = raw
        self.name = str(metadata(raw).get("name", ""))
        sc = spec.get("storageCapacity")
        self.storage_capacity: bool | None = bool(sc) if sc is not None else None
        self.attach_required = spec.get("attachRequired")
        self.prevent_if_missing = bool(spec.get("preventPodSchedulingIfMissing"))


class CSIStorageCapacity:
    __slots__ = ("capacity", "key", "maximum_volume_size", "name", "namespace", "node_topology", "raw", "storage_class")

    def __init__(self, raw: Raw) -> None:
        meta = metadata(raw)
        self.raw = raw
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace") or "")
        self.key = f"{self.namespace}/{self.name}"
        self.storage_class = str(raw.get("storageClassName") or "")
        self.capacity = _storage_bytes(raw.get("capacity"))
        self.maximum_volume_size = _storage_bytes(raw.get("maximumVolumeSize"))
        nt = raw.get("nodeTopology")
        self.node_topology: LabelSelector | None = LabelSelector.parse(nt) if nt is not None else None

    def volume_limit(self) -> int | None:
        """The largest volume this capacity admits: maximumVolumeSize, else capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


class VolumeAttachment:
    __slots__ = ("attacher", "name", "node_name", "pv_name", "raw")

    def __init__(self, raw: Raw) -> None:
        spec = raw.get("spec") or {}
        self.raw = raw
        self.name = str(metadata(raw).get("name", ""))
        self.attacher = str(spec.get("attacher") or "")
        self.node_name = str(spec.get("nodeName") or "")
        pv = (spec.get("source") or {}).get("persistentVolumeName")
        self.pv_name: str | None = str(pv) if pv is not None else None


# ---------------------------------------------------------------------------------------------
# Pod volumes

# The volume sources the volume plugins read, as PodInfo checks them on parse (a pod
# whose sources do not fit is refused with a one-line error instead of failing mid-cycle).
_RO = {"readOnly": BOOL}
POD_VOLUMES = [
    {
        "name": STR,
        "persistentVolumeClaim": {"claimName": STR, **_RO},
        "ephemeral": {"volumeClaimTemplate": ANY},
        "csi": {"driver": STR, **_RO},
        "gcePersistentDisk": {"pdName": STR, **_RO},
        "awsElasticBlockStore": {"volumeID": STR, **_RO},
        "rbd": {"monitors": [STR], "pool": STR, "image": STR, **_RO},
        "iscsi": {"iqn": STR, **_RO},
        "azureDisk": {"diskURI": STR},
        "azureFile": {"shareName": STR},
        "cinder": {"volumeID": STR},
        "portworxVolume": {"volumeID": STR},
        "vsphereVolume": {"volumePath": STR},
    }
]


def volume_claim(pod_name: str, vol: Raw) -> tuple[str, bool] | None:
    """The claim a pod volume names, as (claim name, is ephemeral), or None for a volume
    without one: a persistentVolumeClaim's claimName, or for a generic ephemeral volume
    ephemeral.VolumeClaimName's ``<pod name>-<volume name>``."""
    pvc = vol.get("persistentVolumeClaim")
    if pvc is not None:
        return str(pvc.get("claimName") or ""), False
    if vol.get("ephemeral") is not None:
        return f"{pod_name}-{vol.get('name', '')}", True
    return None


def pvc_claim_names(volumes: tuple[Raw, ...]) -> list[str]:
    """The claimNames of a pod's persistentVolumeClaim volumes (not the ephemeral ones)."""
    return [str(v["persistentVolumeClaim"].get("claimName") or "") for v in volumes if v.get("persistentVolumeClaim")]


def ephemeral_owned_by(pod: Any, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: None when the claim is controlled by the pod, else the error."""
    uid = str((pod.raw.get("metadata") or {}).get("uid") or "")
    if pvc.namespace == pod.namespace:
        for owner_uid, controller in pvc.owner_uids:
            if controller and owner_uid == uid:
                return None
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def as_pvc(obj: Any) -> PersistentVolumeClaim | None:
    """A queueing-hint argument as a PersistentVolumeClaim (parsed object or raw dict)."""
    if obj is None or isinstance(obj, PersistentVolumeClaim):
        return obj
    if isinstance(obj, Mapping):
        return PersistentVolumeClaim(obj)
    raise TypeError(f"expected a PersistentVolumeClaim, got {type(obj).__name__}")


def as_pv(obj: Any) -> PersistentVolume | None:
    if obj is None or isinstance(obj, PersistentVolume):
        return obj
    if isinstance(obj, Mapping):
        return PersistentVolume(obj)
    raise TypeError(f"expected a PersistentVolume, got {type(obj).__name__}")


def as_storage_class(obj: Any) -> StorageClass | None:
    if obj is None or isinstance(obj, StorageClass):
        return obj
    if isinstance(obj, Mapping):
        return StorageClass(obj)
    raise TypeError(f"expected a StorageClass, got {type(obj).__name__}")
