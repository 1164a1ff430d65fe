"""What plugins read, built from raw dicts without a cache: a Snapshot and a Handle (upstream:
cache.NewSnapshot(pods, nodes) and the framework handles of the plugin tests)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


def new_snapshot(nodes: Iterable[dict[str, Any] | NodeInfo], pods: Iterable[dict[str, Any] | PodInfo] = ()) -> Snapshot:
    """The nodes in order, each holding the pods bound to it; a pod on an unlisted node is left out."""
    infos = [n if isinstance(n, NodeInfo) else NodeInfo(n) for n in nodes]
    by_name = {ni.name: ni for ni in infos}
    for p in pods:
        pi = p if isinstance(p, PodInfo) else PodInfo(p)
        if pi.node_name in by_name:
            by_name[pi.node_name].add_pod(pi)
    snap = Snapshot()
    snap.set_nodes(infos)
    return snap


def build_handle(
    nodes: Iterable[dict[str, Any] | NodeInfo],
    pods: Iterable[dict[str, Any] | PodInfo] = (),
    namespaces: Iterable[dict[str, Any]] = (),
    owners: Iterable[dict[str, Any]] = (),
) -> Handle:
    """A Handle over ``new_snapshot(nodes, pods)`` with listers for namespaces and workload owners."""
    listers = Listers()
    for ns in namespaces:
        info = NamespaceInfo.parse(ns)
        listers.namespaces[info.name] = info
    for o in owners:
        so = SelectorOwner.parse(o)
        listers.owners.setdefault(so.kind, {})[f"{so.namespace}/{so.name}"] = so
    return Handle(new_snapshot(nodes, pods), listers)


def add_pod_to_snapshot(handle: Handle, raw: dict[str, Any]) -> None:
    """What cache.update_snapshot does after a bind: swap in a clone of the node with the pod."""
    pi = PodInfo(raw)
    snap = handle.snapshot
    ni = snap.node_map[pi.node_name].clone()
    ni.add_pod(pi)
    snap.replace_node(ni, False)
    snap.generation += 1
