"""Object manifests for the e2e plane (KWOK-style fake nodes, bare pods) and their creation.

The manifests start from scheduler.testing.builders' MakeNode()/MakePod(), the builders the
unit tests use, and add what a real API server and kwok need (node addresses and nodeInfo, a
pullable image, no uid, grace period 0).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from e2e.support.waits import wait_for_node_ready
from scheduler.testing import builders

#: The schedulerName of pyscheduler's profile in manifests/.
SCHEDULER = "pyscheduler"
# The real kube-scheduler v1.36.3 run beside ours in the binary comparisons, under this profile.
REFERENCE = "kube-reference"
#: A label key whose value is unique to one test: its nodes carry it, its pods select it.
GROUP = "e2e-group"


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    zone: str = "zone-a",
    region: str = "region-1",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    extra_resources: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    internal_ip: str | None = None,
) -> dict[str, Any]:
    """A KWOK-style fake node manifest (status is stored on create).

    kwok (``--manage-all-nodes``) adds the Ready condition and nodeInfo. It
    would only add addresses from its own ``--node-ip``/``--node-name`` (one
    value for every node), so the node carries its own: Hostname = name and a
    fake InternalIP in 198.18.0.0/15 (benchmarking range; never contacted).
    Later capacity changes must go through the ``nodes/NAME/status`` subresource.
    """
    if internal_ip is None:
        h = zlib.crc32(name.encode()) % (2 * 65536)
        internal_ip = f"198.{18 + h // 65536}.{(h // 256) % 256}.{h % 256}"
    w = builders.MakeNode().name(name).capacity(
        {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}
    )
    # The zone goes in with the other labels: an empty zone is still a label here.
    w.labels(
        {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": region,
            "type": "kwok",
            **(labels or {}),
        }
    )
    if taints:
        w.taints([dict(t) for t in taints])
    if unschedulable:
        w.unschedulable()
    w.status(
        nodeInfo={
            "architecture": "amd64",
            "operatingSystem": "linux",
            "kubeletVersion": "fake",
            "kubeProxyVersion": "fake",
            "containerRuntimeVersion": "fake",
            "kernelVersion": "fake",
            "osImage": "fake",
            "bootID": "",
            "machineID": "",
            "systemUUID": "",
        },
        addresses=[
            {"type": "InternalIP", "address": internal_ip},
            {"type": "Hostname", "address": name},
        ],
        phase="Running",
    )
    node = w.obj()
    node["metadata"]["annotations"] = {
        "node.alpha.kubernetes.io/ttl": "0",
        "kwok.x-k8s.io/node": "fake",
        **(annotations or {}),
    }
    return node


def create_nodes(
    core: client.CoreV1Api,
    count: int,
    prefix: str = "kwok-node",
    wait_ready: bool = False,
    timeout: float = 60.0,
    **node_kwargs: Any,
) -> list[str]:
    """Create *count* fake nodes named ``{prefix}-{i}``; return their names.

    ``zone`` may be a callable ``i -> zone`` to spread nodes over zones.
    """
    names = []
    zone = node_kwargs.pop("zone", "zone-a")
    for i in range(count):
        name = f"{prefix}-{i}"
        z = zone(i) if callable(zone) else zone
        core.create_node(make_node(name, zone=z, **node_kwargs))
        names.append(name)
    if wait_ready:
        for name in names:
            wait_for_node_ready(core, name, timeout=timeout)
    return names


def make_pod(
    name: str,
    namespace: str = "default",
    scheduler_name: str | None = SCHEDULER,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority_class_name: str | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    image: str = "registry.k8s.io/pause:3.10.2",
    **spec_extra: Any,
) -> dict[str, Any]:
    """A bare pod manifest (no owning controller).

    ``scheduler_name=None`` leaves schedulerName unset (default-scheduler).
    Extra keyword arguments go into ``spec`` verbatim (camelCase keys).
    """
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    w = builders.MakePod().name(name).namespace(namespace).labels(dict(labels or {}))
    w.container(requests, image=image, name="c")
    if scheduler_name:
        w.scheduler_name(scheduler_name)
    if node_name:
        w.node(node_name)
    if node_selector:
        w.node_selector(dict(node_selector))
    if priority_class_name:
        w.spec(priorityClassName=priority_class_name)
    if tolerations:
        w.toleration([dict(t) for t in tolerations])
    if affinity:
        w.affinity(dict(affinity))
    pod = w.spec(**{"terminationGracePeriodSeconds": 0, **spec_extra}).obj()
    del pod["metadata"]["uid"]  # the API server assigns it
    pod["metadata"].setdefault("labels", {})  # always there, for callers that add to it
    return pod


def create_pod(
    core: client.CoreV1Api, namespace: str = "default", name: str | None = None, **kwargs: Any
) -> client.V1Pod:
    name = name or unique_name("pod")
    return core.create_namespaced_pod(namespace, make_pod(name, namespace=namespace, **kwargs))


def create_pods(
    core: client.CoreV1Api, count: int, namespace: str = "default", prefix: str = "pod", **kwargs: Any
) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        core.create_namespaced_pod(namespace, make_pod(name, namespace=namespace, **kwargs))
    return names


def bind_pod(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    """POST pods/NAME/binding, as a scheduler does.

    ``_preload_content=False`` because the client cannot deserialize the
    Status object the API server returns for this subresource.
    """
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    resp = core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
    # Drain the body before returning the connection to the pool, or the next
    # request on it fails with ResponseNotReady. Errors raise ApiException.
    resp.read()
    resp.release_conn()


