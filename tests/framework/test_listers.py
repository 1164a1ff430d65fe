"""The stores plugins read: storage objects (upstream listers' NotFound messages, hints' old and
new objects) and the listers around them."""

from __future__ import annotations

import re

import pytest

from scheduler.framework.listers import StorageStore
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
