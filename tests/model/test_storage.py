"""Storage objects: parsing, and the claims a pod's volumes name."""

from __future__ import annotations

import pytest

from scheduler.model.storage import PersistentVolumeClaim, pvc_claim_names, volume_claim
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


def test_pod_with_malformed_volume_source_is_refused() -> None:
    from scheduler.model.pod import PodInfo
    from scheduler.model.schema import ObjectError

    raw = {
        "metadata": {"name": "p"},
        "spec": {"containers": [], "volumes": [{"name": "v", "persistentVolumeClaim": "x"}]},
    }
    with pytest.raises(ObjectError, match=r"spec\.volumes\[0\]\.persistentVolumeClaim: expected an object"):
        PodInfo(raw)


@pytest.mark.parametrize(
    ("vol", "want"),
    [
        ({"name": "v", "persistentVolumeClaim": {"claimName": "data"}}, ("data", False)),
        # ephemeral.VolumeClaimName: <pod>-<volume>.
        ({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}, ("web-0-scratch", True)),
        ({"name": "cfg", "configMap": {"name": "c"}}, None),
    ],
)
def test_volume_claim(vol: dict, want: tuple[str, bool] | None) -> None:
    assert volume_claim("web-0", vol) == want


def test_pvc_claim_names_leave_out_ephemeral_volumes() -> None:
    vols = ({"name": "a", "persistentVolumeClaim": {"claimName": "x"}}, {"name": "b", "ephemeral": {}})
    assert pvc_claim_names(vols) == ["x"]
