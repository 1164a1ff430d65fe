"""activeQ and the in-flight log (upstream pkg/scheduler/backend/queue/active_queue_test.go and
the in-flight parts of scheduling_queue_test.go Test_InFlightPods)."""

from __future__ import annotations

from scheduler.backend import active_queue
from scheduler.backend.active_queue import ActiveQueue
from scheduler.framework.events import ActionType, ClusterEvent
from scheduler.plugins.queuesort import PrioritySort
from tests.backend.queue_helpers import pod, queued

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
CSI_NODE_UPDATE = ClusterEvent("CSINode", ActionType.UPDATE)


def new_active_queue() -> ActiveQueue:
    return ActiveQueue(PrioritySort().sort_key)


def test_close():
    # TestClose: close() forgets the pods in flight and the events logged for them.
    aq = new_active_queue()
    aq.add(queued(pod("p1", "foo", uid="p1")))
    aq.add(queued(pod("p2", "bar", uid="p2")))
    for _ in range(2):
        aq.to_in_flight(aq.pop_head())
    aq.log_event(NODE_ADD, None, None)
    aq.log_event(CSI_NODE_UPDATE, None, None)
    assert aq.logged() == 2 and len(aq.in_flight) == 2
    aq.close()
    assert aq.logged() == 0 and len(aq.in_flight) == 0


def test_events_are_logged_only_while_a_pod_is_in_flight():
    aq = new_active_queue()
    assert not aq.log_event(NODE_ADD, None, None)
    a = queued(pod("a", uid="a"))
    aq.add(a)
    aq.to_in_flight(aq.pop_head())
    assert aq.log_event(NODE_ADD, None, None)
    assert aq.events_for("a") == [(NODE_ADD, None, None)]
    assert aq.events_for("b") is None  # never popped
    aq.done("a")
    assert aq.logged() == 0  # nobody left to see it


def test_each_pod_sees_the_events_after_its_pop():
    aq = new_active_queue()
    for name in ("a", "b", "c"):
        aq.add(queued(pod(name, uid=name)))
    aq.to_in_flight(aq.pop_head())  # a
    aq.log_event(NODE_ADD, None, None)
    aq.to_in_flight(aq.pop_head())  # b
    aq.log_pod_events("b", [CSI_NODE_UPDATE], None, None)  # b's own update, seen by a too
    assert [e[0] for e in aq.events_for("a")] == [NODE_ADD, CSI_NODE_UPDATE]
    assert [e[0] for e in aq.events_for("b")] == [CSI_NODE_UPDATE]
    assert not aq.log_pod_events("c", [NODE_ADD], None, None)  # c is not in flight
    assert aq.cycle == 2


def test_pop_counts_attempts_and_order():
    aq = new_active_queue()
    low, high = queued(pod("low", priority=1)), queued(pod("high", priority=10))
    aq.add(low)
    aq.add(high)
    first = aq.pop_head()
    aq.to_in_flight(first)
    assert first is high and high.attempts == 1 and low.attempts == 0
    # An in-place change re-sorts (AddOrUpdate).
    aq.add(low)
    assert len(aq) == 1 and aq.pop_head() is low and aq.pop_head() is None


def test_the_log_prefix_nobody_sees_is_dropped(monkeypatch):
    monkeypatch.setattr(active_queue, "_PRUNE_AT", 4)
    aq = new_active_queue()
    for name in ("old", "new"):
        aq.add(queued(pod(name, uid=name)))
    aq.to_in_flight(aq.pop_head())  # old
    for _ in range(3):
        aq.log_event(NODE_ADD, None, None)
    aq.to_in_flight(aq.pop_head())  # new
    aq.log_event(CSI_NODE_UPDATE, None, None)
    aq.done("old")
    # Only what "new" can still see is kept.
    assert aq.logged() == 1
    assert [e[0] for e in aq.events_for("new")] == [CSI_NODE_UPDATE]
