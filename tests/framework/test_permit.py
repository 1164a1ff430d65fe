"""Permit in the framework runtime: RunPermitPlugins, AddWaitingPod and the tail of WaitOnPermit.
Expected values from upstream framework/runtime/framework_test.go (TestPermitPlugins,
TestWaitOnPermit) and framework.go (maxTimeout, the "waiting on permit for pod" error)."""

from __future__ import annotations

import pytest

from scheduler.config import parse_config
from scheduler.core.profiles import build_frameworks
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import MAX_PERMIT_TIMEOUT
from scheduler.testing.builders import pod_info
from scheduler.testing.fakes import FakePermitTimer
from scheduler.testing.permit import fake_permit, with_plugins

INJECTED = "injected status"
POD = pod_info("pod")


def framework(*plugins, timer=None) -> Framework:
    cfg, registry = with_plugins(*plugins)
    return build_frameworks(cfg, Snapshot(), Listers(), registry=registry, permit_timer=timer)["default-scheduler"]


def injected(code: Code, timeout: float = 0.0):
    return Status(code, INJECTED), timeout


@pytest.mark.parametrize(
    ("answers", "want_waits", "want"),
    [
        pytest.param([], {}, None, id="NilPermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.SUCCESS))], {}, None, id="SuccessPermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.UNSCHEDULABLE))], {},
                     (Code.UNSCHEDULABLE, INJECTED, "TestPlugin"), id="UnschedulablePermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.ERROR))], {},
                     (Code.ERROR, f'running Permit plugin "TestPlugin": {INJECTED}', "TestPlugin"),
                     id="ErrorPermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))], {},
                     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, INJECTED, "TestPlugin"),
                     id="UnschedulableAndUnresolvablePermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.WAIT)), ("TestPlugin2", injected(Code.WAIT, 1.0))],
                     {"TestPlugin": 0.0, "TestPlugin2": 1.0},
                     (Code.WAIT, f"{INJECTED}, one or more plugins asked to wait and no plugin rejected pod", ""),
                     id="WaitPermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.SUCCESS)), ("TestPlugin1", injected(Code.SUCCESS))], {}, None,
                     id="SuccessSuccessPermitPlugin"),
        pytest.param([("TestPlugin", injected(Code.ERROR)), ("TestPlugin1", injected(Code.ERROR))], {},
                     (Code.ERROR, f'running Permit plugin "TestPlugin": {INJECTED}', "TestPlugin"),
                     id="ErrorAndErrorPlugins"),
        # Not allowed to be greater than maxTimeout.
        pytest.param([("Long", injected(Code.WAIT, 3600.0))], {"Long": MAX_PERMIT_TIMEOUT},
                     (Code.WAIT, f"{INJECTED}, one or more plugins asked to wait and no plugin rejected pod", ""),
                     id="WaitCappedAtFifteenMinutes"),
        # A rejection after a wait wins: the pod is not made to wait.
        pytest.param([("W", injected(Code.WAIT, 5.0)), ("R", injected(Code.UNSCHEDULABLE))], {},
                     (Code.UNSCHEDULABLE, INJECTED, "R"), id="WaitThenReject"),
    ],
)
def test_run_permit_plugins(answers, want_waits, want) -> None:
    # TestPermitPlugins
    plugins = [fake_permit(name, lambda pod, a=answer: a) for name, answer in answers]
    fw = framework(*plugins)
    waits, st = fw.run_permit(CycleState(), POD, "")
    assert waits == want_waits
    if want is None:
        assert st is None
    else:
        assert st is not None and (st.code, st.message, st.plugin) == want


def test_a_plugin_that_raises_is_an_error() -> None:
    def boom(pod):
        raise RuntimeError("permit error")

    fw = framework(fake_permit("FakePermit", boom))
    _, st = fw.run_permit(CycleState(), POD, "")
    assert st is not None and (st.code, st.message) == (Code.ERROR, 'running Permit plugin "FakePermit": permit error')


@pytest.mark.parametrize(
    ("action", "want"),
    [
        pytest.param(lambda fw: fw.get_waiting_pod(POD.uid).reject("permitPlugin", "reject message"),
                     (Code.UNSCHEDULABLE, "reject message", "permitPlugin"), id="Reject Waiting Pod"),
        pytest.param(lambda fw: fw.get_waiting_pod(POD.uid).allow("permitPlugin"), None, id="Allow Waiting Pod"),
        # Anything but Success or a rejection (a preemption) is an Error naming the wait.
        pytest.param(lambda fw: fw.get_waiting_pod(POD.uid).preempt("DefaultPreemption", "preempted"),
                     (Code.ERROR, "waiting on permit for pod: preempted", "DefaultPreemption"),
                     id="Preempt Waiting Pod"),
    ],
)
def test_wait_on_permit(action, want) -> None:
    # TestWaitOnPermit
    fw = framework(fake_permit("permitPlugin", Status(Code.WAIT), 10.0))
    waits, st = fw.run_permit(CycleState(), POD, "")
    assert st is not None and st.code == Code.WAIT
    wp = fw.add_waiting_pod(POD, waits)
    assert fw.will_wait_on_permit(POD)
    outcome: list[Status] = []
    wp.on_done(outcome.append)
    action(fw)
    got = fw.end_wait_on_permit(POD, outcome[0])
    assert (None if got is None else (got.code, got.message, got.plugin)) == want
    assert not fw.will_wait_on_permit(POD) and fw.get_waiting_pod(POD.uid) is None


def test_waiting_pod_times_out_on_the_edges_clock() -> None:
    # TestPermitWaitDurationMetric "Wait Timeout" (its outcome; the metric is the live loop's).
    timer = FakePermitTimer()
    fw = framework(fake_permit("Waiter", Status(Code.WAIT), 300.0), timer=timer)
    waits, _ = fw.run_permit(CycleState(), POD, "")
    wp = fw.add_waiting_pod(POD, waits)
    timer.advance(300.0)
    st = wp.result()
    assert st is not None
    assert (st.code, st.plugin, st.message) == (
        Code.UNSCHEDULABLE, "Waiter", "rejected due to timeout after waiting 5m0s at plugin Waiter"
    )


def test_profiles_share_one_map_of_waiting_pods() -> None:
    # scheduler.New gives every profile's framework the same waitingPodsMap.
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]}
    fws = build_frameworks(parse_config(doc), Snapshot(), Listers())
    fws["a"].add_waiting_pod(POD, {"W": 1.0})
    assert fws["b"].get_waiting_pod(POD.uid) is not None
    assert fws["b"].handle.reject_waiting_pod(POD.uid) is True
