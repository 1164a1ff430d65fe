"""The synchronous scheduling cycle shared by the live loop and ``simulate``
(upstream schedule_one.go schedulingCycle): decide, assume, Reserve, Permit."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from scheduler.backend.cache import Cache
from scheduler.core.algorithm import Algorithm, FitError, ScheduleResult, SchedulingError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PostFilterResult
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo


@dataclass(slots=True)
class CycleOutcome:
    pod: PodInfo
    state: CycleState
    result: ScheduleResult | None = None
    assumed: PodInfo | None = None  # the pod as assumed on ``result.suggested_host``
    fit_error: FitError | None = None
    status: Status | None = None  # why the attempt failed (Unschedulable..., or Error)
    post_filter: PostFilterResult | None = None
    permit_timeout: float | None = None  # set when a Permit plugin asked to wait
    # What the failure does to the pod's nominated node (upstream NominatingInfo): (mode, node),
    # mode "override" (set, or clear with "") or "noop". Errors clear it, as upstream.
    nominating: tuple[str, str] = ("override", "")

    @property
    def node(self) -> str | None:
        return self.result.suggested_host if self.assumed is not None and self.result else None

    @property
    def message(self) -> str:
        if self.fit_error is not None:
            return str(self.fit_error)
        return self.status.message if self.status is not None else ""


def assumed_copy(pod: PodInfo, node: str) -> PodInfo:
    p = copy.copy(pod)
    p.node_name = node
    return p


def scheduling_cycle(fw: Framework, alg: Algorithm, cache: Cache, snap: Snapshot, pod: PodInfo) -> CycleOutcome:
    cache.update_snapshot(snap)
    state = CycleState()
    out = CycleOutcome(pod, state)
    try:
        result = alg.schedule_pod(fw, state, pod, snap)
    except FitError as fe:
        out.fit_error = fe
        rejector = sorted(fe.diagnosis.unschedulable_plugins)
        out.status = Status(Code.UNSCHEDULABLE, str(fe), plugin=",".join(rejector))
        if fw.has_post_filter_plugins():
            r, s = fw.run_post_filter(state, pod, fe.diagnosis.node_to_status)
            fe.diagnosis.post_filter_msg = s.message
            out.post_filter = r
            out.nominating = ("noop", "") if r is None else (r.mode, r.nominated_node_name)
            out.status = Status(Code.UNSCHEDULABLE, str(fe), plugin=out.status.plugin)
        return out
    except SchedulingError as se:
        out.status = se.status
        return out
    out.result = result
    node = result.suggested_host
    assumed = assumed_copy(pod, node)
    try:
        cache.assume_pod(assumed, node)
    except ValueError as exc:
        out.status = Status(Code.ERROR, str(exc))
        return out
    reserve = fw.run_reserve(state, assumed, node)
    if reserve is not None:
        fw.run_unreserve(state, assumed, node)
        cache.forget_pod(assumed.uid)
        out.status = reserve
        return out
    permit, timeout = fw.run_permit(state, assumed, node)
    if permit is not None and permit.code != Code.WAIT:
        fw.run_unreserve(state, assumed, node)
        cache.forget_pod(assumed.uid)
        out.status = permit
        return out
    if permit is not None:
        out.permit_timeout = timeout
    out.assumed = assumed
    return out
