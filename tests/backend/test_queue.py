"""SchedulingQueue, in virtual time (an injected clock). Tables from upstream
pkg/scheduler/backend/queue/scheduling_queue_test.go (v1.36.3), test names cited; queueing hints
on (GA and locked in v1.36.3), SchedulerPopFromBackoffQ on unless a case says otherwise."""

from __future__ import annotations

import asyncio
from typing import Any

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
from scheduler.framework.interface import QueueSortPlugin
from scheduler.model.node import NodeInfo
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.testing.builders import make_node, pod_info
from scheduler.testing.fakes import FakeClock
from tests.backend.queue_helpers import (
    HIGH,
    HIGH_NOMINATED_POD,
    HIGH_POD,
    MED_POD,
    MID,
    NODE_ADD,
    UNSCHEDULABLE_POD,
    UNSCHEDULED_POD_UPDATE,
    AllowList,
    hint_map,
    new_test_queue,
    pod,
    queue_hint_return_queue,
    queue_hint_return_skip,
    queued,
)


def new_queue(frameworks, clock=None, **kw) -> tuple[SchedulingQueue, FakeClock]:
    """A queue over the default profile's real plugins and hints."""
    clock = clock or FakeClock()
    return SchedulingQueue(frameworks, clock, **kw), clock


def fail(q: SchedulingQueue, qi, *plugins: str) -> str:
    qi.unschedulable_plugins = set(plugins)
    return q.add_unschedulable_if_not_present(qi)


def pop_names(q: SchedulingQueue, n: int) -> list[str]:
    return [q.pop_nowait().pod.name for _ in range(n)]


# -- Add, Pop ------------------------------------------------------------------------------------

def test_add():
    # TestPriorityQueue_Add: priority order; nominated pods registered with the nominator.
    q, _ = new_test_queue()
    for p in (MED_POD, UNSCHEDULABLE_POD, HIGH_POD):
        q.add(p)
    assert sorted(p.name for p in q.nominator.nominated_pods_for_node("node1")) == ["mpp", "up"]
    assert pop_names(q, 3) == ["hpp", "mpp", "up"]
    assert len(q.nominator.nominated_pods_for_node("node1")) == 2


def test_add_with_a_less_only_queue_sort():
    # TestPriorityQueue_AddWithReversePriorityLessFunc: a QueueSort plugin with only less().
    class LessOnly(QueueSortPlugin):
        name = "LessOnly"

        def less(self, a: Any, b: Any) -> bool:
            return PrioritySort().less(a, b)

    q, _ = new_test_queue(queue_sort=LessOnly())
    q.add(MED_POD)
    q.add(HIGH_POD)
    assert pop_names(q, 2) == ["hpp", "mpp"]


def test_pop_counts_attempts_and_cycles():
    q, _ = new_test_queue()
    q.add(pod("a"))
    qi = q.pop_nowait()
    assert qi.attempts == 1 and q.scheduling_cycle == 1
    assert q.where(qi.pod.uid) == "inflight"


@pytest.mark.parametrize(
    ("pop_from_backoff_q", "want"),
    [
        pytest.param(True, ["mpp", "hpp"],
                     id="Pop pods from both activeQ and backoffQ when PopFromBackoffQ is enabled"),
        pytest.param(False, ["mpp"], id="Pop pod only from activeQ when PopFromBackoffQ is disabled"),
    ],
)
def test_pop_from_backoff_q(pop_from_backoff_q, want):
    # TestPriorityQueue_Pop: with activeQ empty, Pop takes podBackoffQ's head, never
    # podErrorBackoffQ's nor an unschedulable pod.
    q, clock = new_test_queue(pop_from_backoff_q=pop_from_backoff_q)
    q.add(MED_POD)
    q.backoff_q.add(queued(HIGH_POD, "plugin", timestamp=clock(), unschedulable_count=1))
    q.backoff_q.add(queued(pod("hpp2", "ns1", uid="hpp2ns1", priority=HIGH), timestamp=clock(),
                           consecutive_errors_count=1))
    q.unschedulable_pods.add_or_update(queued(UNSCHEDULABLE_POD, "plugin", timestamp=clock()))
    got = []
    while (qi := q.pop_nowait()) is not None:
        got.append(qi.pod.name)
    assert got == want


PS_ACTIVE = pod("pod-active", "ns1", uid="pod-active", labels={"foo": ""})
PS_BACKOFF = pod("pod-backoff", "ns1", uid="pod-backoff", labels={"foo": ""})
PS_UNSCHED = pod("pod-unschedulable", "ns1", uid="pod-unschedulable", labels={"foo": ""})
PS_GATED = pod("pod-gated", "ns1", uid="pod-gated")
PS_TEMP = pod("pod-temporarily-gated", "ns1", uid="pod-temporarily-gated", labels={"bar": ""})
PS_OTHER = pod("pod-other", "ns1", uid="pod-other", labels={"foo": ""})


@pytest.mark.parametrize(
    ("target", "want"),
    [
        pytest.param(PS_ACTIVE, True, id="Pod is in activeQ"),
        pytest.param(PS_BACKOFF, True, id="Pod is in backoffQ"),
        pytest.param(PS_UNSCHED, True, id="Pod is in unschedulablePods"),
        pytest.param(PS_GATED, False, id="Pod is gated in unschedulablePods"),
        pytest.param(PS_TEMP, True, id="Pod was gated, but should be no longer"),
        pytest.param(PS_OTHER, False, id="Pod is not in any queue"),
    ],
)
def test_pop_specific_pod(target, want):
    # TestPriorityQueue_PopSpecificPod
    plugin = AllowList(["foo"])
    q, clock = new_test_queue(pre_enqueue=[plugin])
    q.add(PS_ACTIVE)
    q.backoff_q.add(queued(PS_BACKOFF, timestamp=clock()))
    q.unschedulable_pods.add_or_update(queued(PS_UNSCHED, timestamp=clock()))
    q.add(PS_GATED)
    q.add(PS_TEMP)
    plugin.allow = ["foo", "bar"]
    got = q.pop_specific(target.uid)
    assert (got is not None and got.pod is target) == want
    assert (target.uid in {x.pod.uid for x in q.in_flight()}) == want
    if target is not PS_OTHER:
        assert (q.where(target.uid) not in ("", "inflight")) != want


# -- AddUnschedulableIfNotPresent ------------------------------------------------------------------

def test_add_unschedulable_if_not_present():
    # TestPriorityQueue_AddUnschedulableIfNotPresent: no event during the attempt: unschedulable.
    q, _ = new_test_queue()
    q.add(UNSCHEDULABLE_POD)
    assert q.pop_nowait().pod is UNSCHEDULABLE_POD
    q.add(HIGH_NOMINATED_POD)
    assert q.add_unschedulable_if_not_present(queued(UNSCHEDULABLE_POD, "plugin")) == UNSCHEDULABLE
    assert q.pop_nowait().pod is HIGH_NOMINATED_POD
    assert len(q.nominator.nominated_pods_for_node("node1")) == 2
    assert q.unschedulable_pods.get(UNSCHEDULABLE_POD.uid).pod is UNSCHEDULABLE_POD


def test_add_unschedulable_if_not_present_backoff():
    # TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff: a move request (a wildcard event)
    # during their attempts sends the failed pods to backoffQ.
    q, _ = new_test_queue()
    pods = [pod(f"pod{i}", f"ns{i}", uid=f"upns{i}", priority=i) for i in range(10)]
    for p in pods:
        q.add(p)
    assert pop_names(q, 9) == [f"pod{i}" for i in range(9, 0, -1)]
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.pop_nowait().pod.name == "pod0"
    for p in pods[1:]:
        assert q.add_unschedulable_if_not_present(queued(p, "plugin")) == BACKOFF


@pytest.mark.parametrize(
    ("plugins", "counts"),
    [
        # A rejection counts toward the unschedulable count and ends an error streak...
        ((("plugin",),), (1, 0)),
        (((), ("plugin",)), (1, 0)),
        # ...an error counts apart, and the error count is what backs it off.
        (((),), (0, 1)),
        (((), (), ()), (0, 3)),
        ((("plugin",), (), ("plugin",), ()), (2, 1)),
    ],
)
def test_attempts_are_counted_as_upstream(plugins, counts):
    # AddUnschedulableIfNotPresent: UnschedulableCount vs ConsecutiveErrorsCount.
    q, clock = new_test_queue()
    p = pod("p")
    q.add(p)
    for rejectors in plugins:
        clock.step(30)
        q.flush_backoff_completed()
        q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
        qi = q.pop_nowait()
        fail(q, qi, *rejectors)
    assert (qi.unschedulable_count, qi.consecutive_errors_count) == counts
    assert qi.attempts == len(plugins)
    count = counts[1] or counts[0]  # the error streak if the last attempt was an error
    assert q.backoff_duration(qi) == min(2 ** (count - 1), 10)


def test_backoff_flow():
    # TestBackOffFlow: 1, 2, 4, 8, 10, 10, 10 s, each completing at the start of the window after
    # its expiry; an early flush leaves the pod in backoffQ.
    for pop_from_backoff_q in (True, False):
        q, clock = new_test_queue(pop_from_backoff_q=pop_from_backoff_q)
        clock.t = 1000.25
        p = pod("test-pod", "test-ns", uid="test-uid")
        q.add(p)
        for i, want in enumerate((1, 2, 4, 8, 10, 10, 10)):
            start = clock()
            qi = q.pop_nowait()
            assert qi.attempts == i + 1
            qi.unschedulable_plugins.add("unsched-plugin")
            q.add_unschedulable_if_not_present(qi)
            q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
            assert q.where(p.uid) == BACKOFF
            backoff = qi.backoff_expiration - start
            if pop_from_backoff_q:
                backoff = int(backoff) + 1  # rounded up to the window
            assert backoff == pytest.approx(want), (i, pop_from_backoff_q)
            clock.step(1)
            q.flush_backoff_completed()
            assert q.where(p.uid) == BACKOFF
            clock.step(backoff)
            q.flush_backoff_completed()
            assert q.where(p.uid) == ACTIVE


# -- Update, Delete, Activate ------------------------------------------------------------------------

UPDATE_HINTS = hint_map((UNSCHEDULED_POD_UPDATE, "queuePlugin", queue_hint_return_queue),
                        (UNSCHEDULED_POD_UPDATE, "skipPlugin", queue_hint_return_skip))


def annotated(p: Any, value: str) -> Any:
    raw = {**p.raw, "metadata": {**p.raw["metadata"], "annotations": {"foo": value}}}
    return type(p)(raw)


def _not_queued(q, clock):
    return MED_POD, annotated(MED_POD, "test")


def _nominated(q, clock):
    return HIGH_POD, HIGH_NOMINATED_POD


def _in_active(q, clock):
    q.add(HIGH_POD)
    return HIGH_POD, HIGH_POD


def _in_backoff(q, clock):
    q.backoff_q.add(queued(MED_POD, timestamp=clock()))
    return MED_POD, MED_POD


def _unsched_backing_off(q, clock):
    q.unschedulable_pods.add_or_update(queued(MED_POD, "queuePlugin", timestamp=clock(), unschedulable_count=1))
    return MED_POD, annotated(MED_POD, "test")


def _unsched_backed_off(q, clock):
    q.unschedulable_pods.add_or_update(queued(MED_POD, "queuePlugin", timestamp=clock(), unschedulable_count=1))
    clock.step(10)  # podMaxBackoffDuration
    return MED_POD, annotated(MED_POD, "test1")


def _unsched_skip(q, clock):
    q.unschedulable_pods.add_or_update(queued(MED_POD, "skipPlugin", timestamp=clock()))
    return MED_POD, annotated(MED_POD, "test1")


def _in_flight(q, clock):
    q.add(MED_POD)
    assert q.pop_nowait().pod is MED_POD
    return MED_POD, annotated(MED_POD, "bar")


@pytest.mark.parametrize(
    ("prepare", "want", "nominated"),
    [
        pytest.param(_not_queued, ACTIVE, False, id="Update pod that didn't exist in the queue"),
        pytest.param(_nominated, ACTIVE, True, id="Update highPriorityPodInfo and add a nominatedNodeName to it"),
        pytest.param(_in_active, ACTIVE, False,
                     id="When updating a pod that is already in activeQ, the pod should remain in activeQ"),
        pytest.param(_in_backoff, BACKOFF, False,
                     id="When updating a pod that is in backoff queue and is still backing off, it will be updated "
                        "in backoff queue"),
        pytest.param(_unsched_backing_off, BACKOFF, False,
                     id="when updating a pod in unschedulablePods, if its backoff timer has not yet expired, it "
                        "moves to backoffQ"),
        pytest.param(_unsched_backed_off, ACTIVE, False,
                     id="when updating a pod in unschedulablePods, if its backoff timer has expired, it moves to "
                        "activeQ"),
        pytest.param(_unsched_skip, UNSCHEDULABLE, False,
                     id="when updating a pod in unschedulablePods, if the scheduling hint returns QueueSkip, it "
                        "remains in unschedulablePods"),
        pytest.param(_in_flight, "inflight", False,
                     id="when updating a pod which is in flightPods, the pod will not be added to any queue"),
    ],
)
def test_update(prepare, want, nominated):
    # TestPriorityQueue_Update
    q, clock = new_test_queue(UPDATE_HINTS)
    old, new = prepare(q, clock)
    q.update(old, new)
    assert q.where(new.uid) == want
    if want != "inflight":
        assert q.get(new.uid).pod is new
    if nominated:
        assert len(q.nominator) == 1


def test_update_in_active_reorders():
    q, _ = new_test_queue()
    a = pod("a", priority=1)
    q.add(a)
    q.add(pod("b", priority=5))
    a2 = pod("a", priority=10, labels={"v": "2"})
    q.update(a, a2)
    first = q.pop_nowait()
    assert first.pod is a2
    assert q.pop_nowait().pod.name == "b" and q.pop_nowait() is None


def test_delete():
    # TestPriorityQueue_Delete
    q, _ = new_test_queue()
    q.update(HIGH_POD, HIGH_NOMINATED_POD)
    q.add(UNSCHEDULABLE_POD)
    q.delete(HIGH_NOMINATED_POD.uid)
    assert q.where(UNSCHEDULABLE_POD.uid) == ACTIVE
    assert q.where(HIGH_NOMINATED_POD.uid) == ""
    assert len(q.nominator) == 1
    q.delete(UNSCHEDULABLE_POD.uid)
    assert len(q.nominator) == 0


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable", "inflight"])
def test_delete_removes_from_every_queue(frameworks, where):
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
    clock.step(400)
    q.flush_unschedulable_leftover()
    assert q.pop_nowait() is None
    assert sum(q.counts().values()) == 0


@pytest.mark.parametrize(
    ("where", "want_active"),
    [
        pytest.param("active", 1, id="pod already in activeQ"),
        pytest.param("nowhere", 0, id="pod not in unschedulablePods/backoffQ"),
        pytest.param("unschedulable", 1, id="pod in unschedulablePods"),
        pytest.param("backoff", 1, id="pod in backoffQ"),
    ],
)
def test_activate(where, want_active):
    # TestPriorityQueue_Activate: straight to activeQ, backing off or not.
    q, clock = new_test_queue()
    if where == "active":
        q.add(HIGH_NOMINATED_POD)
    elif where == "unschedulable":
        q.unschedulable_pods.add_or_update(queued(HIGH_NOMINATED_POD, "plugin", timestamp=clock(),
                                                  unschedulable_count=1))
    elif where == "backoff":
        q.backoff_q.add(queued(HIGH_NOMINATED_POD, "plugin", timestamp=clock(), unschedulable_count=1))
    q.activate({"test_pod": HIGH_NOMINATED_POD})
    assert len(q.active_q) == want_active
    assert (q.where(HIGH_NOMINATED_POD.uid) == ACTIVE) == bool(want_active)


@pytest.mark.parametrize(
    ("in_flight", "want_event"),
    [
        pytest.param(HIGH_NOMINATED_POD, True, id="[QHint] pod not in unschedulablePods/backoffQ but in-flight"),
        pytest.param(MED_POD, False, id="[QHint] pod not in unschedulablePods/backoffQ and not in-flight"),
    ],
)
def test_activate_in_flight(in_flight, want_event):
    # TestPriorityQueue_Activate: ForceActivate logged for the pod in flight, with it as newObj.
    q, _ = new_test_queue()
    q.add(in_flight)
    q.pop_nowait()
    q.activate({"test_pod": HIGH_NOMINATED_POD})
    assert len(q.active_q) == 0
    listing = q.active_q.listing()
    assert len(listing) == (2 if want_event else 1)
    if want_event:
        assert q.active_q.events_for(in_flight.uid)[0][2] is HIGH_NOMINATED_POD


def test_activate_in_flight_pod_is_requeued_when_its_attempt_fails(frameworks):
    # The ForceActivate event is for that pod only: the other pod in flight stays unschedulable.
    q, _ = new_queue(frameworks)
    a, b = pod_info("a"), pod_info("b")
    q.add(a)
    q.add(b)
    qa, qb = q.pop_nowait(), q.pop_nowait()
    q.activate({a.key: a})
    assert fail(q, qb, "NodeResourcesFit") == UNSCHEDULABLE
    assert fail(q, qa, "NodeResourcesFit") == BACKOFF


BAR = pod("bar", labels={"bar": ""})
FAILS_ONE = [AllowList(["foo", "bar"]), AllowList(["foo"])]


@pytest.mark.parametrize(
    ("plugins", "target", "event", "from_backoff", "modes", "want_unsched", "want"),
    [
        pytest.param([], pod("p", labels={"p": ""}), "UnschedulablePodAdd", False, (True, False), 0, True,
                     id="no plugins registered"),
        pytest.param([AllowList(), AllowList()], pod("p", labels={"p": ""}), "UnschedulablePodAdd", False,
                     (True, False), 1, False, id="preEnqueue plugin registered, pod name not in allowlists"),
        pytest.param(FAILS_ONE, BAR, "UnschedulablePodAdd", False, (True, False), 1, False,
                     id="preEnqueue plugin registered, pod failed one preEnqueue plugin"),
        pytest.param(FAILS_ONE, BAR, "BackoffComplete", False, (False,), 1, False,
                     id="preEnqueue plugin registered, preEnqueue rejects the pod, even if it is after backoff"),
        pytest.param(FAILS_ONE, BAR, "BackoffComplete", True, (True,), 0, True,
                     id="preEnqueue plugin registered, pod would fail one preEnqueue plugin, but it is moved from "
                        "backoffQ after completing backoff, so preEnqueue is not executed"),
        pytest.param(FAILS_ONE, BAR, "ForceActivate", False, (True,), 1, False,
                     id="preEnqueue plugin registered, pod failed one preEnqueue plugin when activated from "
                        "unschedulablePods"),
        pytest.param(FAILS_ONE, BAR, "ForceActivate", True, (True,), 0, True,
                     id="preEnqueue plugin registered, pod would fail one preEnqueue plugin, but was activated from "
                        "backoffQ, so preEnqueue is not executed"),
        pytest.param([AllowList(["foo", "bar"]), AllowList(["bar"])], BAR, "UnschedulablePodAdd", False,
                     (True, False), 0, True, id="preEnqueue plugin registered, pod passed all preEnqueue plugins"),
    ],
)
def test_move_to_active_q(plugins, target, event, from_backoff, modes, want_unsched, want):
    # TestPriorityQueue_moveToActiveQ (backoff 30 s to 60 s); then an update leaves a held pod held.
    for mode in modes:
        q, clock = new_test_queue(pre_enqueue=plugins, pop_from_backoff_q=mode, initial_backoff=30, max_backoff=60)
        assert q._to_active(queued(target, timestamp=clock()), event, from_backoff) == want
        assert len(q.unschedulable_pods) == want_unsched
        q.update(target, annotated(target, ""))
        assert len(q.unschedulable_pods) == want_unsched


@pytest.mark.parametrize(
    ("plugins", "target", "modes", "want"),
    [
        pytest.param([], pod("p", labels={"p": ""}), (True, False), True, id="no plugins registered"),
        pytest.param([AllowList(), AllowList()], pod("p", labels={"p": ""}), (False,), True,
                     id="preEnqueue plugin registered, pod name would not be in allowlists"),
        pytest.param([AllowList(), AllowList()], pod("p", labels={"p": ""}), (True,), False,
                     id="preEnqueue plugin registered, pod name not in allowlists"),
        pytest.param(FAILS_ONE, BAR, (False,), True,
                     id="preEnqueue plugin registered, preEnqueue plugin would reject the pod, but isn't run"),
        pytest.param(FAILS_ONE, BAR, (True,), False,
                     id="preEnqueue plugin registered, pod failed one preEnqueue plugin"),
        pytest.param([AllowList(["foo", "bar"]), AllowList(["bar"])], BAR, (True, False), True,
                     id="preEnqueue plugin registered, pod passed all preEnqueue plugins"),
    ],
)
def test_move_to_backoff_q(plugins, target, modes, want):
    # TestPriorityQueue_moveToBackoffQ: with PopFromBackoffQ, PreEnqueue runs on entering backoffQ.
    for mode in modes:
        q, clock = new_test_queue(pre_enqueue=plugins, pop_from_backoff_q=mode, initial_backoff=30, max_backoff=60)
        assert q._to_backoff(queued(target, timestamp=clock()), "UnschedulablePodAdd") == want
        assert (target.uid in q.backoff_q) == want
        assert (target.uid in q.unschedulable_pods) != want


def test_gated_set_upon_creation_and_unset_upon_update():
    # Test_queuedPodInfo_gatedSetUponCreationAndUnsetUponUpdate: through SchedulingGates' hint.
    gates = SchedulingGates()
    hints = hint_map(*((e.event, gates.name, e.hint) for e in gates.events_to_register()))
    q, _ = new_test_queue(hints, pre_enqueue=[gates])
    gated = pod("p", gates=["hello world"])
    q.add(gated)
    assert q.unschedulable_pods.get(gated.uid).gated and q.where(gated.uid) == GATED
    q.update(gated, pod("p"))
    assert not q.pop_nowait().gated


# -- moves, flushes, ordering ------------------------------------------------------------------------

def test_move_all_to_active_or_backoff_queue():
    # TestPriorityQueue_MoveAllToActiveOrBackoffQueue
    q, clock = new_test_queue(hint_map((NODE_ADD, "fooPlugin", queue_hint_return_queue)))
    hpp1 = pod("hpp1", "ns1", uid="hpp1", priority=HIGH)
    hpp2 = pod("hpp2", "ns1", uid="hpp2", priority=HIGH)
    for p in (UNSCHEDULABLE_POD, HIGH_POD):
        q.add(p)
        assert q.pop_nowait().pod is p
    assert {x.pod.uid for x in q.in_flight()} == {UNSCHEDULABLE_POD.uid, HIGH_POD.uid}
    for p in (UNSCHEDULABLE_POD, HIGH_POD):
        q.add_unschedulable_if_not_present(queued(p, "fooPlugin"))
    assert q.in_flight() == []
    q.add(hpp1)
    q.pop_nowait()
    assert q.add_unschedulable_if_not_present(queued(hpp1, unschedulable_count=1)) == BACKOFF  # no rejector
    q.add(hpp2)
    q.pop_nowait()
    assert q.add_unschedulable_if_not_present(queued(hpp2, "barPlugin")) == UNSCHEDULABLE
    q.move_all_to_active_or_backoff(NODE_ADD)  # fooPlugin's pods to backoffQ; hpp2 stays
    q.add(MED_POD)
    assert len(q.active_q) == 1 and q.pop_nowait().pod is MED_POD
    assert len(q.backoff_q) == 3
    clock.step(10)
    q.backoff_q.pop_all_completed()  # out of backoffQ, not in flight
    assert [x.pod.uid for x in q.in_flight()] == [MED_POD.uid]
    for p in (UNSCHEDULABLE_POD, HIGH_POD, hpp1):
        q.add(p)
        q.pop_nowait()
    for p, plugins in ((UNSCHEDULABLE_POD, ("fooPlugin",)), (HIGH_POD, ("fooPlugin",)), (hpp1, ())):
        q.add_unschedulable_if_not_present(queued(p, *plugins))
    # Upstream adds the in-flight medPriority pod a second time; here an add of a pod in flight
    # is an update of it (it is requeued when its attempt ends), so its attempt ends first.
    q.done(MED_POD.uid)
    q.add(MED_POD)
    for p in (UNSCHEDULABLE_POD, HIGH_POD, hpp2):
        assert q.where(p.uid) == UNSCHEDULABLE
    assert q.where(hpp1.uid) == BACKOFF and len(q.active_q) == 1
    clock.step(10)
    q.flush_backoff_completed()
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert len(q.active_q) == 4 and len(q.backoff_q) == 0
    assert len(q.unschedulable_pods) == 1  # hpp2: no hint for its plugin
    assert q.in_flight() == []


def test_recently_tried_pods_go_back():
    # TestRecentlyTriedPodsGoBack: a retried pod goes behind pods of its priority.
    q, clock = new_test_queue()
    for i in range(5):
        q.add(pod(f"test-pod-{i}", "ns1", uid=f"tp00{i}", priority=HIGH, nominated="node1"))
    clock.step(1e-6)
    p1 = q.pop_nowait()
    fail(q, p1, "plugin")
    clock.step(10)
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    got = [q.pop_nowait() for _ in range(5)]
    assert got[-1] is p1 and p1 not in got[:-1]


def test_pod_failed_multiple_times_does_not_block_newer_pod():
    # TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
    q, clock = new_test_queue()
    old = pod("test-pod-unscheduled", "ns1", uid="tp001", priority=HIGH, nominated="node1")
    q.add(old)
    q.pop_nowait()
    q.add_unschedulable_if_not_present(queued(old, "plugin"))
    clock.step(2)  # DefaultPodInitialBackoffDuration + 1 s
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.pop_nowait().pod is old
    newer = pod("test-newer-pod", "ns1", uid="tp002", priority=HIGH, nominated="node1")
    q.add(newer)
    # Upstream's timestamps tie here and its heap keeps the first pushed; PrioritySort breaks
    # ties by arrival, so the failure comes a moment after the newer pod's arrival.
    clock.step(0.001)
    q.add_unschedulable_if_not_present(queued(old, "plugin"))
    clock.step(2)
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.pop_nowait().pod is newer


def test_high_priority_backoff():
    # TestHighPriorityBackoff: a high-priority pod backing off does not block activeQ.
    q, _ = new_test_queue()
    mid = pod("test-midpod", "ns1", uid="tp-mid", priority=MID, nominated="node1")
    high = pod("test-highpod", "ns1", uid="tp-high", priority=HIGH, nominated="node1")
    q.add(mid)
    q.add(high)
    assert q.pop_nowait().pod is high
    q.add_unschedulable_if_not_present(queued(high, "fooPlugin"))
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.where(high.uid) == BACKOFF
    assert q.pop_nowait().pod is mid


def test_high_priority_flush_unschedulable_pods_leftover():
    # TestHighPriorityFlushUnschedulablePodsLeftover
    q, clock = new_test_queue(hint_map((NODE_ADD, "fakePlugin", queue_hint_return_queue)))
    mid = pod("test-midpod", "ns1", uid="tp-mid", priority=MID, nominated="node1")
    high = pod("test-highpod", "ns1", uid="tp-high", priority=HIGH, nominated="node1")
    for p in (high, mid):
        q.add(p)
        q.pop_nowait()
    for p in (high, mid):
        q.add_unschedulable_if_not_present(queued(p, "fakePlugin"))
    clock.step(299)
    assert q.flush_unschedulable_leftover() == 0
    clock.step(2)  # DefaultPodMaxInUnschedulablePodsDuration + 1 s
    assert q.flush_unschedulable_leftover() == 2
    assert pop_names(q, 2) == ["test-highpod", "test-midpod"]


def test_flush_unschedulable_pods_leftover_sets_flag():
    # TestFlushUnschedulablePodsLeftoverSetsFlag
    q, clock = new_test_queue()
    p = pod("test-pod", "ns1", uid="tp-1", priority=MID, nominated="node1")
    q.add(p)
    assert not q.pop_nowait().flushed
    q.add_unschedulable_if_not_present(queued(p, "fakePlugin"))
    clock.step(301)
    q.flush_unschedulable_leftover()
    qi = q.pop_nowait()
    assert qi.flushed
    q.add_unschedulable_if_not_present(qi)
    assert not q.unschedulable_pods.get(p.uid).flushed


@pytest.mark.parametrize("max_in_unschedulable", [300, 30])
def test_pod_max_in_unschedulable_pods_duration(max_in_unschedulable):
    # TestPriorityQueue_initPodMaxInUnschedulablePodsDuration: both pods move once the duration
    # passed, in timestamp order.
    q, clock = new_test_queue(max_in_unschedulable=max_in_unschedulable)
    now = clock()
    p1 = queued(pod("test-pod-1", "ns1", uid="tp-1", nominated="node1"), timestamp=now - 1, unschedulable_count=1)
    p2 = queued(pod("test-pod-2", "ns2", uid="tp-2", nominated="node2"), timestamp=now - 2, unschedulable_count=1)
    for qi in (p1, p2):
        q.unschedulable_pods.add_or_update(qi)
    clock.step(max_in_unschedulable)
    q.flush_unschedulable_leftover()
    assert [q.active_q.pop_head(), q.active_q.pop_head()] == [p2, p1]


def test_pod_timestamp():
    # TestPodTimestamp: activeQ orders equal priorities by the time they entered the queue.
    q, clock = new_test_queue()
    t = clock()
    p1 = queued(pod("test-pod-1", "ns1", uid="tp-1", nominated="node1"), timestamp=t)
    p2 = queued(pod("test-pod-2", "ns2", uid="tp-2", nominated="node2"), timestamp=t + 1)
    q.active_q.add(p2)
    q.active_q.add(p1)
    assert [q.active_q.pop_head(), q.active_q.pop_head()] == [p1, p2]
    # Through unschedulablePods and a move.
    for qi in (p2, p1):
        qi.unschedulable_count = 1
        q.unschedulable_pods.add_or_update(qi)
    clock.step(3)
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert [q.active_q.pop_head(), q.active_q.pop_head()] == [p1, p2]


def test_failed_pod_does_not_block_newer(frameworks):
    q, clock = new_queue(frameworks)
    q.add(pod_info("old"))
    qi = q.pop_nowait()
    fail(q, qi, "NodeResourcesFit")
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)
    clock.step(0.1)
    q.add(pod_info("new"))
    assert q.pop_nowait().pod.name == "new"


# -- the default profile's plugins and hints ---------------------------------------------------------

NODE_BIG = NodeInfo(make_node("big", cpu="1000"))
NODE_SMALL = NodeInfo(make_node("small", cpu="1"))


@pytest.mark.parametrize(
    ("plugin", "event", "old", "new", "moved"),
    [
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.ADD), None, NODE_BIG, True),
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.ADD), None, NODE_SMALL, False),  # hint: still no fit
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL), NODE_SMALL, NODE_BIG, False),
        # Node/Add without Node/UpdateNodeTaint: the taint update is registered too, always Queue.
        ("NodeResourcesFit", ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT), NODE_SMALL, NODE_SMALL, True),
        ("NodeResourcesFit", ClusterEvent("AssignedPod", ActionType.DELETE),
         pod_info("victim", node_name="small", cpu="1"), None, True),
        ("TaintToleration", ClusterEvent("Node", ActionType.ADD), None, NODE_BIG, True),
        ("NodeAffinity", ClusterEvent("Service", ActionType.ADD), None, None, False),  # not registered
        # A name no plugin of the profile has (a waiting pod rejected through the API is recorded
        # with plugin ""): no hint is registered for it, only wildcards move the pod.
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
    assert (q.move_all_to_active_or_backoff(event, old, new) == 1) == moved
    assert q.where(qi.pod.uid) == (ACTIVE if moved else UNSCHEDULABLE)


def test_event_during_flight_requeues(frameworks):
    # A node added while the pod was being scheduled must not leave it parked in unschedulable.
    q, _ = new_queue(frameworks)
    q.add(pod_info("a", cpu="100"))
    qi = q.pop_nowait()
    q.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, NODE_BIG)
    assert fail(q, qi, "NodeResourcesFit") == BACKOFF
    q2, _ = new_queue(frameworks)
    q2.add(pod_info("b", cpu="100"))
    qi2 = q2.pop_nowait()
    q2.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, NODE_SMALL)
    assert fail(q2, qi2, "NodeResourcesFit") == UNSCHEDULABLE


def test_gated_pod_held_until_gates_removed(frameworks):
    q, clock = new_queue(frameworks)
    gated = pod_info("g", gates=["example.com/wait"])
    q.add(gated)
    assert q.where(gated.uid) == GATED and q.counts()[GATED] == 1
    assert q.pop_nowait() is None
    clock.step(400)
    q.flush_unschedulable_leftover()  # the wildcard does not interest SchedulingGates
    assert q.where(gated.uid) == GATED
    q.update(gated, pod_info("g", labels={"x": "y"}, gates=["example.com/wait"]))
    assert q.where(gated.uid) == GATED
    q.update(gated, pod_info("g"))
    assert q.where(gated.uid) == ACTIVE
    assert q.pop_nowait().pod.name == "g"


# -- metrics: pending pods by queue, incoming pods -----------------------------------------------------

def _queueable(i: int, prefix: str = "x", label: str = "queueable") -> Any:
    return pod(f"{prefix}-{i}", f"ns{i}", uid=f"{prefix}-tp-{i}", labels={label: ""})


@pytest.mark.parametrize(
    ("gate_then_ungate", "step", "pop_from_backoff_q", "want"),
    [
        pytest.param(False, 3, True, {GATED: 1}, id="Gated metric should be 1 when Ungated to Gated transition "
                                                   "into moveToActiveQ"),
        pytest.param(False, 0, True, {GATED: 1}, id="Gated metric should be 1 when Ungated to Gated transition "
                                                   "into moveToBackoffQ"),
        pytest.param(False, 3, False, {GATED: 1}, id="Gated metric should be 1 when Ungated to Gated transition "
                                                    "when popFromBackoffQ is disabled"),
        pytest.param(True, 3, True, {ACTIVE: 1}, id="Gated metric should be 0 when Ungated -> Gated -> Ungated "
                                                   "(ActiveQ) transition"),
        pytest.param(True, 0, True, {BACKOFF: 1}, id="Gated metric should be 0 when Ungated -> Gated -> Ungated "
                                                    "(BackoffQ) transition"),
        pytest.param(True, 3, False, {ACTIVE: 1}, id="Gated metric should be 0 when Ungated -> Gated -> Ungated "
                                                    "transition, when popFromBackoffQ is disabled"),
    ],
)
def test_scheduler_pods_metric_gating(gate_then_ungate, step, pop_from_backoff_q, want):
    # TestSchedulerPodsMetric (the gated/ungated transitions): counts() is the pending_pods gauge.
    plugin = AllowList(["queueable"])
    hints = hint_map((UNSCHEDULED_POD_UPDATE, "preEnqueuePlugin", queue_hint_return_queue))
    q, clock = new_test_queue(hints, pre_enqueue=[plugin], pop_from_backoff_q=pop_from_backoff_q)
    p = _queueable(1)
    q.unschedulable_pods.add_or_update(queued(p, timestamp=clock(), unschedulable_count=1))
    clock.step(step)
    plugin.allow = [""]  # gates every pod
    queueable = pod(p.name, p.namespace, uid=p.uid, labels={"queueable": ""})
    q.update(p, queueable)
    if gate_then_ungate:
        plugin.allow = ["queueable"]
        q.update(p, queueable)
    assert q.counts() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0, **want}


def test_scheduler_pods_metric_by_queue():
    # TestSchedulerPodsMetric "add pods to all kinds of queues" and "... then delete some Pods".
    q, clock = new_test_queue(pre_enqueue=[AllowList(["queueable"])])
    pods = [_queueable(i) for i in range(50)] + [_queueable(i, "y", "failme") for i in range(10)]
    for p in pods[:15]:
        q.add(p)
    for p in pods[15:40]:
        q.backoff_q.add(queued(p, timestamp=clock()))
    for p in pods[40:]:
        qi = queued(p, timestamp=clock(), unschedulable_count=1)
        if p.name.startswith("y"):
            qi.gated, qi.gating_plugin = True, "preEnqueuePlugin"
        q.unschedulable_pods.add_or_update(qi)
    assert q.counts() == {ACTIVE: 15, BACKOFF: 25, UNSCHEDULABLE: 10, GATED: 10}
    for p in pods[:2] + pods[15:17] + pods[50:54]:
        q.delete(p.uid)
    assert q.counts() == {ACTIVE: 13, BACKOFF: 23, UNSCHEDULABLE: 10, GATED: 6}


def _pop_and_requeue_as_unschedulable(q, clock, p):
    q.add(p)
    qi = q.pop_nowait()
    qi.unschedulable_plugins = {"unschedulable_plugin"}
    q.add_unschedulable_if_not_present(qi)


def _pop_and_requeue_as_backoff(q, clock, p):
    q.add(p)
    qi = q.pop_nowait()
    q.add_unschedulable_if_not_present(qi)


def _move_all(q, clock, p):
    q.move_all_to_active_or_backoff(EVENT_UNSCHEDULABLE_TIMEOUT)


def _clock_forward(q, clock, p):
    clock.step(3)


def _flush_backoff(q, clock, p):
    clock.step(3)
    q.flush_backoff_completed()


@pytest.mark.parametrize(
    ("operations", "want"),
    [
        pytest.param([lambda q, c, p: q.add(p)], {("active", "UnschedulablePodAdd"): 3}, id="add pods to activeQ"),
        pytest.param([_pop_and_requeue_as_unschedulable],
                     {("active", "UnschedulablePodAdd"): 3, ("unschedulable", "ScheduleAttemptFailure"): 3},
                     id="add pods to unschedulablePods"),
        pytest.param([_pop_and_requeue_as_unschedulable, _move_all],
                     {("active", "UnschedulablePodAdd"): 3, ("unschedulable", "ScheduleAttemptFailure"): 3,
                      ("backoff", "UnschedulableTimeout"): 3},
                     id="add pods to unschedulablePods and then move all to backoffQ"),
        pytest.param([_pop_and_requeue_as_unschedulable, _clock_forward, _move_all],
                     {("active", "UnschedulablePodAdd"): 3, ("unschedulable", "ScheduleAttemptFailure"): 3,
                      ("active", "UnschedulableTimeout"): 3},
                     id="add pods to unschedulablePods and then move all to activeQ"),
        pytest.param([_pop_and_requeue_as_backoff, _clock_forward, _flush_backoff],
                     {("active", "UnschedulablePodAdd"): 3, ("active", "BackoffComplete"): 3,
                      ("backoff", "ScheduleAttemptFailure"): 3},
                     id="make some pods subject to backoff and add them to backoffQ, then flush backoffQ"),
    ],
)
def test_incoming_pods_metrics(operations, want):
    # TestIncomingPodsMetrics: scheduler_queue_incoming_pods_total's (queue, event) labels.
    q, clock = new_test_queue()
    got: dict[tuple[str, str], int] = {}
    q.on_incoming = lambda queue, event: got.__setitem__((queue, event), got.get((queue, event), 0) + 1)
    pods = [pod(f"test-pod-{i}", f"ns{i}", uid=f"tp-{i}") for i in range(1, 4)]
    for op in operations:
        for p in pods:
            op(q, clock, p)
    assert got == want


def test_pop_from_backoff_q_is_counted():
    q, clock = new_test_queue()
    got: list[tuple[str, str]] = []
    q.on_incoming = lambda queue, event: got.append((queue, event))
    q.backoff_q.add(queued(pod("b"), "plugin", timestamp=clock(), unschedulable_count=1))
    assert q.pop_nowait().pod.name == "b"
    assert got == [("active", "PopFromBackoffQ")]


# -- the async side: Pop waits, Close, the aligned flush ----------------------------------------------

async def test_async_pop_wakes_on_add_and_close():
    # TestSchedulingQueue_Close: a waiting Pop returns nothing once the queue is closed.
    q, _ = new_test_queue()
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.add(pod("a"))
    assert (await asyncio.wait_for(waiter, 1)).pod.name == "a"
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(waiter, 1) is None


async def test_async_pop_takes_a_pod_moved_to_backoff_at_once():
    # PopFromBackoffQ: a pod moved to backoffQ is popped without waiting for its backoff.
    q, _ = new_test_queue(hint_map((NODE_ADD, "plugin", queue_hint_return_queue)))
    p = pod("a")
    q.add(p)
    fail(q, q.pop_nowait(), "plugin")
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.move_all_to_active_or_backoff(NODE_ADD)
    got = await asyncio.wait_for(waiter, 1)
    assert got.pod is p and q.is_backing_off(got)


async def test_run_flushers_tick_on_window_starts():
    # waitUntilAlignedWithOrderingWindow: the backoff flush runs as each window starts.
    loop = asyncio.get_running_loop()
    q, _ = new_test_queue(clock=loop.time, window_phase=0.0)  # type: ignore[arg-type]
    p = pod("err")
    q.add(p)
    qi = q.pop_nowait()
    failed_at = loop.time()
    q.add_unschedulable_if_not_present(qi)  # an error: podErrorBackoffQ, never popped early
    task = asyncio.create_task(q.run_flushers())
    waiter = asyncio.create_task(q.pop())
    got = await asyncio.wait_for(waiter, 5)
    done_at = loop.time()
    q.close()
    await asyncio.wait_for(task, 5)
    assert got is qi
    # 1 s backoff truncated to its window, completed as the next window starts.
    assert int(failed_at + 1) + 1 <= done_at < int(failed_at + 1) + 1.5


# -- nominated pods -----------------------------------------------------------------------------------

def _nominations(q: SchedulingQueue) -> dict[str, list[str]]:
    return {node: [p.name for p in pods.values()] for node, pods in q.nominator.nominated_nodes().items()}


def test_nominated_pods_for_node():
    # TestPriorityQueue_NominatedPodsForNode: the pods nominated to a node, popped or not.
    q, _ = new_test_queue()
    for p in (MED_POD, UNSCHEDULABLE_POD, HIGH_POD):
        q.add(p)
    assert q.pop_nowait().pod is HIGH_POD
    assert q.nominator.nominated_pods_for_node("node1") == [MED_POD, UNSCHEDULABLE_POD]
    assert q.nominator.nominated_pods_for_node("node2") == []


def test_update_nominated_pod_for_node():
    # TestPriorityQueue_UpdateNominatedPodForNode (the informer checks are the loop's: it
    # nominates only pods still pending).
    q, _ = new_test_queue()
    q.add(MED_POD)
    q.nominator.add(UNSCHEDULABLE_POD, "override", "node5")
    q.nominator.add(HIGH_POD, "override", "node2")
    want = {"node1": ["mpp"], "node2": ["hpp"], "node5": ["up"]}
    assert _nominations(q) == want
    assert q.pop_nowait().pod is MED_POD
    assert _nominations(q) == want  # popping changes no nomination
    q.nominator.add(HIGH_POD, "override", "node4")
    assert _nominations(q) == {"node1": ["mpp"], "node4": ["hpp"], "node5": ["up"]}
    q.nominator.delete(HIGH_POD.uid)
    assert _nominations(q) == {"node1": ["mpp"], "node5": ["up"]}
