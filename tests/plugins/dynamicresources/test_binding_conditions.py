"""DynamicResources with device binding conditions (DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus).

Cases from upstream v1.36.3 pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources_test.go, TestPlugin: "bind-claim-with-binding-conditions",
"bound-claim-with-succeeded-binding-conditions", "bound-claim-with-failed-binding",
"bound-claim-with-timed-out-binding", "prebind-fail-with-binding-timeout" (shortened:
bindingTimeout 2s instead of 600s), "bound-claim-with-mixed-binding-conditions",
"bound-claim-without-binding-conditions", "multi-claims-binding-conditions-all-success",
"multi-claims-binding-conditions-one-fail", "dont-add-allocation-timestamp",
"add-allocation-timestamp", "add-allocation-timestamp-failure".
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code
from scheduler.model.dra import ResourceClaim
from scheduler.plugins.dynamicresources import bindingconditions as bc
from scheduler.plugins.dynamicresources.bindingconditions import claim_ready_for_binding, claim_timed_out
from tests.plugins.dynamicresources.fixtures import (
    CLAIM_NAME,
    CLAIM_NAME2,
    CLASS,
    DRIVER,
    DRIVER2,
    NAMESPACE,
    NODE,
    NODE_SELECTOR,
    POD_REF,
    RecordingEvents,
    claim,
    cycle,
    device_class,
    fabric_slice,
    node_slice,
    plugin,
    pod_with,
    result,
    worker,
)

CLASS_OBJ = ("DeviceClass", device_class(CLASS))


def _ts(seconds_ago: float = 0.0) -> str:
    t = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _bc_result(request: str = "req-1", device: str = "instance-1", driver: str = DRIVER) -> dict[str, Any]:
    return result(request, device, driver, bindingConditions=["condition"], bindingFailureConditions=["failed"])


def _bc_alloc(seconds_ago: float = 0.0, request: str = "req-1", device: str = "instance-1",
              driver: str = DRIVER) -> dict[str, Any]:
    """allocationResultWithBindingConditions (allocated ``seconds_ago``)."""
    return {
        "allocationTimestamp": _ts(seconds_ago),
        "devices": {"results": [_bc_result(request, device, driver)]},
        "nodeSelector": NODE_SELECTOR,
    }


def _status(condition: str | None, failed: str | None, device: str = "instance-1", driver: str = DRIVER,
            extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    conds = list(extra or [])
    if condition is not None:
        conds.append({"type": "condition", "status": condition})
    if failed is not None:
        conds.append({"type": "failed", "status": failed})
    entry: dict[str, Any] = {"driver": driver, "pool": NODE, "device": device}
    if conds:
        entry["conditions"] = conds
    return [entry]


def _bound(name: str = CLAIM_NAME, driver: str = DRIVER, device: str = "instance-1", req: str = "req-1",
           condition: str = "True", failed: str = "False", seconds_ago: float = 0.0) -> dict[str, Any]:
    """boundClaim / failedBindingClaim: allocated with binding conditions, device status set."""
    return claim(name, allocation=_bc_alloc(seconds_ago, req, device, driver),
                 devices=_status(condition, failed, device, driver))


POD = pod_with(claims=(CLAIM_NAME,))
POD2 = pod_with(claims=(CLAIM_NAME, CLAIM_NAME2))


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_bind_claim_with_binding_conditions_times_out() -> None:
    # "bind-claim-with-binding-conditions": nobody sets the conditions; bindingTimeout 1s.
    events = RecordingEvents()
    pl, _api, metrics = plugin(CLASS_OBJ, ("ResourceSlice", fabric_slice()), ("ResourceClaim", claim()),
                              args={"bindingTimeout": "1s"}, events=events)
    state, pre, filt = cycle(pl, POD, [worker()])
    assert pre is None and filt == {NODE: None}
    assert pl.reserve(state, POD, NODE) is None
    (in_flight,) = pl.store.in_flight.values()
    # Reserve: no allocationTimestamp yet (PreBind sets it).
    assert in_flight.allocation is not None and "allocationTimestamp" not in in_flight.allocation
    assert in_flight.allocation["devices"]["results"] == [_bc_result()]
    st = _run(pl.pre_bind(state, POD, NODE))
    assert st is not None and st.code == Code.ERROR
    assert st.message == "device binding timeout: context deadline exceeded"
    written = pl.store.get_claim(NAMESPACE, CLAIM_NAME)
    assert written.reserved_for == [POD_REF]
    assert written.allocation is not None and written.allocation["allocationTimestamp"]
    assert written.allocation["nodeSelector"] == NODE_SELECTOR
    assert events.events == [("Normal", "BindingConditionsPending", "Scheduling",
                              "waiting for binding conditions for device on node worker")]
    assert metrics.bc == [("default-scheduler", DRIVER, "timeout")]
    assert metrics.bc_wait == [("default-scheduler", DRIVER, "timeout")]


def test_bound_claim_with_succeeded_binding_conditions() -> None:
    pl, api, metrics = plugin(("ResourceClaim", _bound()))
    state, pre, filt = cycle(pl, POD, [worker()])
    assert pre is None and filt == {NODE: None}
    assert pl.reserve(state, POD, NODE) is None
    assert _run(pl.pre_bind(state, POD, NODE)) is None
    assert api.kinds() == ["status"]  # only the reservation: the claim was allocated already
    assert pl.store.get_claim(NAMESPACE, CLAIM_NAME).reserved_for == [POD_REF]
    assert metrics.bc == [("default-scheduler", DRIVER, "success")]
    assert len(metrics.bc_wait) == 1


@pytest.mark.parametrize(
    ("case", "raw"),
    [
        ("bound-claim-with-failed-binding", _bound(condition="False", failed="True")),
        (
            "bound-claim-with-timed-out-binding",
            claim(allocation=_bc_alloc(600), devices=_status(None, None)),
        ),
        (
            "bound-claim-with-mixed-binding-conditions",
            claim(allocation=_bc_alloc(600), devices=_status(None, None, extra=[
                {"type": "condition1", "status": "True"}, {"type": "condition2", "status": "False"}])),
        ),
    ],
)
def test_unusable_claim_is_deallocated_in_post_filter(case: str, raw: dict[str, Any]) -> None:
    pl, _, _ = plugin(("ResourceClaim", raw), ("ResourceSlice", node_slice("instance-1")), api=False)
    state, pre, filt = cycle(pl, POD, [worker()])
    st = filt[NODE]
    assert pre is None
    assert (st.code, st.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node")
    _, pst = pl.post_filter(state, POD, NodeToStatus())
    assert pst is not None
    assert (pst.code, pst.message) == (Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    after = pl.store.get_claim(NAMESPACE, CLAIM_NAME)
    assert after.allocation is None and "devices" not in (after.raw.get("status") or {})


def test_not_yet_timed_out_claim_stays_usable() -> None:
    # Within bindingTimeout a claim whose conditions are pending is fine for Filter.
    raw = claim(allocation=_bc_alloc(10), devices=_status("False", "False"))
    pl, _, _ = plugin(("ResourceClaim", raw))
    _, _, filt = cycle(pl, POD, [worker()])
    assert filt == {NODE: None}


def test_prebind_fail_with_binding_timeout() -> None:
    # The claim's allocation reaches bindingTimeout while PreBind waits: the claim's own
    # timeout, not the wait's, ends it.
    raw = claim(allocation=_bc_alloc(1), devices=_status(None, None))
    pl, _, metrics = plugin(("ResourceClaim", raw), args={"bindingTimeout": "2s"})
    pl.binding_poll_interval = 0.1
    state, _, filt = cycle(pl, POD, [worker()])
    assert filt == {NODE: None}
    st = _run(pl.pre_bind(state, POD, NODE))
    assert st is not None and (st.code, st.message) == (Code.ERROR, f"device binding timeout: claim={CLAIM_NAME}")
    assert metrics.bc == [("default-scheduler", DRIVER, "timeout")]


@pytest.mark.parametrize(
    ("case", "conditions", "message", "label"),
    [
        # The driver sets the condition while PreBind waits: the pod goes on to be bound.
        ("condition turns true", [{"type": "condition", "status": "True"}], None, "success"),
        # A failure condition ends the wait with its reason and message.
        ("failure condition", [{"type": "failed", "status": "True", "reason": "AttachFailed",
                                "message": "no fabric path"}],
         f'device binding failed: claim={CLAIM_NAME}, reason=AttachFailed, message="no fabric path"', "failed"),
    ],
)
def test_driver_report_ends_the_wait(
    case: str, conditions: list[dict[str, Any]], message: str | None, label: str
) -> None:
    pl, _, metrics = plugin(CLASS_OBJ, ("ResourceSlice", fabric_slice()), ("ResourceClaim", claim()))
    pl.binding_poll_interval = 0.05
    state, _, _ = cycle(pl, POD, [worker()])
    assert pl.reserve(state, POD, NODE) is None

    async def run() -> Any:
        task = asyncio.create_task(pl.pre_bind(state, POD, NODE))
        await asyncio.sleep(0.2)
        assert not task.done()
        cur = pl.store.get_claim(NAMESPACE, CLAIM_NAME)
        raw = dict(cur.raw)
        raw["status"] = {**raw["status"], "devices": _status(None, None, extra=conditions)}
        raw["metadata"] = {**raw["metadata"], "resourceVersion": "999"}
        pl.store.on_event("ResourceClaim", "MODIFIED", raw)
        return await asyncio.wait_for(task, 2)

    st = _run(run())
    if message is None:
        assert st is None
    else:
        assert st is not None and (st.code, st.message) == (Code.ERROR, message)
    assert metrics.bc == [("default-scheduler", DRIVER, label)]


def test_bound_claim_without_binding_conditions() -> None:
    alloc = {"devices": {"results": [result("req-1")]}, "nodeSelector": NODE_SELECTOR}
    pl, _api, metrics = plugin(("ResourceClaim", claim(allocation=alloc)))
    state, _, _ = cycle(pl, POD, [worker()])
    assert _run(pl.pre_bind(state, POD, NODE)) is None
    written = pl.store.get_claim(NAMESPACE, CLAIM_NAME)
    assert written.reserved_for == [POD_REF] and written.allocation is not None
    assert written.allocation["allocationTimestamp"]  # addAllocationTimestamp
    assert metrics.bc == [] and metrics.bc_wait == []


def test_multi_claims_binding_conditions_all_success() -> None:
    pl, _, metrics = plugin(
        CLASS_OBJ,
        ("ResourceClaim", _bound()),
        ("ResourceClaim", _bound(CLAIM_NAME2, DRIVER2, "instance-2", "req-2")),
    )
    state, pre, filt = cycle(pl, POD2, [worker()])
    assert pre is None and filt == {NODE: None}
    assert _run(pl.pre_bind(state, POD2, NODE)) is None
    assert sorted(metrics.bc) == [("default-scheduler", DRIVER, "success"), ("default-scheduler", DRIVER2, "success")]


def test_multi_claims_binding_conditions_one_fail() -> None:
    pl, _, _ = plugin(
        CLASS_OBJ,
        ("ResourceClaim", _bound()),
        ("ResourceClaim", _bound(CLAIM_NAME2, DRIVER2, "instance-2", "req-2", condition="False", failed="True")),
        api=False,
    )
    state, _, filt = cycle(pl, POD2, [worker()])
    assert filt[NODE].message == "resourceclaim not available on the node"
    _, pst = pl.post_filter(state, POD2, NodeToStatus())
    assert pst is not None and pst.message == "deallocation of ResourceClaim completed"
    assert pl.store.get_claim(NAMESPACE, CLAIM_NAME2).allocation is None
    assert pl.store.get_claim(NAMESPACE, CLAIM_NAME).allocation is not None


@pytest.mark.parametrize(
    ("case", "gate", "stamped"),
    [("dont-add-allocation-timestamp", False, False), ("add-allocation-timestamp", True, True)],
)
def test_allocation_timestamp(case: str, gate: bool, stamped: bool) -> None:
    pl, _, _ = plugin(CLASS_OBJ, ("ResourceSlice", node_slice("instance-1")), ("ResourceClaim", claim()),
                      enable_dra_device_binding_conditions=gate)
    state, _, _ = cycle(pl, POD, [worker()])
    assert pl.reserve(state, POD, NODE) is None
    assert _run(pl.pre_bind(state, POD, NODE)) is None
    alloc = pl.store.get_claim(NAMESPACE, CLAIM_NAME).allocation
    assert alloc is not None and bool(alloc.get("allocationTimestamp")) is stamped


def test_add_allocation_timestamp_failure() -> None:
    # The claim got deallocated after PreFilter: the reservation's write conflicts, the fresh
    # read has no allocation.
    alloc = {"devices": {"results": [result("req-1")]}, "nodeSelector": NODE_SELECTOR}
    pl, _, _ = plugin(("ResourceClaim", claim(allocation=alloc)))
    state, _, _ = cycle(pl, POD, [worker()])
    gone = claim()
    gone["metadata"]["resourceVersion"] = "2"
    pl.store.on_event("ResourceClaim", "MODIFIED", gone)
    st = _run(pl.pre_bind(state, POD, NODE))
    assert st is not None and st.code == Code.ERROR
    assert st.message == f"claim {NAMESPACE}/{CLAIM_NAME} got deallocated elsewhere in the meantime"


def test_gates_off_no_wait_and_no_unavailability() -> None:
    # Without DRADeviceBindingConditions devices with binding conditions are not allocated at
    # all, and an allocated claim's conditions are not looked at.
    pl, _, _ = plugin(("ResourceClaim", _bound(condition="False", failed="True")),
                      enable_dra_device_binding_conditions=False)
    _, _, filt = cycle(pl, POD, [worker()])
    assert filt == {NODE: None}


@pytest.mark.parametrize(
    ("case", "devices", "ready", "failed"),
    [
        ("no status yet", None, False, None),
        ("pending", _status("False", "False"), False, None),
        ("met", _status("True", "False"), True, None),
        ("failed", _status("True", "True"), None, "device binding failed: claim=my-pod-my-resource, reason=, "
                                                   'message=""'),
        ("other device's status", _status("True", None, device="instance-9"), False, None),
    ],
)
def test_is_claim_ready_for_binding(case: str, devices: Any, ready: bool | None, failed: str | None) -> None:
    c = ResourceClaim(claim(allocation=_bc_alloc(), devices=devices))
    if failed is not None:
        with pytest.raises(bc.BindingFailed, match="device binding failed"):
            claim_ready_for_binding(c)
    else:
        assert claim_ready_for_binding(c) is ready


def test_is_claim_timeout() -> None:
    import time

    now = time.time()
    assert claim_timed_out(ResourceClaim(claim(allocation=_bc_alloc(700))), 600, now)
    assert not claim_timed_out(ResourceClaim(claim(allocation=_bc_alloc(10))), 600, now)
    no_bc = {"allocationTimestamp": _ts(700), "devices": {"results": [result("req-1")]}}
    assert not claim_timed_out(ResourceClaim(claim(allocation=no_bc)), 600, now)


def test_status_line_names_the_devices_per_outcome() -> None:
    pending = ResourceClaim(claim(allocation=_bc_alloc(), devices=_status("False", "False")))
    failed = ResourceClaim(claim(allocation=_bc_alloc(), devices=_status("False", "True")))
    assert bc.status_line([pending], bc.TIMEOUT) == f"<driver={DRIVER}, pool={NODE}> instance-1 pending=[condition]"
    assert bc.status_line([failed], bc.FAILED) == f"<driver={DRIVER}, pool={NODE}> instance-1 failed=[failed]"
    assert bc.status_line([pending], bc.SUCCESS) == ""
