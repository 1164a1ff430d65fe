"""The workloads of `make bench-live`, built from bench/shapes.py's scheduler_perf shapes.

SchedulingNodeAffinity is not among the offline shapes, so it is defined here from the same
node and pod templates (test/integration/scheduler_perf/affinity/performance-config.yaml:
every node labelled topology.kubernetes.io/zone=zone1, init and measured pods from
templates/pod-with-node-affinity.yaml).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.shapes import SHAPES, Raw, Shape, _pod, node


def pod_with_node_affinity(i: int, namespace: str) -> Raw:
    """templates/pod-with-node-affinity.yaml: required zone In [zone1, zone2]."""
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}
                        ]
                    }
                ]
            }
        }
    }
    return _pod("node-affinity-", i, namespace, None, {"affinity": aff})


def scheduling_node_affinity(
    nodes: int = 5000, init: int = 5000, measure: int = 10000, bind_init: bool = False
) -> Shape:
    """SchedulingNodeAffinity/5000Nodes_10000Pods; op indices as upstream (namespace-1, -2)."""
    ns = [node(i, {"topology.kubernetes.io/zone": "zone1"}) for i in range(nodes)]
    init_pods = [pod_with_node_affinity(i, "namespace-1") for i in range(init)]
    if bind_init:
        for k, p in enumerate(init_pods):
            p["spec"]["nodeName"] = ns[k % len(ns)]["metadata"]["name"]
    return ns, init_pods, [pod_with_node_affinity(i, "namespace-2") for i in range(measure)]


GENERATORS: dict[str, Callable[..., Shape]] = {**SHAPES, "SchedulingNodeAffinity": scheduling_node_affinity}


@dataclass(frozen=True)
class Workload:
    name: str  # shown in the table
    shape: str  # key of GENERATORS
    nodes: int

    def build(self, measure: int) -> Shape:
        """Nodes, init pods (pre-bound round-robin) and ``measure`` pending pods; the number of
        init pods is the shape's scheduler_perf default."""
        return GENERATORS[self.shape](nodes=self.nodes, measure=measure, bind_init=True)


FULL = [
    Workload("SchedulingBasic/5000Nodes", "SchedulingBasic", 5000),
    Workload("TopologySpreading/5000Nodes", "TopologySpreading", 5000),
    Workload("SchedulingPodAntiAffinity/5000Nodes", "SchedulingPodAntiAffinity", 5000),
    Workload("SchedulingNodeAffinity/5000Nodes", "SchedulingNodeAffinity", 5000),
]
QUICK = [Workload("SchedulingBasic/1000Nodes", "SchedulingBasic", 1000)]
