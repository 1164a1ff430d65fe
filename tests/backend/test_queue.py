"""SchedulingQueue, in virtual time (an injected clock). Expected behaviour from upstream
pkg/scheduler/backend/queue/scheduling_queue_test.go and backoff_queue_test.go (test names cited)."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.backend.queue import (
    ACTIVE,
    BACKOFF,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    GATED,
    UNSCHEDULABLE,
    SchedulingQueue,
)
from scheduler.framework.events import ActionType, ClusterEvent
from scheduler.model.node import NodeInfo
from scheduler.testing.builders import make_node, pod_info
from scheduler.testing.fakes import FakeClock


def new_queue(frameworks, clock=None, **kw) -> tuple[SchedulingQueue, FakeClock]:
    clock = clock or FakeClock()
    return SchedulingQueue(frameworks, clock, **kw), clock


def fail(q: SchedulingQueue, qi, *plugins: str) -> str:
    qi.unschedulable_plugins = set(plugins)
    return q.add_unschedulable_if_not_present(qi)


# -- ordering ------------------------------------------------------------------------------------

def test_pop_priority_order(frameworks):
    # TestPriorityQueue_Add / TestPriorityQueue_Pop: highest priority first; equal priority FIFO.
    q, clock = new_queue(frameworks)
    q.add(pod_info("low", priority=1))
    clock.step(1)
    q.add(pod_info("high", priority=100))
    clock.step(1)
    q.add(pod_info("mid-a", priority=10))
    clock.step(1)
    q.add(pod_info("mid-b", priority=10))
    got = [q.pop_nowait().pod.name for _ in range(4)]
    assert got == ["high", "mid-a", "mid-b", "low"]
    assert q.pop_nowait() is None


def test_pop_counts_attempts_and_cycles(frameworks):
    q, _ = new_queue(frameworks)
    q.add(pod_info("a"))
    qi = q.pop_nowait()
    assert qi.attempts == 1
    assert q.scheduling_cycle == 1
    assert q.where(qi.pod.uid) == "inflight"


# -- backoff ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("initial", "maximum", "attempts", "want"),
    [
        # backoff_queue_test.go TestBackoffQueue_calculateBackoffDuration
        (1, 10, 0, 0),  # no attempt yet: no penalty
        (1, 10, 1, 1),
        (1, 10, 2, 2),
        (1, 10, 3, 4),
        (1, 10, 4, 8),
        (1, 10, 5, 10),  # capped
        (1, 10, 50, 10),  # "overflow" case stays capped
        (3, 60, 3, 12),
    ],
)
def test_backoff_duration(frameworks, initial, maximum, attempts, want):
    q, _ = new_queue(frameworks, initial_backoff=initial, max_backoff=maximum)
    q.add(pod_info("a"))
    qi = q.pop_nowait()
    qi.attempts = attempts
    assert q.backoff_duration(qi) == want


def test_error_goes_to_backoff_then_active(frameworks):
    # TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff + flushBackoffQCompleted:
    # a failure with no rejecting plugin (an error) waits out its backoff in backoffQ.
    q, clock = new_queue(frameworks)
    q.add(pod_info("a"))
    qi = q.pop_nowait()
    assert fail(q, qi) == BACKOFF
    assert q.pop_nowait() is None
    clock.step(0.9)
    assert q.flush_backoff_completed() == 0
    clock.step(0.2)
    assert q.pop_nowait().pod.name == "a"


def test_backoff_grows_with_attempts(frameworks):
    # TestBackOffFlow: 1s, 2s, 4s, 8s, 10s, 10s
    q, clock = new_queue(frameworks)
    q.add(pod_info("a"))
    for want in (1, 2, 4, 8, 10, 10):
        qi = q.pop_nowait()
        assert qi is not None
        fail(q, qi)
        clock.step(want - 0.001)
        assert q.pop_nowait() is None, want
        clock.step(0.002)


def test_unschedulable_stays_until_event(frameworks):
    q, clock = new_queue(frameworks)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    assert fail(q, qi, "NodeResourcesFit") == UNSCHEDULABLE
    clock.step(100)
    assert q.pop_nowait() is None


# -- cluster events ---------------------------------------------------------------------------------

NODE_BIG = NodeInfo(make_node("big", cpu="1000"))
NODE_SMALL = NodeInfo(make_node("small", cpu="1"))


@pytest.mark.parametrize(
    ("plugin", "event", "old", "new", "moved"),
    [
        # TestPriorityQueue_MoveAllToActiveOrBackoffQueue with queueing hints (upstream default):
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.ADD), None, NODE_BIG, True),
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.ADD), None, NODE_SMALL, False),  # hint: still no fit
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL), NODE_SMALL, NODE_BIG, False),
        ("NodeResourcesFit", ClusterEvent("AssignedPod", ActionType.DELETE),
         pod_info("victim", node_name="small", cpu="1"), None, True),
        ("TaintToleration", ClusterEvent("Node", ActionType.ADD), None, NODE_BIG, True),
        ("NodeAffinity", ClusterEvent("Service", ActionType.ADD), None, None, False),  # not registered
        # A plugin of the profile without EnqueueExtensions is interested in every event...
        ("DefaultBinder", ClusterEvent("Service", ActionType.ADD), None, None, True),
        # ...a name no plugin of the profile has (a waiting pod rejected through the API is
        # recorded with plugin "") matches no registration (isPodWorthRequeuing): only
        # wildcards move the pod.
        ("", ClusterEvent("Service", ActionType.ADD), None, None, False),
        ("NoSuchPlugin", ClusterEvent("Node", ActionType.ADD), None, NODE_BIG, False),
        ("", EVENT_UNSCHEDULABLE_TIMEOUT, None, None, True),
        ("NodeResourcesFit", EVENT_UNSCHEDULABLE_TIMEOUT, None, None, True),
    ],
)
def test_move_on_event(frameworks, plugin, event, old, new, moved):
    q, clock = new_queue(frameworks)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    fail(q, qi, plugin)
    clock.step(20)  # past any backoff
    n = q.move_all_to_active_or_backoff(event, old, new)
    assert (n == 1) == moved
    assert q.where(qi.pod.uid) == (ACTIVE if moved else UNSCHEDULABLE)


def test_moved_pod_still_backing_off_goes_to_backoffq(frameworks):
    # TestPriorityQueue_MoveAllToActiveOrBackoffQueue: a pod moved before its backoff ends waits in backoffQ.
    q, clock = new_queue(frameworks)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    fail(q, qi, "NodeResourcesFit")
    clock.step(0.5)
    q.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, NODE_BIG)
    assert q.where(qi.pod.uid) == BACKOFF
    clock.step(0.6)
    assert q.pop_nowait().pod.name == "a"


def test_event_during_flight_requeues(frameworks):
    # In-flight events (upstream inFlightEvents): a node added while the pod was being scheduled
    # must not leave it parked in unschedulablePods.
    q, _clock = new_queue(frameworks)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    q.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, NODE_BIG)
    assert fail(q, qi, "NodeResourcesFit") == BACKOFF
    # An event that does not help leaves it unschedulable.
    q2, _ = new_queue(frameworks)
    q2.add(pod_info("b", cpu="100"))
    qi2 = q2.pop_nowait()
    q2.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, NODE_SMALL)
    assert fail(q2, qi2, "NodeResourcesFit") == UNSCHEDULABLE


def test_flush_unschedulable_leftover(frameworks):
    # TestHighPriorityFlushUnschedulablePodsLeftover: after podMaxInUnschedulablePodsDuration.
    q, clock = new_queue(frameworks, max_in_unschedulable=300)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    fail(q, qi, "NodeResourcesFit")
    clock.step(299)
    assert q.flush_unschedulable_leftover() == 0
    clock.step(2)
    assert q.flush_unschedulable_leftover() == 1
    assert q.pop_nowait().pod.name == "a"


def test_failed_pod_does_not_block_newer(frameworks):
    # TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
    q, clock = new_queue(frameworks)
    q.add(pod_info("old"))
    qi = q.pop_nowait()
    fail(q, qi, "NodeResourcesFit")
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    clock.step(0.1)
    q.add(pod_info("new"))
    assert q.pop_nowait().pod.name == "new"


# -- gates, updates, deletes ------------------------------------------------------------------------

def test_gated_pod_held_until_gates_removed(frameworks):
    # TestPriorityQueue_Add with SchedulingGates (PreEnqueue): gated pods never reach activeQ.
    q, clock = new_queue(frameworks)
    gated = pod_info("g", gates=["example.com/wait"])
    q.add(gated)
    assert q.where(gated.uid) == GATED
    assert q.pop_nowait() is None
    assert q.counts()[GATED] == 1
    # Flushing does not release it while gated.
    clock.step(400)
    q.flush_unschedulable_leftover()
    assert q.pop_nowait() is None
    q.update(gated, pod_info("g"))
    assert q.where(gated.uid) == ACTIVE
    assert q.pop_nowait().pod.name == "g"


def test_update_in_active_reorders(frameworks):
    # TestPriorityQueue_Update: updated in place; the newer object is what pops.
    q, _ = new_queue(frameworks)
    a = pod_info("a", priority=1)
    q.add(a)
    q.add(pod_info("b", priority=5))
    a2 = pod_info("a", priority=10, labels={"v": "2"})
    q.update(a, a2)
    first = q.pop_nowait()
    assert first.pod.name == "a" and first.pod.labels == {"v": "2"}
    assert q.pop_nowait().pod.name == "b"
    assert q.pop_nowait() is None


def test_update_unschedulable_pod_requeues_when_it_may_help(frameworks):
    # TestPriorityQueue_Update "unschedulable pod updated with a change a plugin cares about".
    q, clock = new_queue(frameworks)
    p = pod_info("a", tolerations=[])
    q.add(p)
    qi = q.pop_nowait()
    fail(q, qi, "TaintToleration")
    clock.step(20)
    # Status-only change: stays.
    q.update(p, pod_info("a"))
    assert q.where(p.uid) == UNSCHEDULABLE
    q.update(p, pod_info("a", tolerations=[{"key": "k", "operator": "Exists"}]))
    assert q.where(p.uid) == ACTIVE


def test_update_in_flight_pod_kept_for_requeue(frameworks):
    q, _clock = new_queue(frameworks)
    p = pod_info("a")
    q.add(p)
    qi = q.pop_nowait()
    q.update(p, pod_info("a", labels={"x": "y"}))
    assert q.where(p.uid) == "inflight"  # not added a second time
    fail(q, qi, "NodeResourcesFit")
    assert q.get(p.uid).pod.labels == {"x": "y"}


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "inflight"])
def test_delete_removes_from_every_queue(frameworks, where):
    # TestPriorityQueue_Delete
    q, clock = new_queue(frameworks)
    p = pod_info("a")
    q.add(p)
    if where != "active":
        qi = q.pop_nowait()
        if where == "backoff":
            fail(q, qi)
        elif where == "unschedulable":
            fail(q, qi, "NodeResourcesFit")
    q.delete(p.uid)
    if where == "inflight":
        assert fail(q, qi, "NodeResourcesFit") == ""  # gone: never requeued
    assert p.uid not in q
    clock.step(100)
    q.flush_unschedulable_leftover()
    assert q.pop_nowait() is None
    assert sum(q.counts().values()) == 0


def test_done_clears_in_flight(frameworks):
    q, _ = new_queue(frameworks)
    q.add(pod_info("a"))
    qi = q.pop_nowait()
    q.done(qi.pod.uid)
    assert qi.pod.uid not in q


async def test_async_pop_wakes_on_add_and_on_backoff_expiry(frameworks):
    q, _clock = new_queue(frameworks)
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.add(pod_info("a"))
    got = await asyncio.wait_for(waiter, 1)
    assert got.pod.name == "a"
    q.close()
    assert await asyncio.wait_for(q.pop(), 1) is None


# -- Activate ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("where", "want"),
    [
        ("active", ACTIVE),  # pod already in activeQ: stays there
        ("nowhere", ""),  # pod not in unschedulablePods/backoffQ: ignored
        ("unschedulable", ACTIVE),  # moved straight to activeQ, backoff or not
        ("backoff", ACTIVE),
    ],
)
def test_activate(frameworks, where, want):
    # TestPriorityQueue_Activate
    q, _ = new_queue(frameworks)  # no time passes: activation skips the backoff
    pod = pod_info("p")
    if where != "nowhere":
        q.add(pod)
    if where in ("unschedulable", "backoff"):
        qi = q.pop_nowait()
        if where == "unschedulable":
            fail(q, qi, "NodeResourcesFit")
        else:
            fail(q, qi)  # an error: backoff
        assert q.where(pod.uid) == where
    q.activate({pod.key: pod})
    assert q.where(pod.uid) == want


def test_activate_in_flight_pod_is_requeued_when_its_attempt_fails(frameworks):
    # TestPriorityQueue_Activate "[QHint] pod not in unschedulablePods/backoffQ but in-flight":
    # the ForceActivate event is recorded for that pod only.
    q, _ = new_queue(frameworks)
    a, b = pod_info("a"), pod_info("b")
    q.add(a)
    q.add(b)
    qa, qb = q.pop_nowait(), q.pop_nowait()
    q.activate({a.key: a})
    assert fail(q, qb, "NodeResourcesFit") == UNSCHEDULABLE
    assert fail(q, qa, "NodeResourcesFit") == BACKOFF
