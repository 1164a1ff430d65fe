"""Cluster shapes of upstream scheduler_perf workloads: SchedulingBasic and the ones that stress
InterPodAffinity and PodTopologySpread (test/integration/scheduler_perf/{affinity,topology_spreading}/
performance-config.yaml and templates/*.yaml), as raw dicts.

Each generator returns ``(nodes, init_pods, pods_to_place)``. Init pods are unbound, as in
scheduler_perf where the scheduler places them before the measured pods (pass
``bind_init=True`` to pre-assign them round-robin instead). Pods created without a namespace
in scheduler_perf go to ``namespace-<op index>``; that is kept, so spreading pods only count
their own kind, as upstream.
"""

from __future__ import annotations

import random
from typing import Any

Raw = dict[str, Any]
Shape = tuple[list[Raw], list[Raw], list[Raw]]

PAUSE = "registry.k8s.io/pause:3.10.1"


def node(i: int, labels: dict[str, str] | None = None) -> Raw:
    """templates/node-default.yaml: 4 cpu, 32Gi, 110 pods."""
    name = f"scheduler-perf-{i}"
    lbl = {"kubernetes.io/hostname": name, **(labels or {})}
    cap = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": lbl},
        "spec": {},
        "status": {
            "capacity": dict(cap),
            "allocatable": dict(cap),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(prefix: str, i: int, namespace: str, labels: dict[str, str] | None, spec_extra: Raw | None = None) -> Raw:
    meta: Raw = {"name": f"{prefix}{i}", "namespace": namespace, "uid": f"{namespace}-{prefix}{i}"}
    if labels:
        meta["labels"] = dict(labels)
    res = {"cpu": "100m", "memory": "500Mi"}
    spec: Raw = {
        "containers": [
            {
                "name": "pause",
                "image": PAUSE,
                "ports": [{"containerPort": 80}],
                "resources": {"limits": dict(res), "requests": dict(res)},
            }
        ]
    }
    spec.update(spec_extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _bind(pods: list[Raw], nodes: list[Raw]) -> None:
    for k, p in enumerate(pods):
        p["spec"]["nodeName"] = nodes[k % len(nodes)]["metadata"]["name"]


def _zoned_nodes(n: int, seed: int) -> list[Raw]:
    # labelNodePrepareStrategy picks one of the values at random per node.
    rng = random.Random(seed)
    return [node(i, {"topology.kubernetes.io/zone": rng.choice(["moon-1", "moon-2", "moon-3"])}) for i in range(n)]


def pod_with_pod_anti_affinity(i: int, namespace: str) -> Raw:
    """templates/pod-with-pod-anti-affinity.yaml."""
    aff = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"color": "green"}},
                    "topologyKey": "kubernetes.io/hostname",
                    "namespaces": ["sched-1", "sched-0"],
                }
            ]
        }
    }
    return _pod("anti-affinity-pod-", i, namespace, {"color": "green"}, {"affinity": aff})


def pod_with_preferred_pod_affinity(i: int, namespace: str) -> Raw:
    """templates/pod-with-preferred-pod-affinity.yaml."""
    aff = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"color": "red"}},
                        "topologyKey": "kubernetes.io/hostname",
                        "namespaces": ["sched-1", "sched-0"],
                    },
                    "weight": 1,
                }
            ]
        }
    }
    return _pod("preferred-affinity-pod-", i, namespace, {"color": "red"}, {"affinity": aff})


def pod_with_topology_spreading(i: int, namespace: str, when: str = "DoNotSchedule") -> Raw:
    """templates/pod-with-topology-spreading.yaml (ScheduleAnyway: ...-preferred-...)."""
    tsc = [
        {
            "maxSkew": 5,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]
    return _pod("spreading-pod-", i, namespace, {"color": "blue"}, {"topologySpreadConstraints": tsc})


def scheduling_pod_anti_affinity(
    nodes: int = 5000, init: int = 1000, measure: int = 2000, bind_init: bool = False
) -> Shape:
    """SchedulingPodAntiAffinity/5000Nodes_2000Pods: init in sched-0, measured in sched-1."""
    ns = [node(i) for i in range(nodes)]
    init_pods = [pod_with_pod_anti_affinity(i, "sched-0") for i in range(init)]
    if bind_init:
        _bind(init_pods, ns)
    return ns, init_pods, [pod_with_pod_anti_affinity(i, "sched-1") for i in range(measure)]


def scheduling_preferred_pod_affinity(
    nodes: int = 5000, init: int = 5000, measure: int = 5000, bind_init: bool = False
) -> Shape:
    """SchedulingPreferredPodAffinity/5000Nodes_5000Pods."""
    ns = [node(i) for i in range(nodes)]
    init_pods = [pod_with_preferred_pod_affinity(i, "sched-0") for i in range(init)]
    if bind_init:
        _bind(init_pods, ns)
    return ns, init_pods, [pod_with_preferred_pod_affinity(i, "sched-1") for i in range(measure)]


def _spreading(nodes: int, init: int, measure: int, when: str, bind_init: bool, seed: int) -> Shape:
    ns = _zoned_nodes(nodes, seed)
    init_pods = [_pod("pod-", i, "namespace-1", None) for i in range(init)]  # templates/pod-default.yaml
    if bind_init:
        _bind(init_pods, ns)
    return ns, init_pods, [pod_with_topology_spreading(i, "namespace-2", when) for i in range(measure)]


def topology_spreading(
    nodes: int = 5000, init: int = 5000, measure: int = 5000, bind_init: bool = False, seed: int = 0
) -> Shape:
    """TopologySpreading/5000Nodes_5000Pods (zones moon-1/2/3, DoNotSchedule maxSkew 5)."""
    return _spreading(nodes, init, measure, "DoNotSchedule", bind_init, seed)


def preferred_topology_spreading(
    nodes: int = 5000, init: int = 5000, measure: int = 5000, bind_init: bool = False, seed: int = 0
) -> Shape:
    """PreferredTopologySpreading/5000Nodes_5000Pods (ScheduleAnyway maxSkew 5)."""
    return _spreading(nodes, init, measure, "ScheduleAnyway", bind_init, seed)


def scheduling_basic(nodes: int = 5000, init: int = 1000, measure: int = 10000, bind_init: bool = False) -> Shape:
    """SchedulingBasic/5000Nodes_10000Pods (misc/performance-config.yaml): default node and pod templates."""
    ns = [node(i) for i in range(nodes)]
    init_pods = [_pod("pod-", i, "namespace-1", None) for i in range(init)]
    if bind_init:
        _bind(init_pods, ns)
    return ns, init_pods, [_pod("pod-", i, "namespace-2", None) for i in range(measure)]


SHAPES = {
    "SchedulingBasic": scheduling_basic,
    "SchedulingPodAntiAffinity": scheduling_pod_anti_affinity,
    "SchedulingPreferredPodAffinity": scheduling_preferred_pod_affinity,
    "TopologySpreading": topology_spreading,
    "PreferredTopologySpreading": preferred_topology_spreading,
}
