"""Builders for raw Kubernetes dicts; they go through the model as in production (upstream: pkg/scheduler/testing)."""

from __future__ import annotations

from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


def make_pod(
    name: str = "p",
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    scheduler_name: str | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    host_ports: list[int | tuple[int, str, str]] | None = None,
    images: list[str] | None = None,
    spread: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
    pod_resources: dict[str, Any] | None = None,
    owner: tuple[str, str] | None = None,
    uid: str | None = None,
    creation: str | None = None,
    gates: list[str] | None = None,
    deleting: bool = False,
    phase: str | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod dict. ``cpu``/``memory``/``requests`` go on one container; ``containers`` overrides."""
    reqs = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    if containers is None:
        c: dict[str, Any] = {"name": "c0", "image": (images or ["pause"])[0]}
        if reqs:
            c["resources"] = {"requests": reqs}
        if host_ports:
            ports = []
            for hp in host_ports:
                if isinstance(hp, tuple):
                    port, proto, ip = hp
                    ports.append({"containerPort": port, "hostPort": port, "protocol": proto, "hostIP": ip})
                else:
                    ports.append({"containerPort": hp, "hostPort": hp})
            c["ports"] = ports
        containers = [c]
        for i, img in enumerate((images or [])[1:], start=1):
            containers.append({"name": f"c{i}", "image": img})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = labels
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}", "controller": True}]
    if creation:
        meta["creationTimestamp"] = creation
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if spread:
        spec["topologySpreadConstraints"] = spread
    if overhead:
        spec["overhead"] = overhead
    if pod_resources:
        spec["resources"] = pod_resources
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    spec.update(spec_extra)
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase:
        pod["status"] = {"phase": phase}
    return pod


def make_node(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    ephemeral: str | None = None,
    extra: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    images: list[tuple[list[str], int]] | None = None,
    zone: str | None = None,
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if ephemeral is not None:
        alloc["ephemeral-storage"] = ephemeral
    alloc.update(extra or {})
    lbl = {"kubernetes.io/hostname": name}
    if zone:
        lbl["topology.kubernetes.io/zone"] = zone
    lbl.update(labels or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": alloc, "capacity": dict(alloc)}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": lbl},
        "spec": spec,
        "status": status,
    }


def pod_info(**kw: Any) -> PodInfo:
    return PodInfo(make_pod(**kw))


def node_info(raw: dict[str, Any], *pods: dict[str, Any]) -> NodeInfo:
    ni = NodeInfo(raw)
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni
