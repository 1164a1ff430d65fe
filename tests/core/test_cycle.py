"""The outcome of a failed scheduling cycle: one Status, and the plugins the queue requeues on
(upstream schedule_one.go handleSchedulingFailure reads them off the FitError's diagnosis)."""

from __future__ import annotations

import random

import pytest

from scheduler.backend.cache import Cache
from scheduler.core.algorithm import Algorithm, Diagnosis, FitError
from scheduler.core.cycle import CycleOutcome, rejecting_plugins, scheduling_cycle
from scheduler.core.profiles import build_frameworks
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PODS_TO_ACTIVATE_KEY, PodsToActivate
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod, pod_info
from scheduler.testing.permit import fake_permit, fake_reserve, with_plugins

POD = PodInfo(make_pod("p"))


def test_fit_error_rejecting_and_pending_plugins() -> None:
    fe = FitError(POD, 3, Diagnosis(unschedulable_plugins={"NodeResourcesFit", "TaintToleration"},
                                    pending_plugins={"DynamicResources"}))
    st = Status(Code.UNSCHEDULABLE, str(fe), err=fe)
    assert rejecting_plugins(st) == ({"NodeResourcesFit", "TaintToleration"}, {"DynamicResources"})
    out = CycleOutcome(POD, CycleState(), status=st)
    assert out.fit_error is fe and out.message == str(fe)


def test_a_plugins_own_rejection_names_it() -> None:
    # A Reserve, Permit, PreBind or Bind rejection: the plugin that returned it.
    st = Status(Code.UNSCHEDULABLE, "no room", plugin="VolumeBinding")
    assert rejecting_plugins(st) == ({"VolumeBinding"}, set())
    assert CycleOutcome(POD, CycleState(), status=st).fit_error is None


def test_an_error_rejects_nothing() -> None:
    # No rejecting plugin: the pod goes to backoff, not to the unschedulable pods.
    assert rejecting_plugins(Status(Code.ERROR, "boom", plugin="DefaultBinder")) == (set(), set())


# -- Reserve and Permit in the scheduling cycle (schedule_one_test.go TestSchedulerScheduleOne) --

def cycle_with(*plugins):
    cfg, registry = with_plugins(*plugins)
    snap, listers, cache = Snapshot(), Listers(), Cache()
    fw = build_frameworks(cfg, snap, listers, registry=registry, activator=ACTIVATED.append)["default-scheduler"]
    cache.add_node(make_node("node1", cpu="4"))
    return lambda pod: scheduling_cycle(fw, Algorithm(random.Random(0)), cache, snap, pod), fw, cache


ACTIVATED: list = []


@pytest.mark.parametrize(
    ("name", "reserve", "permit", "want_code", "want_message", "want_plugins"),
    [
        ("reserve failed with status code error", Status(Code.ERROR, "reserve error"), None,
         Code.ERROR, 'running Reserve plugin "FakeReserve": reserve error', set()),
        ("reserve failed with status code rejected",
         Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "rejected on reserve"), None,
         Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "0/1 nodes are available: 1 rejected on reserve.", {"FakeReserve"}),
        ("permit failed with status code error", None, Status(Code.ERROR, "permit error"),
         Code.ERROR, 'running Permit plugin "FakePermit": permit error', set()),
        ("permit failed with status code rejected", None, Status(Code.UNSCHEDULABLE, "rejected on permit"),
         Code.UNSCHEDULABLE, "0/1 nodes are available: 1 rejected on permit.", {"FakePermit"}),
    ],
)
def test_reserve_and_permit_failures(name, reserve, permit, want_code, want_message, want_plugins) -> None:
    # The pod was assumed, then Unreserve ran and the assumption was forgotten (expectForgetPod);
    # a rejection is a FitError over the one node ("makePredicateError").
    res, perm = fake_reserve(reserve), fake_permit("FakePermit", permit, 60.0)
    run, _, cache = cycle_with(res, perm)
    out = run(pod_info("foo"))
    assert out.assumed is None and cache.get_pod("uid-default-foo") is None
    assert out.status is not None and (out.status.code, out.status.message) == (want_code, want_message)
    assert rejecting_plugins(out.status)[0] == want_plugins
    assert res.calls[-1] == ("Unreserve", "foo", "node1")
    assert out.nominating == ("override", "")  # clearNominatedNode


def test_permit_wait_leaves_the_pod_assumed_and_waiting() -> None:
    # "permit plugin is working in wait on permit phase": assumed, then bound once admitted.
    run, fw, cache = cycle_with(fake_permit("FakePermit", Status(Code.WAIT, "rejected on permit"), 60.0))
    out = run(pod_info("foo"))
    assert out.status is None and out.node == "node1"
    assert cache.is_assumed("uid-default-foo")
    wp = fw.get_waiting_pod("uid-default-foo")
    assert wp is not None and wp.get_pending_plugins() == ["FakePermit"]
    assert wp.pod.node_name == "node1"


def test_pods_to_activate_after_a_successful_cycle_only() -> None:
    # prepareForBindingCycle: PodsToActivate handed to the queue at the end of a successful
    # scheduling cycle (and emptied); a failed cycle activates nobody.
    other = pod_info("other")

    def ask(pod):
        return None, 0.0

    class Activating(fake_permit("Activating", ask)):
        def permit(self, state, pod, node_name):
            state.read(PODS_TO_ACTIVATE_KEY, PodsToActivate).pods[other.key] = other
            return (Status(Code.UNSCHEDULABLE, "no") if pod.name == "rejected" else None), 0.0

    ACTIVATED.clear()
    run, _, _ = cycle_with(Activating)
    out = run(pod_info("rejected"))
    assert out.status is not None and ACTIVATED == []
    out = run(pod_info("ok"))
    assert out.status is None and [{other.key: other}] == ACTIVATED
    assert out.state.read(PODS_TO_ACTIVATE_KEY, PodsToActivate).pods == {}


def test_a_failed_cycles_fit_error_keeps_no_traceback() -> None:
    # The status keeps its FitError for the queue and the records; a traceback would keep the
    # algorithm's frames (and the cycle state among their locals) alive as long.
    run, _, _ = cycle_with()
    out = run(PodInfo(make_pod("huge", cpu="64")))
    assert out.fit_error is not None and out.status is not None
    assert out.fit_error.__traceback__ is None
    assert out.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
