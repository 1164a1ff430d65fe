"""Random clusters with affinity and spread, for the InterPodAffinity and PodTopologySpread tests
(batch scoring checked against the one-node reference)."""

from __future__ import annotations

import random
from typing import Any

from scheduler.testing.builders import make_namespace, make_node, make_pod

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
    nss = [make_namespace("ns0", {"team": "a"}), make_namespace("ns1", {"team": "b"})]
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
