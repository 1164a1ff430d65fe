"""The stores plugins read: storage objects (upstream listers' NotFound messages, hints' old and
new objects) and the listers around them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from scheduler.framework.listers import DraStore, StorageStore
from scheduler.model.dra import ResourceClaim, add_allocated
from scheduler.model.storage import NotFoundError
from scheduler.testing.storage import pvc


def test_store_apply_delete_and_not_found_messages() -> None:
    st = StorageStore()
    st.apply("PersistentVolumeClaim", pvc("c", "ns", cls="gold"))
    assert st.get_pvc("ns", "c").name == "c"
    with pytest.raises(NotFoundError, match='persistentvolumeclaim "x" not found'):
        st.get_pvc("ns", "x")
    with pytest.raises(NotFoundError, match='persistentvolume "pv" not found'):
        st.get_pv("pv")
    with pytest.raises(NotFoundError, match=re.escape('storageclass.storage.k8s.io "sc" not found')):
        st.get_class("sc")
    v = st.version
    assert st.delete("PersistentVolumeClaim", pvc("c", "ns")) is not None
    assert st.version > v
    with pytest.raises(NotFoundError):
        st.get_pvc("ns", "c")


def test_on_event_returns_old_and_new_for_hints() -> None:
    st = StorageStore()
    old, new = st.on_event("PersistentVolumeClaim", "ADDED", pvc("c", "ns", cls="gold"))  # type: ignore[misc]
    assert old is None and new.storage_class == "gold"
    old, new = st.on_event("PersistentVolumeClaim", "MODIFIED", pvc("c", "ns", cls="silver"))  # type: ignore[misc]
    assert old.storage_class == "gold" and new.storage_class == "silver"
    old, new = st.on_event("PersistentVolumeClaim", "DELETED", pvc("c", "ns"))  # type: ignore[misc]
    assert old.storage_class == "silver" and new is None
    assert st.pvcs == {}
    assert st.on_event("Secret", "ADDED", {"metadata": {"name": "s"}}) is None


def _va(name: str, node: str) -> dict[str, Any]:
    spec = {"attacher": "d", "nodeName": node, "source": {"persistentVolumeName": "pv"}}
    return {"kind": "VolumeAttachment", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        ([], []),
        ([("apply", pvc("c", "ns"))], [("PersistentVolumeClaim", "ns/c")]),
        ([("delete", pvc("c", "ns"))], [("PersistentVolumeClaim", "ns/c")]),
        # A VolumeAttachment is logged under its nodes: the new one, and the old one it moved from.
        ([("apply", _va("va", "n1"))], [("VolumeAttachment", "n1")]),
        ([("apply", _va("va", "n2"))], [("VolumeAttachment", "n2"), ("VolumeAttachment", "n1")]),
        # A delete names the node of what was stored, not of the object it was given.
        ([("delete", _va("va", "n2"))], [("VolumeAttachment", "n1")]),
        ([("delete", _va("never", "n3"))], []),  # nothing was there to remove
    ],
)
def test_changes_since_names_what_changed(steps: list[tuple[str, dict[str, Any]]], want: list) -> None:
    st = StorageStore()
    st.apply("PersistentVolumeClaim", pvc("c", "ns"))
    st.apply("VolumeAttachment", _va("va", "n1"))
    seen = st.version
    for op, raw in steps:
        getattr(st, op)(raw["kind"], raw)
    assert sorted(st.changes_since(seen) or []) == sorted(want)
    assert st.changes_since(st.version) == []


def test_changes_since_too_far_back_is_none() -> None:
    from scheduler.framework.listers import CHANGE_LOG_MAX

    st = StorageStore()
    assert st.changes_since(-1) is None  # before anything was logged
    for i in range(CHANGE_LOG_MAX + 1):
        st.apply("PersistentVolumeClaim", pvc(f"c{i}"))
    assert st.changes_since(0) is None
    assert st.changes_since(st.version - 1) == [("PersistentVolumeClaim", f"default/c{CHANGE_LOG_MAX}")]


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


# -- DraStore.allocated_devices: kept until the store's version moves --------------------------


def _claim(name: str, device: str | None, rv: str = "1") -> dict[str, Any]:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
    }
    if device is not None:
        raw["status"] = {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "d", "pool": "p", "device": device}]}}}
    return raw


def _fresh(store: DraStore) -> set[tuple[str, str, str]]:
    dedicated: set[tuple[str, str, str]] = set()
    for c in store.all_claims():
        if c.uid not in store.in_flight:
            add_allocated(c.allocation, dedicated, set(), {})
    for c in store.in_flight.values():
        add_allocated(c.allocation, dedicated, set(), {})
    return dedicated


def _apply(store: DraStore, step: tuple[str, Any]) -> None:
    op, arg = step
    if op == "event":
        store.on_event("ResourceClaim", "MODIFIED", arg)
    elif op == "delete":
        store.on_event("ResourceClaim", "DELETED", arg)
    elif op == "assume":
        store.assume(ResourceClaim(arg))
    elif op == "restore":
        store.restore(arg)
    elif op == "pending":
        store.signal_pending(ResourceClaim(arg))
    elif op == "unpending":
        store.remove_pending(arg)


DRA_STEPS = [
    ("event", _claim("a", "dev-0")),
    ("event", _claim("b", None)),
    ("pending", _claim("b", "dev-1")),
    ("assume", _claim("b", "dev-1", rv="2")),
    ("unpending", "uid-b"),
    ("event", _claim("a", "dev-2", rv="2")),
    ("restore", "ns/b"),
    ("delete", _claim("a", None)),
]


@pytest.mark.parametrize("upto", range(1, len(DRA_STEPS) + 1))
def test_allocated_devices_follow_every_change(upto: int) -> None:
    store = DraStore()
    for step in DRA_STEPS[:upto]:
        store.allocated_devices()  # the answer kept before the step must not outlive it
        _apply(store, step)
    assert store.allocated_devices()[0] == _fresh(store)
    assert store.allocated_devices() is store.allocated_devices()  # unchanged store: kept


def _brute_allocated(st: DraStore) -> tuple[set, set, dict]:
    """allocated_devices as a walk over every claim (what it computed before it kept counts)."""
    from scheduler.model.dra import add_allocated

    dedicated: set = set()
    shared: set = set()
    consumed: dict = {}
    for c in st.all_claims():
        if c.uid not in st.in_flight:
            add_allocated(c.allocation, dedicated, shared, consumed)
    for c in st.in_flight.values():
        add_allocated(c.allocation, dedicated, shared, consumed)
    return dedicated, shared, consumed


def _alloc_claim(r: Any, name: str, uid: str, rv: int) -> dict[str, Any]:
    results = []
    for _ in range(r.randint(0, 2)):
        res: dict[str, Any] = {"request": "r", "driver": "d", "pool": f"p{r.randrange(2)}"}
        res["device"] = f"dev{r.randrange(4)}"
        if r.random() < 0.3:
            res["shareID"] = f"s{r.randrange(3)}"
            if r.random() < 0.5:
                res["consumedCapacity"] = {"memory": f"{r.randint(1, 3)}Gi"}
        if r.random() < 0.1:
            res["adminAccess"] = True
        results.append(res)
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": str(rv)},
        "spec": {"devices": {"requests": []}},
    }
    if r.random() < 0.8:
        raw["status"] = {"allocation": {"devices": {"results": results}}}
    return raw


@pytest.mark.parametrize("seed", range(20))
def test_allocated_devices_kept_claim_by_claim_equal_a_walk_over_all(seed: int) -> None:
    import random

    r = random.Random(seed)
    st = DraStore()
    for rv in range(1, 151):
        name = f"c{r.randrange(5)}"
        uid = f"u{name}-{r.randrange(2)}"  # a claim may be deleted and made again
        op = r.randrange(6)
        if op == 0:
            st.on_event("ResourceClaim", "ADDED", _alloc_claim(r, name, uid, rv))
        elif op == 1:
            st.on_event("ResourceClaim", "DELETED", _alloc_claim(r, name, uid, rv))
        elif op == 2:
            st.assume(ResourceClaim(_alloc_claim(r, name, uid, rv)))
        elif op == 3:
            st.restore(f"ns/{name}")
        elif op == 4:
            st.signal_pending(ResourceClaim(_alloc_claim(r, name, uid, rv)))
        else:
            st.remove_pending(uid)
        got = st.allocated_devices()
        want = _brute_allocated(st)
        assert got[0] == want[0] and got[1] == want[1]
        assert {k: {n: q.exact for n, q in v.items()} for k, v in got[2].items()} == {
            k: {n: q.exact for n, q in v.items()} for k, v in want[2].items()
        }
