"""Cluster objects that are neither pods nor nodes but that plugins read: namespaces (their
labels, for namespace selectors) and the workload objects whose selectors default spreading
uses."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.model.kinds import Raw
from scheduler.model.labels import LabelSelector
from scheduler.model.schema import NAMESPACE as NAMESPACE_SCHEMA
from scheduler.model.schema import OWNER as OWNER_SCHEMA
from scheduler.model.schema import object_error


@dataclass(slots=True)
class NamespaceInfo:
    name: str
    labels: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(raw: Raw) -> NamespaceInfo:
        try:
            meta = raw.get("metadata") or {}
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            return NamespaceInfo(str(meta.get("name", "")), labels)
        except Exception as exc:
            raise object_error("Namespace", raw, NAMESPACE_SCHEMA, exc) from None


@dataclass(slots=True)
class SelectorOwner:
    """A Service, ReplicaSet, StatefulSet or ReplicationController: what default spreading needs."""

    kind: str
    namespace: str
    name: str
    selector: LabelSelector | None

    @staticmethod
    def parse(raw: Raw) -> SelectorOwner:
        try:
            return SelectorOwner._parse(raw)
        except Exception as exc:
            raise object_error(str(raw.get("kind") or "Object"), raw, OWNER_SCHEMA, exc) from None

    @staticmethod
    def _parse(raw: Raw) -> SelectorOwner:
        meta = raw.get("metadata") or {}
        kind = str(raw.get("kind", ""))
        spec = raw.get("spec") or {}
        sel_raw = spec.get("selector")
        sel: LabelSelector | None
        if kind in ("Service", "ReplicationController"):
            # These use plain map selectors; an empty map selects nothing for spreading.
            sel = LabelSelector.parse({"matchLabels": sel_raw}) if sel_raw else None
        else:
            sel = LabelSelector.parse(sel_raw) if sel_raw is not None else None
        return SelectorOwner(kind, str(meta.get("namespace") or "default"), str(meta.get("name", "")), sel)
