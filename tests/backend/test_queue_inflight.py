"""The queue and its hints: events seen while pods are in flight, isPodWorthRequeuing, moves on
cluster events. Tables from upstream pkg/scheduler/backend/queue/scheduling_queue_test.go
(v1.36.3), test names cited; only the cases with queueing hints on (GA, locked in v1.36.3)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.queue import (
    ACTIVE,
    AFTER_BACKOFF,
    BACKOFF,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    GATED,
    IMMEDIATELY,
    SKIP,
    UNSCHEDULABLE,
    SchedulingQueue,
)
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.testing.builders import make_node
from tests.backend import queue_helpers as qh
from tests.plugins._podgroup_helpers import group_pod

PV_ADD = ClusterEvent("PersistentVolume", ActionType.ADD)
PV_UPDATE = ClusterEvent("PersistentVolume", ActionType.UPDATE)
PVC_ADD = ClusterEvent("PersistentVolumeClaim", ActionType.ADD)
CSI_NODE_UPDATE = ClusterEvent("CSINode", ActionType.UPDATE)
ASSIGNED_POD_ADD = ClusterEvent("AssignedPod", ActionType.ADD)

POD1 = qh.pod("targetpod", uid="pod1")
POD2 = qh.pod("targetpod2", uid="pod2")
POD3 = qh.pod("targetpod3", uid="pod3")


def pop_pod(q: SchedulingQueue, want: Any) -> Any:
    got = q.pop_nowait()
    assert got is not None and got.pod.uid == want.uid
    return got


def all_queue(*events: ClusterEvent, plugin: str = "fooPlugin1") -> Any:
    return qh.hint_map(*((ev, plugin, qh.queue_hint_return_queue) for ev in events))


# Test_InFlightPods: each action is ("pop", pod) | ("event", ClusterEvent) | ("enqueue", pod,
# unschedulable plugins, pending plugins) | ("create", pod).
IN_FLIGHT_CASES = [
    pytest.param(
        all_queue(PV_ADD), [POD1],
        [("event", PVC_ADD), ("pop", POD1), ("event", PV_ADD), ("event", PV_UPDATE)],
        {"in_flight": [POD1], "events": [POD1, PV_ADD]},
        id="Pod and interested events are registered in inFlightPods/inFlightEvents",
    ),
    pytest.param(
        all_queue(PV_ADD, qh.NODE_ADD, PVC_ADD), [POD1, POD2],
        [("event", PVC_ADD), ("pop", POD1), ("event", PV_ADD), ("pop", POD2), ("event", qh.NODE_ADD),
         ("enqueue", POD1, (), ())],
        {"backoff": ["targetpod"], "in_flight": [POD2], "events": [POD2, qh.NODE_ADD]},
        id="Pod, registered in inFlightPods, is enqueued back to backoffQ",
    ),
    pytest.param(
        all_queue(PV_ADD, qh.NODE_ADD, PVC_ADD, CSI_NODE_UPDATE), [POD1, POD2],
        [("event", PVC_ADD), ("pop", POD1), ("event", PV_ADD), ("pop", POD2), ("event", qh.NODE_ADD),
         ("enqueue", POD1, (), ()), ("event", CSI_NODE_UPDATE), ("enqueue", POD2, (), ())],
        {"backoff": ["targetpod", "targetpod2"], "in_flight": [], "events": []},
        id="All Pods registered in inFlightPods are enqueued back to activeQ",
    ),
    pytest.param(
        all_queue(PV_ADD, qh.NODE_ADD, ASSIGNED_POD_ADD), [POD1, POD2, POD3],
        [("event", PVC_ADD), ("pop", POD1), ("event", PV_ADD), ("pop", POD2), ("event", qh.NODE_ADD),
         ("pop", POD3), ("event", ASSIGNED_POD_ADD), ("enqueue", POD2, (), ())],
        {"backoff": ["targetpod2"], "in_flight": [POD1, POD3],
         "events": [POD1, PV_ADD, qh.NODE_ADD, POD3, ASSIGNED_POD_ADD]},
        id="One intermediate Pod registered in inFlightPods is enqueued back to activeQ",
    ),
    pytest.param(
        qh.hint_map((ASSIGNED_POD_ADD, "fooPlugin1", qh.queue_hint_return_skip)), [POD1],
        [("event", EVENT_UNSCHEDULABLE_TIMEOUT), ("pop", POD1), ("event", ASSIGNED_POD_ADD),
         ("enqueue", POD1, ("fooPlugin1",), ())],
        {"unschedulable": ["targetpod"], "in_flight": [], "events": []},
        id="events before popping Pod are ignored when Pod is enqueued back to queue",
    ),
    pytest.param(
        all_queue(ASSIGNED_POD_ADD), [POD1],
        [("pop", POD1), ("event", ASSIGNED_POD_ADD), ("enqueue", POD1, (), ())],
        {"backoff": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to backoff if no failed plugin",
    ),
    pytest.param(
        all_queue(ASSIGNED_POD_ADD), [POD1],
        [("pop", POD1), ("event", qh.NODE_ADD), ("enqueue", POD1, ("fooPlugin1",), ())],
        {"unschedulable": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to unschedulable pod pool if no events that can make the pod schedulable",
    ),
    pytest.param(
        qh.hint_map((ASSIGNED_POD_ADD, "fooPlugin1", qh.queue_hint_return_skip)), [POD1],
        [("pop", POD1), ("event", ASSIGNED_POD_ADD), ("enqueue", POD1, ("fooPlugin1",), ())],
        {"unschedulable": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to unschedulable pod pool because the failed plugin has a hint fn but it returns Skip",
    ),
    pytest.param(
        qh.hint_map((ASSIGNED_POD_ADD, "fooPlugin3", qh.queue_hint_return_skip),
                 (ASSIGNED_POD_ADD, "fooPlugin2", qh.queue_hint_return_queue),
                 (ASSIGNED_POD_ADD, "fooPlugin1", qh.queue_hint_return_queue)), [POD1],
        [("pop", POD1), ("event", ASSIGNED_POD_ADD), ("enqueue", POD1, ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",))],
        {"active": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to activeQ because the Pending plugins has a hint fn and it returns Queue",
    ),
    pytest.param(
        qh.hint_map((ASSIGNED_POD_ADD, "fooPlugin2", qh.queue_hint_return_skip),
                 (ASSIGNED_POD_ADD, "fooPlugin1", qh.queue_hint_return_queue)), [POD1],
        [("pop", POD1), ("event", ASSIGNED_POD_ADD), ("enqueue", POD1, ("fooPlugin1", "fooPlugin2"), ())],
        {"backoff": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to backoffQ because the failed plugin has a hint fn and it returns Queue",
    ),
    pytest.param(
        qh.hint_map((ASSIGNED_POD_ADD, "fooPlugin3", qh.queue_hint_return_skip),
                 (ASSIGNED_POD_ADD, "fooPlugin2", qh.queue_hint_return_queue),
                 (ASSIGNED_POD_ADD, "fooPlugin1", qh.queue_hint_return_queue)), [POD1, POD2],
        [("pop", POD1), ("event", qh.NODE_ADD), ("pop", POD2), ("event", ASSIGNED_POD_ADD), ("enqueue", POD1, (), ()),
         ("enqueue", POD2, ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",))],
        {"active": ["targetpod2"], "backoff": ["targetpod"], "in_flight": [], "events": []},
        id="pod is enqueued to activeQ because the pending plugin has a hint fn and it returns Queue for a "
           "concurrent event that was received while some other pod was in flight",
    ),
]


@pytest.mark.parametrize(("hints", "initial", "actions", "want"), IN_FLIGHT_CASES)
def test_in_flight_pods(hints, initial, actions, want):
    # Test_InFlightPods
    q, clock = qh.new_test_queue(hints)
    for p in initial:
        q.add(p)
        clock.step(1)
    popped: dict[str, Any] = {}
    for action in actions:
        kind = action[0]
        if kind == "pop":
            popped[action[1].uid] = pop_pod(q, action[1])
        elif kind == "event":
            q.move_all_to_active_or_backoff(action[1])
        elif kind == "enqueue":
            _, p, unsched, pending = action
            qi = popped[p.uid]
            qi.unschedulable_plugins, qi.pending_plugins = set(unsched), set(pending)
            q.add_unschedulable_if_not_present(qi)
    assert sorted(p.uid for p in (x.pod for x in q.in_flight())) == sorted(p.uid for p in want["in_flight"])
    assert q.active_q.listing() == want["events"]
    names = {"active": q.active_q.pods(), "backoff": q.backoff_q.pods(), "unschedulable": list(q.unschedulable_pods)}
    for where in ("active", "backoff", "unschedulable"):
        if where in want:
            assert sorted(qi.pod.name for qi in names[where]) == sorted(want[where]), where


def test_popped_pod_preserves_unschedulable_and_pending_plugins():
    # Test_InFlightPods "popped pod preserves UnschedulablePlugins and PendingPlugins" and TestPop.
    q, _ = qh.new_test_queue(all_queue(PV_ADD))
    q.add(POD1)
    qi = pop_pod(q, POD1)
    qi.pending_plugins, qi.unschedulable_plugins = {"fooPlugin1"}, {"fooPlugin2"}
    assert q.add_unschedulable_if_not_present(qi) == UNSCHEDULABLE
    q.move_all_to_active_or_backoff(PV_ADD)  # Pending plugin's Queue: activeQ at once
    assert q.where(POD1.uid) == ACTIVE
    qi = pop_pod(q, POD1)
    assert qi.unschedulable_plugins == {"fooPlugin2"} and qi.pending_plugins == {"fooPlugin1"}
    qi.unschedulable_plugins, qi.pending_plugins = set(), set()
    assert q.add_unschedulable_if_not_present(qi) == BACKOFF  # an error now


def test_pop_twice_for_the_same_pod_still_cleans_up():
    # Test_InFlightPods "Pop is made twice for the same Pod, but the cleanup still happen correctly".
    q, clock = qh.new_test_queue(all_queue(PV_ADD, qh.NODE_ADD, PVC_ADD, CSI_NODE_UPDATE))
    for p in (POD1, POD2):
        q.add(p)
        clock.step(1)
    q.move_all_to_active_or_backoff(PVC_ADD)
    p1 = pop_pod(q, POD1)
    q.move_all_to_active_or_backoff(PV_ADD)
    p2 = pop_pod(q, POD2)
    q.active_q.add(qh.queued(POD1))  # the bug: pod1 in activeQ while being scheduled
    q.add(POD3)
    p3 = pop_pod(q, POD3)  # pod1's entry is discarded
    assert len(q.active_q) == 0
    q.move_all_to_active_or_backoff(qh.NODE_ADD)
    q.add_unschedulable_if_not_present(p1)
    q.move_all_to_active_or_backoff(CSI_NODE_UPDATE)
    q.add_unschedulable_if_not_present(p2)
    q.add_unschedulable_if_not_present(p3)
    assert sorted(x.pod.name for x in q.backoff_q.pods()) == ["targetpod", "targetpod2", "targetpod3"]
    assert q.in_flight() == [] and q.active_q.listing() == []


def counting(hint: Any, calls: list[str], name: str) -> Any:
    def fn(p: Any, old: Any, new: Any) -> QueueingHint:
        calls.append(name)
        return hint(p, old, new)

    return fn


def returns_error(p: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("unexpected error")


NODE = NodeInfo(make_node("n"))
SPECIFIC_NODE_UPDATE = ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL)


@pytest.mark.parametrize(
    ("unsched", "pending", "event", "new", "entries", "want", "want_calls"),
    [
        pytest.param(("fooPlugin1",), (), qh.NODE_ADD, NODE,
                     [(ASSIGNED_POD_ADD, "fooPlugin1", "queue")], SKIP, 0,
                     id="return Queue when no queueing hint function is registered for the event"),
        pytest.param(("fooPlugin1",), (), qh.NODE_ADD, NODE,
                     [(qh.NODE_ADD, "fooPlugin1", "error")], AFTER_BACKOFF, 1,
                     id="Treat the event as Queue when QueueHintFn returns error"),
        pytest.param(("fooPlugin1",), (), EVENT_UNSCHEDULABLE_TIMEOUT, None, [], AFTER_BACKOFF, 0,
                     id="return Queue when the event is wildcard"),
        pytest.param(("fooPlugin1",), (), EVENT_FORCE_ACTIVATE, qh.pod("pod1", "ns1", uid="1"), [], AFTER_BACKOFF, 0,
                     id="return Queue when the event is wildcard and the wildcard targets the pod to be requeued"),
        pytest.param(("fooPlugin1",), (), EVENT_FORCE_ACTIVATE, qh.pod("pod-different", "ns2", uid="2"), [], SKIP, 0,
                     id="return Skip when the event is wildcard, but the wildcard targets a different pod"),
        pytest.param(("fooPlugin1", "fooPlugin3"), ("fooPlugin2",), qh.NODE_ADD, NODE,
                     [(qh.NODE_ADD, "fooPlugin1", "queue"), (qh.NODE_ADD, "fooPlugin2", "queue"),
                      (qh.NODE_ADD, "fooPlugin3", "queue"), (qh.NODE_ADD, "fooPlugin4", "error")], IMMEDIATELY, 2,
                     id="interprets Queue from the Pending plugin as queueImmediately"),
        pytest.param(("fooPlugin1", "fooPlugin2"), (), qh.NODE_ADD, NODE,
                     [(qh.NODE_ADD, "fooPlugin1", "skip"), (qh.NODE_ADD, "fooPlugin2", "queue")], AFTER_BACKOFF, 2,
                     id="interprets Queue from the Unschedulable plugin as queueAfterBackoff"),
        pytest.param(("fooPlugin1", "fooPlugin2"), (), qh.NODE_ADD, NODE,
                     [(qh.NODE_ADD, "fooPlugin1", "skip"), (qh.NODE_ADD, "fooPlugin2", "skip"),
                      (qh.NODE_ADD, "fooPlugin3", "queue")], SKIP, 2,
                     id="Queueing hint function that isn't from the plugin in UnschedulablePlugins/PendingPlugins "
                        "is ignored"),
        pytest.param(("fooPlugin1", "fooPlugin2"), (), SPECIFIC_NODE_UPDATE, NODE,
                     [(SPECIFIC_NODE_UPDATE, "fooPlugin1", "queue"), (SPECIFIC_NODE_UPDATE, "fooPlugin2", "queue"),
                      (ClusterEvent("Node", ActionType.UPDATE), "fooPlugin1", "queue"),
                      (qh.NODE_ADD, "fooPlugin1", "queue")], AFTER_BACKOFF, 1,
                     id="If event is specific Node update event, queueing hint function for "
                        "NodeUpdate/UpdateNodeLabel is also executed"),
        pytest.param(("fooPlugin1",), (), qh.NODE_ADD, NODE,
                     [(ClusterEvent("*", ActionType.ADD), "fooPlugin1", "queue")], AFTER_BACKOFF, 1,
                     id="If event with '*' Resource, queueing hint function for specified Resource is also executed"),
        pytest.param(("fooPlugin1",), (),
                     ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
                     NODE, [(ClusterEvent("*", ActionType.ALL), "fooPlugin1", "queue")], AFTER_BACKOFF, 1,
                     id="If event is a wildcard one, queueing hint function for all kinds of events is executed"),
    ],
)
def test_is_pod_worth_requeuing(unsched, pending, event, new, entries, want, want_calls):
    # Test_isPodWorthRequeuing: the strategy and how many hints ran.
    calls: list[str] = []
    fns = {"queue": qh.queue_hint_return_queue, "skip": qh.queue_hint_return_skip, "error": returns_error}
    hints = qh.hint_map(*((ev, plugin, counting(fns[kind], calls, plugin)) for ev, plugin, kind in entries))
    q, _ = qh.new_test_queue(hints)
    qi = qh.queued(qh.pod("pod1", "ns1", uid="1"), *unsched, pending_plugins=set(pending))
    assert q._strategy(qi, event, None, new) == want
    assert len(calls) == want_calls


P = qh.pod("pod1", "ns1", uid="1", labels={"foo": "bar"})


def gated_by(plugin: str) -> dict[str, Any]:
    return {"gated": True, "gating_plugin": plugin}


@pytest.mark.parametrize(
    ("fields", "plugins", "hint", "step", "want"),
    [
        pytest.param({"pending_plugins": {"foo"}}, (), qh.queue_hint_return_queue, 0, ACTIVE,
                     id="Queue queues pod to activeQ"),
        pytest.param({}, ("foo",), qh.queue_hint_return_queue, 0, BACKOFF,
                     id="Queue queues pod to backoffQ if Pod is backing off"),
        # One failure: 1 s, and still backing off while its expiry's window is the current one.
        pytest.param({}, ("foo",), qh.queue_hint_return_queue, 2, ACTIVE,
                     id="Queue queues pod to activeQ if Pod is not backing off"),
        pytest.param({}, ("foo",), qh.queue_hint_return_skip, 0, UNSCHEDULABLE,
                     id="Skip queues pod to unschedulablePods"),
        pytest.param(gated_by("SchedulingGates"), ("SchedulingGates",), returns_error, 0, UNSCHEDULABLE,
                     id="QueueHintFunction is not called when Pod is gated by the plugin that isn't interested "
                        "in the event"),
        pytest.param(gated_by("foo"), ("foo",), qh.queue_hint_return_queue, 0, BACKOFF,
                     id="QueueHintFunction is called when Pod is gated by the plugin that is interested in the event"),
    ],
)
def test_move_all_with_queueing_hint(fields, plugins, hint, step, want):
    # TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint; the clock on a window start.
    hints = qh.hint_map((qh.NODE_ADD, "foo", hint),
                        (qh.UNSCHEDULED_POD_UPDATE, "SchedulingGates", qh.queue_hint_return_queue))
    q, clock = qh.new_test_queue(hints, pre_enqueue=[SchedulingGates(), qh.AllowList(["foo"], name="foo")])
    q.add(P)
    pop_pod(q, P)
    qi = qh.queued(P, *plugins, **fields)
    q.add_unschedulable_if_not_present(qi)
    clock.step(step)
    q.move_all_to_active_or_backoff(qh.NODE_ADD)
    where = q.where(P.uid)
    assert (UNSCHEDULABLE if where == GATED else where) == want  # gated pods are in unschedulablePods


def test_update_when_in_flight():
    # TestPriorityQueue_UpdateWhenInflight: an update while in flight may be what helps the pod.
    q, _ = qh.new_test_queue(qh.hint_map((qh.UNSCHEDULED_POD_UPDATE, "fakePlugin", qh.queue_hint_return_queue)))
    test_pod = qh.pod("test-pod", "test-ns", uid="test-uid")
    q.add(test_pod)
    pop_pod(q, test_pod)
    updated = qh.pod("test-pod", "test-ns", uid="test-uid", tolerations=[{"key": "foo", "effect": "NoSchedule"}])
    q.update(test_pod, updated)
    assert q.add_unschedulable_if_not_present(qh.queued(updated, "fakePlugin")) == BACKOFF
    assert q.backoff_q.get(updated.uid).pod is updated


def test_pre_enqueue_checks_and_uninteresting_events():
    # TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks
    q, clock = qh.new_test_queue()
    infos = []
    for i in range(5):
        p = qh.pod(f"p{i}", priority=i)
        q.add(p)
        qi = pop_pod(q, p)
        qi.unschedulable_plugins = {"plugin"}
        q.add_unschedulable_if_not_present(qi)
        infos.append(qi)

    def must_not_run(p: Any) -> bool:
        raise AssertionError("preCheck shouldn't be called")

    q.move_all_to_active_or_backoff(PV_ADD, pre_check=must_not_run)  # no plugin registered PV/Add
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT, pre_check=lambda p: p.priority % 2 == 0)
    clock.step(20)
    assert sorted(qi.pod.name for qi in q.backoff_q.pop_all_completed()) == ["p0", "p2", "p4"]


def test_plugins_without_enqueue_extensions_want_every_event(frameworks):
    # buildQueueingHintMap: a plugin with no EnqueueExtensions gets every event; Node/Add without
    # Node/UpdateNodeTaint also gets the latter (kubernetes#109437).
    from scheduler.backend.hints import build_hint_map

    m = build_hint_map(frameworks["default-scheduler"])
    taint = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT)
    taint_plugins = [name for name, _ in m[taint]]
    for plugin in ("NodeResourcesFit", "NodeAffinity", "NodePorts", "InterPodAffinity", "VolumeBinding"):
        assert plugin in taint_plugins, plugin
    # TaintToleration and PodTopologySpread register the taint update themselves.
    assert "TaintToleration" not in taint_plugins and "PodTopologySpread" not in taint_plugins


def test_gated_pod_moves_only_on_its_gating_plugins_events():
    # movePodsToActiveOrBackoffQueue: a gated pod is looked at only for events its gating plugin
    # registered, whatever the other rejectors' hints say.
    hints = qh.hint_map((qh.NODE_ADD, "foo", qh.queue_hint_return_queue),
                     (qh.UNSCHEDULED_POD_UPDATE, "SchedulingGates", qh.queue_hint_return_queue))
    q, clock = qh.new_test_queue(hints, pre_enqueue=[SchedulingGates()])
    q.add(P)
    qi = pop_pod(q, P)
    qi.unschedulable_plugins = {"foo", "SchedulingGates"}
    qi.gated, qi.gating_plugin = True, "SchedulingGates"
    assert q.add_unschedulable_if_not_present(qi) == GATED
    clock.step(20)
    assert q.move_all_to_active_or_backoff(qh.NODE_ADD) == 0
    assert q.where(P.uid) == GATED
    # Its gating plugin's event is looked at (the pod has no gates: PreEnqueue passes).
    assert q.move_all_to_active_or_backoff(qh.UNSCHEDULED_POD_UPDATE, None, P) == 1
    assert q.where(P.uid) == ACTIVE


def test_each_hint_run_is_observed():
    # ObserveQueueingHintDurationAsync: plugin, event, result ("Queue", "QueueSkip", "Error").
    hints = qh.hint_map((qh.NODE_ADD, "a", qh.queue_hint_return_skip), (qh.NODE_ADD, "b", returns_error))
    q, _ = qh.new_test_queue(hints)
    seen: list[tuple[str, ClusterEvent, str]] = []
    q.on_hint = lambda plugin, event, result, seconds: seen.append((plugin, event, result))
    qi = qh.queued(qh.pod("p"), "a", "b")
    assert q._strategy(qi, qh.NODE_ADD, None, NODE) == AFTER_BACKOFF
    assert seen == [("a", qh.NODE_ADD, "QueueSkip"), ("b", qh.NODE_ADD, "Error")]


@pytest.mark.parametrize(
    ("generic_workload", "in_group", "want"),
    [
        # determineSchedulingHintForInFlightPod: a pod of a pod group is retried after backoff
        # only (event-based requeueing is not implemented for pod groups in v1.36.3) ...
        (True, True, BACKOFF),
        # ... a plain pod that no event helped waits in unschedulable ...
        (True, False, UNSCHEDULABLE),
        # ... and so does a group pod without the GenericWorkload gate.
        (False, True, UNSCHEDULABLE),
    ],
)
def test_pod_group_member_is_retried_after_backoff(generic_workload: bool, in_group: bool, want: str) -> None:
    p = PodInfo(group_pod("p", "g")) if in_group else qh.pod("p", uid="p")
    q, _ = qh.new_test_queue(all_queue(PV_ADD), generic_workload=generic_workload)
    q.add(p)
    got = pop_pod(q, p)
    got.unschedulable_plugins = {"fooPlugin1"}
    assert q.add_unschedulable_if_not_present(got) == want
    if want == BACKOFF:
        # SchedulerPopFromBackoffQ: with activeQ empty the pod is popped again at once, backoff
        # or not (kube-scheduler v1.36.3 retries a group's leftover pods back to back).
        assert q.pop_nowait() is got
