# ruff: noqa: E501  (tables read best one case per line)
"""VolumeBinding; cases from upstream plugins/volumebinding/volume_binding_test.go
(TestVolumeBinding: PreFilter and Filter statuses) and binder_test.go (FindPodVolumes,
AssumePodVolumes, BindPodVolumes), plus the assume cache across cycles."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.listers import StorageStore
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.volumebinding import ERR_UNBOUND_IMMEDIATE, VolumeBinding, _parse_args
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from scheduler.plugins.volumebinding.errors import BinderError
from scheduler.testing.builders import MakeNode, MakePod, make_pod
from scheduler.testing.storage import pv, pvc, storage_class, store_of

HOST = "kubernetes.io/hostname"
# Upstream's waitSC / waitHDDSC have no provisioner: nothing can be provisioned with them.
WAIT = storage_class("wait-sc", provisioner="")
WAIT_HDD = storage_class("wait-hdd-sc", provisioner="")
PROV = storage_class("prov-sc")
IMMEDIATE = storage_class("immediate-sc", mode="Immediate")
CAP_SC = storage_class("wait-sc-with-storage-capacity", provisioner="driver-with-storage-capacity")
CAP_DRIVER = {"kind": "CSIDriver", "metadata": {"name": "driver-with-storage-capacity"}, "spec": {"storageCapacity": True}}
NODE_LABEL = "node-label"


def node(name: str, **labels: str) -> NodeInfo:
    return MakeNode().name(name).labels(labels).info()


def pod(*claims: str, name: str = "pod-a", ns: str = "default") -> PodInfo:
    w = MakePod().name(name).namespace(ns)
    for c in claims:
        w.pvc(c)
    return w.info()


def bound(name: str, cls: str, volume: str, **kw: Any) -> dict[str, Any]:
    return pvc(name, cls=cls, volume=volume, bound=True, modes=(), **kw)


def unbound(name: str, cls: str, size: str | None = None, **kw: Any) -> dict[str, Any]:
    return pvc(name, cls=cls, size=size, modes=(), **kw)


def avail(name: str, cls: str, size: str = "1Gi", **kw: Any) -> dict[str, Any]:
    return pv(name, cls=cls, size=size, modes=(), **kw)


def capacity(name: str, cls: str, node_name: str, cap: str) -> dict[str, Any]:
    return {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "default"},
        "storageClassName": cls,
        "nodeTopology": {"matchLabels": {NODE_LABEL: node_name}},
        "capacity": cap,
    }


def _u(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


LOCAL_PVS = [
    avail("pv-a-0", "wait-sc", "200Gi", affinity={HOST: ["node-a"]}),
    avail("pv-a-1", "wait-sc", "200Gi", affinity={HOST: ["node-a"]}),
    avail("pv-b-0", "wait-sc", "100Gi", affinity={HOST: ["node-b"]}),
    avail("pv-b-1", "wait-sc", "100Gi", affinity={HOST: ["node-b"]}),
]
ZONAL = {"topology.kubernetes.io/region": ["region-a"], "topology.kubernetes.io/zone": ["zone-a"]}
ZONAL_B = {"topology.kubernetes.io/region": ["region-b"], "topology.kubernetes.io/zone": ["zone-b"]}


def zn(name: str, z: str) -> NodeInfo:
    return node(name, **{"topology.kubernetes.io/region": f"region-{z}", "topology.kubernetes.io/zone": f"zone-{z}"})


def cap_nodes() -> list[NodeInfo]:
    return [node(n, **{NODE_LABEL: n}) for n in ("node-a", "node-b", "node-c")]


# (TestVolumeBinding case, pod, nodes, objects, prefilter status, filter statuses per node)
CASES: list[tuple[str, PodInfo, list[NodeInfo], list[dict], Status | None, list[Status | None]]] = [
    ("pod has not pvcs", pod(), [node("node-a")], [], SKIP, [None]),
    ("all bound", pod("pvc-a"), [node("node-a")], [WAIT, bound("pvc-a", "wait-sc", "pv-a"), avail("pv-a", "wait-sc")], None, [None]),
    ("PVC does not exist", pod("pvc-a"), [node("node-a")], [], _u('persistentvolumeclaim "pvc-a" not found'), []),
    ("Part of PVCs do not exist", pod("pvc-a", "pvc-b"), [node("node-a")], [WAIT, bound("pvc-a", "wait-sc", "pv-a")], _u('persistentvolumeclaim "pvc-b" not found'), []),
    ("immediate claims not bound", pod("pvc-a"), [node("node-a")], [IMMEDIATE, unbound("pvc-a", "immediate-sc")], _u(ERR_UNBOUND_IMMEDIATE), []),
    ("unbound claims no matches", pod("pvc-a"), [node("node-a")], [WAIT, unbound("pvc-a", "wait-sc")], None, [_u(ERR_REASON_BIND_CONFLICT)]),
    (
        "bound and unbound unsatisfied",
        pod("pvc-a", "pvc-b"),
        [node("node-a", foo="barbar")],
        [WAIT, bound("pvc-a", "wait-sc", "pv-a"), unbound("pvc-b", "wait-sc"), avail("pv-a", "wait-sc", affinity={"foo": ["bar"]})],
        None,
        [_u(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
    ),
    ("pv not found", pod("pvc-a"), [node("node-a")], [WAIT, bound("pvc-a", "wait-sc", "pv-a")], None, [_u(ERR_REASON_PV_NOT_EXIST)]),
    (
        "pv not found claim lost",
        pod("pvc-a"),
        [node("node-a")],
        [WAIT, bound("pvc-a", "wait-sc", "pv-a", phase="Lost")],
        _u('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
        [],
    ),
    (
        "local volumes with close capacity are preferred",
        pod("pvc-a"),
        [node("node-a"), node("node-b"), node("node-c")],
        [WAIT, unbound("pvc-a", "wait-sc", "50Gi"), *LOCAL_PVS],
        None,
        [None, None, _u(ERR_REASON_BIND_CONFLICT)],
    ),
    (
        "zonal volumes with close capacity are preferred",
        pod("pvc-a"),
        [zn("zone-a-node-a", "a"), zn("zone-a-node-b", "a"), zn("zone-b-node-a", "b"), zn("zone-b-node-b", "b"), zn("zone-c-node-a", "c"), zn("zone-c-node-b", "c")],
        [
            WAIT,
            unbound("pvc-a", "wait-sc", "50Gi"),
            avail("pv-a-0", "wait-sc", "200Gi", affinity=ZONAL),
            avail("pv-a-1", "wait-sc", "200Gi", affinity=ZONAL),
            avail("pv-b-0", "wait-sc", "100Gi", affinity=ZONAL_B),
            avail("pv-b-1", "wait-sc", "100Gi", affinity=ZONAL_B),
        ],
        None,
        [None, None, None, None, _u(ERR_REASON_BIND_CONFLICT), _u(ERR_REASON_BIND_CONFLICT)],
    ),
    (
        "storage capacity score",
        pod("pvc-dynamic"),
        cap_nodes(),
        [CAP_SC, CAP_DRIVER, unbound("pvc-dynamic", CAP_SC["metadata"]["name"], "10Gi"),
         capacity("node-a", "wait-sc-with-storage-capacity", "node-a", "100Gi"),
         capacity("node-b", "wait-sc-with-storage-capacity", "node-b", "50Gi"),
         capacity("node-c", "wait-sc-with-storage-capacity", "node-c", "10Gi")],
        None,
        [None, None, None],
    ),
    (
        "dynamic provisioning with multiple PVCs of the same StorageClass",
        pod("pvc-dynamic-0", "pvc-dynamic-1"),
        cap_nodes()[:1],
        [CAP_SC, CAP_DRIVER, unbound("pvc-dynamic-0", "wait-sc-with-storage-capacity", "50Gi"),
         unbound("pvc-dynamic-1", "wait-sc-with-storage-capacity", "50Gi"),
         capacity("node-a", "wait-sc-with-storage-capacity", "node-a", "100Gi")],
        None,
        [None],
    ),
    # binder_test.go TestFindPodVolumesWithProvisioning / WithCSIStorageCapacity style cases.
    (
        "binder: insufficient storage capacity",
        pod("pvc-dynamic"),
        cap_nodes(),
        [CAP_SC, CAP_DRIVER, unbound("pvc-dynamic", "wait-sc-with-storage-capacity", "60Gi"),
         capacity("node-a", "wait-sc-with-storage-capacity", "node-a", "100Gi"),
         capacity("node-b", "wait-sc-with-storage-capacity", "node-b", "50Gi")],
        None,
        [None, _u(ERR_REASON_NOT_ENOUGH_SPACE), _u(ERR_REASON_NOT_ENOUGH_SPACE)],
    ),
    (
        "binder: provisioning allowed by class topology",
        pod("pvc-a"),
        [node("node-a", zone="z1"), node("node-b", zone="z2")],
        [storage_class("topo-sc", topologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["z1"]}]}]), unbound("pvc-a", "topo-sc", "1Gi")],
        None,
        [None, _u(ERR_REASON_BIND_CONFLICT)],
    ),
    (
        "binder: no-provisioner class cannot provision",
        pod("pvc-a"),
        [node("node-a")],
        [storage_class("local", provisioner="kubernetes.io/no-provisioner"), unbound("pvc-a", "local", "1Gi")],
        None,
        [_u(ERR_REASON_BIND_CONFLICT)],
    ),
    (
        "binder: selected node annotation pins the claim",
        pod("pvc-a"),
        [node("node-a"), node("node-b")],
        [PROV, unbound("pvc-a", "prov-sc", "1Gi", annotations={"volume.kubernetes.io/selected-node": "node-b"})],
        None,
        [_u(ERR_REASON_BIND_CONFLICT), None],
    ),
    (
        "binder: prebound PV with matching node affinity",
        pod("pvc-a"),
        [node("node-a"), node("node-b")],
        [WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-pre", "wait-sc", "1Gi", claim=("default", "pvc-a"), affinity={HOST: ["node-a"]})],
        None,
        [None, _u(ERR_REASON_BIND_CONFLICT)],
    ),
    ("claim being deleted", pod("pvc-a"), [node("node-a")], [WAIT, unbound("pvc-a", "wait-sc", deleting=True)], _u('persistentvolumeclaim "pvc-a" is being deleted'), []),
    (
        "ephemeral claim not created yet",
        PodInfo(make_pod("pod-a", volumes=[{"name": "eph", "ephemeral": {}}])),
        [node("node-a")],
        [WAIT],
        _u('waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-eph"'),
        [],
    ),
    (
        "class without volumeBindingMode",
        pod("pvc-a"),
        [node("node-a")],
        [storage_class("nomode", mode=None), unbound("pvc-a", "nomode")],
        Status(Code.ERROR, 'VolumeBindingMode not set for StorageClass "nomode"'),
        [],
    ),
]


@pytest.mark.parametrize(("name", "p", "nodes", "objs", "want_pre", "want_filter"), CASES, ids=[c[0] for c in CASES])
def test_volume_binding(
    name: str, p: PodInfo, nodes: list[NodeInfo], objs: list[dict], want_pre: Status | None, want_filter: list[Status | None]
) -> None:
    pl = VolumeBinding(store_of(*objs))
    state = CycleState()
    assert pl.pre_filter(state, p, nodes) == want_pre
    if want_pre is not None and want_pre.code != Code.SKIP:
        return
    for n, want in zip(nodes, want_filter, strict=True):
        got = pl.filter(state, p, n)
        assert got == want, n.name
        if want is not None:
            assert got is not None and got.code == want.code
    assert pl.pre_score(state, p, nodes) == SKIP  # no StorageCapacityScoring in v1.36.3


def test_smallest_fitting_pv_is_chosen_and_assumed_for_the_next_pod() -> None:
    # binder_test.go TestFindPodVolumesWithoutProvisioning "two-unbound-pvcs" / AssumePodVolumes:
    # the smallest fitting PV wins, and once reserved another claim cannot take it.
    st = store_of(WAIT, unbound("pvc-a", "wait-sc", "1Gi"), unbound("pvc-b", "wait-sc", "1Gi"),
                  avail("pv-small", "wait-sc", "1Gi"), avail("pv-big", "wait-sc", "5Gi"))
    pl = VolumeBinding(st)
    n = node("node-a")
    state = CycleState()
    pa = pod("pvc-a")
    assert pl.pre_filter(state, pa, [n]) is None
    assert pl.filter(state, pa, n) is None
    vols = state.get("VolumeBinding").by_node["node-a"]
    assert [b.pv.name for b in vols.static_bindings] == ["pv-small"]
    assert pl.reserve(state, pa, "node-a") is None
    assert pl.binder.cache.get_pv("pv-small").claim_ref == ("default", "pvc-a", "uid-pvc-a")

    # The next pod's cycle sees pv-small as taken and gets pv-big.
    state2 = CycleState()
    pb = pod("pvc-b", name="pod-b")
    assert pl.pre_filter(state2, pb, [n]) is None
    assert pl.filter(state2, pb, n) is None
    assert [b.pv.name for b in state2.get("VolumeBinding").by_node["node-a"].static_bindings] == ["pv-big"]

    # Unreserve of the first pod gives pv-small back.
    pl.unreserve(state, pa, "node-a")
    assert pl.binder.cache.get_pv("pv-small").claim_ref is None


def test_dynamic_provision_assumes_selected_node_and_watch_update_wins() -> None:
    st = store_of(PROV, unbound("pvc-a", "prov-sc", "1Gi"))
    pl = VolumeBinding(st)
    n = node("node-a")
    state = CycleState()
    p = pod("pvc-a")
    assert pl.pre_filter(state, p, [n]) is None
    assert pl.filter(state, p, n) is None
    assert pl.reserve(state, p, "node-a") is None
    assert pl.binder.cache.get_pvc("default/pvc-a").annotations["volume.kubernetes.io/selected-node"] == "node-a"
    # A newer version from the watch replaces the assumed one (passiveAssumeCache.Get).
    newer = unbound("pvc-a", "prov-sc", "1Gi")
    newer["metadata"]["resourceVersion"] = "2"
    st.apply("PersistentVolumeClaim", newer)
    assert "volume.kubernetes.io/selected-node" not in pl.binder.cache.get_pvc("default/pvc-a").annotations


def test_reserve_all_bound_skips_prebind() -> None:
    st = store_of(WAIT, bound("pvc-a", "wait-sc", "pv-a"), avail("pv-a", "wait-sc"))
    pl = VolumeBinding(st, api=FakeAPI(st))
    state = CycleState()
    p, n = pod("pvc-a"), node("node-a")
    assert pl.pre_filter(state, p, [n]) is None
    assert pl.filter(state, p, n) is None
    assert pl.reserve(state, p, "node-a") is None
    assert state.get("VolumeBinding").all_bound
    assert asyncio.run(pl.pre_bind(state, p, "node-a")) is None


class FakeAPI:
    """Stands in for the API server and the PV controller: stores the writes and, when asked
    to, completes the binding the way the controller would."""

    def __init__(self, store: StorageStore, complete: bool = True, fail: str = "") -> None:
        self.store = store
        self.complete = complete
        self.fail = fail
        self.writes: list[str] = []

    def _bump(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(raw)
        meta = dict(out.get("metadata") or {})
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "0") + 1)
        out["metadata"] = meta
        return out

    async def update_persistent_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.fail == "pv":
            raise RuntimeError("conflict")
        new = self._bump(raw)
        self.writes.append("pv/" + new["metadata"]["name"])
        self.store.apply("PersistentVolume", new)
        if self.complete:
            ref = new["spec"]["claimRef"]
            claim = self.store.pvcs[f"{ref['namespace']}/{ref['name']}"]
            done = self._bump(claim.raw)
            done["metadata"]["annotations"] = {**(done["metadata"].get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
            done["spec"] = {**done["spec"], "volumeName": new["metadata"]["name"]}
            self.store.apply("PersistentVolumeClaim", done)
        return new

    async def update_persistent_volume_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        new = self._bump(raw)
        self.writes.append("pvc/" + new["metadata"]["name"])
        self.store.apply("PersistentVolumeClaim", new)
        if self.complete:
            done = self._bump(new)
            done["metadata"]["annotations"] = {**done["metadata"]["annotations"], "pv.kubernetes.io/bind-completed": "yes"}
            done["spec"] = {**done["spec"], "volumeName": "pv-provisioned"}
            self.store.apply("PersistentVolumeClaim", done)
            self.store.apply("PersistentVolume", avail("pv-provisioned", "wait-sc"))
        return new


def _reserved(api_kw: dict[str, Any], objs: list[dict]) -> tuple[VolumeBinding, CycleState, PodInfo, FakeAPI]:
    st = store_of(*objs)
    api = FakeAPI(st, **api_kw)
    pl = VolumeBinding(st, bind_timeout=0, api=api, node_lookup=lambda name: node(name))
    state = CycleState()
    p, n = pod("pvc-a"), node("node-a")
    assert pl.pre_filter(state, p, [n]) is None
    assert pl.filter(state, p, n) is None
    assert pl.reserve(state, p, "node-a") is None
    return pl, state, p, api


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.parametrize(
    ("name", "objs", "api_kw", "want", "writes"),
    [
        # binder_test.go TestBindPodVolumes
        ("static binding completes", [WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc")], {}, None, ["pv/pv-a"]),
        ("dynamic provisioning completes", [PROV, unbound("pvc-a", "prov-sc", "1Gi")], {}, None, ["pvc/pvc-a"]),
        (
            "binding times out when the controller never binds",
            [WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc")],
            {"complete": False},
            Status(Code.ERROR, "binding volumes: context deadline exceeded"),
            ["pv/pv-a"],
        ),
        ("API error is reported", [WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc")], {"fail": "pv"}, Status(Code.ERROR, "conflict"), []),
    ],
)
def test_prebind_with_fake_api(name: str, objs: list[dict], api_kw: dict[str, Any], want: Status | None, writes: list[str]) -> None:
    pl, state, p, api = _reserved(api_kw, objs)
    pl.binder.bind_timeout = 0
    got = asyncio.run(pl.pre_bind(state, p, "node-a"))
    assert got == want
    assert api.writes == writes


def test_prebind_without_api_keeps_assumed_state() -> None:
    # simulate: no API client, the assumed bindings stand.
    st = store_of(WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc"))
    pl = VolumeBinding(st)
    state = CycleState()
    p, n = pod("pvc-a"), node("node-a")
    pl.pre_filter(state, p, [n])
    pl.filter(state, p, n)
    pl.reserve(state, p, "node-a")
    assert asyncio.run(pl.pre_bind(state, p, "node-a")) is None
    assert pl.binder.cache.get_pv("pv-a").claim_ref is not None


def test_check_bindings_claimref_reset() -> None:
    st = store_of(WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc"))
    pl, state, p, _ = _reserved({"complete": False}, [WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc")])
    vols = state.get("VolumeBinding").by_node["node-a"]
    reset = avail("pv-a", "wait-sc")
    reset["metadata"]["resourceVersion"] = "5"
    pl.store.apply("PersistentVolume", reset)
    with pytest.raises(BinderError, match='ClaimRef got reset for pv "pv-a"'):
        pl.binder.check_bindings(p, node("node-a"), vols.static_bindings, [])
    assert st is not None


@pytest.mark.parametrize(
    ("args", "err"),
    [
        ({}, None),
        ({"bindTimeoutSeconds": 300}, None),
        ({"bindTimeoutSeconds": -1}, "bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"),
        ({"shape": [{"utilization": 0, "score": 0}]}, "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"),
    ],
)
def test_args(args: dict[str, Any], err: str | None) -> None:
    if err is None:
        _parse_args(args)
    else:
        with pytest.raises(ValueError, match=err.replace("(", r"\(").replace(")", r"\)")):
            _parse_args(args)


def test_hints() -> None:
    pl = VolumeBinding(StorageStore())
    p = pod("pvc-a")
    # TestIsSchedulableAfterPersistentVolumeClaimChange
    assert pl._after_pvc_change(p, None, pvc("pvc-a")) == QueueingHint.QUEUE
    assert pl._after_pvc_change(p, None, pvc("pvc-b")) == QueueingHint.QUEUE_SKIP
    assert pl._after_pvc_change(p, None, pvc("pvc-a", ns="other")) == QueueingHint.QUEUE_SKIP
    # TestIsSchedulableAfterStorageClassChange
    topo = [{"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}]
    assert pl._after_class_change(p, None, WAIT) == QueueingHint.QUEUE
    assert pl._after_class_change(p, WAIT, storage_class("wait-sc", topologies=topo)) == QueueingHint.QUEUE
    assert pl._after_class_change(p, WAIT, storage_class("wait-sc", provisioner="other")) == QueueingHint.QUEUE_SKIP
    # TestIsSchedulableAfterCSIStorageCapacityChange
    c1, c2 = capacity("c", "sc", "n", "1Gi"), capacity("c", "sc", "n", "2Gi")
    assert pl._after_capacity_change(p, None, c1) == QueueingHint.QUEUE
    assert pl._after_capacity_change(p, c1, c2) == QueueingHint.QUEUE
    assert pl._after_capacity_change(p, c2, c1) == QueueingHint.QUEUE_SKIP
    # TestIsSchedulableAfterCSINodeChange
    ann = lambda v: {"metadata": {"name": "n", "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": v}}}  # noqa: E731
    assert pl._after_csinode_change(p, None, ann("a")) == QueueingHint.QUEUE
    assert pl._after_csinode_change(p, ann("a"), ann("b")) == QueueingHint.QUEUE
    assert pl._after_csinode_change(p, ann("a"), ann("a")) == QueueingHint.QUEUE_SKIP
    # TestIsSchedulableAfterCSIDriverChange
    csi_pod = PodInfo(make_pod("p", volumes=[{"name": "v", "csi": {"driver": "d"}}]))
    drv = lambda cap: {"metadata": {"name": "d"}, "spec": {"storageCapacity": cap}}  # noqa: E731
    assert pl._after_csidriver_change(csi_pod, drv(True), drv(False)) == QueueingHint.QUEUE
    assert pl._after_csidriver_change(csi_pod, drv(False), drv(True)) == QueueingHint.QUEUE_SKIP
    assert pl._after_csidriver_change(p, drv(True), drv(False)) == QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("name", "migrated", "node_labels", "want"),
    [
        # binder_test.go TestCheckBindingsWithCSIMigration / TestFindPodVolumesWithCSIMigration:
        # with the plugin migrated on the node, the PV's zone affinity is read as the CSI
        # driver's topology key.
        ("not migrated: in-tree zone label decides", False, {"topology.kubernetes.io/zone": "us-a"}, None),
        ("migrated: node lacks the CSI topology label", True, {"topology.kubernetes.io/zone": "us-a"}, _u(ERR_REASON_NODE_CONFLICT)),
        ("migrated: node has the CSI topology label", True, {"topology.gke.io/zone": "us-a"}, None),
        ("migrated: CSI topology in another zone", True, {"topology.gke.io/zone": "us-b"}, _u(ERR_REASON_NODE_CONFLICT)),
    ],
)
def test_bound_in_tree_pv_with_csi_migration(name: str, migrated: bool, node_labels: dict[str, str], want: Status | None) -> None:
    gce = pv("pv-gce", cls="wait-sc", affinity={"topology.kubernetes.io/zone": ["us-a"]}, source={"gcePersistentDisk": {"pdName": "d"}})
    ann = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"} if migrated else {}
    csinode = {"kind": "CSINode", "metadata": {"name": "node-a", "annotations": ann}, "spec": {"drivers": []}}
    pl = VolumeBinding(store_of(WAIT, bound("pvc-a", "wait-sc", "pv-gce"), gce, csinode))
    state = CycleState()
    p, n = pod("pvc-a"), node("node-a", **node_labels)
    assert pl.pre_filter(state, p, [n]) is None
    assert pl.filter(state, p, n) == want


def test_translated_affinity_from_labels_and_beta_region() -> None:
    from scheduler.model.storage import PersistentVolume
    from scheduler.plugins.nodevolumelimits.translation import translated_node_affinity

    # No affinity: the zone label becomes a CSI topology requirement (sorted, de-duplicated).
    ebs = PersistentVolume(pv("p", labels={"topology.kubernetes.io/zone": "b__a"}, source={"awsElasticBlockStore": {"volumeID": "v"}}))
    assert translated_node_affinity(ebs) == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["a", "b"]}]}]
    }
    # Beta zone and region in the affinity: zone -> CSI key, beta region -> GA region.
    beta = PersistentVolume(
        pv(
            "p",
            affinity={"failure-domain.beta.kubernetes.io/zone": ["z"], "failure-domain.beta.kubernetes.io/region": ["r"]},
            source={"cinder": {"volumeID": "v"}},
        )
    )
    keys = [e["key"] for e in translated_node_affinity(beta)["nodeSelectorTerms"][0]["matchExpressions"]]  # type: ignore[index]
    assert keys == ["topology.cinder.csi.openstack.org/zone", "topology.kubernetes.io/region"]
    # Azure disk keeps its affinity untouched.
    assert translated_node_affinity(PersistentVolume(pv("p", source={"azureDisk": {"diskURI": "u"}}))) is None


def test_prebind_live_client_without_volume_api_fails_safely() -> None:
    # A live binder that cannot write PVs/PVCs must not let the pod bind with unbound claims.
    from scheduler.framework.interface import Handle
    from scheduler.framework.listers import Listers
    from scheduler.framework.snapshot import Snapshot

    class PodOnlyClient:
        async def bind(self, pod: PodInfo, node: str) -> None:
            return None

    listers = Listers()
    for o in (WAIT, unbound("pvc-a", "wait-sc", "1Gi"), avail("pv-a", "wait-sc")):
        listers.storage.apply(o["kind"], o)
    # The live app's handle has no client at all today (app.py), or one that only binds pods.
    for client in (None, PodOnlyClient()):
        pl = VolumeBinding.new(None, Handle(Snapshot(), listers, client=client))
        state = CycleState()
        p, n = pod("pvc-a"), node("node-a")
        assert pl.pre_filter(state, p, [n]) is None
        assert pl.filter(state, p, n) is None
        assert pl.reserve(state, p, "node-a") is None
        got = asyncio.run(pl.pre_bind(state, p, "node-a"))
        assert got == Status(Code.ERROR, "volume binding: no PersistentVolume API client is configured")
        pl.unreserve(state, p, "node-a")
        assert pl.binder.cache.get_pv("pv-a").claim_ref is None
