"""Storage model: parsing and the store hook (scheduler/storage.py)."""

from __future__ import annotations

import re

import pytest

from scheduler.model.storage import NotFoundError, PersistentVolumeClaim, StorageStore
from scheduler.simulate.simulator import build_cluster


def pvc_raw(name: str, cls: str | None = None, ann_cls: str | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "ns"}
    if ann_cls is not None:
        meta["annotations"] = {"volume.beta.kubernetes.io/storage-class": ann_cls}
    spec: dict = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls is not None:
        spec["storageClassName"] = cls
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    ("cls", "ann", "want"),
    [
        # component-helpers GetPersistentVolumeClaimClass: annotation first, then spec.
        ("gold", None, "gold"),
        ("gold", "silver", "silver"),
        (None, None, ""),
        (None, "", ""),
    ],
)
def test_claim_class(cls: str | None, ann: str | None, want: str) -> None:
    pvc = PersistentVolumeClaim(pvc_raw("c", cls, ann))
    assert pvc.storage_class == want
    assert pvc.request == 1 << 30


def test_store_apply_delete_and_not_found_messages() -> None:
    st = StorageStore()
    st.apply("PersistentVolumeClaim", pvc_raw("c", "gold"))
    assert st.get_pvc("ns", "c").name == "c"
    with pytest.raises(NotFoundError, match='persistentvolumeclaim "x" not found'):
        st.get_pvc("ns", "x")
    with pytest.raises(NotFoundError, match='persistentvolume "pv" not found'):
        st.get_pv("pv")
    with pytest.raises(NotFoundError, match=re.escape('storageclass.storage.k8s.io "sc" not found')):
        st.get_class("sc")
    v = st.version
    assert st.delete("PersistentVolumeClaim", pvc_raw("c")) is not None
    assert st.version > v
    with pytest.raises(NotFoundError):
        st.get_pvc("ns", "c")


def test_simulate_reads_storage_kinds() -> None:
    docs = [
        pvc_raw("c", "gold"),
        {
            "kind": "StorageClass",
            "metadata": {"name": "gold"},
            "provisioner": "p",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {"kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "2Gi"}}},
        {
            "kind": "CSINode",
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 3}}]},
        },
        {"kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {"storageCapacity": True}},
        {
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "gold",
            "capacity": "10Gi",
        },
    ]
    st = build_cluster(docs).listers.storage
    assert st.classes["gold"].binding_mode == "WaitForFirstConsumer"
    assert st.pvs["pv1"].capacity == 2 << 30
    assert st.csi_nodes["n1"].drivers[0].allocatable == 3
    assert st.csi_drivers["d"].storage_capacity is True
    assert st.capacities["kube-system/cap"].volume_limit() == 10 << 30
    assert st.pvcs["ns/c"].storage_class == "gold"


def test_on_event_returns_old_and_new_for_hints() -> None:
    st = StorageStore()
    old, new = st.on_event("PersistentVolumeClaim", "ADDED", pvc_raw("c", "gold"))  # type: ignore[misc]
    assert old is None and new.storage_class == "gold"
    old, new = st.on_event("PersistentVolumeClaim", "MODIFIED", pvc_raw("c", "silver"))  # type: ignore[misc]
    assert old.storage_class == "gold" and new.storage_class == "silver"
    old, new = st.on_event("PersistentVolumeClaim", "DELETED", pvc_raw("c"))  # type: ignore[misc]
    assert old.storage_class == "silver" and new is None
    assert st.pvcs == {}
    assert st.on_event("Secret", "ADDED", {"metadata": {"name": "s"}}) is None


@pytest.mark.parametrize(
    "raw",
    [
        {"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "d", "allocatable": {"count": "many"}}]}},
        {"metadata": {"name": "n"}, "spec": {"drivers": "d"}},
    ],
)
def test_unparseable_object_is_one_line_error_and_store_unchanged(raw: dict) -> None:
    from scheduler.model.schema import ObjectError

    st = StorageStore()
    with pytest.raises(ObjectError) as ei:
        st.apply("CSINode", raw)
    assert str(ei.value).startswith("CSINode n: ") and "\n" not in str(ei.value)
    assert st.csi_nodes == {} and st.version == 0


def test_pod_with_malformed_volume_source_is_refused() -> None:
    from scheduler.model.pod import PodInfo
    from scheduler.model.schema import ObjectError

    raw = {
        "metadata": {"name": "p"},
        "spec": {"containers": [], "volumes": [{"name": "v", "persistentVolumeClaim": "x"}]},
    }
    with pytest.raises(ObjectError, match=r"spec\.volumes\[0\]\.persistentVolumeClaim: expected an object"):
        PodInfo(raw)
