"""Pods waiting at Permit in the live loop: the binding cycle awaits the waiting pod's outcome
while other pods are scheduled, then binds it or undoes it. Expected behaviour from upstream
schedule_one.go (bindingCycle's WaitOnPermit, handleBindingCycleError), schedule_one_test.go
(TestSchedulerScheduleOne "permit plugin is working in wait on permit phase",
TestSchedulerSchedulingCycleAndBindingCycle... "pod rejected while wait on permit", "error on wait
on permit", expectPodIsInFlightAtWaitOnPermit), eventhandlers.go (handleAssumedPodDeletion),
preemption/executor.go (a waiting victim is preempted in memory) and metrics.go
(scheduler_permit_wait_duration_seconds)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from scheduler.backend.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.config.features import FeatureGates
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions
from scheduler.framework.status import Code, Status
from scheduler.live.metrics import Metrics
from scheduler.testing.builders import make_node, make_pod, pod_info
from scheduler.testing.harness import Harness
from scheduler.testing.permit import fake_permit, fake_reserve, with_plugins

UID = "uid-default-a"


def wait_for(pod) -> tuple[Status | None, float]:
    """Pods named "a*" wait five minutes; the others pass."""
    return (Status(Code.WAIT, "wait"), 300.0) if pod.name.startswith("a") else (None, 0.0)


def harness(*extra):
    waiter = fake_permit("Waiter", wait_for)
    cfg, registry = with_plugins(waiter, *extra)
    h = Harness(config=cfg, registry=registry)
    return h, waiter


def permit_waits(m: Metrics, result: str) -> float:
    return m.registry.get_sample_value("scheduler_permit_wait_duration_seconds_count", {"result": result}) or 0.0


async def test_waits_while_the_loop_goes_on_then_binds_when_allowed():
    h, waiter = harness()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    await h.step()
    # a waits: assumed (its room held), not bound, still in flight (upstream keeps the pod in
    # flight through WaitOnPermit), no event yet.
    assert h.bound() == {} and h.cache.is_assumed(UID)
    assert h.queue.where(UID) == "inflight"
    assert h.cache.nodes["n1"].requested.milli_cpu == 1000
    wp = waiter.instances[0].handle.get_waiting_pod(UID)
    assert wp is not None and wp.get_pending_plugins() == ["Waiter"]
    # NominatedNodeNameForExpectation (on in v1.36.3): the waiting pod is nominated to its node
    # ("nominated node name is set, permit plugin is working in wait on permit phase").
    assert ("default", "a", {"status": {"nominatedNodeName": "n1"}}) in h.api.status_patches
    # The loop is free: b is scheduled and bound meanwhile.
    await h.step()
    assert h.bound() == {"b": "n1"}
    wp.allow("Waiter")
    await h.settle()
    assert h.bound() == {"b": "n1", "a": "n1"}
    assert [e["note"] for e in h.events("Scheduled")][-1] == "Successfully assigned default/a to n1"
    assert h.queue.where(UID) == ""
    assert h.waiting_pods().get(UID) is None
    assert permit_waits(h.metrics, "Success") == 1


@pytest.mark.parametrize(
    ("gate", "nominated"),
    [
        # schedule_one.go bindingCycle: with the gate on, a pod that will wait on Permit is
        # nominated to its node first (TestSchedulerScheduleOne "nominated node name is set,
        # permit plugin is working in wait on permit phase")...
        (True, True),
        # ...and with NominatedNodeNameForExpectation=false nothing is patched before the wait
        # ("nominated node name is not set, permit plugin is working, but the feature gate
        # NominatedNodeNameForExpectation is disabled").
        (False, False),
    ],
)
async def test_nominated_before_the_wait_follows_the_gate(gate: bool, nominated: bool):
    waiter = fake_permit("Waiter", wait_for)
    cfg, registry = with_plugins(waiter)
    cfg = dataclasses.replace(cfg, feature_gates=FeatureGates({"NominatedNodeNameForExpectation": gate}))
    h = Harness(config=cfg, registry=registry)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    assert waiter.instances[0].handle.get_waiting_pod(UID) is not None
    patch = ("default", "a", {"status": {"nominatedNodeName": "n1"}})
    assert (patch in h.api.status_patches) is nominated


async def test_timeout_rejects_unreserves_and_requeues_with_the_plugin():
    res = fake_reserve()
    h, _ = harness(res)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    assert h.permit_timer.armed() == [300.0]
    h.permit_timer.advance(300.0)
    await h.settle()
    msg = "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin Waiter."
    assert [e["note"] for e in h.events("FailedScheduling")] == [msg]
    cond = h.api.status_patches[-1][2]["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("Unschedulable", msg)
    assert h.bound() == {}
    assert h.cache.get_pod(UID) is None and h.cache.nodes["n1"].requested.milli_cpu == 0
    assert res.calls[-1] == ("Unreserve", "a", "n1")
    assert h.queue.where(UID) == UNSCHEDULABLE
    assert h.queue.get(UID).unschedulable_plugins == {"Waiter"}
    assert permit_waits(h.metrics, "Unschedulable") == 1
    assert h.metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": "unschedulable", "profile": "default-scheduler"}) == 1


async def test_plugin_rejection_frees_the_room_for_others():
    # handleBindingCycleError: the forgotten pod is an AssignedPodDelete for the others, moved
    # after the rejected pod went back to the queue.
    h, waiter = harness()
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1", priority=10))
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    await h.step()
    await h.step()  # b: no room while a waits
    assert h.queue.where("uid-default-b") == UNSCHEDULABLE
    assert waiter.instances[0].handle.get_waiting_pod(UID).reject("Waiter", "not now") is True
    await h.settle()
    assert h.events("FailedScheduling")[-1]["note"] == "0/1 nodes are available: 1 not now."
    assert h.queue.where(UID) == UNSCHEDULABLE  # its own room's release is not its event
    assert h.queue.where("uid-default-b") in (ACTIVE, BACKOFF)
    h.clock.step(20)
    await h.step()
    assert h.bound() == {"b": "n1"}


async def test_rejected_through_the_handle_has_upstreams_message_and_no_plugin():
    h, waiter = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert waiter.instances[0].handle.reject_waiting_pod(UID) is True
    await h.settle()
    assert h.events("FailedScheduling")[-1]["note"] == "0/1 nodes are available: 1 removed."
    # Upstream records the status's plugin, "", which no event registration matches.
    assert h.queue.get(UID).unschedulable_plugins == {""}
    h.clock.step(20)
    h.sched.on_node(None, make_node("n2"))
    assert h.queue.where(UID) == UNSCHEDULABLE


async def test_allowed_from_another_thread():
    h, waiter = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    wp = waiter.instances[0].handle.get_waiting_pod(UID)
    t = threading.Thread(target=wp.allow, args=("Waiter",))
    t.start()
    t.join()
    for _ in range(100):  # the outcome reaches the loop through call_soon_threadsafe
        await h.settle()
        if h.bound():
            break
        await asyncio.sleep(0.001)
    assert h.bound() == {"a": "n1"}


async def test_deleted_while_waiting_is_rejected_and_not_requeued():
    # handleAssumedPodDeletion: RejectWaitingPod, the binding cycle cleans up; the others move.
    res = fake_reserve()
    h, _ = harness(res)
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1", priority=10))
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    await h.step()
    await h.step()
    assert h.queue.where("uid-default-b") == UNSCHEDULABLE
    h.sched.on_pod("DELETED", make_pod("a", cpu="1"))
    assert h.queue.where("uid-default-b") in (ACTIVE, BACKOFF)
    await h.settle()
    assert UID not in h.queue and h.cache.get_pod(UID) is None
    assert res.calls[-1] == ("Unreserve", "a", "n1")
    assert [e["regarding"]["name"] for e in h.events("FailedScheduling")] == ["b"]  # none for a
    assert [p[2]["status"] for p in h.api.status_patches if p[1] == "a"] == [{"nominatedNodeName": "n1"}]
    h.clock.step(20)
    await h.step()
    assert h.bound() == {"b": "n1"}


async def test_deletion_started_while_waiting_rejects_it():
    # updatePodInSchedulingQueue: an assumed pod whose deletionTimestamp appears.
    h, _ = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    h.sched.on_pod("MODIFIED", make_pod("a", deleting=True))
    await h.settle()
    assert h.cache.get_pod(UID) is None and h.bound() == {}
    assert h.waiting_pods().get(UID) is None


async def test_preempted_waiting_victim_is_retried_after_backoff():
    # Executor.PreemptPod: a waiting victim gets Preempt, not a delete; WaitOnPermit turns it
    # into an Error ("error on wait on permit": backoff, no unschedulable plugins).
    h, waiter = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert waiter.instances[0].handle.get_waiting_pod(UID).preempt("DefaultPreemption", "preempted") is True
    await h.settle()
    cond = h.api.status_patches[-1][2]["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("SchedulerError", "waiting on permit for pod: preempted")
    assert h.queue.where(UID) == BACKOFF
    assert permit_waits(h.metrics, "Error") == 1
    assert h.metrics.registry.get_sample_value("pyscheduler_binding_errors_total", {"kind": "error"}) is None


async def test_cancelled_while_waiting_forgets_and_leaves_the_map():
    h, _ = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert await h.sched.abort() == 1
    assert h.cache.get_pod(UID) is None
    assert h.waiting_pods().get(UID) is None and h.permit_timer.armed() == []


async def test_pods_to_activate_after_the_binding_cycle():
    # bindingCycle: PodsToActivate handed to the queue once the pod is bound.
    other = make_pod("other", cpu="8")

    class Activating(fake_permit("Activating", lambda pod: (None, 0.0))):
        def permit(self, state, pod, node_name):
            from scheduler.framework.interface import PODS_TO_ACTIVATE_KEY, PodsToActivate

            if pod.name == "b":
                o = pod_info("other", cpu="8")
                state.read(PODS_TO_ACTIVATE_KEY, PodsToActivate).pods[o.key] = o
            return None, 0.0

    h, _ = harness(Activating)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", other)
    await h.step()
    assert h.queue.where("uid-default-other") == UNSCHEDULABLE
    h.sched.on_pod("ADDED", make_pod("b"))
    await h.step()
    assert h.bound() == {"b": "n1"}
    # Activate skips backoff: straight to activeQ.
    assert h.queue.where("uid-default-other") == ACTIVE


async def test_plugin_kind_events_reach_the_informer_and_the_queue():
    # addAllEventHandlers' dynamic informers: a plugin's event on <plural>.<version>.<group>
    # moves the pods it rejected, with the objects for its hint; its informer holds them.
    seen: list = []

    class Gate(fake_permit("Gate", lambda pod: (Status(Code.UNSCHEDULABLE, "closed"), 0.0)), EnqueueExtensions):
        def __init__(self, handle):
            super().__init__(handle)
            inf = handle.shared_informer_factory.for_resource("configmaps.v1.")
            inf.add_event_handler(add_func=lambda o: seen.append(("add", o["metadata"]["name"])))

        def events_to_register(self):
            def hint(pod, old, new):
                is_open = (new or {}).get("data", {}).get("open") == "yes"
                return QueueingHint.QUEUE if is_open else QueueingHint.QUEUE_SKIP

            return [ClusterEventWithHint(ClusterEvent("configmaps.v1.", ActionType.ADD | ActionType.UPDATE), hint)]

    cfg, registry = with_plugins(Gate)
    h = Harness(config=cfg, registry=registry)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("p"))
    await h.step()
    assert h.queue.where("uid-default-p") == UNSCHEDULABLE
    cm = {"metadata": {"name": "gate", "namespace": "default", "resourceVersion": "1"}, "data": {"open": "no"}}
    h.sched.on_resource("configmaps.v1.", "ADDED", cm)
    assert seen == [("add", "gate")]
    assert h.queue.where("uid-default-p") == UNSCHEDULABLE  # the hint said skip
    inf = h.sched.listers.informers.get("configmaps.v1.")
    assert inf is not None and inf.lister().get("gate", "default") == cm
    h.clock.step(20)
    cm2 = {**cm, "metadata": {**cm["metadata"], "resourceVersion": "2"}, "data": {"open": "yes"}}
    h.sched.on_resource("configmaps.v1.", "MODIFIED", cm2)
    assert h.queue.where("uid-default-p") == ACTIVE
    h.sched.on_resource("configmaps.v1.", "DELETED", {"metadata": {"name": "gate", "namespace": "default"}})
    assert inf.lister().list() == []


async def test_sigterm_drain_ends_waits_at_once():
    # Nothing of a waiting pod is in flight: shutting down does not wait for its timeout.
    h, _ = harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    h.sched.on_pod("ADDED", make_pod("b"))
    await h.step()
    h.sched.schedule_one(h.queue.pop_nowait())  # b binds in its task
    assert await asyncio.wait_for(h.sched.drain(30.0), 5) is True
    assert h.bound() == {"b": "n1"}
    assert h.cache.get_pod(UID) is None and h.waiting_pods().get(UID) is None
