"""The cache debugger (upstream backend/cache/debugger): on SIGUSR2 the scheduler compares its
cache and queue with the cluster's objects and dumps both to the log.

Pure: the caller lists the cluster's nodes and pods (the informers' view) and logs what these
functions return.

- ``compare_nodes``: node names the cluster has and the cache lacks (missed), and the other way
  round (redundant).
- ``compare_pods``: pod UIDs, where the cache's side is every pod on a cached node plus every
  pod waiting in the queue (a pending pod of another scheduler is "missed", as upstream).
- ``dump_nodes`` / ``dump_queue``: the text kube-scheduler writes for each cached node (requested
  and allocatable resources, its pods, the pods nominated to it) and for the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduler.backend.cache import Cache
from scheduler.backend.nominator import PodNominator
from scheduler.backend.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE
from scheduler.framework.interface import QueuedPodInfo
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.resource import Resource


def compare_strings(actual: Iterable[str], cached: Iterable[str]) -> tuple[list[str], list[str]]:
    """(missed, redundant): in ``actual`` only, in ``cached`` only; both sorted, duplicates kept
    as a sorted merge keeps them (upstream compareStrings)."""
    a, c = sorted(actual), sorted(cached)
    missed: list[str] = []
    redundant: list[str] = []
    i = j = 0
    while i < len(a) or j < len(c):
        if j == len(c) or (i < len(a) and a[i] < c[j]):
            missed.append(a[i])
            i += 1
        elif i == len(a) or a[i] > c[j]:
            redundant.append(c[j])
            j += 1
        else:
            i += 1
            j += 1
    return missed, redundant


def compare_nodes(actual: Iterable[str], nodes: Mapping[str, NodeInfo]) -> tuple[list[str], list[str]]:
    return compare_strings(actual, nodes)


def compare_pods(
    actual: Iterable[str], pending: Iterable[QueuedPodInfo], nodes: Mapping[str, NodeInfo]
) -> tuple[list[str], list[str]]:
    cached = [p.uid for ni in nodes.values() for p in ni.pods]
    cached.extend(q.pod.uid for q in pending)
    return compare_strings(actual, cached)


def _resource(r: Resource) -> str:
    # Go's %+v of a framework.Resource.
    scalar = " ".join(f"{k}:{v}" for k, v in sorted(r.scalar.items()))
    return (f"{{MilliCPU:{r.milli_cpu} Memory:{r.memory} EphemeralStorage:{r.ephemeral_storage} "
            f"AllowedPodNumber:{r.allowed_pod_number} ScalarResources:map[{scalar}]}}")


def pod_line(p: PodInfo) -> str:
    return (f"name: {p.name}, namespace: {p.namespace}, uid: {p.uid}, phase: {p.phase}, "
            f"nominated node: {p.nominated_node_name}\n")


def node_text(name: str, ni: NodeInfo, nominator: PodNominator | None) -> str:
    out = [
        f"Node name: {name}\nDeleted: {'true' if ni.raw is None else 'false'}\n"
        f"Requested Resources: {_resource(ni.requested)}\nAllocatable Resources:{_resource(ni.allocatable)}\n"
        f"Scheduled Pods(number: {len(ni.pods)}):\n"
    ]
    out.extend(pod_line(p) for p in ni.pods)
    nominated = nominator.nominated_pods_for_node(name) if nominator is not None else []
    if nominated:
        out.append(f"Nominated Pods(number: {len(nominated)}):\n")
        out.extend(pod_line(p) for p in nominated)
    return "".join(out)


def dump_nodes(cache: Cache, nominator: PodNominator | None) -> str:
    return "\n\n".join(node_text(name, ni, nominator) for name, ni in cache.nodes.items())


def queue_summary(counts: Mapping[str, int]) -> str:
    # Gated pods sit in upstream's unschedulablePods.
    return (f"activeQ:{counts.get(ACTIVE, 0)}; backoffQ:{counts.get(BACKOFF, 0)}; "
            f"unschedulablePods:{counts.get(UNSCHEDULABLE, 0) + counts.get(GATED, 0)}")


def dump_queue(pending: Iterable[QueuedPodInfo]) -> str:
    return "".join(pod_line(q.pod) for q in pending)
