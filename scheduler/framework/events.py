"""What changed in the cluster, in the terms the queue requeues by (upstream framework/types.go
ActionType, ClusterEvent, QueueingHint; framework/events.go's *SchedulingPropertiesChange).

The handlers turn a watch event into a ``ClusterEvent`` with the functions here; plugins
register the events that may make a pod they rejected schedulable, each with an optional hint.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    # Appended rather than placed as upstream orders it, so the other values stay put.
    UPDATE_NODE_DECLARED_FEATURE = 4096
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


class QueueingHint(enum.IntEnum):
    QUEUE_SKIP = 0
    QUEUE = 1


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str  # "Pod", "AssignedPod", "UnscheduledPod", "Node", "Namespace", "Service", "*", ...
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether ``other`` (an event that happened) is covered by this registered event."""
        if self.resource not in ("*", other.resource) and not (
            self.resource == "Pod" and other.resource in ("AssignedPod", "UnscheduledPod")
        ):
            return False
        return bool(self.action & other.action)


# hint(pod, old_obj, new_obj) -> QueueingHint
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


# The kinds a wildcard registration stands for when events are registered one by one
# (upstream UnrollWildCardResource; PodGroup only with GenericWorkload).
UNROLLED_WILDCARD_RESOURCES: tuple[str, ...] = (
    "Pod",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "StorageClass",
    "ResourceClaim",
    "DeviceClass",
)


def unroll_wildcard_resource(generic_workload: bool = False) -> list[ClusterEventWithHint]:
    """Every kind with every action, no hint: what a registrant without its own events gets."""
    kinds = (*UNROLLED_WILDCARD_RESOURCES, "PodGroup") if generic_workload else UNROLLED_WILDCARD_RESOURCES
    return [ClusterEventWithHint(ClusterEvent(k, ActionType.ALL)) for k in kinds]


# ---------------------------------------------------------------------------------------------
# What changed in an object, as actions


def pod_update_events(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
    """What changed in an unscheduled pod, as cluster events (upstream PodSchedulingPropertiesChange)."""
    actions = ActionType(0)
    if old.labels != new.labels:
        actions |= ActionType.UPDATE_POD_LABEL
    # Upstream compares only the count: the API lets tolerations be added, not edited or removed.
    if len(old.tolerations) != len(new.tolerations):
        actions |= ActionType.UPDATE_POD_TOLERATION
    if old.scheduling_gates and not new.scheduling_gates:
        actions |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    old_rcs = (old.raw.get("status") or {}).get("resourceClaimStatuses")
    if old_rcs != (new.raw.get("status") or {}).get("resourceClaimStatuses"):
        actions |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    r_old, r_new = old.requests, new.requests
    if any(r_new.get(n) < r_old.get(n) for n in set(r_old.names()) | set(r_new.names())):
        actions |= ActionType.UPDATE_POD_SCALE_DOWN
    if not actions:
        return []
    return [ClusterEvent("UnscheduledPod", actions)]


def assigned_pod_update_action(old: PodInfo, new: PodInfo) -> ActionType:
    """What changed in a bound pod that may let others in (upstream extractPodLabelsChange,
    extractPodScaleDown)."""
    a = ActionType(0)
    if old.labels != new.labels:
        a |= ActionType.UPDATE_POD_LABEL
    names = set(old.requests.names()) | set(new.requests.names())
    if any(new.requests.get(n) < old.requests.get(n) for n in names):
        a |= ActionType.UPDATE_POD_SCALE_DOWN
    return a


def node_update_action(old: NodeInfo, new: NodeInfo, declared_features: bool = True) -> ActionType:
    """Which scheduling-relevant properties of a node changed (upstream nodeSchedulingPropertiesChange);
    declared features only with the NodeDeclaredFeatures gate (``declared_features``)."""
    a = ActionType(0)
    if old.unschedulable != new.unschedulable:
        a |= ActionType.UPDATE_NODE_TAINT  # NodeSpecUnschedulableChange is registered as a taint update
    if old.allocatable != new.allocatable:
        a |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        a |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints:
        a |= ActionType.UPDATE_NODE_TAINT
    o_raw, n_raw = old.raw or {}, new.raw or {}
    o_st, n_st = o_raw.get("status") or {}, n_raw.get("status") or {}

    def conds(st: Mapping[str, Any]) -> dict[str, str]:
        return {str(c.get("type")): str(c.get("status")) for c in st.get("conditions") or []}

    if conds(o_st) != conds(n_st):
        a |= ActionType.UPDATE_NODE_CONDITION
    if (o_raw.get("metadata") or {}).get("annotations") != (n_raw.get("metadata") or {}).get("annotations"):
        a |= ActionType.UPDATE_NODE_ANNOTATION
    if declared_features and old.declared_features != new.declared_features:
        a |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return a


# Upstream's resource names where this module's differ (types.go: unschedulablePod).
_LABEL_RESOURCE = {"UnscheduledPod": "UnschedulablePod"}
_LABELS: dict[ClusterEvent, str] = {}


def event_label(ev: ClusterEvent) -> str:
    """Upstream ClusterEvent.Label(), the value of the ``event`` label in the metrics: the
    custom label, else the resource and the action ("NodeAdd", "AssignedPodUpdatePodLabel").
    Upstream sends one event per changed property; a combined action here is named by its
    lowest flag."""
    label = _LABELS.get(ev)
    if label is None:
        if ev.label:
            label = ev.label
        else:
            a = ev.action
            if a in (ActionType.ALL, ActionType.UPDATE) or a.bit_count() <= 1:
                flag = a
            else:
                flag = ActionType(a & -a)
            name = "All" if flag == ActionType.ALL else (flag.name or "").title().replace("_", "")
            label = _LABEL_RESOURCE.get(ev.resource, ev.resource) + name
        _LABELS[ev] = label
    return label
