"""The kind table: API paths the watcher lists and watches, and the roles the handlers dispatch on."""

from __future__ import annotations

import pytest

from scheduler.model.kinds import DRA_KINDS, KINDS, STORAGE_KINDS, WATCHED_KINDS, Role, kinds_of, metadata


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


def test_priority_classes_are_read_offline_only() -> None:
    # Admission resolves a pod's priority before the scheduler sees it; simulate does it itself.
    assert "PriorityClass" in KINDS and "PriorityClass" not in WATCHED_KINDS
    assert set(WATCHED_KINDS) == set(KINDS) - {"PriorityClass"}


@pytest.mark.parametrize(("raw", "want"), [({"metadata": {"name": "a"}}, {"name": "a"}), ({}, {}),
                                           ({"metadata": None}, {}), ({"metadata": ["a"]}, {})])
def test_metadata(raw: dict, want: dict) -> None:
    assert metadata(raw) == want
