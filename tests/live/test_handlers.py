"""The event handlers through the loop's Harness: watch events to the cache and the queue
(upstream eventhandlers_test.go)."""

from __future__ import annotations

import pytest

from scheduler.backend.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE
from scheduler.plugins.dynamicresources import celcache
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness


async def test_other_schedulers_pods_untouched_but_counted():
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="2"))
    h.sched.on_pod("ADDED", make_pod("theirs", cpu="1", scheduler_name="other"))
    assert "uid-default-theirs" not in h.queue
    # Bound by the other scheduler: its resources count.
    h.sched.on_pod("MODIFIED", make_pod("theirs", cpu="1", scheduler_name="other", node_name="n1"))
    h.sched.on_pod("ADDED", make_pod("mine", cpu="1500m"))
    await h.step()
    assert h.bound() == {}
    assert h.events("FailedScheduling")[0]["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    # The other pod finishes: its resources are freed and ours is requeued.
    h.clock.step(2)
    h.sched.on_pod("MODIFIED", make_pod("theirs", cpu="1", scheduler_name="other", node_name="n1",
                                        phase="Succeeded"))
    assert h.queue.where("uid-default-mine") == ACTIVE
    await h.step()
    assert h.bound() == {"mine": "n1"}


async def test_stale_unbound_update_while_assumed_is_ignored():
    # eventhandlers.go skipPodUpdate: an assumed pod's unbound updates must not requeue it.
    h = Harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    q = h.queue.pop_nowait()
    h.sched.schedule_one(q)  # assumed, binding task not yet run
    h.sched.on_pod("MODIFIED", make_pod("a", labels={"x": "1"}))
    assert h.queue.counts() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
    await h.settle()
    assert len(h.api.bindings) == 1


async def test_gated_pod_waits_for_gate_removal():
    h = Harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("g", gates=["wait"]))
    assert not await h.step()
    h.sched.on_pod("MODIFIED", make_pod("g"))
    assert await h.step()
    assert h.bound() == {"g": "n1"}


async def test_deleted_pod_leaves_the_queue_and_its_condition_patch():
    # eventhandlers.go deletePodFromSchedulingQueue; the PodScheduled patch still queued for
    # the pod is not written to a pod that no longer exists.
    h = Harness()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    h.sched.schedule_one(h.queue.pop_nowait())
    assert h.queue.where("uid-default-big") == UNSCHEDULABLE
    assert h.sched.recorder.pending() == 2  # the FailedScheduling Event and the condition
    h.sched.on_pod("DELETED", make_pod("big", cpu="2"))
    assert "uid-default-big" not in h.queue
    await h.settle()
    assert len(h.events("FailedScheduling")) == 1 and h.api.status_patches == []


def _cel(expr: str) -> dict:
    return {"cel": {"expression": expr}}


_GPU_IS = 'device.driver == "gpu.example.com"'
_MEM = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("8Gi")) >= 0'


@pytest.mark.parametrize(
    ("kind", "raw", "preloads"),
    [
        ("DeviceClass", {"metadata": {"name": "gpu"}, "spec": {"selectors": [_cel(_MEM)]}}, True),
        # A driver equality is answered without the interpreter: nothing to load.
        ("DeviceClass", {"metadata": {"name": "gpu"}, "spec": {"selectors": [_cel(_GPU_IS)]}}, False),
        ("DeviceClass", {"metadata": {"name": "gpu"}}, False),
        ("DeviceClass", {"metadata": {"name": "gpu"}, "spec": {"selectors": [_cel(_GPU_IS), _cel(_MEM)]}}, True),
        ("ResourceClaim", {"metadata": {"name": "c", "namespace": "n", "uid": "u"}, "spec": {"devices": {"requests": [
            {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [_cel(_MEM)]}}]}}}, True),
        ("ResourceClaim", {"metadata": {"name": "c", "namespace": "n", "uid": "u"}, "spec": {"devices": {"requests": [
            {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "gpu",
                                              "selectors": [_cel(_MEM)]}]}]}}}, True),
        ("ResourceClaim", {"metadata": {"name": "c", "namespace": "n", "uid": "u"}, "spec": {"devices": {"requests": [
            {"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}, False),
        ("ResourceSlice", {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p"}}}, False),
        ("StorageClass", {"metadata": {"name": "sc"}, "provisioner": "x"}, False),
    ],
)
def test_objects_with_a_selector_for_the_interpreter_start_loading_it(
    kind: str, raw: dict, preloads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(celcache, "preload", lambda: calls.append(True) or True)
    monkeypatch.setattr(celcache, "loading", lambda: False)
    h = Harness()
    h.sched.on_storage(kind, "ADDED", raw)
    assert calls == ([True] if preloads else [])
