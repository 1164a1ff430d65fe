"""Offline copies of scheduler_perf cluster shapes (test/integration/scheduler_perf templates).

Each shape is (nodes, initial pods, pods to place) as raw dicts. Initial pods are given a
nodeName round-robin: the benchmark measures placing the second set only.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def perf_node(i: int, labels: dict[str, str] | None = None) -> Obj:
    # templates/node-default.yaml: capacity only (the API server defaults allocatable from it).
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"scheduler-perf-{i}", "labels": dict(labels or {})},
        "spec": {},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def perf_pod(
    name: str,
    namespace: str = "default",
    node: str = "",
    labels: dict[str, str] | None = None,
    extra_spec: dict[str, Any] | None = None,
    ts: int = 0,
) -> Obj:
    # templates/pod-default.yaml: one pause container, requests = limits = 100m / 500Mi.
    res = {"cpu": "100m", "memory": "500Mi"}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": dict(res), "limits": dict(res)},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    spec.update(extra_spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{namespace}-{name}",
            "labels": dict(labels or {}),
            "creationTimestamp": f"2024-01-01T{ts // 3600 % 24:02d}:{ts // 60 % 60:02d}:{ts % 60:02d}Z",
        },
        "spec": spec,
    }


def scheduling_basic(
    nodes: int = 5000, init: int = 1000, measure: int = 10000
) -> tuple[list[Obj], list[Obj], list[Obj]]:
    ns = [perf_node(i) for i in range(nodes)]
    ip = [perf_pod(f"init-{i}", node=f"scheduler-perf-{i % nodes}") for i in range(init)]
    mp = [perf_pod(f"pod-{i}") for i in range(measure)]
    return ns, ip, mp
