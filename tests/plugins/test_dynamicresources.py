"""DynamicResources: CEL selectors, the structured allocator and the plugin's extension points.

Cases cite their upstream source (v1.36.3):
  cel   k8s.io/dynamic-resource-allocation/cel/compile_test.go (TestCEL cases)
  alloc k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go
  plug  pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go (TestPlugin cases)
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, NodeToStatus
from scheduler.framework.listers import DraStore, Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.model.dra import Device, DeviceClass, ResourceClaim, ResourceSlice
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.dynamicresources.allocator import AllocationError, Allocator, FailedOnNode
from scheduler.plugins.dynamicresources.cel import CompiledExpression
from scheduler.plugins.dynamicresources.celcache import CelCache, DriverIs
from scheduler.plugins.dynamicresources.celerror import CelError
from scheduler.testing.builders import MakeNode, MakePod

# ---------------------------------------------------------------------------------------------
# CEL (compile_test.go)

DRA = "dra.example.com"


def _device(attributes: dict[str, Any] | None = None, capacity: dict[str, str] | None = None) -> Device:
    return Device(
        {
            "name": "d",
            "attributes": attributes or {},
            "capacity": {k: {"value": v} for k, v in (capacity or {}).items()},
        }
    )


CEL_CASES: list[tuple[str, str, str, dict[str, Any] | None, dict[str, str] | None, bool | str]] = [
    # (upstream case, expression, driver, attributes, capacity, match or "error: substring")
    ("true", "true", "", None, None, True),
    ("false", "false", "", None, None, False),
    (
        "runtime-error-lookup-identifier",
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        "",
        None,
        None,
        "error: no such key: noSuchAttr",
    ),
    (
        "runtime-error-lookup-map",
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        "",
        None,
        None,
        "error: no such key: noSuchAttr",
    ),
    ("domain-check-negative", '"no-such-domain" in device.attributes', "", None, None, False),
    (
        "domain-check-positive",
        '"dra.example.com" in device.attributes',
        "",
        {"dra.example.com/something": {"bool": True}},
        None,
        True,
    ),
    ("empty-driver-name", 'device.driver == ""', "", None, None, True),
    ("real-driver-name", 'device.driver == "dra.example.com"', DRA, None, None, True),
    ("driver-name-qualifier", 'device.attributes["dra.example.com"].name', DRA, {"name": {"bool": True}}, None, True),
    (
        "driver-name-qualifier-map-lookup",
        'device.attributes["dra.example.com"]["name"]',
        DRA,
        {"name": {"bool": True}},
        None,
        True,
    ),
    (
        "qualified-attribute-name",
        'device.attributes["other.example.com"].name',
        DRA,
        {"other.example.com/name": {"bool": True}},
        None,
        True,
    ),
    ("int", 'device.attributes["dra.example.com"].name > 0', DRA, {"name": {"int": 1}}, None, True),
    ("string", 'device.attributes["dra.example.com"].name == "fish"', DRA, {"name": {"string": "fish"}}, None, True),
    (
        "version",
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        DRA,
        {"name": {"version": "1.0.0"}},
        None,
        True,
    ),
    (
        "version_v",
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        DRA,
        {"name": {"version": "1.0.0"}},
        None,
        True,
    ),
    (
        "quantity",
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        None,
        {"name": "1Mi"},
        True,
    ),
    (
        "check-positive",
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        None,
        {"name": "1Mi"},
        True,
    ),
    (
        "check-negative",
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "",
        None,
        None,
        True,
    ),
    (
        "all",
        'device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) && '
        'device.attributes["dra.example.com"].bool && device.attributes["dra.example.com"].int > 0 && '
        'device.attributes["dra.example.com"].string == "fish" && '
        'device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) && '
        'device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) && '
        'device.attributes["dra.example.com"]["bool"] && device.attributes["dra.example.com"]["int"] > 0 && '
        'device.attributes["dra.example.com"]["string"] == "fish" && '
        'device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))',
        DRA,
        {"bool": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"}},
        {"quantity": "1Mi"},
        True,
    ),
    (
        "many",
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        DRA,
        {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        None,
        True,
    ),
    (
        "check_attribute_domains",
        'device.attributes.exists_one(x, x == "dra.example.com")',
        DRA,
        {"services": {"string": "some_example_value"}},
        None,
        True,
    ),
    (
        "check_attribute_ids",
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        DRA,
        {"services": {"string": "some_example_value"}},
        None,
        True,
    ),
    (
        "split_attribute",
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        DRA,
        {"services": {"string": "some_example_value"}},
        None,
        True,
    ),
    (
        "regexp_attribute",
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        DRA,
        {"services": {"string": "asymetric"}},
        None,
        True,
    ),
    (
        "check_capacity_domains",
        'device.capacity.exists_one(x, x == "dra.example.com")',
        DRA,
        None,
        {"memory": "1Mi"},
        True,
    ),
    (
        "check_capacity_ids",
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        DRA,
        None,
        {"memory": "1Mi"},
        True,
    ),
    # allocator_testing.go small-and-large selector: compareTo on quantities
    (
        "alloc/small-and-large",
        'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0',
        "driver-a",
        None,
        {"memory": "1Gi"},
        False,
    ),
]


@pytest.mark.parametrize(("case", "expr", "driver", "attrs", "caps", "want"), CEL_CASES, ids=[c[0] for c in CEL_CASES])
def test_cel(case: str, expr: str, driver: str, attrs: Any, caps: Any, want: bool | str) -> None:
    compiled = CompiledExpression(expr)
    assert compiled.error is None
    dev = _device(attrs, caps)
    if isinstance(want, str):
        with pytest.raises(CelError) as ei:
            compiled.device_matches(driver, dev)
        assert want.removeprefix("error: ") in str(ei.value)
    else:
        assert compiled.device_matches(driver, dev) is want


@pytest.mark.parametrize(("case", "expr", "driver", "attrs", "caps", "want"), CEL_CASES, ids=[c[0] for c in CEL_CASES])
def test_cel_answer_is_evaluated_once_per_device(
    case: str, expr: str, driver: str, attrs: Any, caps: Any, want: bool | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same answer (or error) the second time, without evaluating again.
    compiled = CompiledExpression(expr)
    dev = _device(attrs, caps)
    answers = []
    for _ in range(2):
        try:
            answers.append(compiled.device_matches(driver, dev))
        except CelError as exc:
            answers.append(str(exc))
        monkeypatch.setattr(CompiledExpression, "_evaluate", lambda *a: pytest.fail("evaluated twice"))
    assert answers[0] == answers[1]
    assert (answers[0] is want) if isinstance(want, bool) else want.removeprefix("error: ") in answers[0]


@pytest.mark.parametrize(
    ("expr", "literal"),
    [
        ('device.driver == "test-driver.cdi.k8s.io"', "test-driver.cdi.k8s.io"),  # scheduler_perf's class
        ("'dra.example.com'==device.driver", "dra.example.com"),
        ('  device.driver == ""  ', ""),
        ('device.driver == "a" || false', None),  # anything more: the interpreter
        ('device.driver == "a\\"b"', None),  # an escape
        ("device.driver != 'x'", None),
    ],
)
@pytest.mark.parametrize("driver", ["test-driver.cdi.k8s.io", "dra.example.com", "", "a"])
def test_cel_driver_equality_is_answered_as_the_interpreter_answers(
    expr: str, literal: str | None, driver: str
) -> None:
    from scheduler.plugins.dynamicresources.cel import _ENV, FUNCTIONS, device_activation

    compiled = CelCache().get_or_compile(expr)
    assert compiled.error is None
    assert (compiled.driver if isinstance(compiled, DriverIs) else None) == literal
    interpreted = _ENV.program(_ENV.compile(expr), functions=FUNCTIONS).evaluate(device_activation(driver, _device()))
    assert compiled.device_matches(driver, _device()) is bool(interpreted)


def test_cel_syntax_error_is_a_compile_error() -> None:
    # compile_test.go "syntax-error"
    assert CompiledExpression("?!").error


def test_cel_non_bool_result_is_an_error() -> None:
    # compile_test.go "type-error" is a compile-time error upstream; without a type checker the
    # same expression fails when evaluated (see cel.py).
    with pytest.raises(CelError):
        CompiledExpression("1").device_matches("", _device())


def test_cel_cache_keeps_the_most_recent() -> None:
    c = CelCache(2)
    a = c.get_or_compile("true")
    c.get_or_compile("false")
    assert c.get_or_compile("true") is a
    c.get_or_compile("1 == 1")
    c.get_or_compile("2 == 2")
    assert c.get_or_compile("true") is not a


# ---------------------------------------------------------------------------------------------
# Allocator builders (allocator_testing.go's helpers)

NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2 = "pool-1", "pool-2"


def klass(name: str, driver: str, config: list[dict[str, Any]] | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = config
    return DeviceClass({"metadata": {"name": name}, "spec": spec})


def dev(name: str, capacity: dict[str, str] | None = None, attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        d["attributes"] = attributes
    return d


def rslice(
    name: str,
    node: str | None,
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    count: int = 1,
    generation: int = 1,
    all_nodes: bool = False,
) -> ResourceSlice:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if all_nodes:
        spec["allNodes"] = True
    elif node is not None:
        spec["nodeName"] = node
    return ResourceSlice({"metadata": {"name": name}, "spec": spec})


def req(
    name: str, cls: str, count: int = 1, *selectors: str, mode: str = "ExactCount", admin: bool | None = None
) -> dict[str, Any]:
    ex: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        ex["count"] = count
    if selectors:
        ex["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin is not None:
        ex["adminAccess"] = admin
    return {"name": name, "exactly": ex}


def sub(name: str, cls: str, count: int = 1, *selectors: str) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        s["selectors"] = [{"cel": {"expression": x}} for x in selectors]
    return s


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    namespace: str = "",
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return ResourceClaim({"metadata": meta, "spec": {"devices": devices}})


def local(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def result(request: str, driver: str, pool: str, device: str, admin: bool = False) -> dict[str, Any]:
    r: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": device}
    if admin:
        r["adminAccess"] = True
    return r


def alloc(selector: dict[str, Any] | None, *results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": {"results": list(results)}}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def run(
    claims: list[ResourceClaim],
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    node: str = NODE1,
    allocated: set[tuple[str, str, str]] | None = None,
) -> list[dict[str, Any]] | None:
    by_name = {c.name: c for c in classes}
    a = Allocator(allocated or set(), {}, by_name.get, slices, CelCache())
    return a.allocate(node, {"kubernetes.io/hostname": node}, claims)


def mem(q: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0'


def _sorted(res: list[dict[str, Any]] | None) -> Any:
    # Upstream's matcher ignores the order of results within one allocation (ConsistOf).
    if res is None:
        return None
    out = []
    for a in res:
        a = dict(a)
        devices = dict(a["devices"])
        devices["results"] = sorted(devices["results"], key=lambda r: (r["request"], r["pool"], r["device"]))
        a["devices"] = devices
        out.append(a)
    return out


ALLOC_CASES: dict[str, tuple[Any, ...]] = {
    # name: (claims, classes, slices, node, allocated, expected results)
    "simple": (
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
        NODE1,
        None,
        [alloc(local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"))],
    ),
    "other-node": (
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice("slice-1", NODE1, POOL1, DRIVER_B, dev("device-1")),
            rslice("slice-2", NODE2, POOL2, DRIVER_A, dev("device-1")),
        ],
        NODE2,
        None,
        [alloc(local(NODE2), result("req-0", DRIVER_A, POOL2, "device-1"))],
    ),
    "small-and-large": (
        [claim("claim-0", req("req-0", CLASS_A, 1, mem("1Gi")), req("req-1", CLASS_A, 1, mem("2Gi")))],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                dev("device-1", {"memory": "1Gi"}),
                dev("device-2", {"memory": "2Gi"}),
            )
        ],
        NODE1,
        None,
        [
            alloc(
                local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"), result("req-1", DRIVER_A, POOL1, "device-2")
            )
        ],
    ),
    "small-and-large-backtrack-requests": (
        [claim("claim-0", req("req-0", CLASS_A, 1, mem("1Gi")), req("req-1", CLASS_A, 1, mem("2Gi")))],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        NODE1,
        None,
        [
            alloc(
                local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"), result("req-1", DRIVER_A, POOL1, "device-2")
            )
        ],
    ),
    "small-and-large-backtrack-claims": (
        [
            claim("claim-0", req("req-0", CLASS_A, 1, mem("1Gi"))),
            claim("claim-1", req("req-1", CLASS_A, 1, mem("2Gi"))),
        ],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        NODE1,
        None,
        [
            alloc(local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1")),
            alloc(local(NODE1), result("req-1", DRIVER_A, POOL1, "device-2")),
        ],
    ),
    "devices-split-across-different-slices": (
        [claim("claim-0", req("req-0", CLASS_A, 2))],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1")),
            rslice("slice-2", NODE1, POOL2, DRIVER_A, dev("device-1")),
        ],
        NODE1,
        None,
        [
            alloc(
                local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"), result("req-0", DRIVER_A, POOL2, "device-1")
            )
        ],
    ),
    "obsolete-slice": (
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice("slice-1-obsolete", NODE1, POOL1, DRIVER_A, dev("device-1"), count=2),
            rslice("slice-1-obsolete", NODE1, POOL1, DRIVER_A, dev("device-2"), count=2, generation=2),
        ],
        NODE1,
        None,
        None,  # upstream expects no results: the newer generation is incomplete
    ),
    "no-slices": ([claim("claim-0", req("req-0", CLASS_A))], [klass(CLASS_A, DRIVER_A)], [], NODE1, None, None),
    "not-enough-suitable-devices": (
        [claim("claim-0", req("req-0", CLASS_A)), claim("claim-0", req("req-1", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
        NODE1,
        None,
        None,
    ),
    "already-allocated-devices": (
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
        NODE1,
        {(DRIVER_A, POOL1, "device-1"), (DRIVER_A, POOL1, "device-2")},
        None,
    ),
    "admin-access-enabled": (
        [claim("claim-0", req("req-0", CLASS_A, admin=True))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
        NODE1,
        {(DRIVER_A, POOL1, "device-1"), (DRIVER_A, POOL1, "device-2")},
        [alloc(local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1", admin=True))],
    ),
    "network-attached-device": (
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", None, POOL1, DRIVER_A, dev("device-1"), all_nodes=True)],
        NODE1,
        None,
        [alloc(None, result("req-0", DRIVER_A, POOL1, "device-1"))],
    ),
    "prioritized-list-first-unavailable": (
        [claim("claim-0", {"name": "req-0", "firstAvailable": [sub("subReq-0", CLASS_B), sub("subReq-1", CLASS_A)]})],
        [klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
        NODE1,
        None,
        [alloc(local(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, "device-1"))],
    ),
    "prioritized-list-non-available": (
        [
            claim(
                "claim-0",
                {"name": "req-0", "firstAvailable": [sub("subReq-0", CLASS_B, 2), sub("subReq-1", CLASS_A, 2)]},
            )
        ],
        [klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        [
            rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1")),
            rslice("slice-2", NODE1, POOL2, DRIVER_B, dev("device-1")),
        ],
        NODE1,
        None,
        None,
    ),
    "prioritized-list-with-backtracking": (
        [
            claim(
                "claim-0",
                {
                    "name": "req-0",
                    "firstAvailable": [
                        sub("subReq-0", CLASS_A, 1, mem("8Gi")),
                        sub("subReq-1", CLASS_A, 1, mem("4Gi")),
                    ],
                },
                req("req-1", CLASS_A, 1, mem("8Gi")),
            )
        ],
        [klass(CLASS_A, DRIVER_A)],
        [
            rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1", {"memory": "8Gi"})),
            rslice("slice-2", NODE1, POOL2, DRIVER_A, dev("device-2", {"memory": "4Gi"})),
        ],
        NODE1,
        None,
        [
            alloc(
                local(NODE1),
                result("req-0/subReq-1", DRIVER_A, POOL2, "device-2"),
                result("req-1", DRIVER_A, POOL1, "device-1"),
            )
        ],
    ),
}

_ATTRS_SAME = {
    "driverVersion": {"version": "1.0.0"},
    "numa": {"int": 1},
    "stringAttribute": {"string": "stringAttributeValue"},
    "boolAttribute": {"bool": True},
}
ALLOC_CASES.update(
    {
        "with-constraint": (
            [
                claim(
                    "claim-0",
                    req("req-0", CLASS_A),
                    req("req-1", CLASS_A),
                    constraints=[
                        {"matchAttribute": f"{DRIVER_A}/numa"},
                        {"matchAttribute": f"{DRIVER_A}/driverVersion"},
                        {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                        {"matchAttribute": f"{DRIVER_A}/boolAttribute"},
                    ],
                )
            ],
            [klass(CLASS_A, DRIVER_A)],
            [
                rslice(
                    "slice-1",
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    dev("device-1", None, _ATTRS_SAME),
                    dev("device-2", None, _ATTRS_SAME),
                )
            ],
            NODE1,
            None,
            [
                alloc(
                    local(NODE1),
                    result("req-0", DRIVER_A, POOL1, "device-1"),
                    result("req-1", DRIVER_A, POOL1, "device-2"),
                )
            ],
        ),
        "with-constraint-non-existent-attribute": (
            [
                claim(
                    "claim-0",
                    req("req-0", CLASS_A),
                    constraints=[{"matchAttribute": f"{DRIVER_A}/NonExistentAttribute"}],
                )
            ],
            [klass(CLASS_A, DRIVER_A)],
            [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
            NODE1,
            None,
            None,
        ),
        "with-constraint-not-matching-int-attribute": (
            [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
            [klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
            [
                rslice(
                    "slice-1",
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    dev("device-1", None, {"numa": {"int": 1}}),
                    dev("device-2", None, {"numa": {"int": 2}}),
                )
            ],
            NODE1,
            None,
            None,
        ),
        "with-constraint-for-request": (
            [
                claim(
                    "claim-0",
                    req("req-0", CLASS_A),
                    req("req-1", CLASS_A),
                    constraints=[{"requests": ["req-0"], "matchAttribute": f"{DRIVER_A}/driverVersion"}],
                )
            ],
            [klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
            [
                rslice(
                    "slice-1",
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    dev("device-1", None, {"driverVersion": {"version": "1.0.0"}}),
                    dev("device-2", None, {"driverVersion": {"version": "2.0.0"}}),
                )
            ],
            NODE1,
            None,
            [
                alloc(
                    local(NODE1),
                    result("req-0", DRIVER_A, POOL1, "device-1"),
                    result("req-1", DRIVER_A, POOL1, "device-2"),
                )
            ],
        ),
        "with-constraint-for-request-retry": (
            [
                claim(
                    "claim-0",
                    req("req-0", CLASS_A),
                    req("req-1", CLASS_A),
                    constraints=[
                        {"requests": ["req-0"], "matchAttribute": f"{DRIVER_A}/driverVersion"},
                        {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                    ],
                )
            ],
            [klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
            [
                rslice(
                    "slice-1",
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    dev("device-1", None, {"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}}),
                    dev("device-2", None, {"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}}),
                    dev("device-3", None, {"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}}),
                )
            ],
            NODE1,
            None,
            [
                alloc(
                    local(NODE1),
                    result("req-0", DRIVER_A, POOL1, "device-2"),
                    result("req-1", DRIVER_A, POOL1, "device-3"),
                )
            ],
        ),
    }
)


@pytest.mark.parametrize("case", sorted(ALLOC_CASES))
def test_allocator(case: str) -> None:
    claims, classes, slices, node, allocated, want = ALLOC_CASES[case]
    assert _sorted(run(claims, classes, slices, node, allocated)) == _sorted(want)


ERROR_CASES: dict[str, tuple[Any, ...]] = {
    # alloc "no-classes" / "unknown-class" / "empty-class"
    "no-classes": ([claim("claim-0", req("req-0", CLASS_A))], [], "could not retrieve device class class-a"),
    "unknown-class": (
        [claim("claim-0", req("req-0", "unknown-class"))],
        [klass(CLASS_A, DRIVER_A)],
        "could not retrieve device class unknown-class",
    ),
    "empty-class": (
        [claim("claim-0", req("req-0", ""))],
        [klass(CLASS_A, DRIVER_A)],
        "claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_allocator_errors(case: str) -> None:
    claims, classes, msg = ERROR_CASES[case]
    with pytest.raises(AllocationError) as ei:
        run(claims, classes, [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))])
    assert msg in str(ei.value)


def test_allocator_duplicate_slice_is_an_invalid_pool() -> None:
    # alloc "duplicate-slice": the same device published twice makes the pool invalid.
    a = rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"), count=2)
    b = rslice("slice-1-2", NODE1, POOL1, DRIVER_A, dev("device-1"), count=2)
    with pytest.raises(FailedOnNode) as ei:
        run([claim("claim-0", req("req-0", CLASS_A))], [klass(CLASS_A, DRIVER_A)], [a, b])
    assert "invalid resource pools were encountered" in str(ei.value)


def test_allocator_class_config() -> None:
    # alloc "with-class-device-config"
    cfg = {"opaque": {"driver": DRIVER_A, "parameters": {"classAttribute": "x"}}}
    got = run(
        [claim("claim-0", req("req-0", CLASS_A))],
        [klass(CLASS_A, DRIVER_A, [cfg])],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
    )
    assert got is not None
    assert got[0]["devices"]["config"] == [{"source": "FromClass", "requests": ["req-0"], **cfg}]


def test_allocator_all_mode_single() -> None:
    # alloc "all-devices-single"
    got = run(
        [claim("claim-0", req("req-0", CLASS_A, mode="All"))],
        [klass(CLASS_A, DRIVER_A)],
        [rslice("slice-1", NODE1, POOL1, DRIVER_A, dev("device-1"))],
    )
    assert got == [alloc(local(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"))]


def test_allocator_tainted_device_needs_toleration() -> None:
    # plug "tainted-device-enabled": a NoSchedule taint makes the device unusable unless tolerated.
    tainted = dev("device-1")
    tainted["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    s = rslice("slice-1", NODE1, POOL1, DRIVER_A, tainted)
    assert run([claim("claim-0", req("req-0", CLASS_A))], [klass(CLASS_A, DRIVER_A)], [s]) is None
    r = req("req-0", CLASS_A)
    r["exactly"]["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    got = run([claim("claim-0", r)], [klass(CLASS_A, DRIVER_A)], [s])
    assert got is not None and got[0]["devices"]["results"][0]["tolerations"] == r["exactly"]["tolerations"]


def test_allocator_partitionable_counters() -> None:
    # alloc "partitionable-devices-single-device"-style: two partitions of one counter set that
    # together exceed it; only one fits.
    counters = ResourceSlice(
        {
            "metadata": {"name": "slice-c"},
            "spec": {
                "driver": DRIVER_A,
                "nodeName": NODE1,
                "pool": {"name": POOL1, "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}],
            },
        }
    )
    parts = rslice(
        "slice-d",
        NODE1,
        POOL1,
        DRIVER_A,
        *[
            {
                "name": f"device-{i}",
                "consumesCounters": [{"counterSet": "counter-set-1", "counters": {"memory": {"value": "6Gi"}}}],
            }
            for i in range(2)
        ],
        count=2,
    )
    one = run([claim("claim-0", req("req-0", CLASS_A))], [klass(CLASS_A, DRIVER_A)], [counters, parts])
    assert one is not None and one[0]["devices"]["results"][0]["device"] == "device-0"
    assert run([claim("claim-0", req("req-0", CLASS_A, 2))], [klass(CLASS_A, DRIVER_A)], [counters, parts]) is None


# ---------------------------------------------------------------------------------------------
# Plugin (dynamicresources_test.go fixtures: pod "default/my-pod" uid 1234, claim
# "my-pod-my-resource", class "my-resource-class", node "worker", driver "some-driver")

POD_NAME, POD_UID = "my-pod", "1234"
CLAIM_NAME = "my-pod-my-resource"
CLASS_NAME = "my-resource-class"
DRIVER = "some-driver"


def pod(template: bool = False, status: bool = False) -> PodInfo:
    pc = {"name": "my-resource", ("resourceClaimTemplateName" if template else "resourceClaimName"): CLAIM_NAME}
    w = MakePod().name(POD_NAME).uid(POD_UID).resource_claim(pc)
    if status:
        w.status(resourceClaimStatuses=[{"name": "my-resource", "resourceClaimName": CLAIM_NAME}])
    return w.info()


def pclaim(
    allocation: dict[str, Any] | None = None,
    owner: str | None = None,
    deleting: bool = False,
    cls: str = CLASS_NAME,
    reserved: list[dict[str, Any]] | None = None,
    name: str = CLAIM_NAME,
    uid: str = "claim-uid",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "1"}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": POD_NAME, "uid": owner, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    raw: dict[str, Any] = {
        "metadata": meta,
        "spec": {
            "devices": {
                "requests": [
                    {"name": "req-1", "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}}
                ]
            }
        },
    }
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved:
        status["reservedFor"] = reserved
    if status:
        raw["status"] = status
    return raw


def worker_slice(node: str = "worker") -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "instance-1"}],
        },
    }


def store_with(*claims: dict[str, Any], cls: bool = True, slices: tuple[dict[str, Any], ...] = ()) -> DraStore:
    s = DraStore()
    for c in claims:
        s.apply("ResourceClaim", c)
    if cls:
        s.apply("DeviceClass", {"metadata": {"name": CLASS_NAME}})
    for sl in slices:
        s.apply("ResourceSlice", sl)
    return s


def node(name: str = "worker") -> NodeInfo:
    return MakeNode().name(name).capacity({"cpu": "4", "memory": "8Gi", "pods": "110"}).info()


def worker_alloc(node_name: str = "worker", device: str = "instance-1") -> dict[str, Any]:
    return alloc(local(node_name), result("req-1", DRIVER, node_name, device))


@pytest.mark.parametrize(
    ("case", "the_pod", "claims", "want"),
    [
        ("missing-claim", pod(template=True), [], 'pod "default/my-pod": ResourceClaim not created yet'),
        (
            "deleted-claim",
            pod(template=True, status=True),
            [pclaim(owner=POD_UID, deleting=True)],
            'resourceclaim "my-pod-my-resource" is being deleted',
        ),
        (
            "wrong-claim",
            pod(template=True, status=True),
            [pclaim(owner=POD_UID + "123")],
            "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod (Pod is not owner)",
        ),
        ("claim-not-in-cache", pod(), [], 'could not find ResourceClaim "default/my-pod-my-resource"'),
    ],
)
def test_pre_enqueue(case: str, the_pod: PodInfo, claims: list[dict[str, Any]], want: str) -> None:
    pl = DynamicResources(store_with(*claims))
    st = pl.pre_enqueue(the_pod)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.message == want


def _cycle(pl: DynamicResources, p: PodInfo, nodes: list[NodeInfo]) -> tuple[CycleState, Any, dict[str, Any]]:
    state = CycleState()
    pre = pl.pre_filter(state, p, nodes)
    filt = {}
    if pre is None:
        for n in nodes:
            filt[n.name] = pl.filter(state, p, n)
    return state, pre, filt


def test_no_resources() -> None:
    # plug "no-resources": no slice for the node.
    pl = DynamicResources(store_with(pclaim()))
    state, pre, filt = _cycle(pl, pod(), [node()])
    assert pre is None
    st = filt["worker"]
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.message == "cannot allocate all claims"
    _, pst = pl.post_filter(state, pod(), NodeToStatus())
    assert pst is not None and pst.code == Code.UNSCHEDULABLE and pst.message == "still not schedulable"


@pytest.mark.parametrize(
    ("filter_timeout", "code", "message"),
    [
        # plug "timeout" (dynamicresources_test.go): the search ran out of time on the node, an
        # Error so the pod goes through backoff rather than waiting for a cluster event.
        (1e-9, Code.ERROR, "node worker: timed out trying to allocate devices"),
        # 0 turns the limit off; a generous limit is not reached.
        (0.0, None, None),
        (60.0, None, None),
    ],
)
def test_filter_timeout(filter_timeout: float, code: Code | None, message: str | None) -> None:
    pl = DynamicResources(store_with(pclaim(), slices=(worker_slice(),)))
    assert (pl.filter_timeout, pl.binding_timeout) == (10.0, 600.0)  # v1.36.3's defaults
    pl.filter_timeout = filter_timeout
    _, _, filt = _cycle(pl, pod(), [node()])
    st = filt["worker"]
    if code is None:
        assert st is None
    else:
        assert st is not None and (st.code, st.message) == (code, message)


def test_filter_timeout_from_args() -> None:
    handle = Handle(Snapshot(), Listers())
    pl = DynamicResources.new({"filterTimeout": "250ms", "bindingTimeout": "2m"}, handle)
    assert (pl.filter_timeout, pl.binding_timeout) == (0.25, 120.0)


def test_exhausted_resources_in_informer_cache() -> None:
    # plug "exhausted-resources-in-informer-cache": another claim holds the only device.
    other = pclaim(worker_alloc(), name="other", uid="other-uid")
    pl = DynamicResources(store_with(pclaim(), other, slices=(worker_slice(),)))
    _, _, filt = _cycle(pl, pod(), [node()])
    assert filt["worker"].message == "cannot allocate all claims"


def test_exhausted_resources_in_flight_claim() -> None:
    # plug "exhausted-resources-in-flight-claim": the other claim's allocation is only in flight.
    other = pclaim(name="other", uid="other-uid")
    store = store_with(pclaim(), other, slices=(worker_slice(),))
    store.signal_pending(ResourceClaim(other).with_allocation(worker_alloc()))
    pl = DynamicResources(store)
    _, _, filt = _cycle(pl, pod(), [node()])
    assert filt["worker"].message == "cannot allocate all claims"


def test_other_resources_in_flight_claim_do_not_block() -> None:
    # plug "other-resources-in-flight-claim": the in-flight claim holds a different device.
    other = pclaim(name="other", uid="other-uid")
    store = store_with(pclaim(), other, slices=(worker_slice(),))
    store.signal_pending(ResourceClaim(other).with_allocation(worker_alloc(device="instance-2")))
    pl = DynamicResources(store)
    _, _, filt = _cycle(pl, pod(), [node()])
    assert filt["worker"] is None


@pytest.mark.parametrize(
    ("case", "cls", "create_class", "want"),
    [
        ("missing-class", CLASS_NAME, False, f"request req-1: device class {CLASS_NAME} does not exist"),
        (
            "claim-with-request-with-unknown-device-class",
            "does-not-exist",
            True,
            "request req-1: device class does-not-exist does not exist",
        ),
    ],
)
def test_missing_class(case: str, cls: str, create_class: bool, want: str) -> None:
    pl = DynamicResources(store_with(pclaim(cls=cls), cls=create_class))
    state, pre, _ = _cycle(pl, pod(), [node()])
    assert pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and pre.message == want
    _, pst = pl.post_filter(state, pod(), NodeToStatus())
    assert pst is not None and pst.message == "no new claims to deallocate"


def test_prioritized_list_unknown_device_class() -> None:
    # plug "claim-with-prioritized-list-unknown-device-class"
    raw = pclaim()
    raw["spec"]["devices"]["requests"] = [
        {
            "name": "req-1",
            "firstAvailable": [
                {"name": "subreq-1", "deviceClassName": "does-not-exist", "allocationMode": "ExactCount", "count": 1}
            ],
        }
    ]
    pl = DynamicResources(store_with(raw))
    _, pre, _ = _cycle(pl, pod(), [node()])
    assert pre is not None and pre.message == "request req-1/subreq-1: device class does-not-exist does not exist"


def test_wrong_topology_deallocates_in_post_filter() -> None:
    # plug "wrong-topology": allocated for another node; PostFilter deallocates it.
    pl = DynamicResources(store_with(pclaim(worker_alloc("worker-2"))))
    state, pre, filt = _cycle(pl, pod(), [node()])
    assert pre is None
    assert filt["worker"].message == "resourceclaim not available on the node"
    _, pst = pl.post_filter(state, pod(), NodeToStatus())
    assert pst is not None and pst.code == Code.UNSCHEDULABLE
    assert pst.message == "deallocation of ResourceClaim completed"
    assert pl.store.get_claim("default", CLAIM_NAME).allocation is None


def test_no_claims_post_filter_message() -> None:
    # plug "empty": a pod without claims (PreFilter skips) -> PostFilter's fast path.
    pl = DynamicResources(DraStore())
    p = PodInfo({"metadata": {"name": "x", "namespace": "default", "uid": "u"}, "spec": {"containers": []}})
    state = CycleState()
    pre = pl.pre_filter(state, p, [node()])
    assert pre is not None and pre.code == Code.SKIP
    _, pst = pl.post_filter(state, p, NodeToStatus())
    assert pst is not None and pst.message == "no new claims to deallocate"


class _Offline:
    offline = True


def test_reserve_prebind_offline_flow() -> None:
    # plug "claim-reference"-style: allocate on the node with the device, Reserve puts the
    # allocation in flight (the next pod sees it taken), PreBind records allocation and
    # reservedFor; "good-topology": an allocated claim only gets reservedFor.
    store = store_with(pclaim(), slices=(worker_slice(),))
    pl = DynamicResources(store)
    state, pre, filt = _cycle(pl, pod(), [node(), node("worker-2")])
    assert pre is None and filt["worker"] is None
    assert filt["worker-2"].message == "cannot allocate all claims"
    assert pl.reserve(state, pod(), "worker") is None
    assert "claim-uid" in store.in_flight
    # Another pod with its own claim now finds the device taken.
    second = PodInfo(
        {
            "metadata": {"name": "p2", "namespace": "default", "uid": "p2"},
            "spec": {"containers": [], "resourceClaims": [{"name": "r", "resourceClaimName": "c2"}]},
        }
    )
    store.apply("ResourceClaim", pclaim(name="c2", uid="c2"))
    _, _, filt2 = _cycle(pl, second, [node()])
    assert filt2["worker"].message == "cannot allocate all claims"
    assert asyncio.run(pl.pre_bind(state, pod(), "worker")) is None
    c = store.get_claim("default", CLAIM_NAME)
    assert c.allocation is not None
    assert c.allocation["devices"]["results"] == [result("req-1", DRIVER, "worker", "instance-1")]
    assert c.allocation["nodeSelector"] == local("worker")
    assert "allocationTimestamp" in c.allocation
    assert c.reserved_for == [{"resource": "pods", "name": POD_NAME, "uid": POD_UID}]
    assert "resource.kubernetes.io/delete-protection" in c.finalizers
    assert "claim-uid" not in store.in_flight


def test_unreserve_drops_in_flight_allocation() -> None:
    store = store_with(pclaim(), slices=(worker_slice(),))
    pl = DynamicResources(store)
    state, _, _ = _cycle(pl, pod(), [node()])
    assert pl.reserve(state, pod(), "worker") is None
    pl.unreserve(state, pod(), "worker")
    assert not store.in_flight
    _, _, filt = _cycle(pl, pod(), [node()])
    assert filt["worker"] is None


def test_in_flight_claim_waits_in_pre_filter() -> None:
    # PreFilter: "resource claim %s is in the process of being allocated"
    store = store_with(pclaim(), slices=(worker_slice(),))
    store.signal_pending(ResourceClaim(pclaim()).with_allocation(worker_alloc()))
    pl = DynamicResources(store)
    _, pre, _ = _cycle(pl, pod(), [node()])
    assert (
        pre is not None
        and pre.message == "resource claim default/my-pod-my-resource is in the process of being allocated"
    )


def test_score_prefers_earlier_subrequests() -> None:
    # Score: FirstAvailableDeviceRequestMaxSize (8) minus the subrequest index; then
    # DefaultNormalizeScore.
    raw = pclaim()
    raw["spec"]["devices"]["requests"] = [
        {
            "name": "req-1",
            "firstAvailable": [
                {"name": "big", "deviceClassName": CLASS_NAME, "allocationMode": "ExactCount", "count": 2},
                {"name": "small", "deviceClassName": CLASS_NAME, "allocationMode": "ExactCount", "count": 1},
            ],
        }
    ]
    two = worker_slice("worker-2")
    two["spec"]["devices"].append({"name": "instance-2"})
    pl = DynamicResources(store_with(raw, slices=(worker_slice(), two)))
    state, pre, filt = _cycle(pl, pod(), [node(), node("worker-2")])
    assert pre is None and filt == {"worker": None, "worker-2": None}
    scores = np.array([pl.score(state, pod(), node()), pl.score(state, pod(), node("worker-2"))], dtype=np.int64)
    assert scores.tolist() == [7, 8]
    # The batch form defers to the per-node form when Filter allocated, and is all zeros when
    # the pod has no claims.
    assert pl.score_batch(state, pod(), None, np.arange(2)) is None  # type: ignore[arg-type]
    plain = PodInfo({"metadata": {"name": "x", "namespace": "default", "uid": "u"}, "spec": {"containers": []}})
    st2 = CycleState()
    pl.pre_filter(st2, plain, [node()])
    assert pl.score_batch(st2, plain, None, np.arange(3)).tolist() == [0, 0, 0]  # type: ignore[arg-type,union-attr]
    assert pl.score(st2, plain, node()) == 0
    pl.normalize_score(state, pod(), scores)
    assert scores.tolist() == [87, 100]


def test_claim_change_hint() -> None:
    pl = DynamicResources(store_with(pclaim()))
    p = pod()
    c = ResourceClaim(pclaim())
    from scheduler.framework.events import QueueingHint

    assert pl._after_claim_change(p, None, c) == QueueingHint.QUEUE
    assert pl._after_claim_change(p, c, ResourceClaim(pclaim())) == QueueingHint.QUEUE_SKIP
    other = ResourceClaim(pclaim(name="other", uid="o"))
    assert pl._after_claim_change(p, None, other) == QueueingHint.QUEUE_SKIP
    deallocated_old = ResourceClaim(pclaim(worker_alloc(), name="other", uid="o"))
    assert pl._after_claim_change(p, deallocated_old, other) == QueueingHint.QUEUE


# ---------------------------------------------------------------------------------------------
# simulate: DRA objects in the cluster file, the allocation per placed pod


def test_simulate_allocates_template_claims_and_reports_them(tmp_path: Any) -> None:
    import io
    import json

    import yaml

    from scheduler.simulate.simulator import run

    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
        for n in ("n1", "n2")
    ]
    docs += [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n2-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n2",
                "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}},
        },
    ]
    for p in ("a", "b"):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": p, "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                },
            }
        )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(path), None, 1, "json", stream=buf) == 0
    a, b = (json.loads(line) for line in buf.getvalue().splitlines())
    assert a["node"] == "n2"
    assert a["claims"] == {
        "default/a-gpu": [{"request": "g", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}]
    }
    assert a["filtered"] == {"n1": {"plugin": "DynamicResources", "reasons": ["cannot allocate all claims"]}}
    # The only device is taken by a's claim.
    assert b["node"] is None
    assert b["message"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_simulate_rejects_a_broken_slice(tmp_path: Any) -> None:
    import yaml

    from scheduler.simulate.simulator import run

    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "d",
                    "nodeName": "n",
                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "x", "capacity": {"mem": {"value": "lots"}}}],
                },
            }
        )
    )
    assert run(str(path), None, 1, "json") == 2


# ---------------------------------------------------------------------------------------------
# Live loop: PreEnqueue gating released by the claim's ADD event; PreBind through the API


class _FakeClaimAPI:
    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self.rv = 100

    def _stored(self, raw: Any) -> dict[str, Any]:
        self.rv += 1
        out = dict(raw)
        out["metadata"] = {**raw["metadata"], "resourceVersion": str(self.rv)}
        return out

    async def update_resource_claim(self, raw: Any) -> dict[str, Any]:
        self.writes.append(("update", raw))
        return self._stored(raw)

    async def update_resource_claim_status(self, raw: Any) -> dict[str, Any]:
        self.writes.append(("status", raw))
        return self._stored(raw)

    async def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        raise AssertionError("no conflict expected")

    async def patch_resource_claim_status(self, namespace: str, name: str, patch: Any) -> dict[str, Any]:
        self.writes.append(("patch", patch))
        return {}


async def test_gated_pod_released_by_claim_add_and_bound_with_allocation() -> None:
    from scheduler.backend.queue import ACTIVE, GATED
    from scheduler.testing.builders import make_node
    from scheduler.testing.harness import Harness

    h = Harness()
    pl = h.sched.frameworks["default-scheduler"].plugins["DynamicResources"]
    assert isinstance(pl, DynamicResources)
    api = _FakeClaimAPI()
    pl._api = api
    h.sched.on_node(None, make_node("worker"))
    h.sched.on_storage("DeviceClass", "ADDED", {"metadata": {"name": CLASS_NAME}})
    h.sched.on_storage("ResourceSlice", "ADDED", worker_slice())
    raw = {
        "metadata": {"name": POD_NAME, "namespace": "default", "uid": POD_UID},
        "spec": {"containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": "my-resource", "resourceClaimName": CLAIM_NAME}]},
    }
    h.sched.on_pod("ADDED", raw)
    assert h.queue.where(POD_UID) == GATED
    # An unrelated claim does not release it; its own claim does.
    h.sched.on_storage("ResourceClaim", "ADDED", pclaim(name="other", uid="o"))
    assert h.queue.where(POD_UID) == GATED
    h.sched.on_storage("ResourceClaim", "ADDED", pclaim())
    assert h.queue.where(POD_UID) == ACTIVE
    assert await h.step()
    assert h.bound() == {POD_NAME: "worker"}
    kinds = [k for k, _ in api.writes]
    assert kinds == ["update", "status"]  # finalizer first, then allocation + reservedFor
    status = api.writes[1][1]["status"]
    assert status["allocation"]["devices"]["results"] == [result("req-1", DRIVER, "worker", "instance-1")]
    assert status["reservedFor"] == [{"resource": "pods", "name": POD_NAME, "uid": POD_UID}]
    # The written claim is assumed until the watch shows it: the device stays taken.
    assert pl.store.get_claim("default", CLAIM_NAME).allocation is not None
    assert not pl.store.in_flight


# ---------------------------------------------------------------------------------------------
# Consumable capacity request policies
# (structured/internal/incubating/consumable_capacity_test.go)


def _policy(default: str | None = None, lo: str | None = None, hi: str | None = None, step: str | None = None,
            values: tuple[str, ...] = ()) -> Any:
    from scheduler.model.dra import CapacityPolicy

    raw: dict[str, Any] = {}
    if default is not None:
        raw["default"] = default
    rng = {k: v for k, v in (("min", lo), ("max", hi), ("step", step)) if v is not None}
    if rng:
        raw["validRange"] = rng
    if values:
        raw["validValues"] = list(values)
    return CapacityPolicy(raw)


@pytest.mark.parametrize(
    ("case", "amount", "policy", "want"),
    [
        ("less than maximum", "1", dict(default="1", lo="1", hi="2"), False),
        ("more than maximum", "2", dict(default="1", lo="1", hi="1"), True),
        ("in set", "1", dict(default="1", values=("1",)), False),
        ("not in set", "2", dict(default="1", values=("1",)), True),
    ],
)
def test_violate_capacity_request_policy(case: str, amount: str, policy: dict[str, Any], want: bool) -> None:
    from fractions import Fraction

    assert _policy(**policy).violated(Fraction(amount)) is want


@pytest.mark.parametrize(
    ("case", "requested", "value", "policy", "want"),
    [
        ("empty", None, "1", {}, "1"),
        ("min in range", None, "2", dict(default="1", lo="1"), "1"),
        ("default in set", None, "2", dict(default="1", values=("1",)), "1"),
        ("more than min in range", "2", "2", dict(default="1", lo="1"), "2"),
        ("less than min in range", "1", "2", dict(default="1", lo="2"), "2"),
        ("with step (round up)", "2", "3", dict(default="1", lo="1", step="2"), "3"),
        ("with step (no remaining)", "2", "2", dict(default="1", lo="1", step="1"), "2"),
        ("valid value in set", "2", "3", dict(default="1", values=("1", "2", "3")), "2"),
        ("set (round up)", "2", "3", dict(default="1", values=("1", "3")), "3"),
        ("larger than set", "3", "3", dict(default="1", values=("1", "2")), "3"),
    ],
)
def test_calculate_consumed_capacity(case: str, requested: str | None, value: str, policy: dict[str, Any],
                                     want: str) -> None:
    from fractions import Fraction

    got = _policy(**policy).consumed(Fraction(requested) if requested is not None else None, Fraction(value))
    assert got == Fraction(want)


def test_shared_device_capacity_is_split_between_claims() -> None:
    # allowMultipleAllocations: two claims share one device while their requests fit its capacity.
    shared = dev("device-1", {"memory": "8Gi"})
    shared["allowMultipleAllocations"] = True
    s = rslice("slice-1", NODE1, POOL1, DRIVER_A, shared)

    def half(name: str) -> ResourceClaim:
        r = req("req-0", CLASS_A)
        r["exactly"]["capacity"] = {"requests": {"memory": "4Gi"}}
        return claim(name, r)

    got = run([half("c0"), half("c1")], [klass(CLASS_A, DRIVER_A)], [s])
    assert got is not None and [a["devices"]["results"][0]["device"] for a in got] == ["device-1", "device-1"]
    assert all("shareID" in a["devices"]["results"][0] for a in got)
    assert run([half("c0"), half("c1"), half("c2")], [klass(CLASS_A, DRIVER_A)], [s]) is None


def test_shared_device_consumed_capacity_is_written_as_requested() -> None:
    shared = dev("device-1", {"memory": "8Gi"})
    shared["allowMultipleAllocations"] = True
    r = req("req-0", CLASS_A)
    r["exactly"]["capacity"] = {"requests": {"memory": "4Gi"}}
    got = run([claim("c0", r)], [klass(CLASS_A, DRIVER_A)], [rslice("slice-1", NODE1, POOL1, DRIVER_A, shared)])
    assert got is not None and got[0]["devices"]["results"][0]["consumedCapacity"] == {"memory": "4Gi"}
