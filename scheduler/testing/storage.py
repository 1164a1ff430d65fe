"""Builders for storage objects (PVCs, PVs, StorageClasses, pods with volumes) and a StorageStore
holding them, for the volume plugins and the loop and simulator tests that bind volumes."""

from __future__ import annotations

from typing import Any

from scheduler.framework.listers import StorageStore
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import MakeNode, MakePod


def pvc(
    name: str,
    ns: str = "default",
    *,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    cls: str | None = None,
    volume: str = "",
    size: str | None = None,
    bound: bool = False,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    phase: str = "",
    owner_uid: str = "",
    selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "1"}
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    if ann:
        meta["annotations"] = ann
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {"accessModes": list(modes)}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if selector is not None:
        spec["selector"] = selector
    out: dict[str, Any] = {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase:
        out["status"] = {"phase": phase}
    return out


def pv(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    cls: str = "",
    size: str = "1Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    claim: tuple[str, str] | None = None,
    affinity: dict[str, list[str]] | None = None,
    csi: tuple[str, str] | None = None,
    source: dict[str, Any] | None = None,
    phase: str = "Available",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if labels:
        meta["labels"] = labels
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes)}
    if cls:
        spec["storageClassName"] = cls
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1], "uid": f"uid-{claim[1]}"}
    if affinity is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]}
                ]
            }
        }
    if csi:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if source:
        spec.update(source)
    return {"kind": "PersistentVolume", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def storage_class(
    name: str, mode: str | None = "WaitForFirstConsumer", provisioner: str = "p", topologies: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        out["volumeBindingMode"] = mode
    if topologies is not None:
        out["allowedTopologies"] = topologies
    return out


def store_of(*objs: dict[str, Any]) -> StorageStore:
    st = StorageStore()
    for o in objs:
        st.apply(o["kind"], o)
    return st


def claim_vol(claim: str, name: str | None = None) -> dict[str, Any]:
    return {"name": name or f"v-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def vol_pod(name: str = "p", *vols: dict[str, Any], ns: str = "default", node: str = "") -> PodInfo:
    return MakePod().name(name).namespace(ns).node(node).volume(*vols).info()


def node_with(name: str = "node-1", *pods: PodInfo, labels: dict[str, str] | None = None) -> NodeInfo:
    return MakeNode().name(name).labels(labels or {}).info(*pods)
