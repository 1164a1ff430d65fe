"""InterPodAffinity queueing hints (upstream interpodaffinity/plugin.go isSchedulableAfter*).

They decide whether a cluster event may turn a pod this plugin rejected into a schedulable one;
QUEUE_SKIP leaves it in the unschedulable pool, as kube-scheduler does with hints on (default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.framework.events import QueueingHint
from scheduler.model.affinity import AffinityTerm
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_node, as_pod


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms: no terms never match. The namespace selector is evaluated
    against no labels, as upstream's hint does not resolve namespaces."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)


def _unassigned(p: PodInfo) -> bool:
    return not p.node_name and not p.nominated_node_name


def after_pod_change(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
    old, new = as_pod(old_obj), as_pod(new_obj)
    if new is not None and old is not None and pod.uid == new.uid:
        # Only label updates are registered: the target pod's own labels changed.
        return QueueingHint.QUEUE
    if (new is not None and _unassigned(new)) or (old is not None and _unassigned(old)):
        return QueueingHint.QUEUE_SKIP
    terms, anti = pod.affinity_required, pod.anti_affinity_required
    if new is not None and old is not None:
        if not matches_all(terms, old) and matches_all(terms, new):
            return QueueingHint.QUEUE
        if matches_all(anti, old) and not matches_all(anti, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if new is not None:
        return QueueingHint.QUEUE if matches_all(terms, new) else QueueingHint.QUEUE_SKIP
    if old is None:
        return QueueingHint.QUEUE
    # Deleted: it may have been what the target pod's anti-affinity avoided, or vice versa.
    if matches_all(anti, old) or matches_all(old.anti_affinity_required, pod):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_node_change(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
    old, new = as_node(old_obj), as_node(new_obj)
    if new is None:
        return QueueingHint.QUEUE
    for t in pod.affinity_required:
        key = t.topology_key
        if old is None:
            if key in new.labels:
                return QueueingHint.QUEUE  # a node joins with the affinity topology key
            continue
        if key in new.labels and (key not in old.labels or old.labels[key] != new.labels[key]):
            return QueueingHint.QUEUE  # the node gained the key or moved domains
    for t in pod.anti_affinity_required:
        if old is None:
            # Any new node may do: without the key it always accepts the pod.
            return QueueingHint.QUEUE
        key = t.topology_key
        if key in old.labels and (key not in new.labels or old.labels[key] != new.labels[key]):
            return QueueingHint.QUEUE  # the node lost the key or moved domains
    return QueueingHint.QUEUE_SKIP
