"""Storage objects the volume plugins read (PV, PVC, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity), parsed once from API JSON, and the store that holds them.

``StorageStore.apply(kind, raw)`` / ``StorageStore.delete(kind, raw)`` is the hook a watcher
calls for each event; ``simulate`` calls ``apply`` for every storage object of its input file.
Lookups mirror upstream listers, including their NotFound messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from scheduler.model.labels import LabelSelector, NodeSelector
from scheduler.model.quantity import QuantityError, int_value
from scheduler.model.schema import ANY, BOOL, STORAGE, STR, object_error

Raw = Mapping[str, Any]

# Annotations (component-helpers storage/volume).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

STORAGE_KINDS = (
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
)


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


def _meta(raw: Raw) -> Mapping[str, Any]:
    return raw.get("metadata") or {}


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
        meta, spec = _meta(raw), raw.get("spec") or {}
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
        meta, spec = _meta(raw), raw.get("spec") or {}
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
        self.name = str(_meta(raw).get("name", ""))
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
        meta = _meta(raw)
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
        self.name = str(_meta(raw).get("name", ""))
        sc = spec.get("storageCapacity")
        self.storage_capacity: bool | None = bool(sc) if sc is not None else None
        self.attach_required = spec.get("attachRequired")
        self.prevent_if_missing = bool(spec.get("preventPodSchedulingIfMissing"))


class CSIStorageCapacity:
    __slots__ = ("capacity", "key", "maximum_volume_size", "name", "namespace", "node_topology", "raw", "storage_class")

    def __init__(self, raw: Raw) -> None:
        meta = _meta(raw)
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
        self.name = str(_meta(raw).get("name", ""))
        self.attacher = str(spec.get("attacher") or "")
        self.node_name = str(spec.get("nodeName") or "")
        pv = (spec.get("source") or {}).get("persistentVolumeName")
        self.pv_name: str | None = str(pv) if pv is not None else None


_PARSERS: dict[str, type] = {
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "CSIStorageCapacity": CSIStorageCapacity,
    "VolumeAttachment": VolumeAttachment,
}


class StorageStore:
    """Informer-like store of the storage objects, keyed like upstream listers."""

    __slots__ = ("capacities", "classes", "csi_drivers", "csi_nodes", "pvcs", "pvs", "version", "volume_attachments")

    def __init__(self) -> None:
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}  # namespace/name
        self.classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}  # namespace/name
        self.volume_attachments: dict[str, VolumeAttachment] = {}
        # Bumped on every change, so plugins can cache derived data.
        self.version = 0

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "PersistentVolume": self.pvs,
            "PersistentVolumeClaim": self.pvcs,
            "StorageClass": self.classes,
            "CSINode": self.csi_nodes,
            "CSIDriver": self.csi_drivers,
            "CSIStorageCapacity": self.capacities,
            "VolumeAttachment": self.volume_attachments,
        }
        return tables[kind]

    def apply(self, kind: str, raw: Raw) -> Any:
        """Add or update one object (the watcher's hook); returns the parsed object, or None
        for a kind this store does not hold. An object that cannot be parsed raises
        ``ObjectError`` (one line) and leaves the store unchanged."""
        cls = _PARSERS.get(kind)
        if cls is None:
            return None
        try:
            obj = cls(raw)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # One line naming the object (and the field when the outline shows it).
            raise object_error(kind, raw, STORAGE, exc) from None
        key = getattr(obj, "key", None) or obj.name
        self._table(kind)[key] = obj
        self.version += 1
        return obj

    def on_event(self, kind: str, etype: str | None, raw: Raw) -> tuple[Any, Any] | None:
        """The watcher's hook: apply one watch event ("ADDED", "MODIFIED", "DELETED"; None
        counts as an add or update) and return ``(old, new)`` parsed objects for the queue's
        hints (``None`` on the missing side), or None for a kind this store does not hold.

        The caller moves pods with ``ClusterEvent(kind, ADD | UPDATE | DELETE)``: ADD when
        ``old`` is None, DELETE when ``new`` is None, UPDATE otherwise.
        """
        if kind not in _PARSERS:
            return None
        if etype == "DELETED":
            return self.delete(kind, raw), None
        meta = _meta(raw)
        name = str(meta.get("name", ""))
        if kind in ("PersistentVolumeClaim", "CSIStorageCapacity"):
            ns = meta.get("namespace") or ("default" if kind == "PersistentVolumeClaim" else "")
            name = f"{ns}/{name}"
        old = self._table(kind).get(name)
        return old, self.apply(kind, raw)

    def delete(self, kind: str, raw: Raw) -> Any:
        """Remove one object; returns what was stored, if anything."""
        if kind not in _PARSERS:
            return None
        meta = _meta(raw)
        name = str(meta.get("name", ""))
        if kind in ("PersistentVolumeClaim", "CSIStorageCapacity"):
            ns = meta.get("namespace") or ("default" if kind == "PersistentVolumeClaim" else "")
            name = f"{ns}/{name}"
        self.version += 1
        return self._table(kind).pop(name, None)

    # -- lister-like lookups that raise NotFoundError -----------------------------------------
    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim:
        pvc = self.pvcs.get(f"{namespace}/{name}")
        if pvc is None:
            raise NotFoundError("persistentvolumeclaim", name)
        return pvc

    def get_pv(self, name: str) -> PersistentVolume:
        pv = self.pvs.get(name)
        if pv is None:
            raise NotFoundError("persistentvolume", name)
        return pv

    def get_class(self, name: str) -> StorageClass:
        sc = self.classes.get(name)
        if sc is None:
            raise NotFoundError("storageclass.storage.k8s.io", name)
        return sc

    def pvs_of_class(self, class_name: str) -> Iterator[PersistentVolume]:
        for pv in self.pvs.values():
            if pv.storage_class == class_name:
                yield pv


# ---------------------------------------------------------------------------------------------
# Pod volumes

# The volume sources the volume plugins read, as objects.py checks them on pod parse (a pod
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


class PodVolume:
    """One entry of pod.spec.volumes, reduced to what the volume plugins read."""

    __slots__ = ("claim_name", "csi_driver", "ephemeral", "name", "raw", "read_only")

    def __init__(self, raw: Raw, pod_name: str) -> None:
        self.raw = raw
        self.name = str(raw.get("name") or "")
        pvc = raw.get("persistentVolumeClaim")
        self.ephemeral = raw.get("ephemeral") is not None
        self.read_only = bool(pvc.get("readOnly")) if pvc else False
        if pvc is not None:
            self.claim_name: str | None = str(pvc.get("claimName") or "")
        elif self.ephemeral:
            # ephemeral.VolumeClaimName: <pod name>-<volume name>.
            self.claim_name = f"{pod_name}-{self.name}"
        else:
            self.claim_name = None
        csi = raw.get("csi")
        self.csi_driver = str(csi.get("driver") or "") if csi else ""


def pod_volumes(pod: Any) -> tuple[PodVolume, ...]:
    """The pod's volumes as PodVolume (empty tuple for the common no-volume pod)."""
    vols = pod.volumes
    if not vols:
        return ()
    return tuple(PodVolume(v, pod.name) for v in vols)


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
