"""The API kinds the scheduler reads, in one table, and the accessors every object's fields share.

Each kind has its API group/version, its plural (the collection's URL), its role (which part of
the scheduler consumes it) and who makes kube-scheduler v1.36.3 start an informer for it. The
live scheduler lists and watches exactly the kinds ``live_kinds`` names for its profiles and
feature gates; the live event handlers and ``simulate`` dispatch on the role, and the stores
check the kinds they own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
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
    WORKLOAD = "workload"  # workload-aware scheduling: the pod-group cycle and its plugins


# ``Kind.informer_for``: the scheduler itself asks for the informer (scheduler.go's pod and node
# informers and DRA manager, the queue's namespace lister, the shared CSINode manager).
SCHEDULER = "<scheduler>"


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    api_version: str  # "v1" for the core group, else "<group>/<version>"
    plural: str
    role: Role
    # Who makes kube-scheduler v1.36.3 start an informer for the kind: SCHEDULER, or the plugins
    # (by name) whose factories ask for its lister or register events on it. Empty: only
    # ``simulate`` reads it.
    informer_for: tuple[str, ...] = ()
    gate: str = ""  # a feature gate without which kube-scheduler has no informer for it

    @property
    def watched(self) -> bool:
        """The live scheduler may watch it (whether it does depends on ``live_kinds``)."""
        return bool(self.informer_for)

    @property
    def path(self) -> str:
        """The collection's URL path: /api/v1/pods, /apis/apps/v1/replicasets."""
        root = "/apis/" if "/" in self.api_version else "/api/"
        return f"{root}{self.api_version}/{self.plural}"


# The plugins' informers (their New functions in kube-scheduler v1.36.3; their EventsToRegister
# name no other kind): upstream creates these informers only when such a plugin is enabled.
_PV_USERS = ("NodeVolumeLimits", "VolumeBinding", "VolumeZone")
_PVC_USERS = ("NodeVolumeLimits", "VolumeBinding", "VolumeRestrictions", "VolumeZone")
# PodTopologySpread reads the pods' owners only for default constraints (its New calls
# setListers only then): name it to ``live_kinds`` only when it has some.
_OWNER_USERS = ("PodTopologySpread",)
DRA_GATE = "DynamicResourceAllocation"


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("Pod", "v1", "pods", Role.POD, (SCHEDULER,)),
        Kind("Node", "v1", "nodes", Role.NODE, (SCHEDULER,)),
        # The queue's namespace lister (and InterPodAffinity's namespaceSelector).
        Kind("Namespace", "v1", "namespaces", Role.NAMESPACE, (SCHEDULER,)),
        Kind("Service", "v1", "services", Role.OWNER, _OWNER_USERS),
        Kind("ReplicationController", "v1", "replicationcontrollers", Role.OWNER, _OWNER_USERS),
        Kind("ReplicaSet", "apps/v1", "replicasets", Role.OWNER, _OWNER_USERS),
        Kind("StatefulSet", "apps/v1", "statefulsets", Role.OWNER, _OWNER_USERS),
        Kind("PersistentVolume", "v1", "persistentvolumes", Role.STORAGE, _PV_USERS),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", Role.STORAGE, _PVC_USERS),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", Role.STORAGE, _PV_USERS),
        # scheduler.go builds the shared CSI manager on the CSINode lister whatever the plugins.
        Kind("CSINode", "storage.k8s.io/v1", "csinodes", Role.STORAGE, (SCHEDULER,)),
        Kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", Role.STORAGE, ("NodeVolumeLimits", "VolumeBinding")),
        Kind("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", Role.STORAGE, ("VolumeBinding",)),
        Kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", Role.STORAGE, ("NodeVolumeLimits",)),
        # The preemption evaluator's lister.
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", Role.PDB, ("DefaultPreemption",)),
        # scheduler.go's claim assume cache, ResourceSlice tracker and DRA manager (DeviceClasses),
        # made whenever the gate is on, whatever the profiles.
        Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", Role.DRA, (SCHEDULER,), DRA_GATE),
        # The resourceclaim controller turns templates into claims; kube-scheduler never reads
        # them (and system:kube-scheduler may not list them). ``simulate`` plays the controller.
        Kind("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", Role.DRA),
        Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", Role.DRA, (SCHEDULER,), DRA_GATE),
        Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices", Role.DRA, (SCHEDULER,), DRA_GATE),
        # Priority admission resolves a pod's priority before any scheduler sees it.
        Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", Role.PRIORITY),
        # scheduler.go's PodGroup lister, made whenever the gate is on (the pod-group cycle,
        # GangScheduling, TopologyPlacementGenerator and DefaultPreemption read it).
        Kind("PodGroup", "scheduling.k8s.io/v1alpha2", "podgroups", Role.WORKLOAD, (SCHEDULER,), "GenericWorkload"),
    )
}


def kinds_of(role: Role) -> tuple[str, ...]:
    return tuple(k.name for k in KINDS.values() if k.role is role)


WATCHED_KINDS = tuple(k.name for k in KINDS.values() if k.watched)
STORAGE_KINDS = kinds_of(Role.STORAGE)
DRA_KINDS = kinds_of(Role.DRA)


def live_kinds(plugins: Collection[str], gate_enabled: Callable[[str], bool]) -> tuple[str, ...]:
    """The kinds kube-scheduler v1.36.3 lists and watches when ``plugins`` are enabled (in any
    profile) and ``gate_enabled`` says which feature gates are on, in table order."""
    return tuple(
        k.name
        for k in KINDS.values()
        if k.watched
        and (not k.gate or gate_enabled(k.gate))
        and any(user == SCHEDULER or user in plugins for user in k.informer_for)
    )


def why_watched(kind: str, plugins: Collection[str]) -> str:
    """Who needs ``kind``, for a line that says why the scheduler cannot do without it."""
    k = KINDS[kind]
    users = [u for u in k.informer_for if u in plugins]
    if SCHEDULER in k.informer_for:
        return f"the scheduler itself (feature gate {k.gate})" if k.gate else "the scheduler itself"
    return "plugin" + ("s " if len(users) > 1 else " ") + ", ".join(users)


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
