"""The informer store: what the watch last delivered per kind, and client-go's Replace semantics.

A LIST (the first one, or a re-list after the watch fell behind a compaction, or the periodic
resync) is a full statement of what exists. Objects the store knows that the list lacks were
deleted while nobody watched: ``end_list`` returns a DELETED event for each, built from what the
store kept, so the cache frees their capacity and the queue wakes exactly as for a watched
delete (upstream DeltaFIFO.Replace with DeletedFinalStateUnknown).

The store also drops events that cannot matter: an unchanged resourceVersion (every re-listed
object that did not change), and updates whose scheduling-relevant fields are equal (kwok's and
the kubelet's status churn on bound pods and node heartbeats). Pure logic, no I/O: the watcher
drives it, the unit tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.model.kinds import Raw, as_map, metadata

Event = tuple[str, Raw]  # (ADDED | MODIFIED | DELETED, object)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def key_by_name(raw: Raw) -> str:
    meta = metadata(raw)
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def key_by_uid(raw: Raw) -> str:
    # Pods: the cache and the queue know a pod by uid; a pod re-created under the same name in a
    # watch gap is a delete plus an add, not an update.
    meta = metadata(raw)
    return str(meta.get("uid") or key_by_name(raw))


def pod_fingerprint(raw: Raw) -> Any:
    """What of a *bound* pod the cache and the plugins read. None (always deliver) for a pending
    pod: the queue compares versions itself and the binder reads its status conditions."""
    spec = raw.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    meta = metadata(raw)
    status = raw.get("status") or {}
    return (
        spec,
        meta.get("labels"),
        meta.get("deletionTimestamp"),
        meta.get("ownerReferences"),
        status.get("phase"),
        status.get("nominatedNodeName"),
        status.get("startTime"),
        # In-place resize: a running pod counts the larger of spec and what its status reports.
        status.get("resources"),
        status.get("allocatedResources"),
        tuple((cs.get("name"), cs.get("resources"), cs.get("allocatedResources"))
              for key in ("containerStatuses", "initContainerStatuses") for cs in status.get(key) or ()),
        tuple((c.get("status"), c.get("reason")) for c in status.get("conditions") or ()
              if c.get("type") == "PodResizePending"),
    )


def node_fingerprint(raw: Raw) -> Any:
    """Everything of a node the cache parses or the update classification compares; condition
    heartbeats and timestamps are left out."""
    meta = metadata(raw)
    status = raw.get("status") or {}
    conds = tuple((c.get("type"), c.get("status")) for c in status.get("conditions") or ())
    return (
        meta.get("labels"),
        meta.get("annotations"),
        raw.get("spec"),
        status.get("allocatable"),
        status.get("capacity"),
        status.get("images"),
        status.get("declaredFeatures"),
        conds,
    )


def labels_fingerprint(raw: Raw) -> Any:
    return metadata(raw).get("labels")


def selector_fingerprint(raw: Raw) -> Any:
    return ((raw.get("spec") or {}).get("selector"), metadata(raw).get("labels"))


def storage_fingerprint(raw: Raw) -> Any:
    """StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment: everything but
    status and bookkeeping metadata. Status churn (VolumeAttachment attach state) is not read."""
    meta = metadata(raw)
    body = {k: v for k, v in raw.items() if k not in ("metadata", "status", "apiVersion", "kind")}
    return (meta.get("labels"), meta.get("annotations"), meta.get("deletionTimestamp"), body)


# PVs and PVCs are delivered on every resourceVersion change: VolumeBinding's assume cache and
# PreBind's writes (an Update carries the stored resourceVersion) need the newest version, or
# the write conflicts.
UNFILTERED_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "ResourceClaim"})
STORAGE_FILTERED_KINDS = frozenset({"StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment",
                                    "ResourceClaimTemplate", "DeviceClass", "ResourceSlice"})


def tombstone(raw: Raw, kind: str) -> dict[str, Any]:
    """The little of an object a delete handler reads (identity and labels), so the store does
    not keep whole bodies alive."""
    meta = metadata(raw)
    keep = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels") if k in meta}
    out: dict[str, Any] = {"kind": kind, "metadata": keep}
    if kind == "Pod":
        spec = as_map(raw.get("spec"))
        out["spec"] = {"nodeName": spec.get("nodeName", ""), "schedulerName": spec.get("schedulerName", "")}
    return out


class _Entry:
    __slots__ = ("fp", "rv", "tomb")

    def __init__(self, rv: str, fp: Any, tomb: dict[str, Any]) -> None:
        self.rv = rv
        self.fp = fp
        self.tomb = tomb


class Store:
    """One kind's known objects (by key) and the Replace bookkeeping of the list in progress."""

    def __init__(
        self,
        kind: str,
        key: Callable[[Raw], str] = key_by_name,
        fingerprint: Callable[[Raw], Any] | None = None,
    ) -> None:
        self.kind = kind
        self._key = key
        self._fingerprint = fingerprint
        self.entries: dict[str, _Entry] = {}
        self._listed: set[str] | None = None  # keys seen by the list in progress
        self.skipped = 0  # events dropped as no-ops (for the metrics and the benchmark)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    @property
    def listing(self) -> bool:
        return self._listed is not None

    def begin_list(self) -> None:
        self._listed = set()

    def abort_list(self) -> None:
        """A list that failed half-way proves nothing about what is absent."""
        self._listed = None

    def apply(self, etype: str | None, raw: Raw) -> str | None:
        """Record one event (``etype`` None = an item of the list in progress). Returns the
        event type to deliver, or None when the event changes nothing the scheduler reads."""
        key = self._key(raw)
        if etype == DELETED:
            self.entries.pop(key, None)
            if self._listed is not None:
                self._listed.discard(key)
            return DELETED
        if self._listed is not None and etype is None:
            self._listed.add(key)
        meta = metadata(raw)
        rv = str(meta.get("resourceVersion") or "")
        old = self.entries.get(key)
        if old is not None and rv and old.rv == rv:
            self.skipped += 1
            return None
        fp = None
        if self._fingerprint is not None:
            try:
                fp = self._fingerprint(raw)
            except (AttributeError, TypeError):
                # A malformed body (a list where an object belongs): always delivered, and the
                # handlers refuse it naming the field.
                fp = None
        if old is not None and fp is not None and old.fp == fp:
            old.rv = rv
            self.skipped += 1
            return None
        self.entries[key] = _Entry(rv, fp, tombstone(raw, self.kind))
        return ADDED if old is None else MODIFIED

    def forget(self, raw: Raw) -> None:
        """The handlers failed on this version: drop it so the next list delivers it again."""
        self.entries.pop(self._key(raw), None)

    def end_list(self) -> list[Event]:
        """The list is complete: every known object it did not show is gone. Returns the DELETED
        events to deliver (their last known identity)."""
        listed, self._listed = self._listed, None
        if listed is None:
            return []
        gone = [k for k in self.entries if k not in listed]
        return [(DELETED, self.entries.pop(k).tomb) for k in gone]


def store_for(kind: str) -> Store:
    if kind == "Pod":
        return Store(kind, key_by_uid, pod_fingerprint)
    if kind == "Node":
        return Store(kind, key_by_name, node_fingerprint)
    if kind == "Namespace":
        return Store(kind, key_by_name, labels_fingerprint)
    if kind in UNFILTERED_KINDS or kind in ("PodDisruptionBudget", "PodGroup"):
        # PDBs: preemption reads status.disruptionsAllowed; PodGroups: the scheduler reads back
        # the condition it wrote. Every change counts.
        return Store(kind, key_by_name)
    if kind in STORAGE_FILTERED_KINDS:
        return Store(kind, key_by_name, storage_fingerprint)
    return Store(kind, key_by_name, selector_fingerprint)
