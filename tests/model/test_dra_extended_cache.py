"""The extended resource name -> DeviceClass cache, as DraStore keeps it from DeviceClass events.

Steps from upstream k8s.io/dynamic-resource-allocation@v0.36.3
deviceclass/extendedresourcecache/extendedresourcecache_test.go: TestExtendedResourceCache and
TestDeviceClassMapping.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.listers import DraStore
from scheduler.model.dra import DeviceClass, is_dra_extended_resource_name

NOW = "2026-03-01T12:00:00Z"
DAY_BEFORE = "2026-02-28T12:00:00Z"
HOUR_AFTER = "2026-03-01T13:00:00Z"


def _cls(name: str, ern: str | None = None, created: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": {"extendedResourceName": ern} if ern else {}}


def _holder(store: DraStore, resource: str) -> str | None:
    c = store.extended.get_device_class(resource)
    return c.name if c is not None else None


def test_extended_resource_cache() -> None:
    s = DraStore()
    s.on_event("DeviceClass", "ADDED", _cls("gpu-class", "example.com/gpu", NOW))
    s.on_event("DeviceClass", "ADDED", _cls("fpga-class"))
    # Explicit and implicit names.
    assert _holder(s, "example.com/gpu") == "gpu-class"
    assert _holder(s, "deviceclass.resource.kubernetes.io/fpga-class") == "fpga-class"
    assert _holder(s, "deviceclass.resource.kubernetes.io/gpu-class") == "gpu-class"
    # An older class with the same name does not take it over ...
    s.on_event("DeviceClass", "ADDED", _cls("gpu-class-3", "example.com/gpu", DAY_BEFORE))
    assert _holder(s, "example.com/gpu") == "gpu-class"
    # ... a newer one does ...
    s.on_event("DeviceClass", "ADDED", _cls("gpu-class-4", "example.com/gpu", HOUR_AFTER))
    assert _holder(s, "example.com/gpu") == "gpu-class-4"
    # ... and on a tie the lower name wins.
    s.on_event("DeviceClass", "ADDED", _cls("gpu-class-0", "example.com/gpu", HOUR_AFTER))
    assert _holder(s, "example.com/gpu") == "gpu-class-0"
    # Renaming the holder's resource drops the old name altogether (no fallback to another class).
    s.on_event("DeviceClass", "MODIFIED", _cls("gpu-class-0", "test.com/gpu", HOUR_AFTER))
    assert _holder(s, "test.com/gpu") == "gpu-class-0"
    assert _holder(s, "example.com/gpu") is None
    s.on_event("DeviceClass", "DELETED", _cls("gpu-class-0", "test.com/gpu", HOUR_AFTER))
    assert _holder(s, "test.com/gpu") is None
    assert _holder(s, "deviceclass.resource.kubernetes.io/gpu-class-0") is None


def test_device_class_mapping() -> None:
    s = DraStore()
    s.on_event("DeviceClass", "ADDED", _cls("gpu-class", "example.com/gpu"))
    s.on_event("DeviceClass", "ADDED", _cls("tpu-class"))
    assert s.extended.get_extended_resource("gpu-class") == "example.com/gpu"
    assert s.extended.get_extended_resource("tpu-class") == ""
    s.on_event("DeviceClass", "MODIFIED", _cls("gpu-class", "my.com/gpu"))
    assert s.extended.get_extended_resource("gpu-class") == "my.com/gpu"
    s.on_event("DeviceClass", "DELETED", _cls("gpu-class", "my.com/gpu"))
    assert s.extended.get_extended_resource("gpu-class") == ""


def test_device_class_parses_the_fields() -> None:
    c = DeviceClass(_cls("a", "example.com/a", "2026-03-01T12:00:00Z"))
    assert c.extended_resource_name == "example.com/a" and c.created == 1772366400 * 10**9
    plain = DeviceClass(_cls("b"))
    assert plain.extended_resource_name is None and plain.created == DeviceClass(_cls("c")).created


def test_is_dra_extended_resource_name() -> None:
    # schedutil.IsDRAExtendedResourceName
    assert is_dra_extended_resource_name("example.com/gpu")
    assert is_dra_extended_resource_name("deviceclass.resource.kubernetes.io/gpu")
    assert not is_dra_extended_resource_name("cpu")
    assert not is_dra_extended_resource_name("kubernetes.io/something")
    assert not is_dra_extended_resource_name("requests.example.com/gpu")
