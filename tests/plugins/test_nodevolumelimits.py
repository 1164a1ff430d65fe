# ruff: noqa: E501  (the upstream table reads best one case per line)
"""NodeVolumeLimits; cases from upstream plugins/nodevolumelimits/csi_test.go (TestCSILimits,
TestCSILimitsQHint and the CSINode / PVC / VolumeAttachment hint tests)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.listers import StorageStore
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.testing.builders import make_node, make_pod

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_TREE = "kubernetes.io/aws-ebs"
HOSTPATH = "kubernetes.io/hostpath"
SC = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def pvc_pod(*claims: str, name: str = "p") -> PodInfo:
    return PodInfo(make_pod(name, volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]))


def raw_pod(vols: list[dict[str, Any]], name: str = "p", ns: str = "default", uid: str | None = None) -> PodInfo:
    return PodInfo(make_pod(name, ns, uid=uid, volumes=vols))


RUNNING = pvc_pod("csi-ebs.csi.aws.com-3")
PENDING = pvc_pod("csi-4")
UNBOUND2 = pvc_pod("csi-4")
MISSING_PV = pvc_pod("csi-6")
NO_SC = pvc_pod("csi-5")
GCE_TWO = pvc_pod("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
TREE_ONE = pvc_pod("csi-kubernetes.io/aws-ebs-0")
TREE_TWO = pvc_pod("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2")
EBS_ONE = pvc_pod("csi-ebs.csi.aws.com-0")
EBS_TWO = pvc_pod("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
HOSTPATH_ONE = pvc_pod("csi-kubernetes.io/hostpath-0")
EPH = raw_pod([{"name": "xyz", "ephemeral": {}}], "abc", "test", "12345")
EPH_TWO = raw_pod([{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}], "abc", "test", "12345II")
INLINE = raw_pod([{"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}])
INLINE_SAME_ID = raw_pod([{"name": "a", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}])
CM_SECRET = [{"name": "cm", "configMap": {}}, {"name": "s", "secret": {}}]
ONLY_CM_SECRET = raw_pod(CM_SECRET)
PVC_CM_SECRET = raw_pod([*CM_SECRET, {"name": "c", "persistentVolumeClaim": {"claimName": "csi-ebs.csi.aws.com-0"}}])
EPH_CM_SECRET = raw_pod([*CM_SECRET, {"name": "xyz", "ephemeral": {}}], "abc", "test")
INLINE_CM_SECRET = raw_pod([*CM_SECRET, {"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}])


def eph_claim(pod: PodInfo, vol: str, owned: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"{pod.name}-{vol}", "namespace": pod.namespace}
    if owned:
        meta["ownerReferences"] = [{"kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}]
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": {"storageClassName": SC}}


def world(drivers: list[str], limit_source: str, max_vols: int, va_count: int, extra: list[dict]) -> StorageStore:
    """The fake listers of TestCSILimits: 4 PVs/PVCs per driver, csi-4/5/6 claims, one class."""
    st = StorageStore()
    for d in drivers:
        for j in range(4):
            name = f"csi-{d}-{j}"
            if d == EBS_TREE:
                src: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
            elif d == HOSTPATH:
                src = {"hostPath": {"path": "/tmp"}}
            else:
                src = {"csi": {"driver": d, "volumeHandle": name}}
            st.apply("PersistentVolume", {"metadata": {"name": name}, "spec": src})
            st.apply("PersistentVolumeClaim", {"metadata": {"name": name}, "spec": {"volumeName": name}})
        for j in range(va_count):
            st.apply(
                "VolumeAttachment",
                {
                    "metadata": {"name": f"va-{d}-{j}"},
                    "spec": {"nodeName": NODE, "attacher": d, "source": {"persistentVolumeName": f"csi-{d}-{j}"}},
                },
            )
    st.apply("PersistentVolumeClaim", {"metadata": {"name": "csi-4"}, "spec": {"storageClassName": SC}})
    st.apply("PersistentVolumeClaim", {"metadata": {"name": "csi-5"}, "spec": {}})
    st.apply(
        "PersistentVolumeClaim",
        {"metadata": {"name": "csi-6"}, "spec": {"storageClassName": SC, "volumeName": "missing-in-action"}},
    )
    for c in extra:
        st.apply("PersistentVolumeClaim", c)
    st.apply("StorageClass", {"metadata": {"name": SC}, "provisioner": drivers[0]})
    if limit_source in ("csinode", "csinode-with-no-limit"):
        ds = []
        for d in drivers:
            entry: dict[str, Any] = {"name": d, "nodeID": NODE}
            if limit_source == "csinode":
                entry["allocatable"] = {"count": max_vols}
            ds.append(entry)
        st.apply(
            "CSINode",
            {
                "metadata": {"name": NODE, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": EBS_TREE}},
                "spec": {"drivers": ds},
            },
        )
    return st


def _nf(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


# (test, new pod, existing, extra claims, max vols, va count, drivers, limit source, want, want prefilter)
CASES: list[tuple[str, PodInfo, list[PodInfo], list[dict], int, int, list[str], str, Status | None, Status | None]] = [
    ("should count VolumeAttachments towards volume limit when no pods exist", EBS_ONE, [], [], 2, 2, [EBS], "csinode", EXCEEDED, None),
    ("should schedule pod when VolumeAttachments count does not exceed limit", EBS_ONE, [], [], 2, 1, [EBS], "csinode", None, None),
    ("fits when node volume limit >= new pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], [], 4, 0, [EBS], "csinode", None, None),
    ("doesn't when node volume limit <= pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], [], 2, 0, [EBS], "csinode", EXCEEDED, None),
    ("should when driver does not support volume limits", EBS_ONE, [RUNNING, EBS_TWO], [], 2, 0, [EBS], "csinode-with-no-limit", None, None),
    ("count pending PVCs towards volume limit <= pods CSI volume", EBS_ONE, [PENDING, EBS_TWO], [], 2, 0, [EBS], "csinode", EXCEEDED, None),
    ("count multiple pending pvcs towards volume limit >= pods CSI volume", EBS_ONE, [PENDING, UNBOUND2, EBS_TWO], [], 4, 0, [EBS], "csinode", None, None),
    ("should count PVCs with invalid PV name but valid SC", EBS_ONE, [MISSING_PV, EBS_TWO], [], 2, 0, [EBS], "csinode", EXCEEDED, None),
    ("don't count pvcs with missing SC towards volume limit", EBS_ONE, [RUNNING, NO_SC], [], 2, 0, [EBS], "csinode", None, None),
    ("count pvcs with the same type towards volume limit", EBS_ONE, [GCE_TWO, EBS_TWO], [], 2, 0, [EBS, GCE], "csinode", EXCEEDED, None),
    ("don't count pvcs with different type towards volume limit", GCE_TWO, [EBS_TWO, RUNNING], [], 2, 0, [EBS, GCE], "csinode", None, None),
    ("should count in-tree volumes if migration is enabled", TREE_ONE, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None),
    ("nil csi node", INLINE, [TREE_TWO], [], 0, 0, [EBS_TREE, EBS], "", None, None),
    ("should count unbound in-tree volumes if migration is enabled", PENDING, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None),
    ("should not limit pod if volume used does not report limits", TREE_ONE, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode-with-no-limit", None, None),
    ("should not count non-migratable in-tree volumes", HOSTPATH_ONE, [EBS_TWO], [], 2, 0, [HOSTPATH, EBS], "csinode", None, None),
    ("should count in-tree inline volumes if migration is enabled", INLINE, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None),
    (
        "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        TREE_ONE, [EBS_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None,
    ),
    (
        "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        INLINE, [EBS_TWO, TREE_ONE], [], 3, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None,
    ),
    (
        "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        INLINE_SAME_ID, [EBS_TWO, TREE_ONE], [], 3, 0, [EBS_TREE, EBS], "csinode", None, None,
    ),
    (
        "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
        EBS_ONE, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None,
    ),
    # Upstream's fake lister words NotFound with the plural resource; the informer's says
    # "persistentvolumeclaim", which is what a running kube-scheduler reports.
    (
        "ephemeral volume missing", EPH, [], [], 0, 0, [EBS], "csinode-with-no-limit",
        _nf('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'), None,
    ),
    (
        "ephemeral volume not owned", EPH, [], [eph_claim(EPH, "xyz", owned=False)], 0, 0, [EBS], "csinode-with-no-limit",
        Status(Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"), None,
    ),
    ("ephemeral volume unbound", EPH, [], [eph_claim(EPH, "xyz")], 0, 0, [EBS], "csinode-with-no-limit", None, None),
    (
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        EPH, [RUNNING, EBS_TWO], [eph_claim(EPH, "xyz")], 2, 0, [EBS], "csinode", EXCEEDED, None,
    ),
    (
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        EBS_ONE, [RUNNING, EPH_TWO], [eph_claim(EPH_TWO, "x"), eph_claim(EPH_TWO, "y")], 2, 0, [EBS], "csinode", EXCEEDED, None,
    ),
    (
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
        EBS_ONE, [RUNNING, EPH, EBS_TWO], [eph_claim(EPH, "xyz")], 3, 0, [EBS], "csinode", EXCEEDED, None,
    ),
    (
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        EBS_ONE, [RUNNING, EPH, EBS_TWO], [eph_claim(EPH, "xyz")], 5, 0, [EBS], "csinode", None, None,
    ),
    ("skip Filter when the pod only uses secrets and configmaps", ONLY_CM_SECRET, [], [], 2, 0, [EBS], "csinode", None, SKIP),
    ("don't skip Filter when the pod has pvcs", PVC_CM_SECRET, [], [], 2, 0, [EBS], "csinode", None, None),
    (
        "don't skip Filter when the pod has ephemeral volumes", EPH_CM_SECRET, [], [], 0, 0, [EBS], "csinode-with-no-limit",
        _nf('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'), None,
    ),
    (
        "don't skip Filter when the pod has inline migratable volumes",
        INLINE_CM_SECRET, [TREE_TWO], [], 2, 0, [EBS_TREE, EBS], "csinode", EXCEEDED, None,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "pod", "existing", "extra", "max_vols", "va", "drivers", "source", "want", "want_pre"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_csi_limits(
    name: str,
    pod: PodInfo,
    existing: list[PodInfo],
    extra: list[dict],
    max_vols: int,
    va: int,
    drivers: list[str],
    source: str,
    want: Status | None,
    want_pre: Status | None,
) -> None:
    pl = NodeVolumeLimits(world(drivers, source, max_vols, va, extra))
    node = NodeInfo(make_node(NODE))
    for p in existing:
        node.add_pod(p)
    state = CycleState()
    got_pre = pl.pre_filter(state, pod, [node])
    assert got_pre == want_pre
    if got_pre is None:
        got = pl.filter(state, pod, node)
        assert got == want
        if got is not None:
            assert got.code == want.code  # type: ignore[union-attr]


def test_hint_pod_deleted() -> None:
    # TestCSILimitsQHint
    pl = NodeVolumeLimits(StorageStore())
    pod = pvc_pod("csi-ebs.csi.aws.com-2")
    on_node = lambda vols: PodInfo(make_pod("d", node_name="n", volumes=vols))  # noqa: E731
    assert pl._after_pod_deleted(pod, on_node([{"name": "a", "persistentVolumeClaim": {"claimName": "c"}}]), None) == QueueingHint.QUEUE
    assert pl._after_pod_deleted(pod, on_node([{"name": "a", "awsElasticBlockStore": {"volumeID": "x"}}]), None) == QueueingHint.QUEUE
    assert pl._after_pod_deleted(pod, on_node([]), None) == QueueingHint.QUEUE_SKIP
    unscheduled = PodInfo(make_pod("d", volumes=[{"name": "a", "persistentVolumeClaim": {"claimName": "c"}}]))
    assert pl._after_pod_deleted(pod, unscheduled, None) == QueueingHint.QUEUE_SKIP


def test_hint_pvc_added() -> None:
    # TestCSILimitsAddedPVCQHint
    pl = NodeVolumeLimits(StorageStore())
    pod = PodInfo(make_pod("pod1", "ns1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "pvc1"}}]))
    eph = PodInfo(make_pod("pod1", "ns1", volumes=[{"name": "ephemeral", "ephemeral": {}}]))
    bare = PodInfo(make_pod("pod1", "ns1"))
    added = {"metadata": {"name": "pvc1", "namespace": "ns1"}}
    assert pl._after_pvc_added(pod, None, {"metadata": {"name": "pvc1", "namespace": "ns2"}}) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_added(pod, None, added) == QueueingHint.QUEUE
    assert pl._after_pvc_added(eph, None, {"metadata": {"name": "pod1-ephemeral", "namespace": "ns1"}}) == QueueingHint.QUEUE
    assert pl._after_pvc_added(pod, None, {"metadata": {"name": "pvc2", "namespace": "ns1"}}) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_added(bare, None, added) == QueueingHint.QUEUE_SKIP


def test_hint_volume_attachment_deleted() -> None:
    # TestVolumeAttachmentDeletedQHint
    pl = NodeVolumeLimits(StorageStore())
    va = lambda attacher: {"metadata": {"name": "va"}, "spec": {"attacher": attacher}}  # noqa: E731
    ebs_inline = {"name": "a", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    gce_inline = {"name": "g", "gcePersistentDisk": {"pdName": "pd"}}
    claim = {"name": "c", "persistentVolumeClaim": {"claimName": "c"}}
    assert pl._after_attachment_deleted(raw_pod([claim]), va(EBS), None) == QueueingHint.QUEUE
    assert pl._after_attachment_deleted(raw_pod([ebs_inline]), va(EBS), None) == QueueingHint.QUEUE
    assert pl._after_attachment_deleted(raw_pod([gce_inline]), va(EBS), None) == QueueingHint.QUEUE_SKIP
    assert pl._after_attachment_deleted(raw_pod([ebs_inline, claim]), va(EBS), None) == QueueingHint.QUEUE
    assert pl._after_attachment_deleted(raw_pod([]), va(EBS), None) == QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        # TestIsSchedulableAfterCSINodeUpdated
        ("limit raised, queue", 1, 2, QueueingHint.QUEUE),
        ("limit decreased, skip queueing", 2, 1, QueueingHint.QUEUE_SKIP),
        ("limit unchanged, skip queueing", 2, 2, QueueingHint.QUEUE_SKIP),
    ],
)
def test_hint_csinode_updated(name: str, old: int, new: int, want: QueueingHint) -> None:
    pl = NodeVolumeLimits(StorageStore())
    mk = lambda n: {"metadata": {"name": "test-node"}, "spec": {"drivers": [{"name": "d", "allocatable": {"count": n}}]}}  # noqa: E731
    assert pl._after_csinode_updated(pvc_pod("c"), mk(old), mk(new)) == want


# -- the batch form's caches follow storage changes ---------------------------------------------
# Not an upstream table: csi.go reads the listers in every Filter call, so whatever our caches
# keep must give what a plugin with no cache gives, after any change to the objects it read.

DRIVERS = (EBS, GCE)


def _csinode(name: str, limits: dict[str, int]) -> dict[str, Any]:
    drivers = [{"name": d, "nodeID": name, "allocatable": {"count": n}} for d, n in limits.items()]
    return {"kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": drivers}}


def _pv(name: str, driver: str) -> dict[str, Any]:
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": {"csi": {"driver": driver, "volumeHandle": name}}}


def _pvc(name: str, volume: str = "", cls: str = SC) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": cls}
    if volume:
        spec["volumeName"] = volume
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _va(name: str, node: str, volume: str, attacher: str = EBS) -> dict[str, Any]:
    spec = {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": volume}}
    return {"kind": "VolumeAttachment", "metadata": {"name": name}, "spec": spec}


def _mutate(r: Any, st: StorageStore, nodes: list[str]) -> None:
    """One change of the kinds NodeVolumeLimits reads, on a random object."""
    i = r.randrange(8)
    what = r.randrange(6)
    if what == 0:  # a PV's driver moves
        st.apply("PersistentVolume", _pv(f"pv{i}", r.choice(DRIVERS)))
    elif what == 1:  # a claim binds elsewhere, unbinds or goes
        if r.random() < 0.2:
            st.delete("PersistentVolumeClaim", _pvc(f"c{i}"))
        else:
            st.apply("PersistentVolumeClaim", _pvc(f"c{i}", r.choice(["", f"pv{r.randrange(8)}"])))
    elif what == 2:  # a node's limits change, appear or go
        node = r.choice(nodes)
        if r.random() < 0.2:
            st.delete("CSINode", _csinode(node, {}))
        else:
            st.apply("CSINode", _csinode(node, {d: r.randrange(4) for d in DRIVERS if r.random() < 0.8}))
    elif what == 3:  # an attachment comes, moves or goes
        if r.random() < 0.3:
            st.delete("VolumeAttachment", _va(f"va{i}", "", ""))
        else:
            st.apply("VolumeAttachment", _va(f"va{i}", r.choice(nodes), f"pv{r.randrange(8)}", r.choice(DRIVERS)))
    elif what == 4:  # the class of unbound claims changes its provisioner
        st.apply("StorageClass", {"kind": "StorageClass", "metadata": {"name": SC}, "provisioner": r.choice(DRIVERS)})
    else:  # something the plugin does not read
        st.apply("CSIDriver", {"kind": "CSIDriver", "metadata": {"name": r.choice(DRIVERS)}, "spec": {}})


@pytest.mark.parametrize("seed", range(12))
def test_batch_after_storage_changes_equals_fresh_per_node(seed: int) -> None:
    import random

    from scheduler.framework.snapshot import Snapshot

    r = random.Random(seed)
    st = StorageStore()
    nodes = [f"n{k}" for k in range(6)]
    st.apply("StorageClass", {"kind": "StorageClass", "metadata": {"name": SC}, "provisioner": EBS})
    for i in range(8):
        st.apply("PersistentVolume", _pv(f"pv{i}", r.choice(DRIVERS)))
        st.apply("PersistentVolumeClaim", _pvc(f"c{i}", f"pv{i}" if r.random() < 0.7 else ""))
    for node in nodes:
        st.apply("CSINode", _csinode(node, {d: r.randrange(4) for d in DRIVERS}))
    infos = []
    for k, node in enumerate(nodes):
        ni = NodeInfo(make_node(node))
        for j in range(r.randrange(3)):
            ni.add_pod(raw_pod([{"name": "v", "persistentVolumeClaim": {"claimName": f"c{r.randrange(8)}"}}], f"run-{k}-{j}", uid=f"u-{k}-{j}"))
        infos.append(ni)
    snap = Snapshot()
    snap.set_nodes(infos)
    pl = NodeVolumeLimits(st, volume_id_prefix="x")
    idx = np.arange(len(nodes))
    for step in range(40):
        _mutate(r, st, nodes)
        if step % 7 == 3:  # the snapshot moves too: a pod lands on a node
            ni = snap.node_infos[r.randrange(len(nodes))].clone()
            ni.add_pod(raw_pod([{"name": "v", "persistentVolumeClaim": {"claimName": f"c{r.randrange(8)}"}}], f"new-{step}", uid=f"s{step}"))
            snap.replace_node(ni, False)
        pod = pvc_pod(*{f"c{r.randrange(8)}" for _ in range(r.randint(1, 3))})
        fresh = NodeVolumeLimits(st, volume_id_prefix="x")
        want = []
        for ni in snap.node_infos:
            st_ = fresh.filter(CycleState(), pod, ni)
            want.append(st_ is None)
            if st_ is not None and st_.code != Code.UNSCHEDULABLE:
                break
        else:
            got = pl.filter_batch(CycleState(), pod, snap, idx)
            assert got is not None and got.tolist() == want, f"step {step}"
            # The per-node form shares the same usage cache.
            assert [pl.filter(CycleState(), pod, ni) is None for ni in snap.node_infos] == want


def test_an_unrelated_claim_change_keeps_other_nodes_usage() -> None:
    from scheduler.framework.snapshot import Snapshot

    st = StorageStore()
    for i in range(3):
        st.apply("PersistentVolume", _pv(f"pv{i}", EBS))
        st.apply("PersistentVolumeClaim", _pvc(f"c{i}", f"pv{i}"))
        st.apply("CSINode", _csinode(f"n{i}", {EBS: 5}))
    infos = []
    for i in range(3):
        ni = NodeInfo(make_node(f"n{i}"))
        ni.add_pod(raw_pod([{"name": "v", "persistentVolumeClaim": {"claimName": f"c{i}"}}], f"run{i}", uid=f"u{i}"))
        infos.append(ni)
    snap = Snapshot()
    snap.set_nodes(infos)
    pl = NodeVolumeLimits(st, volume_id_prefix="x")
    pod = pvc_pod("c0")
    idx = np.arange(3)
    pl.filter_batch(CycleState(), pod, snap, idx)
    kept = {name: pl._usage_cache[name] for name in ("n0", "n2")}
    # The PV controller binds n1's claim's PV again: only n1's usage is worked out anew.
    st.apply("PersistentVolume", _pv("pv1", GCE))
    st.apply("PersistentVolumeClaim", _pvc("other"))
    pl.filter_batch(CycleState(), pod, snap, idx)
    assert {name: pl._usage_cache[name] for name in ("n0", "n2")} == kept
    assert all(pl._usage_cache[name] is kept[name] for name in kept)
    assert pl._usage_cache["n1"][2] == {GCE: 1}
