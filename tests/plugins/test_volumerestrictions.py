"""VolumeRestrictions; cases from upstream plugins/volumerestrictions/volume_restrictions_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from scheduler.testing.storage import claim_vol, node_with, pvc, store_of, vol_pod

GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}


def v(src: dict[str, Any], name: str = "vol") -> dict[str, Any]:
    return {"name": name, **src}


CONFLICT = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)

DISK_CASES = []
for kind, one, two in (("GCE", GCE, GCE2), ("AWS", AWS, AWS2), ("RBD", RBD, RBD2), ("ISCSI", ISCSI, ISCSI2)):
    # Test{kind}DiskConflicts: (name, pod volumes, existing pod volumes, prefilter, filter)
    DISK_CASES += [
        (f"Test{kind}DiskConflicts/nothing", [], None, SKIP, None),
        (f"Test{kind}DiskConflicts/one state", [], [one], SKIP, None),
        (f"Test{kind}DiskConflicts/same state", [one], [one], None, CONFLICT),
        (f"Test{kind}DiskConflicts/different state", [two], [one], None, None),
    ]
DISK_CASES.append(
    ("TestGCEDiskConflicts/pod with a volume that doesn't have restrictions", [{"emptyDir": {}}], None, SKIP, None)
)


@pytest.mark.parametrize(("name", "vols", "existing", "want_pre", "want"), DISK_CASES, ids=[c[0] for c in DISK_CASES])
def test_disk_conflicts(
    name: str, vols: list, existing: list | None, want_pre: Status | None, want: Status | None
) -> None:
    pl = VolumeRestrictions(store=store_of())
    pod = vol_pod("p", *[v(s) for s in vols])
    node = node_with("node-1", *([vol_pod("e", *[v(s) for s in existing])] if existing is not None else []))
    state = CycleState()
    assert pl.pre_filter(state, pod, [node]) == want_pre
    if want_pre is None:
        assert pl.filter(state, pod, node) == want


def test_read_only_disks_do_not_conflict() -> None:
    # isVolumeConflict: GCE PD, RBD and iSCSI may be shared when both sides are read-only.
    pl = VolumeRestrictions(store=store_of())
    for src in (GCE, RBD, ISCSI):
        key = next(iter(src))
        ro = {key: {**src[key], "readOnly": True}}
        node = node_with("node-1", vol_pod("e", v(ro)))
        pod = vol_pod("p", v(ro))
        state = CycleState()
        assert pl.pre_filter(state, pod, [node]) is None
        assert pl.filter(state, pod, node) is None
    # AWS EBS conflicts even when read-only.
    ro_aws = {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}
    node = node_with("node-1", vol_pod("e", v(ro_aws)))
    state = CycleState()
    assert pl.pre_filter(state, vol_pod("p", v(ro_aws)), [node]) is None
    assert pl.filter(state, vol_pod("p", v(ro_aws)), node) == CONFLICT


RWOP1 = pvc("claim-with-rwop-1", modes=("ReadWriteOncePod",))
RWOP2 = pvc("claim-with-rwop-2", modes=("ReadWriteOncePod",))
RWX = pvc("claim-with-rwx", modes=("ReadWriteMany",))


def _pod(name: str, *claims: str) -> PodInfo:
    return vol_pod(name, *[claim_vol(c) for c in claims], node="node-1")


ONE = _pod("pod-with-one-pvc", "claim-with-rwop-1")
TWO = _pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
ONE_CONFLICT = _pod("pod-with-one-conflict", "claim-with-rwop-1")
TWO_CONFLICTS = _pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2")
RWX_POD = _pod("pod-with-rwx", "claim-with-rwx")

ACCESS_CASES = [
    # TestAccessModeConflicts: (name, pod, existing pods, pvcs, prefilter, filter)
    ("nothing", vol_pod("empty"), [], [], SKIP, None),
    (
        "failed to get PVC",
        ONE,
        [],
        [],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'),
        None,
    ),
    ("no access mode conflict", ONE, [RWX_POD], [RWOP1, RWX], SKIP, None),
    (
        "access mode conflict, unschedulable",
        ONE_CONFLICT,
        [ONE, RWX_POD],
        [RWOP1, RWX],
        None,
        Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT),
    ),
    (
        "two conflicts, unschedulable",
        TWO_CONFLICTS,
        [TWO, RWX_POD],
        [RWOP1, RWOP2, RWX],
        None,
        Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT),
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing", "pvcs", "want_pre", "want"), ACCESS_CASES, ids=[c[0] for c in ACCESS_CASES]
)
def test_access_mode_conflicts(
    name: str, pod: PodInfo, existing: list[PodInfo], pvcs: list, want_pre: Status | None, want: Status | None
) -> None:
    pl = VolumeRestrictions(store=store_of(*pvcs))
    node = node_with("node-1", *existing)
    state = CycleState()
    got = pl.pre_filter(state, pod, [node])
    assert got == want_pre
    if want_pre is None:
        assert pl.filter(state, pod, NodeInfo(None, "n")) == want


def test_rwop_add_remove_pod_extensions() -> None:
    # PreFilterExtensions: removing the pod that holds the claim clears the conflict.
    pl = VolumeRestrictions(store=store_of(RWOP1))
    node = node_with("node-1", ONE)
    state = CycleState()
    assert pl.pre_filter(state, ONE_CONFLICT, [node]) is None
    pl.remove_pod(state, ONE_CONFLICT, ONE, node)
    assert pl.filter(state, ONE_CONFLICT, node) is None
    pl.add_pod(state, ONE_CONFLICT, ONE, node)
    assert pl.filter(state, ONE_CONFLICT, node) == Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)


HINT_POD_CASES = [
    # Test_isSchedulableAfterPodDeleted: (name, pod volumes, deleted pod volumes, hint)
    ("queue on GCE disk conflict", [v(GCE)], [v(GCE)], QueueingHint.QUEUE),
    ("skip when no GCE disk conflict", [v(GCE)], [v(GCE2)], QueueingHint.QUEUE_SKIP),
    ("queue on AWS disk conflict", [v(AWS)], [v(AWS)], QueueingHint.QUEUE),
    ("skip when no AWS disk conflict", [v(AWS)], [v(AWS2)], QueueingHint.QUEUE_SKIP),
    ("queue on RBD disk conflict", [v(RBD)], [v(RBD)], QueueingHint.QUEUE),
    ("skip when no RBD disk conflict", [v(RBD)], [v(RBD2)], QueueingHint.QUEUE_SKIP),
    ("queue on ISCSI disk conflict", [v(ISCSI)], [v(ISCSI)], QueueingHint.QUEUE),
    ("skip when no ISCSI disk conflict", [v(ISCSI)], [v(ISCSI2)], QueueingHint.QUEUE_SKIP),
    (
        "queue when the deleted pod had the same PVC",
        [claim_vol("claim-rwop")],
        [claim_vol("claim-rwop")],
        QueueingHint.QUEUE,
    ),
    (
        "skip when the deleted pod had a different PVC",
        [claim_vol("claim-1-rwop")],
        [claim_vol("claim-2-rwop")],
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(("name", "mine", "theirs", "want"), HINT_POD_CASES, ids=[c[0] for c in HINT_POD_CASES])
def test_hint_pod_deleted(name: str, mine: list, theirs: list, want: QueueingHint) -> None:
    pl = VolumeRestrictions(store=store_of())
    assert pl._after_pod_deleted(vol_pod("pod1", *mine), vol_pod("pod2", *theirs), None) == want


def test_hint_pvc_added() -> None:
    # Test_isSchedulableAfterPersistentVolumeClaimAdded.
    pl = VolumeRestrictions(store=store_of())
    two = vol_pod("p", claim_vol("claim-with-rwop-1"), claim_vol("claim-with-rwop-2"))
    one = vol_pod("p", claim_vol("claim-with-rwop-1"))
    assert pl._after_pvc_added(two, None, RWOP1) == QueueingHint.QUEUE
    assert pl._after_pvc_added(one, None, RWOP2) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_added(one, None, pvc("claim-with-rwop-1", ns="other")) == QueueingHint.QUEUE_SKIP
