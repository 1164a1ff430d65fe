"""DynamicResources' wait for device binding conditions in the live loop: PreBind waits in the
pod's binding task while the loop schedules other pods; the pod is nominated to its node first
(PreBindPreFlight, NominatedNodeNameForExpectation) and bound once the driver reports the
conditions True. A failure condition fails the attempt; the next one deallocates the claim
(PostFilter) and allocates afresh. Upstream: schedule_one.go bindingCycle, dynamicresources.go
PreBind / isPodReadyForBinding / PostFilter.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness
from tests.plugins.dynamicresources.fixtures import CLAIM_NAME, CLASS, NAMESPACE, FakeClaimAPI, claim, fabric_slice

POD_UID = "uid-default-a"


def _setup() -> tuple[Harness, DynamicResources, FakeClaimAPI]:
    h = Harness()
    pl = h.sched.frameworks["default-scheduler"].plugins["DynamicResources"]
    assert isinstance(pl, DynamicResources)
    api = FakeClaimAPI(pl.store)
    api.deliver = h.sched.on_storage
    pl._api = api
    pl.binding_poll_interval = 0.02
    h.sched.on_node(None, make_node("worker"))
    h.sched.on_storage("DeviceClass", "ADDED", {"metadata": {"name": CLASS}})
    h.sched.on_storage("ResourceSlice", "ADDED", fabric_slice())
    h.sched.on_storage("ResourceClaim", "ADDED", claim())
    raw = make_pod("a")
    raw["spec"]["resourceClaims"] = [{"name": "my-resource", "resourceClaimName": CLAIM_NAME}]
    h.sched.on_pod("ADDED", raw)
    return h, pl, api


def _set_device_conditions(h: Harness, pl: DynamicResources, conditions: list[dict[str, Any]]) -> None:
    """The driver's status update of the allocated device, seen through the watch."""
    cur = pl.store.get_claim(NAMESPACE, CLAIM_NAME)
    (res,) = cur.allocation["devices"]["results"]  # type: ignore[index]
    raw = dict(cur.raw)
    raw["status"] = {**raw["status"], "devices": [
        {"driver": res["driver"], "pool": res["pool"], "device": res["device"], "conditions": conditions}]}
    raw["metadata"] = {**raw["metadata"], "resourceVersion": str(int(cur.resource_version) + 1000)}
    h.sched.on_storage("ResourceClaim", "MODIFIED", raw)


async def _until(cond: Any, timeout: float = 3.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_pre_bind_waits_without_blocking_the_loop_then_binds() -> None:
    h, pl, _ = _setup()
    q = h.queue.pop_nowait()
    assert q is not None and q.pod.name == "a"
    h.sched.schedule_one(q)
    # a's binding cycle is in PreBind, waiting: nominated to the node, not bound.
    await _until(lambda: ("default", "a", {"status": {"nominatedNodeName": "worker"}}) in h.api.status_patches)
    await asyncio.sleep(0.1)
    assert h.bound() == {}
    assert pl.store.get_claim(NAMESPACE, CLAIM_NAME).reserved_for  # allocation and reservation written
    # The loop goes on: b is scheduled and bound meanwhile.
    h.sched.on_pod("ADDED", make_pod("b"))
    h.sched.schedule_one(h.queue.pop_nowait())  # type: ignore[arg-type]
    await _until(lambda: h.bound() == {"b": "worker"})
    await h.sched.recorder.flush()
    assert [e["note"] for e in h.events("BindingConditionsPending")] == [
        "waiting for binding conditions for device on node worker"]
    _set_device_conditions(h, pl, [{"type": "condition", "status": "True"}])
    await _until(lambda: "a" in h.bound())
    assert h.bound() == {"b": "worker", "a": "worker"}


async def test_failure_condition_fails_the_attempt_and_the_next_one_starts_over() -> None:
    h, pl, api = _setup()
    h.sched.schedule_one(h.queue.pop_nowait())  # type: ignore[arg-type]
    await _until(lambda: bool(pl.store.get_claim(NAMESPACE, CLAIM_NAME).reserved_for))
    _set_device_conditions(h, pl, [{"type": "failed", "status": "True", "reason": "Broken", "message": "x"}])
    await _until(lambda: h.queue.where(POD_UID) in ("backoff", "unschedulable", "active"))
    await h.settle()
    assert h.bound() == {}
    # Unreserve dropped the pod from reservedFor (a patch); the allocation stays until the next
    # attempt's PostFilter frees it.
    assert api.kinds()[-1] == "patch"
    h.clock.step(20)
    h.queue.flush_backoff_completed()
    q = h.queue.pop_nowait()
    assert q is not None and q.pod.name == "a"
    h.sched.schedule_one(q)
    await _until(lambda: pl.store.get_claim(NAMESPACE, CLAIM_NAME).allocation is None)
    await h.sched.recorder.flush()
    # The attempt's message, as the pod's PodScheduled condition carries it (its FailedScheduling
    # Event is a series of the first one while the pod keeps its resourceVersion, as in client-go).
    messages = [c["message"] for _, name, body in h.api.status_patches if name == "a"
                for c in body.get("status", {}).get("conditions", []) if c.get("type") == "PodScheduled"]
    assert "deallocation of ResourceClaim completed" in messages[-1]
    # The deallocation is a claim update: the pod is tried again, gets the device afresh and is
    # bound once the driver reports it ready.
    h.clock.step(20)
    h.queue.flush_backoff_completed()
    q = h.queue.pop_nowait()
    assert q is not None and q.pod.name == "a"
    h.sched.schedule_one(q)
    await _until(lambda: bool(pl.store.get_claim(NAMESPACE, CLAIM_NAME).reserved_for))
    _set_device_conditions(h, pl, [{"type": "condition", "status": "True"}])
    await _until(lambda: h.bound() == {"a": "worker"})
