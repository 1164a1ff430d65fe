"""VolumeZone; cases from upstream plugins/volumezone/volume_zone_test.go."""

from __future__ import annotations

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.listers import StorageStore
from scheduler.framework.status import SKIP, Code, Status
from scheduler.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from scheduler.testing.builders import MakeNode
from scheduler.testing.storage import claim_vol, pv, pvc, storage_class, store_of, vol_pod

BZ = "failure-domain.beta.kubernetes.io/zone"
BR = "failure-domain.beta.kubernetes.io/region"
Z = "topology.kubernetes.io/zone"
R = "topology.kubernetes.io/region"
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)


def _pvcs(*pairs: tuple[str, str]) -> list[dict]:
    return [pvc(name, volume=vol, modes=()) for name, vol in pairs]


SINGLE = store_of(
    pv("Vol_1", labels={BZ: "us-west1-a"}),
    pv("Vol_2", labels={BR: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BR: "us-west1"}),
    pv("Vol_Stable_1", labels={Z: "us-west1-a"}),
    pv("Vol_Stable_2", labels={R: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={Z: "us-west1-a", R: "us-west1-a"}),
    *_pvcs(
        ("PVC_1", "Vol_1"),
        ("PVC_2", "Vol_2"),
        ("PVC_3", "Vol_3"),
        ("PVC_4", "Vol_not_exist"),
        ("PVC_Stable_1", "Vol_Stable_1"),
        ("PVC_Stable_2", "Vol_Stable_2"),
        ("PVC_Stable_3", "Vol_Stable_3"),
    ),
)
MULTI = store_of(
    pv("Vol_1", labels={BZ: "us-west1-a"}),
    pv("Vol_2", labels={BZ: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BZ: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={Z: "us-west1-a"}),
    pv("Vol_Stable_2", labels={Z: "us-west1-c__us-west1-a"}),
    *_pvcs(
        ("PVC_1", "Vol_1"),
        ("PVC_2", "Vol_2"),
        ("PVC_3", "Vol_3"),
        ("PVC_4", "Vol_not_exist"),
        ("PVC_Stable_1", "Vol_Stable_1"),
        ("PVC_Stable_2", "Vol_Stable_2"),
    ),
)
BINDING = store_of(
    storage_class("Class_Immediate", mode=None),
    storage_class("Class_Wait"),
    pv("Vol_1", labels={BZ: "us-west1-a"}),
    *_pvcs(("PVC_1", "Vol_1")),
    pvc("PVC_NoSC", cls="Class_0", modes=()),
    pvc("PVC_EmptySC", modes=()),
    pvc("PVC_WaitSC", cls="Class_Wait", modes=()),
    pvc("PVC_ImmediateSC", cls="Class_Immediate", modes=()),
)
U = "uselessLabel"
BINDING_NODE = {BZ: "us-west1-a", U: "none"}


def _err(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


CASES = [
    # (upstream test/case, store, claim or None, node labels, prefilter status, filter status)
    ("TestSingleZone/pod without volume", SINGLE, None, {BZ: "us-west1-a"}, SKIP, None),
    ("TestSingleZone/node without labels", SINGLE, "PVC_1", None, None, None),
    ("TestSingleZone/beta zone label matched", SINGLE, "PVC_1", {BZ: "us-west1-a", U: "none"}, None, None),
    ("TestSingleZone/beta region label matched", SINGLE, "PVC_2", {BR: "us-west1", U: "none"}, None, None),
    ("TestSingleZone/beta region label doesn't match", SINGLE, "PVC_2", {BR: "no_us-west1", U: "none"}, None, CONFLICT),
    ("TestSingleZone/beta zone label doesn't match", SINGLE, "PVC_1", {BZ: "no_us-west1-a", U: "none"}, None, CONFLICT),
    ("TestSingleZone/zone label matched", SINGLE, "PVC_Stable_1", {Z: "us-west1-a", U: "none"}, None, None),
    ("TestSingleZone/region label matched", SINGLE, "PVC_Stable_2", {R: "us-west1", U: "none"}, None, None),
    (
        "TestSingleZone/region label doesn't match",
        SINGLE,
        "PVC_Stable_2",
        {R: "no_us-west1", U: "none"},
        None,
        CONFLICT,
    ),
    (
        "TestSingleZone/zone label doesn't match",
        SINGLE,
        "PVC_Stable_1",
        {Z: "no_us-west1-a", U: "none"},
        None,
        CONFLICT,
    ),
    (
        "TestSingleZone/pv with zone and region, node with only zone",
        SINGLE,
        "PVC_Stable_3",
        {Z: "us-west1-a"},
        None,
        CONFLICT,
    ),
    ("TestSingleZone/pv with zone,node with beta zone", SINGLE, "PVC_Stable_1", {BZ: "us-west1-a"}, None, CONFLICT),
    ("TestSingleZone/pv with beta label,node with ga label, matched", SINGLE, "PVC_1", {Z: "us-west1-a"}, None, None),
    (
        "TestSingleZone/pv with beta label,node with ga label, don't match",
        SINGLE,
        "PVC_1",
        {Z: "us-west1-b"},
        None,
        CONFLICT,
    ),
    ("TestMultiZone/node without labels", MULTI, "PVC_3", None, None, None),
    ("TestMultiZone/beta zone label matched", MULTI, "PVC_3", {BZ: "us-west1-a", U: "none"}, None, None),
    ("TestMultiZone/beta zone label doesn't match", MULTI, "PVC_1", {BZ: "us-west1-b", U: "none"}, None, CONFLICT),
    ("TestMultiZone/zone label matched", MULTI, "PVC_Stable_2", {Z: "us-west1-a", U: "none"}, None, None),
    ("TestMultiZone/zone label doesn't match", MULTI, "PVC_Stable_1", {Z: "us-west1-b", U: "none"}, None, CONFLICT),
    ("TestWithBinding/label zone failure domain matched", BINDING, "PVC_1", BINDING_NODE, None, None),
    (
        "TestWithBinding/unbound volume empty storage class",
        BINDING,
        "PVC_EmptySC",
        BINDING_NODE,
        _err("PersistentVolumeClaim had no pv name and storageClass name"),
        _err("PersistentVolumeClaim had no pv name and storageClass name"),
    ),
    (
        # Upstream's fake lister says "storageclasses..."; the real informer lister (what a
        # running kube-scheduler reports) names the singular resource.
        "TestWithBinding/unbound volume no storage class",
        BINDING,
        "PVC_NoSC",
        BINDING_NODE,
        _err('storageclass.storage.k8s.io "Class_0" not found'),
        _err('storageclass.storage.k8s.io "Class_0" not found'),
    ),
    (
        "TestWithBinding/unbound volume immediate binding mode",
        BINDING,
        "PVC_ImmediateSC",
        BINDING_NODE,
        _err('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
        _err('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
    ),
    ("TestWithBinding/unbound volume wait binding mode", BINDING, "PVC_WaitSC", BINDING_NODE, SKIP, None),
    (
        "missing claim: NotFound message",
        SINGLE,
        "PVC_missing",
        BINDING_NODE,
        _err('persistentvolumeclaim "PVC_missing" not found'),
        _err('persistentvolumeclaim "PVC_missing" not found'),
    ),
    (
        "claim bound to a missing PV",
        SINGLE,
        "PVC_4",
        BINDING_NODE,
        _err('persistentvolume "Vol_not_exist" not found'),
        _err('persistentvolume "Vol_not_exist" not found'),
    ),
]


@pytest.mark.parametrize(("name", "store", "claim", "labels", "want_pre", "want"), CASES, ids=[c[0] for c in CASES])
def test_volume_zone(
    name: str,
    store: StorageStore,
    claim: str | None,
    labels: dict[str, str] | None,
    want_pre: Status | None,
    want: Status | None,
) -> None:
    pl = VolumeZone(store)
    pod = vol_pod("pod_1", claim_vol(claim)) if claim else vol_pod("pod_1")
    state = CycleState()
    n = MakeNode().name("host1").no_hostname_label().labels(labels or {}).info()
    assert pl.pre_filter(state, pod, [n]) == want_pre
    assert pl.filter(state, pod, n) == want


def test_hints() -> None:
    pl = VolumeZone(store_of())
    pod = vol_pod("pod_1", claim_vol("PVC_1"))
    bare = vol_pod("pod_1")
    # TestIsSchedulableAfterPersistentVolumeClaimAdded
    assert pl._after_pvc_change(bare, None, pvc("PVC_1")) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_change(vol_pod("pod_1", claim_vol("PVC_2")), None, pvc("PVC_1")) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_change(pod, None, pvc("PVC_1", ns="ns1")) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_change(pod, None, pvc("PVC_1")) == QueueingHint.QUEUE
    assert pl._after_pvc_change(pod, pvc("PVC_1"), pvc("PVC_1")) == QueueingHint.QUEUE
    # TestIsSchedulableAfterStorageClassAdded
    assert pl._after_class_added(pod, None, storage_class("SC_1", mode=None)) == QueueingHint.QUEUE_SKIP
    assert pl._after_class_added(pod, None, storage_class("SC_1")) == QueueingHint.QUEUE
    # TestIsSchedulableAfterPersistentVolumeChange
    assert pl._after_pv_change(pod, None, pv("Vol_1", labels={BZ: "us-west1-b"})) == QueueingHint.QUEUE
    a, b = pv("Vol_1", labels={BZ: "us-west1-a"}), pv("Vol_1", labels={BZ: "us-west1-b"})
    assert pl._after_pv_change(pod, a, b) == QueueingHint.QUEUE
    c = pv("Vol_1", labels={BZ: "us-west1-a", Z: "us-west1-a"})
    assert pl._after_pv_change(pod, a, c) == QueueingHint.QUEUE
    d = pv("Vol_1", labels={BZ: "us-west1-a", "uselessLabel": "none"})
    e = pv("Vol_1", labels={BZ: "us-west1-a", "uselessLabel": "changed"})
    assert pl._after_pv_change(pod, d, e) == QueueingHint.QUEUE_SKIP
