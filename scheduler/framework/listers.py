"""What plugins read besides the snapshot's nodes (upstream framework's listers and the DRA
manager): namespaces, default spreading's owners, PodDisruptionBudgets, the stores of storage
and DRA objects, and the informers of kinds plugins name (framework/informers.py), fed by the
watch (live) or the input file (simulate).

A store's ``on_event(kind, etype, raw)`` is the live event handlers' hook, ``apply(kind, raw)``
is simulate's for each object of its input file. Lookups mirror upstream listers, including
their NotFound messages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from scheduler.framework.informers import InformerFactory
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.dra import (
    DeviceClass,
    DevicesInUse,
    ExtendedResourceCache,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from scheduler.model.kinds import DRA_KINDS, Raw, metadata
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.podgroup import PodGroup
from scheduler.model.quantity import Quantity, QuantityError
from scheduler.model.schema import DRA, STORAGE, object_error
from scheduler.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    NotFoundError,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

_K = TypeVar("_K")

# How many changes StorageStore remembers for ``changes_since``; a reader further behind starts over.
CHANGE_LOG_MAX = 4096

_STORAGE_TYPES: dict[str, type] = {
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

    __slots__ = (
        "_log",
        "capacities",
        "classes",
        "csi_drivers",
        "csi_nodes",
        "pvcs",
        "pvs",
        "version",
        "volume_attachments",
    )

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
        # (version, kind, key) of the latest changes, so that a cache can drop only what a
        # change touches (PVs change with every claim the PV controller binds).
        self._log: deque[tuple[int, str, str]] = deque(maxlen=CHANGE_LOG_MAX)

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
        cls = _STORAGE_TYPES.get(kind)
        if cls is None:
            return None
        try:
            obj = cls(raw)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # One line naming the object (and the field when the outline shows it).
            raise object_error(kind, raw, STORAGE, exc) from None
        key = getattr(obj, "key", None) or obj.name
        table = self._table(kind)
        self._changed(kind, key, table.get(key), obj)
        table[key] = obj
        return obj

    def _changed(self, kind: str, key: str, old: Any, new: Any) -> None:
        self.version += 1
        log = self._log
        if kind == "VolumeAttachment":
            # Read per node (a node's attachments), so logged under the node names.
            for node in {va.node_name for va in (old, new) if va is not None}:
                log.append((self.version, kind, node))
        else:
            log.append((self.version, kind, key))

    def changes_since(self, version: int) -> list[tuple[str, str]] | None:
        """(kind, key) of every change after ``version`` (a VolumeAttachment's key is its node's
        name), or None when the log no longer reaches back that far."""
        if version == self.version:
            return []
        log = self._log
        # Only a retained entry at or before ``version`` proves nothing after it was dropped.
        if not log or log[0][0] > version:
            return None
        out: list[tuple[str, str]] = []
        for v, kind, key in reversed(log):
            if v <= version:
                break
            out.append((kind, key))
        return out

    def on_event(self, kind: str, etype: str | None, raw: Raw) -> tuple[Any, Any] | None:
        """The watcher's hook: apply one watch event ("ADDED", "MODIFIED", "DELETED"; None
        counts as an add or update) and return ``(old, new)`` parsed objects for the queue's
        hints (``None`` on the missing side), or None for a kind this store does not hold.

        The caller moves pods with ``ClusterEvent(kind, ADD | UPDATE | DELETE)``: ADD when
        ``old`` is None, DELETE when ``new`` is None, UPDATE otherwise.
        """
        if kind not in _STORAGE_TYPES:
            return None
        if etype == "DELETED":
            return self.delete(kind, raw), None
        meta = metadata(raw)
        name = str(meta.get("name", ""))
        if kind in ("PersistentVolumeClaim", "CSIStorageCapacity"):
            ns = meta.get("namespace") or ("default" if kind == "PersistentVolumeClaim" else "")
            name = f"{ns}/{name}"
        old = self._table(kind).get(name)
        return old, self.apply(kind, raw)

    def delete(self, kind: str, raw: Raw) -> Any:
        """Remove one object; returns what was stored, if anything."""
        if kind not in _STORAGE_TYPES:
            return None
        meta = metadata(raw)
        name = str(meta.get("name", ""))
        if kind in ("PersistentVolumeClaim", "CSIStorageCapacity"):
            ns = meta.get("namespace") or ("default" if kind == "PersistentVolumeClaim" else "")
            name = f"{ns}/{name}"
        old = self._table(kind).pop(name, None)
        self._changed(kind, name, old, None)
        return old

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


def _count(table: dict[_K, int], ids: Iterable[_K], step: int) -> None:
    for d in ids:
        n = table.get(d, 0) + step
        if n:
            table[d] = n
        else:
            del table[d]


class ClaimNotFound(LookupError):
    """What upstream's assume cache says for a claim it does not hold."""


def _rv(raw: Raw) -> int:
    try:
        return int(str(metadata(raw).get("resourceVersion") or "0"))
    except ValueError:
        return 0


# dedicated (driver, pool, device) ids, shared (device, shareID) ids, capacity consumed per device
AllocatedDevices = tuple[
    set[tuple[str, str, str]], set[tuple[str, str, str, str]], dict[tuple[str, str, str], dict[str, Quantity]]
]


class DraStore:
    """Informer-like store of the DRA objects plus the scheduler's own view of claims:
    an assume cache (claims as the scheduler last wrote them, until the watch catches up) and
    in-flight allocations (made in Reserve, not yet written in PreBind)."""

    __slots__ = (
        "_allocated_memo",
        "_consumers",
        "_dedicated",
        "_shared",
        "_use",
        "assumed",
        "claims",
        "classes",
        "classes_version",
        "extended",
        "extended_claims",
        "in_flight",
        "slices",
        "slices_version",
        "templates",
        "version",
    )

    def __init__(self) -> None:
        self.claims: dict[str, ResourceClaim] = {}  # namespace/name, informer version
        self.assumed: dict[str, ResourceClaim] = {}  # namespace/name, written by the scheduler
        self.in_flight: dict[str, ResourceClaim] = {}  # uid -> claim with the pending allocation
        self.templates: dict[str, ResourceClaimTemplate] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        # Extended resource name -> DeviceClass (DRAExtendedResource), kept with the classes.
        self.extended = ExtendedResourceCache()
        # Keys of the claims made for pods' extended resources, by owning pod uid (so finding a
        # pod's claim does not scan every claim).
        self.extended_claims: dict[str, set[str]] = {}
        self.version = 0
        # Moves with every ResourceSlice change only: what is worked out from the slices alone
        # (the allocator's pools per node) is kept until it moves.
        self.slices_version = 0
        # Moves with every DeviceClass change only.
        self.classes_version = 0
        self._allocated_memo: tuple[int, AllocatedDevices] | None = None
        # Devices in use, kept up to date claim by claim (summing every claim in each PreFilter
        # grew with the cluster's claims). A source is "k<namespace/name>" for the stored or
        # assumed claim, "f<uid>" for an in-flight allocation; the counts say how many sources
        # hold a device (a claim being re-allocated may briefly hold one twice).
        self._use: dict[str, DevicesInUse] = {}
        self._dedicated: dict[tuple[str, str, str], int] = {}
        self._shared: dict[tuple[str, str, str, str], int] = {}
        self._consumers: set[str] = set()

    # -- events ------------------------------------------------------------------------------
    def apply(self, kind: str, raw: Raw) -> Any:
        try:
            if kind == "ResourceClaim":
                c = ResourceClaim(raw)
                old = self.claims.get(c.key)
                if old is not None and old.is_extended_resource_claim():
                    self._unindex(old)
                if c.is_extended_resource_claim():
                    self.extended_claims.setdefault(c.controller_uid, set()).add(c.key)
                self.claims[c.key] = c
                a = self.assumed.get(c.key)
                # The assume cache keeps the scheduler's write until the watch shows it (or newer).
                if a is not None and (a.uid != c.uid or _rv(raw) >= _rv(a.raw)):
                    del self.assumed[c.key]
                self._refresh_use(c.key)
                obj: Any = c
            elif kind == "ResourceClaimTemplate":
                obj = ResourceClaimTemplate(raw)
                self.templates[obj.key] = obj
            elif kind == "DeviceClass":
                obj = DeviceClass(raw)
                self.extended.on_update(self.classes.get(obj.name), obj)
                self.classes[obj.name] = obj
                self.classes_version += 1
            elif kind == "ResourceSlice":
                obj = ResourceSlice(raw)
                self.slices[obj.name] = obj
                self.slices_version += 1
            else:
                return None
        except (ValueError, TypeError, AttributeError, KeyError, QuantityError) as exc:
            # One line naming the object (and the field when the outline shows it), refused as
            # the watcher refuses any object it cannot parse.
            raise object_error(kind, raw, DRA, exc) from None
        self.version += 1
        return obj

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates,
            "DeviceClass": self.classes,
            "ResourceSlice": self.slices,
        }
        return tables[kind]

    @staticmethod
    def _key(kind: str, raw: Raw) -> str:
        meta = metadata(raw)
        if kind in ("ResourceClaim", "ResourceClaimTemplate"):
            return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        return str(meta.get("name") or "")

    def on_event(self, kind: str, etype: str | None, raw: Raw) -> tuple[Any, Any] | None:
        if kind not in DRA_KINDS:
            return None
        key = self._key(kind, raw)
        if etype == "DELETED":
            self.version += 1
            if kind == "ResourceSlice":
                self.slices_version += 1
            elif kind == "DeviceClass":
                self.classes_version += 1
            if kind == "ResourceClaim":
                self.assumed.pop(key, None)
            gone = self._table(kind).pop(key, None)
            if kind == "ResourceClaim":
                self._refresh_use(key)
            if isinstance(gone, DeviceClass):
                self.extended.on_delete(gone)
            elif isinstance(gone, ResourceClaim) and gone.is_extended_resource_claim():
                self._unindex(gone)
            return gone, None
        old = self.get_claim_or_none(*key.split("/", 1)) if kind == "ResourceClaim" else self._table(kind).get(key)
        return old, self.apply(kind, raw)

    def _unindex(self, claim: ResourceClaim) -> None:
        keys = self.extended_claims.get(claim.controller_uid)
        if keys is not None:
            keys.discard(claim.key)
            if not keys:
                del self.extended_claims[claim.controller_uid]

    def extended_claim_for(self, pod_name: str, pod_uid: str) -> ResourceClaim | None:
        """findExtendedResourceClaim: the claim annotated as a pod's extended-resource claim
        whose controller is that pod (name and uid)."""
        for key in sorted(self.extended_claims.get(pod_uid, ())):
            c = self.get_claim_or_none(*key.split("/", 1))
            if c is not None and c.is_extended_resource_claim() and c.controller_name == pod_name:
                return c
        return None

    # -- claims (assume cache view) ----------------------------------------------------------
    def get_claim_or_none(self, namespace: str, name: str) -> ResourceClaim | None:
        key = f"{namespace}/{name}"
        return self.assumed.get(key) or self.claims.get(key)

    def get_claim(self, namespace: str, name: str) -> ResourceClaim:
        c = self.get_claim_or_none(namespace, name)
        if c is None:
            raise ClaimNotFound(f'could not find ResourceClaim "{namespace}/{name}"')
        return c

    def all_claims(self) -> Iterator[ResourceClaim]:
        for key, c in self.claims.items():
            yield self.assumed.get(key, c)
        for key, c in self.assumed.items():
            if key not in self.claims:
                yield c

    def assume(self, claim: ResourceClaim) -> None:
        """AssumeClaimAfterAPICall: the claim as the API returned it after our write."""
        cur = self.claims.get(claim.key)
        if cur is not None and _rv(cur.raw) >= _rv(claim.raw) and cur.uid == claim.uid:
            return
        self.assumed[claim.key] = claim
        self._refresh_use(claim.key)
        self.version += 1

    def restore(self, key: str) -> None:
        """AssumedClaimRestore: drop the scheduler's version, back to the informer's."""
        if self.assumed.pop(key, None) is not None:
            self._refresh_use(key)
            self.version += 1

    def signal_pending(self, claim: ResourceClaim) -> None:
        old = self.in_flight.get(claim.uid)
        self.in_flight[claim.uid] = claim
        self._set_use(f"f{claim.uid}", claim)
        if old is not None and old.key != claim.key:
            self._refresh_use(old.key)
        self._refresh_use(claim.key)
        self.version += 1

    def remove_pending(self, uid: str) -> bool:
        gone = self.in_flight.pop(uid, None)
        if gone is not None:
            self._set_use(f"f{uid}", None)
            self._refresh_use(gone.key)
            self.version += 1
            return True
        return False

    def _refresh_use(self, key: str) -> None:
        """The devices the claim at ``key`` holds: the assumed or stored one, unless an in-flight
        allocation of the same claim stands for it."""
        c = self.get_claim_or_none(*key.split("/", 1))
        self._set_use(f"k{key}", c if c is not None and c.uid not in self.in_flight else None)

    def _set_use(self, source: str, claim: ResourceClaim | None) -> None:
        old = self._use.pop(source, None)
        if old is not None:
            _count(self._dedicated, old[0], -1)
            _count(self._shared, old[1], -1)
            self._consumers.discard(source)
        if claim is None or claim.allocation is None:
            return
        use = claim.devices_in_use()
        if not (use[0] or use[1] or use[2]):
            return
        self._use[source] = use
        _count(self._dedicated, use[0], 1)
        _count(self._shared, use[1], 1)
        if use[2]:
            self._consumers.add(source)

    def allocated_devices(self) -> AllocatedDevices:
        """Devices in use by any claim (stored or in flight): dedicated device ids, shared
        (device, shareID) ids and the capacity consumed on shared devices. Read-only to the
        caller: the answer is kept until the store's version moves (every PreFilter of a pod
        with claims asks, and walking every claim each time grew with the cluster's claims)."""
        memo = self._allocated_memo
        if memo is not None and memo[0] == self.version:
            return memo[1]
        consumed: dict[tuple[str, str, str], dict[str, Quantity]] = {}
        for source in self._consumers:
            for dev, caps in self._use[source][2].items():
                tot = consumed.setdefault(dev, {})
                for n, q in caps.items():
                    tot[n] = tot[n].add(q) if n in tot else q
        got = (set(self._dedicated), set(self._shared), consumed)
        self._allocated_memo = (self.version, got)
        return got

    # -- listers -----------------------------------------------------------------------------
    def get_class(self, name: str) -> DeviceClass | None:
        return self.classes.get(name)

    def list_slices(self) -> list[ResourceSlice]:
        return list(self.slices.values())


class Listers:
    """Cluster objects that are not nodes or pods, as plugins need them (upstream listers)."""

    def __init__(self) -> None:
        self.namespaces: dict[str, NamespaceInfo] = {}
        # kind -> namespace/name -> owner
        self.owners: dict[str, dict[str, SelectorOwner]] = {}
        # Parsed storage objects (PV, PVC, StorageClass, CSI*) for the volume plugins.
        self.storage = StorageStore()
        # PodDisruptionBudgets by namespace/name, in arrival order (DefaultPreemption).
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        # ResourceClaims, templates, DeviceClasses, ResourceSlices for DynamicResources.
        self.dra = DraStore()
        # Informers for the kinds plugins name (Handle.shared_informer_factory).
        self.informers = InformerFactory()
        # scheduling.k8s.io/v1alpha2 PodGroups by namespace/name (GenericWorkload).
        self.pod_groups: dict[str, PodGroup] = {}

    def get_pod_group(self, namespace: str, name: str) -> PodGroup:
        """The PodGroup lister's Get: NotFoundError as the API's NotFound."""
        pg = self.pod_groups.get(f"{namespace}/{name}")
        if pg is None:
            raise NotFoundError("podgroup.scheduling.k8s.io", name)
        return pg

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self.namespaces.get(name)
        return ns.labels if ns is not None else None

    def owners_in(self, namespace: str, kind: str) -> list[SelectorOwner]:
        return [o for o in self.owners.get(kind, {}).values() if o.namespace == namespace]
