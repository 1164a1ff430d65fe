"""The synchronous scheduling cycle shared by the live loop and ``simulate`` (the pure part of
upstream schedule_one.go: schedulingCycle, assume): decide, assume, Reserve, Permit.

A failed attempt ends in one Status: a plugin's own error, or a rejection whose ``err`` is a
``FitError`` with its diagnosis (upstream ``NewStatus(code).WithError(fitError)``): the pod fits
no node, or Reserve or Permit rejected it on the chosen one (a FitError over that one node, as
upstream). ``rejecting_plugins`` reads the plugins to requeue on off that Status.

A Permit plugin that asks to wait leaves the assumed pod in the framework's waiting pods; the
edge's binding cycle waits for its outcome (``binding_rejection`` words a rejection). Pods that
plugins put in the state's PodsToActivate go to activeQ at the end of a cycle that succeeds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from scheduler.backend.cache import Cache
from scheduler.core.algorithm import Algorithm, Diagnosis, FitError, ScheduleResult
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PODS_TO_ACTIVATE_KEY, PodsToActivate, PostFilterResult
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.pod import PodInfo


@dataclass(slots=True)
class CycleOutcome:
    pod: PodInfo
    state: CycleState
    result: ScheduleResult | None = None
    assumed: PodInfo | None = None  # the pod as assumed on ``result.suggested_host``
    status: Status | None = None  # why the attempt failed (Unschedulable..., or Error)
    post_filter: PostFilterResult | None = None
    # What the failure does to the pod's nominated node (upstream NominatingInfo): (mode, node),
    # mode "override" (set, or clear with "") or "noop". Errors clear it, as upstream.
    nominating: tuple[str, str] = ("override", "")
    # OpportunisticBatching's inputs: the queued pod's signature, the queue's scheduling cycle.
    signature: bytes | None = None
    cycle: int = 0

    @property
    def node(self) -> str | None:
        return self.result.suggested_host if self.assumed is not None and self.result else None

    @property
    def fit_error(self) -> FitError | None:
        err = self.status.err if self.status is not None else None
        return err if isinstance(err, FitError) else None

    @property
    def message(self) -> str:
        return self.status.message if self.status is not None else ""


def rejecting_plugins(st: Status) -> tuple[set[str], set[str]]:
    """(unschedulable, pending) plugins of a failed attempt: the queue moves the pod back on
    the events they registered; none (an error) means backoff (upstream handleSchedulingFailure)."""
    fe = st.err
    if isinstance(fe, FitError):
        return fe.diagnosis.unschedulable_plugins, fe.diagnosis.pending_plugins
    return ({st.plugin} if st.is_rejected() and st.plugin else set()), set()


def single_node_rejection(pod: PodInfo, node: str, st: Status, plugins: set[str] | None = None) -> Status:
    """A Reserve or Permit rejection on the chosen node as upstream words it: a FitError over
    that one node ("0/1 nodes are available: 1 <reason>."), with the same code. ``plugins``:
    the rejectors to record (default: the status's plugin, if it names one)."""
    diag = Diagnosis()
    diag.node_to_status.statuses[node] = st
    if plugins is None:
        diag.add_plugin_status(st)
    else:
        diag.unschedulable_plugins = set(plugins)
    fe = FitError(pod, 1, diag)
    return Status(st.code, str(fe), err=fe)


def binding_rejection(pod: PodInfo, node: str, st: Status) -> Status:
    """A waiting pod rejected (by a plugin, a timeout or the API): upstream's bindingCycle names
    the status's plugin, even an empty one, as the plugin that made it unschedulable."""
    return single_node_rejection(pod, node, st, {st.plugin})


def activate_pods(fw: Framework, state: CycleState) -> None:
    """Hand the pods plugins asked for to the queue (upstream, at the end of a successful
    scheduling or binding cycle); the map is emptied so the binding cycle does not repeat them."""
    acts = state.get(PODS_TO_ACTIVATE_KEY)
    if isinstance(acts, PodsToActivate) and acts.pods:
        pods, acts.pods = acts.pods, {}
        fw.handle.activate(pods)


def assumed_copy(pod: PodInfo, node: str) -> PodInfo:
    p = copy.copy(pod)
    p.node_name = node
    return p


def scheduling_cycle(
    fw: Framework, alg: Algorithm, cache: Cache, snap: Snapshot, pod: PodInfo,
    signature: bytes | None = None, cycle: int = 0,
) -> CycleOutcome:
    cache.update_snapshot(snap)
    state = CycleState(fw.sample_plugin_metrics())
    state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
    out = CycleOutcome(pod, state, signature=signature, cycle=cycle)
    if run_scheduling_algorithm(fw, alg, snap, out):
        assert out.result is not None
        assume_reserve_permit(fw, cache, out, out.result.suggested_host)
    return out


def run_scheduling_algorithm(fw: Framework, alg: Algorithm, snap: Snapshot, out: CycleOutcome) -> bool:
    """Filter and score ``out.pod`` on ``snap``, PostFilter when it fits nowhere (upstream
    schedulingAlgorithm); fills ``out``. True when a node was found (``out.result``)."""
    state, pod = out.state, out.pod
    try:
        result = alg.schedule_pod(fw, state, pod, snap, out.signature, out.cycle)
    except FitError as fe:
        # The status keeps the error (queue hints, decision records); its traceback would keep
        # the algorithm's frames, the cycle state among their locals, for as long.
        fe.__traceback__ = None
        if fw.has_post_filter_plugins():
            r, s = fw.run_post_filter(state, pod, fe.diagnosis.node_to_status)
            fe.diagnosis.post_filter_msg = s.message
            out.post_filter = r
            out.nominating = ("noop", "") if r is None else (r.mode, r.nominated_node_name)
        # The message is the FitError's, PostFilter's outcome included.
        out.status = Status(Code.UNSCHEDULABLE, str(fe), err=fe)
        return False
    except StatusError as exc:
        out.status = exc.status
        return False
    out.result = result
    return True


def assume_reserve_permit(fw: Framework, cache: Cache, out: CycleOutcome, node: str) -> None:
    """Assume ``out.pod`` on ``node`` in the cache, then Reserve and Permit (upstream
    prepareForBindingCycle): a pod asked to wait joins the waiting pods; on failure everything
    is undone and ``out.status`` says why."""
    state, pod = out.state, out.pod
    assumed = assumed_copy(pod, node)
    try:
        cache.assume_pod(assumed, node)
    except ValueError as exc:
        out.status = Status(Code.ERROR, str(exc), err=exc)
        return
    reserve = fw.run_reserve(state, assumed, node)
    if reserve is not None:
        fw.run_unreserve(state, assumed, node)
        cache.forget_pod(assumed.uid)
        out.status = single_node_rejection(pod, node, reserve) if reserve.is_rejected() else reserve
        return
    waits, permit = fw.run_permit(state, assumed, node)
    if permit is not None and permit.code == Code.WAIT:
        fw.add_waiting_pod(assumed, waits)
    elif permit is not None:
        fw.run_unreserve(state, assumed, node)
        cache.forget_pod(assumed.uid)
        out.status = single_node_rejection(pod, node, permit) if permit.is_rejected() else permit
        return
    activate_pods(fw, state)
    out.assumed = assumed
