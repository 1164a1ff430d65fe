"""Shared helpers for the InterPodAffinity / PodTopologySpread tests: a snapshot + handle
built from raw dicts, and random clusters for the batch-vs-reference checks."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod


def build_handle(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]] = (),  # type: ignore[assignment]
    namespaces: list[dict[str, Any]] = (),  # type: ignore[assignment]
    owners: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Handle:
    infos = [NodeInfo(n) for n in nodes]
    by_name = {ni.name: ni for ni in infos}
    for p in pods:
        pi = PodInfo(p)
        if pi.node_name in by_name:
            by_name[pi.node_name].add_pod(pi)
    snap = Snapshot()
    snap.set_nodes(infos)
    listers = Listers()
    for ns in namespaces:
        info = NamespaceInfo.parse(ns)
        listers.namespaces[info.name] = info
    for o in owners:
        so = SelectorOwner.parse(o)
        listers.owners.setdefault(so.kind, {})[f"{so.namespace}/{so.name}"] = so
    return Handle(snap, listers)


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def add_pod_to_snapshot(handle: Handle, raw: dict[str, Any]) -> None:
    """What cache.update_snapshot does after a bind: swap in a clone of the node with the pod."""
    pi = PodInfo(raw)
    snap = handle.snapshot
    ni = snap.node_map[pi.node_name].clone()
    ni.add_pod(pi)
    snap.replace_node(ni, False)
    snap.generation += 1


# ---------------------------------------------------------------------------------------------
# Random clusters

ZONES = ["z1", "z2", "z3"]
KEYS = ["kubernetes.io/hostname", "topology.kubernetes.io/zone", "region"]
COLORS = ["red", "blue", "green"]
NAMESPACES = ["ns0", "ns1"]


def rand_selector(rng: random.Random) -> dict[str, Any]:
    r = rng.random()
    if r < 0.5:
        return {"matchLabels": {"color": rng.choice(COLORS)}}
    if r < 0.7:
        return {"matchExpressions": [{"key": "color", "operator": "In", "values": rng.sample(COLORS, 2)}]}
    if r < 0.8:
        return {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    if r < 0.9:
        return {}
    return {"matchExpressions": [{"key": "color", "operator": "NotIn", "values": [rng.choice(COLORS)]}]}


def rand_term(rng: random.Random) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": rand_selector(rng), "topologyKey": rng.choice(KEYS)}
    r = rng.random()
    if r < 0.2:
        t["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif r < 0.3:
        t["namespaceSelector"] = {}
    elif r < 0.4:
        t["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    if rng.random() < 0.1:
        t["matchLabelKeys"] = ["app"]
    return t


def rand_affinity(rng: random.Random, p: float) -> dict[str, Any] | None:
    if rng.random() > p:
        return None
    aff: dict[str, Any] = {}
    if rng.random() < 0.4:
        aff["podAffinity"] = {}
        if rng.random() < 0.5:
            aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [
                rand_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.6:
            aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": rand_term(rng)} for _ in range(rng.randint(1, 2))
            ]
    if rng.random() < 0.5:
        aff["podAntiAffinity"] = {}
        if rng.random() < 0.6:
            aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [rand_term(rng)]
        if rng.random() < 0.5:
            aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": rand_term(rng)}
            ]
    return aff or None


def rand_spread(rng: random.Random) -> list[dict[str, Any]] | None:
    if rng.random() < 0.3:
        return None
    out = []
    for key in rng.sample(KEYS, rng.randint(1, 2)):
        c: dict[str, Any] = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": rand_selector(rng),
        }
        if rng.random() < 0.2:
            c["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.1:
            c["matchLabelKeys"] = ["app"]
        out.append(c)
    return out


def rand_labels(rng: random.Random) -> dict[str, str]:
    lbl = {"color": rng.choice(COLORS)}
    if rng.random() < 0.5:
        lbl["app"] = rng.choice(["a", "b"])
    return lbl


def rand_cluster(
    rng: random.Random, n_nodes: int, n_pods: int, affinity_p: float = 0.3, spread: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = []
    for i in range(n_nodes):
        labels: dict[str, str] = {}
        if rng.random() < 0.9:
            labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
        if rng.random() < 0.7:
            labels["region"] = rng.choice(["r1", "r2"])
        if rng.random() < 0.3:
            labels["disk"] = "ssd"
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.15 else None
        nodes.append(make_node(f"n{i}", labels=labels, taints=taints))
    pods = []
    for j in range(n_pods):
        pods.append(
            make_pod(
                f"e{j}",
                rng.choice(NAMESPACES),
                labels=rand_labels(rng),
                node_name=f"n{rng.randrange(n_nodes)}",
                affinity=rand_affinity(rng, affinity_p),
                deleting=rng.random() < 0.05,
            )
        )
    nss = [namespace("ns0", {"team": "a"}), namespace("ns1", {"team": "b"})]
    return nodes, pods, nss


def rand_incoming(rng: random.Random, k: int) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if rng.random() < 0.2:
        extra["node_selector"] = {"disk": "ssd"}
    tol = [{"key": "t", "operator": "Exists", "effect": "NoSchedule"}] if rng.random() < 0.3 else None
    return make_pod(
        f"in{k}",
        rng.choice(NAMESPACES),
        labels=rand_labels(rng),
        affinity=rand_affinity(rng, 0.9),
        spread=rand_spread(rng),
        tolerations=tol,
        **extra,
    )


def fresh_state() -> CycleState:
    return CycleState()


def positions(handle: Handle) -> np.ndarray:
    return np.arange(len(handle.snapshot.node_infos), dtype=np.int64)
