"""The outcome of a failed scheduling cycle: one Status, and the plugins the queue requeues on
(upstream schedule_one.go handleSchedulingFailure reads them off the FitError's diagnosis)."""

from __future__ import annotations

from scheduler.core.algorithm import Diagnosis, FitError
from scheduler.core.cycle import CycleOutcome, rejecting_plugins
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod

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
