"""The kind table: API paths the watcher lists and watches, and the roles the handlers dispatch on."""

from __future__ import annotations

import pytest

from scheduler.model.kinds import (
    DRA_KINDS,
    KINDS,
    STORAGE_KINDS,
    WATCHED_KINDS,
    Role,
    kinds_of,
    live_kinds,
    metadata,
)


def test_storage_kinds_have_the_informer_paths() -> None:
    # kube-scheduler's informers for the volume plugins (core/v1 and storage.k8s.io/v1).
    assert KINDS["PersistentVolume"].path == "/api/v1/persistentvolumes"
    assert KINDS["PersistentVolumeClaim"].path == "/api/v1/persistentvolumeclaims"
    for kind, plural in (("StorageClass", "storageclasses"), ("CSINode", "csinodes"), ("CSIDriver", "csidrivers"),
                         ("CSIStorageCapacity", "csistoragecapacities"), ("VolumeAttachment", "volumeattachments")):
        assert KINDS[kind].path == f"/apis/storage.k8s.io/v1/{plural}"


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("Pod", "/api/v1/pods"),
        ("ReplicaSet", "/apis/apps/v1/replicasets"),
        ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
        ("ResourceSlice", "/apis/resource.k8s.io/v1/resourceslices"),
    ],
)
def test_paths(kind: str, path: str) -> None:
    assert KINDS[kind].path == path


def test_roles() -> None:
    assert STORAGE_KINDS == ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver",
                             "CSIStorageCapacity", "VolumeAttachment")
    assert DRA_KINDS == ("ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice")
    assert kinds_of(Role.OWNER) == ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def test_kinds_read_offline_only() -> None:
    # Admission resolves a pod's priority before the scheduler sees it, and the resourceclaim
    # controller turns templates into claims: kube-scheduler has no informer for either.
    assert not KINDS["PriorityClass"].watched and not KINDS["ResourceClaimTemplate"].watched
    assert set(WATCHED_KINDS) == set(KINDS) - {"PriorityClass", "ResourceClaimTemplate"}


def test_pod_groups_are_a_workload_kind() -> None:
    assert KINDS["PodGroup"].path == "/apis/scheduling.k8s.io/v1alpha2/podgroups"
    assert kinds_of(Role.WORKLOAD) == ("PodGroup",)
    assert KINDS["PodGroup"].gate == "GenericWorkload"


V1_36_DEFAULT_GATES = {"DynamicResourceAllocation": True}
DEFAULT_PLUGINS = {"SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration",
                   "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                   "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
                   "DefaultPreemption", "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder",
                   "NodeDeclaredFeatures"}


@pytest.mark.parametrize(
    ("plugins", "gates", "want"),
    [
        # kube-scheduler v1.36.3's informers for its default profile (scheduler.go New,
        # addAllEventHandlers, the plugins' New): no ResourceClaimTemplates, no PriorityClasses.
        (DEFAULT_PLUGINS, V1_36_DEFAULT_GATES,
         ["Pod", "Node", "Namespace", "Service", "ReplicationController", "ReplicaSet", "StatefulSet",
          "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity",
          "VolumeAttachment", "PodDisruptionBudget", "ResourceClaim", "DeviceClass", "ResourceSlice"]),
        # The scheduler's own informers: pods, nodes, the queue's namespaces, the shared CSINode
        # manager, and the DRA manager's whenever DynamicResourceAllocation is on.
        (set(), V1_36_DEFAULT_GATES, ["Pod", "Node", "Namespace", "CSINode", "ResourceClaim", "DeviceClass",
                                      "ResourceSlice"]),
        (set(), {}, ["Pod", "Node", "Namespace", "CSINode"]),
        # scheduler.go's PodGroup lister: whenever GenericWorkload is on (scheduling.k8s.io/v1alpha2).
        (set(), {"GenericWorkload": True}, ["Pod", "Node", "Namespace", "CSINode", "PodGroup"]),
        # Only the plugins that ask for a lister make kube-scheduler watch it.
        ({"VolumeRestrictions"}, {}, ["Pod", "Node", "Namespace", "PersistentVolumeClaim", "CSINode"]),
        ({"VolumeZone"}, {}, ["Pod", "Node", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
                              "StorageClass", "CSINode"]),
        ({"NodeVolumeLimits"}, {}, ["Pod", "Node", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                    "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment"]),
        ({"VolumeBinding"}, {}, ["Pod", "Node", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                 "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity"]),
        ({"DefaultPreemption", "PodTopologySpread"}, {},
         ["Pod", "Node", "Namespace", "Service", "ReplicationController", "ReplicaSet", "StatefulSet", "CSINode",
          "PodDisruptionBudget"]),
    ],
)
def test_live_kinds(plugins: set[str], gates: dict[str, bool], want: list[str]) -> None:
    assert list(live_kinds(plugins, lambda g: gates.get(g, False))) == want


@pytest.mark.parametrize(("raw", "want"), [({"metadata": {"name": "a"}}, {"name": "a"}), ({}, {}),
                                           ({"metadata": None}, {}), ({"metadata": ["a"]}, {})])
def test_metadata(raw: dict, want: dict) -> None:
    assert metadata(raw) == want
