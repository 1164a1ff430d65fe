"""WaitingPod and the waiting-pods map. Expected behaviour from upstream
framework/runtime/waiting_pods_map_test.go (TestWaitingPodReturnFalseOnAllowed,
TestWaitingPodMultipleActions), waiting_pods_map.go (per-plugin timers, the timeout message,
the one-slot channel: the first outcome wins) and framework.go (RejectWaitingPod)."""

from __future__ import annotations

import threading

import pytest

from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import WaitingPod, WaitingPodsMap, timeout_message
from scheduler.testing.builders import pod_info
from scheduler.testing.fakes import FakePermitTimer

POD = pod_info("test-pod")


def outcomes(wp: WaitingPod) -> list[Status]:
    got: list[Status] = []
    wp.on_done(got.append)
    return got


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(lambda wp: wp.preempt("preemption-plugin", "preempted"),
                     id="Preempt returns false on allowed pod"),
        pytest.param(lambda wp: wp.reject("reject-plugin", "rejected"), id="Reject returns false on allowed pod"),
    ],
)
def test_return_false_on_allowed(action) -> None:
    # TestWaitingPodReturnFalseOnAllowed
    wp = WaitingPod(POD, {"plugin1": 10.0})
    got = outcomes(wp)
    wp.allow("plugin1")
    assert action(wp) is False
    assert [s.code for s in got] == [Code.SUCCESS]
    assert wp.result() == Status(Code.SUCCESS)


def test_multiple_actions_after_the_outcome_was_taken() -> None:
    # TestWaitingPodMultipleActions: the allow is consumed; later reject and preempt fail.
    wp = WaitingPod(POD, {"plugin1": 10.0})
    got = outcomes(wp)
    wp.allow("plugin1")
    assert got == [Status(Code.SUCCESS)]
    assert wp.reject("plugin2", "rejected") is False
    assert wp.preempt("preemption-plugin", "preempted") is False
    assert len(got) == 1


def test_released_only_when_every_waiting_plugin_allowed() -> None:
    # waitingPod.Allow: "Only signal success status after all plugins have allowed".
    wp = WaitingPod(POD, {"A": 10.0, "B": 10.0})
    got = outcomes(wp)
    wp.allow("A")
    assert got == [] and wp.result() is None
    assert wp.get_pending_plugins() == ["B"]
    wp.allow("C")  # not waiting on C: nothing changes
    assert got == []
    wp.allow("B")
    assert got == [Status(Code.SUCCESS)]
    assert wp.get_pending_plugins() == []


def test_first_rejection_wins() -> None:
    wp = WaitingPod(POD, {"A": 10.0, "B": 10.0})
    got = outcomes(wp)
    assert wp.reject("A", "no") is True
    # Upstream's Reject leaves the pending plugins as they were.
    assert sorted(wp.get_pending_plugins()) == ["A", "B"]
    assert wp.reject("B", "also no") is False
    wp.allow("A")
    wp.allow("B")
    assert len(got) == 1
    assert (got[0].code, got[0].message, got[0].plugin) == (Code.UNSCHEDULABLE, "no", "A")


def test_preempt_is_an_error_not_a_rejection() -> None:
    wp = WaitingPod(POD, {"A": 10.0})
    assert wp.preempt("DefaultPreemption", "preempted") is True
    st = wp.result()
    assert st is not None and (st.code, st.message, st.plugin) == (Code.ERROR, "preempted", "DefaultPreemption")


def test_on_done_after_the_outcome_runs_at_once() -> None:
    wp = WaitingPod(POD, {"A": 10.0})
    wp.reject("A", "no")
    late = outcomes(wp)
    assert [s.message for s in late] == ["no"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (300.0, "5m0s"),  # GangScheduling's and most plugins' 5 minutes
        (900.0, "15m0s"),  # the cap
        (1.0, "1s"),
        (90.5, "1m30.5s"),
        (0.25, "250ms"),
        (0.0, "0s"),
        (3600.0, "1h0m0s"),
    ],
)
def test_timeout_message_uses_go_durations(seconds: float, text: str) -> None:
    # waitingPod's timer: fmt.Sprintf("rejected due to timeout after waiting %v at plugin %v").
    assert timeout_message("P", seconds) == f"rejected due to timeout after waiting {text} at plugin P"


def test_each_plugin_has_its_own_timer() -> None:
    timer = FakePermitTimer()
    wp = WaitingPod(POD, {"Slow": 300.0, "Fast": 60.0}, timer)
    got = outcomes(wp)
    assert timer.armed() == [60.0, 300.0]
    assert timer.advance(59.0) == 0 and got == []
    timer.advance(1.0)
    assert len(got) == 1
    assert (got[0].code, got[0].plugin) == (Code.UNSCHEDULABLE, "Fast")
    assert got[0].message == "rejected due to timeout after waiting 1m0s at plugin Fast"
    # The rejection stopped the other timer.
    assert timer.armed() == []


def test_allow_stops_that_plugins_timer() -> None:
    timer = FakePermitTimer()
    wp = WaitingPod(POD, {"A": 60.0, "B": 300.0}, timer)
    got = outcomes(wp)
    wp.allow("A")
    assert timer.armed() == [300.0]
    timer.advance(300.0)
    assert [s.message for s in got] == ["rejected due to timeout after waiting 5m0s at plugin B"]


def test_a_stale_timer_is_a_noop() -> None:
    # time.AfterFunc may already be running when Allow stops it: the Reject it then makes fails.
    fired: list = []
    wp = WaitingPod(POD, {"A": 60.0}, lambda s, fire: (fired.append(fire), lambda: None)[1])
    got = outcomes(wp)
    wp.allow("A")
    fired[0]()
    assert got == [Status(Code.SUCCESS)]


def test_allow_from_another_thread() -> None:
    # Allow and Reject may come from any goroutine (an informer's handler): the outcome
    # reaches the callback in that thread.
    wp = WaitingPod(POD, {"A": 10.0})
    seen: list[tuple[Status, int]] = []
    done = threading.Event()

    def cb(st: Status) -> None:
        seen.append((st, threading.get_ident()))
        done.set()

    wp.on_done(cb)
    t = threading.Thread(target=wp.allow, args=("A",))
    t.start()
    assert done.wait(5)
    t.join()
    assert seen[0][0] == Status(Code.SUCCESS) and seen[0][1] == t.ident


def test_map_get_iterate_remove() -> None:
    timer = FakePermitTimer()
    m = WaitingPodsMap(timer)
    a, b = WaitingPod(pod_info("a"), {"P": 10.0}, timer), WaitingPod(pod_info("b"), {"P": 10.0}, timer)
    m.add(a)
    m.add(b)
    assert len(m) == 2 and m.get(a.pod.uid) is a and m.get("nope") is None
    # The callback may act on the pods it is given (it runs over a copy).
    m.iterate(lambda wp: wp.reject("P", "all rejected"))
    assert a.result() is not None and b.result() is not None
    assert m.remove(a.pod.uid) is a and m.remove(a.pod.uid) is None
    assert len(m) == 1


def test_remove_stops_the_timers_of_a_pod_cut_short() -> None:
    timer = FakePermitTimer()
    m = WaitingPodsMap(timer)
    m.add(WaitingPod(POD, {"P": 10.0}, timer))
    m.remove(POD.uid)
    assert timer.armed() == []


def test_handle_reject_waiting_pod() -> None:
    # frameworkImpl.RejectWaitingPod: Reject("", "removed"); false when no such pod waits.
    h = Handle(Snapshot(), Listers())
    wp = WaitingPod(POD, {"P": 10.0})
    h.waiting_pods.add(wp)
    assert h.get_waiting_pod(POD.uid) is wp
    seen: list[str] = []
    h.iterate_over_waiting_pods(lambda w: seen.append(w.pod.name))
    assert seen == ["test-pod"]
    assert h.reject_waiting_pod(POD.uid) is True
    st = wp.result()
    assert st is not None and (st.code, st.plugin, st.message) == (Code.UNSCHEDULABLE, "", "removed")
    assert h.reject_waiting_pod(POD.uid) is False  # already rejected
    assert h.reject_waiting_pod("nobody") is False
