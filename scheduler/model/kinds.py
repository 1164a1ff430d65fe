"""The API kinds the scheduler reads, in one table, and the accessors every object's fields share.

Each kind has its API group/version, its plural (the collection's URL) and its role: which part
of the scheduler consumes it. The watcher lists and watches the ``watched`` kinds, the live
event handlers and ``simulate`` dispatch on the role, and the stores check the kinds they own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

# An API object as decoded JSON (a watch event's body, a YAML document).
Raw = Mapping[str, Any]


class Role(Enum):
    """Who reads a kind."""

    POD = "pod"  # the cache and the queue
    NODE = "node"  # the cache
    NAMESPACE = "namespace"  # namespace selectors of affinity terms (InterPodAffinity)
    OWNER = "owner"  # default spreading's selectors (PodTopologySpread's system defaulting)
    STORAGE = "storage"  # the volume plugins' store
    PDB = "pdb"  # DefaultPreemption's PodDisruptionBudget lister
    DRA = "dra"  # DynamicResources' store
    PRIORITY = "priority"  # Priority admission: simulate applies it, live pods arrive with it applied


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    api_version: str  # "v1" for the core group, else "<group>/<version>"
    plural: str
    role: Role
    watched: bool = True  # the live scheduler has an informer for it

    @property
    def path(self) -> str:
        """The collection's URL path: /api/v1/pods, /apis/apps/v1/replicasets."""
        root = "/apis/" if "/" in self.api_version else "/api/"
        return f"{root}{self.api_version}/{self.plural}"


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("Pod", "v1", "pods", Role.POD),
        Kind("Node", "v1", "nodes", Role.NODE),
        Kind("Namespace", "v1", "namespaces", Role.NAMESPACE),
        Kind("Service", "v1", "services", Role.OWNER),
        Kind("ReplicationController", "v1", "replicationcontrollers", Role.OWNER),
        Kind("ReplicaSet", "apps/v1", "replicasets", Role.OWNER),
        Kind("StatefulSet", "apps/v1", "statefulsets", Role.OWNER),
        # kube-scheduler's PV, PVC, StorageClass, CSINode, CSIDriver, CSIStorageCapacity and
        # VolumeAttachment informers.
        Kind("PersistentVolume", "v1", "persistentvolumes", Role.STORAGE),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", Role.STORAGE),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", Role.STORAGE),
        Kind("CSINode", "storage.k8s.io/v1", "csinodes", Role.STORAGE),
        Kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", Role.STORAGE),
        Kind("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", Role.STORAGE),
        Kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", Role.STORAGE),
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", Role.PDB),
        # kube-scheduler's resource.k8s.io informers.
        Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", Role.DRA),
        Kind("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", Role.DRA),
        Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", Role.DRA),
        Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices", Role.DRA),
        Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", Role.PRIORITY, watched=False),
    )
}


def kinds_of(role: Role) -> tuple[str, ...]:
    return tuple(k.name for k in KINDS.values() if k.role is role)


WATCHED_KINDS = tuple(k.name for k in KINDS.values() if k.watched)
STORAGE_KINDS = kinds_of(Role.STORAGE)
DRA_KINDS = kinds_of(Role.DRA)


def as_map(v: Any) -> Mapping[str, Any]:
    """``v`` if it is an object, else an empty one: reads of optional fields that tolerate a
    wrong type (it is reported elsewhere, or not read at all)."""
    return v if type(v) is dict or isinstance(v, Mapping) else {}


def as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else []


def metadata(raw: Raw) -> Mapping[str, Any]:
    """``raw.metadata``, or an empty mapping when it is missing or not an object."""
    m = raw.get("metadata")
    return m if type(m) is dict or isinstance(m, Mapping) else {}
