"""The objects of kube-scheduler v1.36.3's scheduler_perf workloads with extended resources
(test/integration/scheduler_perf), as raw manifests for simulate, unit tests and e2e runs:

* ``scheduling_with_extended_resource``: misc/performance-config.yaml SchedulingWithExtendedResource
  (templates node-with-extended-resource.yaml, pod-with-extended-resource.yaml): nodes advertising
  ``foo.com/bar-<i>``, pod i asking for ``foo.com/bar-<i>``; no DeviceClass, so with
  DRAExtendedResource on the device plugins still provide everything.
* ``extended_resource``: dra/extendedresource/performance-config.yaml ExtendedResource (templates
  node-with-dra-test-driver.yaml, deviceclass-extended-resource.yaml, pod-with-extended-resource.yaml,
  and the test driver's slices from dra.go resourceSlice): class i maps ``example.com/gpu-<i>``,
  pod i asks for ``example.com/gpu-<i>``, DRA nodes publish ``max_claims`` devices each.

Generated names (``generateName`` upstream) are spelled out here so both schedulers see the same;
``prefix`` goes into every cluster-wide name (nodes, classes, resource names), so two schedulers
can run the same workload side by side on one cluster without sharing anything.
"""

from __future__ import annotations

from typing import Any

TEST_DRIVER = "test-driver.cdi.k8s.io"



def resource_slice(driver: str, node: str, capacity: int) -> dict[str, Any]:
    """scheduler_perf's dra.go resourceSlice: ``capacity`` devices instance-<i> of ``node``, with
    the test driver's attributes."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(capacity)
            ],
        },
    }

def _node(name: str, labels: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, Any]:
    caps = {"pods": "110", "cpu": "4", "memory": "32Gi", **(extra or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": caps, "allocatable": caps, "conditions": [{"status": "True", "type": "Ready"}],
                   "phase": "Running"},
    }


def _pod(name: str, namespace: str, resource: str, scheduler: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{
            "image": "registry.k8s.io/pause:3.9",
            "name": "pause",
            "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}},
        }]
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def scheduling_with_extended_resource(
    nodes_with: int, nodes_without: int, pods: int, prefix: str = "", namespace: str = "test",
    scheduler: str | None = None,
) -> list[dict[str, Any]]:
    docs = [_node(f"{prefix}scheduler-perf-{i}", {}) for i in range(nodes_without)]
    docs += [
        _node(f"{prefix}scheduler-perf-extended-resource-{i}", {"node-with-extended-resource": "true"},
              {f"foo.com/{prefix}bar-{i}": "1"})
        for i in range(nodes_with)
    ]
    docs += [
        _pod(f"test-extended-resource-{i}", namespace, f"foo.com/{prefix}bar-{i}", scheduler) for i in range(pods)
    ]
    return docs


def extended_resource(
    classes: int, dra_nodes: int, plain_nodes: int, pods: int, max_claims: int, prefix: str = "",
    namespace: str = "test", scheduler: str | None = None, driver: str = TEST_DRIVER,
) -> list[dict[str, Any]]:
    docs = [_node(f"{prefix}scheduler-perf-{i}", {}) for i in range(plain_nodes)]
    dra = [f"{prefix}scheduler-perf-dra-{i}" for i in range(dra_nodes)]
    docs += [_node(n, {"node-with-dra": "true"}) for n in dra]
    docs += [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"{prefix}test-class-{i}"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
                "extendedResourceName": f"example.com/{prefix}gpu-{i}",
            },
        }
        for i in range(classes)
    ]
    docs += [resource_slice(driver, n, max_claims) for n in dra]
    docs += [_pod(f"test-dra-{i}", namespace, f"example.com/{prefix}gpu-{i}", scheduler) for i in range(pods)]
    return docs
