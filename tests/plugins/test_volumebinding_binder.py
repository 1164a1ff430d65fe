# ruff: noqa: E501  (tables read best one case per line)
"""The volume binder; tables from upstream plugins/volumebinding/binder_test.go
(TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning,
TestAssumePodVolumes, TestRevertAssumedPodVolumes)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.listers import StorageStore
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinder,
)
from scheduler.plugins.volumebinding.errors import BinderError
from scheduler.testing.builders import MakeNode, MakePod, make_node, make_pod

NODE_KEY = "nodeKey"
WAIT, IMMEDIATE, WAIT_PROV, TOPO_MISMATCH = "waitClass", "immediateClass", "waitClassWithProvisioner", "topoMismatchClass"
PROVISIONER = "test-provisioner"
CLASSES = [
    {"metadata": {"name": WAIT_PROV}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": PROVISIONER,
     "allowedTopologies": [{"matchLabelExpressions": [{"key": NODE_KEY, "values": ["node1", "reference-value"]}]}]},
    {"metadata": {"name": IMMEDIATE}, "volumeBindingMode": "Immediate"},
    {"metadata": {"name": WAIT}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": "kubernetes.io/no-provisioner"},
    {"metadata": {"name": TOPO_MISMATCH}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": PROVISIONER,
     "allowedTopologies": [{"matchLabelExpressions": [{"key": NODE_KEY, "values": ["reference-value"]}]}]},
]


def tpvc(name: str, size: str, state: str = "unbound", pv_name: str = "", version: str = "1", cls: str = WAIT, node: str = "") -> dict[str, Any]:
    """makeTestPVC: namespace testns, uid pvc-uid; state unbound / selected / bound / prebound."""
    meta: dict[str, Any] = {"name": name, "namespace": "testns", "uid": "pvc-uid", "resourceVersion": version}
    spec: dict[str, Any] = {"resources": {"requests": {"storage": size}}, "storageClassName": cls, "volumeMode": "Filesystem"}
    if state == "selected":
        meta["annotations"] = {"volume.kubernetes.io/selected-node": node}
    if state == "bound":
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if state in ("bound", "prebound"):
        spec["volumeName"] = pv_name
    return {"metadata": meta, "spec": spec}


def tpv(name: str, node: str, size: str, version: str = "1", bound_to: dict | None = None, cls: str = WAIT) -> dict[str, Any]:
    """makeTestPV: Available, node affinity on nodeKey, claimRef when bound."""
    meta: dict[str, Any] = {"name": name, "resourceVersion": version}
    spec: dict[str, Any] = {"capacity": {"storage": size}, "storageClassName": cls, "volumeMode": "Filesystem"}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": NODE_KEY, "operator": "In", "values": [node]}]}]}}
    if bound_to is not None:
        m = bound_to["metadata"]
        spec["claimRef"] = {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"], "resourceVersion": m["resourceVersion"]}
        meta["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    return {"metadata": meta, "spec": spec, "status": {"phase": "Available"}}


UNBOUND = tpvc("unbound-pvc", "1G")
UNBOUND2 = tpvc("unbound-pvc2", "5G")
PREBOUND = tpvc("prebound-pvc", "1G", "prebound", "pv-node1a")
BOUND = tpvc("bound-pvc", "1G", "bound", "pv-bound")
IMM_UNBOUND = tpvc("immediate-unbound-pvc", "1G", cls=IMMEDIATE)
IMM_BOUND = tpvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", cls=IMMEDIATE)
PROVISIONED = tpvc("provisioned-pvc", "1Gi", cls=WAIT_PROV)
NO_PROV = tpvc("no-provisioner-pvc", "1Gi")
TOPO = tpvc("topo-mismatch-pvc", "1Gi", cls=TOPO_MISMATCH)
SELECTED = tpvc("provisioned-pvc", "1Gi", "selected", cls=WAIT_PROV, node="node1")

PV_1A = tpv("pv-node1a", "node1", "5G")
PV_1B = tpv("pv-node1b", "node1", "10G")
PV_2 = tpv("pv-node2", "node2", "1G")
PV_BOUND = tpv("pv-bound", "node1", "1G", bound_to=BOUND)
PV_1A_BOUND = tpv("pv-node1a", "node1", "5G", bound_to=UNBOUND)
PV_IMM = tpv("pv-bound-immediate", "node1", "1G", bound_to=IMM_BOUND, cls=IMMEDIATE)
PV_IMM_2 = tpv("pv-bound-immediate", "node2", "1G", bound_to=IMM_BOUND, cls=IMMEDIATE)


def setup(pvcs: list[dict], pvs: list[dict], driver: dict | None = None) -> tuple[VolumeBinder, PodInfo, NodeInfo]:
    st = StorageStore()
    for c in CLASSES:
        st.apply("StorageClass", c)
    for c in pvcs:
        st.apply("PersistentVolumeClaim", c)
    for v in pvs:
        st.apply("PersistentVolume", v)
    if driver is not None:
        st.apply("CSIDriver", driver)
    w = MakePod().name("test-pod").namespace("testns").node("node1")
    for c in pvcs:
        w.pvc(c["metadata"]["name"])
    node = MakeNode().name("node1").no_hostname_label().label(NODE_KEY, "node1")
    return VolumeBinder(st), w.info(), node.info()


def find(binder: VolumeBinder, pod: PodInfo, node: NodeInfo) -> tuple[list[tuple[str, str]], list[str], list[str]] | str:
    """The test's findPodVolumes helper: unbound immediate claims are an error."""
    try:
        claims = binder.pod_volume_claims(pod)
    except BinderError:
        return "error"
    if claims.unbound_immediate:
        return "error"
    try:
        vols, reasons = binder.find_pod_volumes(pod, claims, node)
    except BinderError:
        return "error"
    return [(b.pvc.name, b.pv.name) for b in vols.static_bindings], [d.pvc.name for d in vols.dynamic_provisions], reasons


WITHOUT = [
    # (case, pod pvcs, pvs, bindings, reasons | "error")
    ("no-pvcs", [], [], [], []),
    ("bound-pvc", [BOUND], [PV_BOUND], [], []),
    ("bound-pvc,pv-not-exists", [BOUND], [], [], [ERR_REASON_PV_NOT_EXIST]),
    ("prebound-pvc", [PREBOUND], [PV_1A_BOUND], [], "error"),
    ("unbound-pvc,pv-same-node", [UNBOUND], [PV_2, PV_1A, PV_1B], [("unbound-pvc", "pv-node1a")], []),
    ("unbound-pvc,pv-different-node", [UNBOUND], [PV_2], [], [ERR_REASON_BIND_CONFLICT]),
    ("two-unbound-pvcs", [UNBOUND, UNBOUND2], [PV_1A, PV_1B], [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], []),
    ("two-unbound-pvcs,order-by-size", [UNBOUND2, UNBOUND], [PV_1A, PV_1B], [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], []),
    ("two-unbound-pvcs,partial-match", [UNBOUND, UNBOUND2], [PV_1A], [("unbound-pvc", "pv-node1a")], [ERR_REASON_BIND_CONFLICT]),
    ("one-bound,one-unbound", [UNBOUND, BOUND], [PV_BOUND, PV_1A], [("unbound-pvc", "pv-node1a")], []),
    ("one-bound,one-unbound,no-match", [UNBOUND, BOUND], [PV_BOUND, PV_2], [], [ERR_REASON_BIND_CONFLICT]),
    ("one-prebound,one-unbound", [UNBOUND, PREBOUND], [PV_1A, PV_1B], [], "error"),
    ("immediate-bound-pvc", [IMM_BOUND], [PV_IMM], [], []),
    ("immediate-bound-pvc-wrong-node", [IMM_BOUND], [PV_IMM_2], [], [ERR_REASON_NODE_CONFLICT]),
    ("immediate-unbound-pvc", [IMM_UNBOUND], [], [], "error"),
    ("immediate-unbound-pvc,delayed-mode-bound", [IMM_UNBOUND, BOUND], [PV_BOUND], [], "error"),
    ("immediate-unbound-pvc,delayed-mode-unbound", [IMM_UNBOUND, UNBOUND], [], [], "error"),
]


@pytest.mark.parametrize(("name", "pvcs", "pvs", "bindings", "reasons"), WITHOUT, ids=[c[0] for c in WITHOUT])
def test_find_pod_volumes_without_provisioning(name: str, pvcs: list, pvs: list, bindings: list, reasons: list | str) -> None:
    binder, pod, node = setup(pvcs, pvs)
    got = find(binder, pod, node)
    if reasons == "error":
        assert got == "error"
        return
    assert got == (bindings, [], reasons)


WITH = [
    # (case, pod pvcs, pvs, bindings, provisions, reasons, needs capacity)
    ("one-provisioned", [PROVISIONED], [], [], ["provisioned-pvc"], [], True),
    ("two-unbound-pvcs,one-matched,one-provisioned", [UNBOUND, PROVISIONED], [PV_1A], [("unbound-pvc", "pv-node1a")], ["provisioned-pvc"], [], True),
    ("one-bound,one-provisioned", [BOUND, PROVISIONED], [PV_BOUND], [], ["provisioned-pvc"], [], True),
    ("one-binding,one-selected-node", [BOUND, SELECTED], [PV_BOUND], [], ["provisioned-pvc"], [], True),
    ("immediate-unbound-pvc", [IMM_UNBOUND], [], [], [], "error", False),
    ("one-immediate-bound,one-provisioned", [IMM_BOUND, PROVISIONED], [PV_IMM], [], ["provisioned-pvc"], [], True),
    ("invalid-provisioner", [NO_PROV], [], [], [], [ERR_REASON_BIND_CONFLICT], False),
    ("volume-topology-unsatisfied", [TOPO], [], [], [], [ERR_REASON_BIND_CONFLICT], False),
]
DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": {"metadata": {"name": PROVISIONER}, "spec": {"storageCapacity": True}},
    "CSIDriver without capacity tracking": {"metadata": {"name": PROVISIONER}, "spec": {"storageCapacity": False}},
}


@pytest.mark.parametrize("driver", list(DRIVERS))
@pytest.mark.parametrize(("name", "pvcs", "pvs", "bindings", "provisions", "reasons", "needs_capacity"), WITH, ids=[c[0] for c in WITH])
def test_find_pod_volumes_with_provisioning(
    driver: str, name: str, pvcs: list, pvs: list, bindings: list, provisions: list, reasons: list | str, needs_capacity: bool
) -> None:
    binder, pod, node = setup(pvcs, pvs, DRIVERS[driver])
    got = find(binder, pod, node)
    if reasons == "error":
        assert got == "error"
        return
    want_reasons = list(reasons)
    if needs_capacity and driver == "CSIDriver with capacity tracking":
        # No CSIStorageCapacity objects: a capacity-tracking driver has no room anywhere.
        want_reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        provisions = []
    assert got == (bindings, provisions, want_reasons)


def test_assume_and_revert_pod_volumes() -> None:
    # TestAssumePodVolumes "one-binding" / "one-provisioned" and TestRevertAssumedPodVolumes.
    binder, pod, node = setup([UNBOUND, PROVISIONED], [PV_1A])
    claims = binder.pod_volume_claims(pod)
    vols, reasons = binder.find_pod_volumes(pod, claims, node)
    assert reasons == []
    assert binder.assume(pod, "node1", vols) is False
    pv = binder.cache.get_pv("pv-node1a")
    assert pv.claim_ref == ("testns", "unbound-pvc", "pvc-uid")
    assert pv.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert binder.cache.get_pvc("testns/provisioned-pvc").annotations["volume.kubernetes.io/selected-node"] == "node1"
    binder.revert(vols)
    assert binder.cache.get_pv("pv-node1a").claim_ref is None
    assert "volume.kubernetes.io/selected-node" not in binder.cache.get_pvc("testns/provisioned-pvc").annotations


def test_assume_all_bound() -> None:
    # TestAssumePodVolumes "all-bound": nothing to assume.
    binder, pod, node = setup([BOUND], [PV_BOUND])
    claims = binder.pod_volume_claims(pod)
    vols, _ = binder.find_pod_volumes(pod, claims, node)
    assert binder.assume(pod, "node1", vols) is True


def test_assume_out_of_sync_fails() -> None:
    # passiveAssumeCache.Assume refuses an object whose version is not the stored one.
    binder, pod, node = setup([UNBOUND], [PV_1A])
    claims = binder.pod_volume_claims(pod)
    vols, _ = binder.find_pod_volumes(pod, claims, node)
    binder.store.apply("PersistentVolume", tpv("pv-node1a", "node1", "5G", version="2"))
    with pytest.raises(BinderError, match="out of sync"):
        binder.assume(pod, "node1", vols)


def test_capacity_selection() -> None:
    # TestCapacity: a matching CSIStorageCapacity for the class and node admits the claim;
    # maximumVolumeSize wins over capacity.
    driver = DRIVERS["CSIDriver with capacity tracking"]
    cap = lambda c, m="": {  # noqa: E731
        "metadata": {"name": "net", "namespace": "testns"},
        "storageClassName": WAIT_PROV,
        "nodeTopology": {"matchLabels": {NODE_KEY: "node1"}},
        "capacity": c,
        **({"maximumVolumeSize": m} if m else {}),
    }
    for capacity, ok in ((cap("1Gi"), True), (cap("1Mi"), False), (cap("10Gi", "1Mi"), False)):
        binder, pod, node = setup([PROVISIONED], [], driver)
        binder.store.apply("CSIStorageCapacity", capacity)
        got = find(binder, pod, node)
        assert got == ([], ["provisioned-pvc"] if ok else [], [] if ok else [ERR_REASON_NOT_ENOUGH_SPACE])


def _with(raw: dict, *, version: str | None = None, annotations: dict | None = None, drop_uid: bool = False) -> dict:
    import copy

    out = copy.deepcopy(raw)
    if version is not None:
        out["metadata"]["resourceVersion"] = version
    if annotations is not None:
        out["metadata"]["annotations"] = annotations
    if drop_uid:
        out["spec"]["claimRef"]["uid"] = ""
    return out


BOUND_1A = tpvc("unbound-pvc", "1G", "bound", "pv-node1a")
PREBOUND_1A = tpvc("unbound-pvc", "1G", "prebound", "pv-node1a")
PV_1B_BOUND = tpv("pv-node1b", "node1", "10G", bound_to=UNBOUND2)
PROV_BOUND = tpvc("provisioned-pvc", "1Gi", "bound", "pv-bound", cls=WAIT_PROV)
SELECTED_ANN = {"volume.kubernetes.io/selected-node": "node1"}


def _prov(raw: dict) -> dict:
    return _with(raw, annotations={**raw["metadata"].get("annotations", {}), **SELECTED_ANN})


CHECK = [
    # TestCheckBindings: (case, init PVs, init PVCs, bindings (pvc, pv), provisioned PVCs, API PVs, API PVCs, delete PVs, delete PVCs, result)
    ("nothing-to-bind", [], [], [], [], [], [], False, False, True),
    ("binding-bound", [PV_1A_BOUND], [BOUND_1A], [(UNBOUND, PV_1A_BOUND)], [], [], [], False, False, True),
    ("binding-prebound", [PV_1A_BOUND], [PREBOUND_1A], [(UNBOUND, PV_1A_BOUND)], [], [], [], False, False, False),
    ("binding-unbound", [PV_1A_BOUND], [UNBOUND], [(UNBOUND, PV_1A_BOUND)], [], [], [], False, False, False),
    ("binding-pvc-not-exists", [PV_1A_BOUND], [], [(UNBOUND, PV_1A_BOUND)], [], [], [], False, False, "error"),
    ("binding-pv-not-exists", [PV_1A_BOUND], [BOUND_1A], [(UNBOUND, PV_1A_BOUND)], [], [], [], True, False, "error"),
    ("binding-claimref-nil", [PV_1A], [BOUND_1A], [(UNBOUND, PV_1A_BOUND)], [], [_with(PV_1A, version="2")], [_with(BOUND_1A, version="2")], False, False, "error"),
    ("binding-claimref-uid-empty", [PV_1A_BOUND], [BOUND_1A], [(UNBOUND, PV_1A_BOUND)], [], [_with(PV_1A_BOUND, version="2", drop_uid=True)], [_with(BOUND_1A, version="2")], False, False, "error"),
    ("binding-one-bound,one-unbound", [PV_1A_BOUND, PV_1B_BOUND], [BOUND_1A, UNBOUND2], [(UNBOUND, PV_1A_BOUND), (UNBOUND2, PV_1B_BOUND)], [], [], [], False, False, False),
    ("provisioning-pvc-bound", [PV_BOUND], [PROV_BOUND], [], [_prov(PROVISIONED)], [], [_with(_prov(PROV_BOUND), version="2")], False, False, True),
    ("provisioning-pvc-unbound", [], [_prov(PROVISIONED)], [], [_prov(PROVISIONED)], [], [], False, False, False),
    ("provisioning-pvc-not-exists", [], [PROVISIONED], [], [_prov(PROVISIONED)], [], [], False, True, "error"),
    ("provisioning-pvc-annotations-nil", [], [PROVISIONED], [], [_prov(PROVISIONED)], [], [_with(PROVISIONED, version="2")], False, False, "error"),
    ("provisioning-pvc-selected-node-wrong-node", [], [PROVISIONED], [], [_prov(PROVISIONED)], [], [_with(PROVISIONED, version="2", annotations={"volume.kubernetes.io/selected-node": "wrong-node"})], False, False, "error"),
    ("binding-bound-provisioning-unbound", [PV_1A_BOUND], [BOUND_1A, _prov(PROVISIONED)], [(UNBOUND, PV_1A_BOUND)], [_prov(PROVISIONED)], [], [], False, False, False),
    ("tolerate-provisioning-pvc-bound-pv-not-found", [PV_1A], [PROVISIONED], [], [_prov(PROVISIONED)], [], [_with(_prov(PROV_BOUND), version="2")], True, False, False),
]


@pytest.mark.parametrize(
    ("name", "init_pvs", "init_pvcs", "bindings", "provisioned", "api_pvs", "api_pvcs", "del_pvs", "del_pvcs", "want"),
    CHECK,
    ids=[c[0] for c in CHECK],
)
def test_check_bindings(
    name: str,
    init_pvs: list,
    init_pvcs: list,
    bindings: list,
    provisioned: list,
    api_pvs: list,
    api_pvcs: list,
    del_pvs: bool,
    del_pvcs: bool,
    want: bool | str,
) -> None:
    from scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
    from scheduler.plugins.volumebinding.binder import BindingInfo

    binder, pod, node = setup(init_pvcs, init_pvs)
    st = binder.store
    for v in api_pvs:
        st.apply("PersistentVolume", v)
    for c in api_pvcs:
        st.apply("PersistentVolumeClaim", c)
    if del_pvs:
        for v in init_pvs:
            st.delete("PersistentVolume", v)
    if del_pvcs:
        for c in init_pvcs:
            st.delete("PersistentVolumeClaim", c)
    infos = [BindingInfo(PersistentVolumeClaim(c), PersistentVolume(v)) for c, v in bindings]
    claims = [PersistentVolumeClaim(c) for c in provisioned]
    pod = PodInfo(make_pod("test-pod", "testns", node_name="node1"))
    if want == "error":
        with pytest.raises(BinderError):
            binder.check_bindings(pod, node, infos, claims)
    else:
        assert binder.check_bindings(pod, node, infos, claims) is want


@pytest.mark.parametrize("seed", range(20))
def test_claim_candidates_equal_find_matching_volume(seed: int) -> None:
    # The per-cycle index must pick exactly what FindMatchingVolume picks on every node.
    import random

    from scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
    from scheduler.plugins.volumebinding.pv_helpers import ClaimCandidates, find_matching_volume

    r = random.Random(seed)
    nodes = []
    for i in range(6):
        raw = make_node(f"n{i}")
        raw["metadata"]["labels"] = {"host": f"n{i}", "zone": r.choice(["a", "b"])}
        nodes.append(NodeInfo(raw))
    claim = tpvc("c", r.choice(["1G", "5G"]), cls=r.choice([WAIT, "other"]))
    if r.random() < 0.3:
        claim["spec"]["selector"] = {"matchLabels": {"tier": "fast"}}
    claim["spec"]["accessModes"] = r.choice([["ReadWriteOnce"], []])
    pvc_obj = PersistentVolumeClaim(claim)
    pvs = []
    for j in range(r.randint(0, 14)):
        raw_pv = tpv(f"pv{j:02d}", "", r.choice(["1G", "5G", "10G"]), cls=r.choice([WAIT, "other"]))
        kind = r.random()
        if kind < 0.4:
            raw_pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "host", "operator": "In", "values": [f"n{r.randrange(6)}"]}]}]}}
        elif kind < 0.6:
            raw_pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": r.choice(["In", "NotIn"]), "values": ["a"]}]}, {"matchExpressions": [{"key": "host", "operator": "In", "values": ["n0"]}]}]}}
        if r.random() < 0.15:
            raw_pv["spec"]["claimRef"] = {"namespace": "testns", "name": r.choice(["c", "x"]), "uid": r.choice(["", "pvc-uid", "other"])}
        if r.random() < 0.1:
            raw_pv["status"]["phase"] = "Bound"
        if r.random() < 0.2:
            raw_pv["metadata"]["labels"] = {"tier": "fast"}
        raw_pv["spec"]["accessModes"] = r.choice([["ReadWriteOnce"], ["ReadWriteMany"]])
        pvs.append(PersistentVolume(raw_pv))
    cand = ClaimCandidates(pvc_obj, pvs)
    for node in nodes:
        for excluded in ({}, {pv.name: pv for pv in pvs[: r.randint(0, len(pvs))]}):
            want = find_matching_volume(pvc_obj, pvs, node, excluded, True)
            got = cand.best(node, excluded)
            assert (got.name if got else None) == (want.name if want else None), node.name
