"""PodTopologySpread queueing hints (upstream podtopologyspread/plugin.go isSchedulableAfter*).

``constraints`` are the pod's DoNotSchedule constraints (its own or the defaults), as the
plugin's getConstraints returns them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.events import QueueingHint
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_node, as_pod
from scheduler.plugins.podtopologyspread.common import Constraint


def _involved(incoming: PodInfo, with_spreading: PodInfo) -> bool:
    """involvedInTopologySpreading."""
    if incoming.uid == with_spreading.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == with_spreading.namespace


def _labels_match(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    return any(c.selector.matches(labels) for c in constraints)


def _node_has_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def after_pod_change(constraints: Sequence[Constraint], pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
    old, new = as_pod(old_obj), as_pod(new_obj)
    if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
        return QueueingHint.QUEUE_SKIP
    if new is not None and old is not None:
        if (
            pod.uid == new.uid
            and new.tolerations != old.tolerations
            and any(c.taints_honor for c in constraints)
        ):
            return QueueingHint.QUEUE  # a new toleration can widen the honoured nodes
        if new.labels == old.labels:
            return QueueingHint.QUEUE_SKIP
        for c in constraints:
            if c.selector.matches(old.labels) != c.selector.matches(new.labels):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if new is not None:
        return QueueingHint.QUEUE if _labels_match(constraints, new.labels) else QueueingHint.QUEUE_SKIP
    if old is None:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if _labels_match(constraints, old.labels) else QueueingHint.QUEUE_SKIP


def after_node_change(constraints: Sequence[Constraint], pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
    old, new = as_node(old_obj), as_node(new_obj)
    old_ok = old is not None and _node_has_keys(old.labels, constraints)
    new_ok = new is not None and _node_has_keys(new.labels, constraints)
    if old is not None and new is not None:
        if old_ok != new_ok:
            return QueueingHint.QUEUE
        if new_ok and (
            any(old.labels.get(c.topology_key, "") != new.labels.get(c.topology_key, "") for c in constraints)
            or old.taints != new.taints
        ):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if new is not None:
        return QueueingHint.QUEUE if new_ok else QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if old_ok else QueueingHint.QUEUE_SKIP
