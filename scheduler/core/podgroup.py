"""The pod-group scheduling cycle (upstream schedule_one_podgroup.go, GenericWorkload gate): the
pure, synchronous part the live loop and ``simulate`` share.

A popped pod that names a PodGroup brings its whole group: the group's other unscheduled pods
are taken out of the queue (``collect_pod_group``), ordered by priority then first attempt, and
tried in one snapshot, each through filter, score, Reserve and Permit as if alone, each one
assumed in the snapshot for the ones after it (``PodGroupCycle.algorithm``). The group is
schedulable once a pod's Permit succeeds: GangScheduling allows it at quorum (minCount pods
assumed). Every assumption is then reverted; if the group is schedulable its feasible pods are
assumed again, in the cache, and go to their binding cycles, and the pods that failed are
requeued with their own status; otherwise every pod is requeued. With the
TopologyAwareWorkloadScheduling gate the group is tried once per placement (a subset of nodes
PlacementGenerate plugins propose) and PlacementScore plugins pick the best one; with
WorkloadAwarePreemption an unschedulable group may preempt as a whole (PodGroupPostFilter).

The caller acts on the outcome through ``PodGroupHooks``: the failure handler for each requeued
pod, the binding cycle for each pod kept, the PodGroup's ``PodGroupScheduled`` condition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import structlog

from scheduler.backend.cache import Cache
from scheduler.backend.nominator import NOOP, OVERRIDE, PodNominator
from scheduler.backend.queue import SchedulingQueue
from scheduler.core.algorithm import Algorithm, ScheduleResult
from scheduler.core.cycle import (
    CycleOutcome,
    assume_reserve_permit,
    assumed_copy,
    run_scheduling_algorithm,
    single_node_rejection,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    Placement,
    PlacementPluginScores,
    PodGroupAssignments,
    PodGroupInfo,
    ProposedAssignment,
    QueuedPodInfo,
)
from scheduler.framework.podgroupstate import PodGroupStateNotFound
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, StatusError, code_string, go_quote
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import (
    POD_GROUP_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    PodGroup,
)
from scheduler.model.storage import NotFoundError

log = structlog.get_logger(__name__)

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"
CLEAR = (OVERRIDE, "")  # upstream clearNominatedNode
LEAVE = (NOOP, "")  # upstream's nil NominatingInfo

# Metric results (upstream metrics/profile_metrics.go).
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
WAITING_ON_PREEMPTION = "waiting_on_preemption"
ERROR = "error"


class PodGroupUnschedulable(Exception):
    """Upstream errPodGroupUnschedulable: the error a rejected pod of a rejected group carries."""

    def __init__(self) -> None:
        super().__init__(POD_GROUP_UNSCHEDULABLE)


def group_unschedulable(*reasons: str) -> Status:
    """NewStatus(Unschedulable, reasons...).WithError(errPodGroupUnschedulable): the error's
    text leads the message."""
    return Status(Code.UNSCHEDULABLE, POD_GROUP_UNSCHEDULABLE, *reasons, err=PodGroupUnschedulable())


def error_text(st: Status) -> str:
    """Status.AsError().Error(): the error if there is one, else the message."""
    return str(st.err) if st.err is not None else st.message


def _success(st: Status | None) -> bool:
    return st is None or st.code == Code.SUCCESS


def _unscheduled_status(a: PodAttempt | None, gst: Status | None, waiting: bool) -> Status:
    """What a pod of a group that was not scheduled goes back to the queue with (upstream
    submitPodGroupAlgorithmResult): a pod that fit, or needed a preemption now moot, carries its
    Permit's message (the gang's wait); a pod that did not fit its own status; an untried pod
    the group's."""
    if a is None:
        return gst if gst is not None else group_unschedulable()
    if (_success(a.status) and not waiting) or (a.requires_preemption and not waiting):
        return group_unschedulable(a.permit.message if a.permit is not None else "")
    if _success(a.status):
        assert gst is not None  # waiting on preemption: the group's status
        return gst
    return a.status if a.status is not None else group_unschedulable()


def _unscheduled_messages(group: QueuedPodGroup, result: GroupAttempt) -> list[str]:
    """Each pod's message, in the group's order, for an attempt that scheduled nothing."""
    pods = result.pods
    return [
        _unscheduled_status(pods[i] if i < len(pods) else None, result.status, result.waiting_on_preemption).message
        for i in range(len(group.queued))
    ]


# ---------------------------------------------------------------------------------------------
# The group, collected from the queue


@dataclass(slots=True)
class QueuedPodGroup:
    """Upstream QueuedPodGroupInfo: the group and its queued pods, in the cycle's order."""

    info: PodGroupInfo
    queued: list[QueuedPodInfo]

    @property
    def key(self) -> str:
        return self.info.key

    def set_queued(self, queued: list[QueuedPodInfo]) -> None:
        self.queued = queued
        self.info.unscheduled_pods = [q.pod for q in queued]


class PodGroupError(Exception):
    """The group could not be formed or given a framework; ``str()`` is upstream's message."""


def collect_pod_group(queue: SchedulingQueue, cache: Cache, q: QueuedPodInfo) -> QueuedPodGroup:
    """Upstream podGroupInfoForPod: the popped pod plus every other unscheduled pod of its group
    the queue holds, sorted by priority (higher first), then first attempt (earlier first)."""
    pod = q.pod
    name = pod.scheduling_group or ""
    try:
        state = cache.pod_group_state_lister().get(pod.namespace, name)
    except PodGroupStateNotFound as exc:
        raise PodGroupError(f"error while retrieving pod group state: {exc}") from exc
    queued = [q]
    for other in state.unscheduled_pods().values():
        if other.name == pod.name:
            continue
        got = queue.pop_specific(other.uid)
        if got is None:  # known to the group's state, not waiting in the queue
            continue
        queued.append(got)
    # A stable sort; the arrival order breaks what priority and first attempt leave tied.
    queued.sort(key=lambda i: (-i.pod.priority, i.initial_attempt_timestamp or 0.0))
    group = QueuedPodGroup(PodGroupInfo(pod.namespace, name), [])
    group.set_queued(queued)
    return group


def framework_for_group(frameworks: Mapping[str, Framework], group: QueuedPodGroup) -> Framework:
    """Upstream frameworkForPodGroup: every pod must name the same profile."""
    name = ""
    for q in group.queued:
        if not name:
            name = q.pod.scheduler_name
        elif q.pod.scheduler_name != name:
            raise PodGroupError(
                "all pods in a single pod group should have the same .spec.schedulerName set, got: "
                f"{go_quote(q.pod.scheduler_name)} and {go_quote(name)}"
            )
    fw = frameworks.get(name)
    if fw is None:
        raise PodGroupError(f"profile not found for scheduler name {go_quote(name)}")
    return fw


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(slots=True)
class PodAttempt:
    """One pod's try in the group's cycle (upstream algorithmResult)."""

    q: QueuedPodInfo
    state: CycleState
    host: str = ""  # SuggestedHost: the chosen node, or the nominated one when preemption is needed
    result: ScheduleResult | None = None
    # What a failure does to the nomination (upstream NominatingInfo): (mode, node); ("noop", "")
    # stands for upstream's nil.
    nominating: tuple[str, str] = CLEAR
    status: Status | None = None
    permit: Status | None = None  # set when the pod reached Permit (feasible, or needing preemption)
    requires_preemption: bool = False
    seconds: float = 0.0
    outcome: CycleOutcome | None = None  # the scheduling algorithm's own (scores, PostFilter)

    @property
    def pod(self) -> PodInfo:
        return self.q.pod


@dataclass(slots=True)
class GroupAttempt:
    """Upstream podGroupAlgorithmResult; ``status`` None is Success."""

    pods: list[PodAttempt] = field(default_factory=list)
    status: Status | None = field(default_factory=group_unschedulable)
    waiting_on_preemption: bool = False
    # The feasible placements' total scores when more than one was scored (ties are a random
    # pick, so a caller comparing decisions needs them).
    placement_scores: dict[str, int] = field(default_factory=dict)
    # When no placement was feasible: each placement's own attempt (upstream reports the first
    # in its map order, a random one, so a caller comparing decisions needs them all).
    alternatives: dict[str, GroupAttempt] = field(default_factory=dict)


class PostFilterMode(Enum):
    RUN_ALL = 0
    WITHOUT = 1  # WorkloadAwarePreemption's dry runs


@dataclass(slots=True)
class PodDecision:
    """What happened to one pod of the group: kept (``out.assumed`` set, off to binding) or
    requeued with ``status``."""

    q: QueuedPodInfo
    out: CycleOutcome
    status: Status | None
    nominating: tuple[str, str]
    attempt: PodAttempt | None


@dataclass(slots=True)
class PodGroupOutcome:
    group: QueuedPodGroup
    profile: str
    result: str  # SCHEDULED, UNSCHEDULABLE, WAITING_ON_PREEMPTION or ERROR
    status: Status | None
    condition: dict[str, str]  # type, status, reason, message
    decisions: list[PodDecision]
    seconds: float
    placement_scores: dict[str, int] = field(default_factory=dict)
    # No placement feasible: placement name -> the FailedScheduling message of each pod, in the
    # group's order, had that placement been the one reported.
    placement_messages: dict[str, list[str]] = field(default_factory=dict)

    @property
    def scheduled(self) -> list[PodDecision]:
        return [d for d in self.decisions if d.out.assumed is not None]


class PodGroupHooks(Protocol):
    """What the caller does with the cycle's decisions (live loop or simulate)."""

    def failure(self, fw: Framework, q: QueuedPodInfo, status: Status, nominating: tuple[str, str]) -> None:
        """Requeue a pod with its status (upstream FailureHandler)."""

    def assumed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome) -> None:
        """A pod assumed in the cache, Reserved and Permitted (Success or Wait): start its
        binding cycle. A waiting pod must be registered before this returns: a later pod's
        Permit may allow it."""

    def done(self, uid: str) -> None:
        """The pod leaves the queue's in-flight set without being requeued."""

    def condition(self, fw: Framework, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        """Write the PodGroup's PodGroupScheduled condition (see ``next_conditions``)."""


# ---------------------------------------------------------------------------------------------
# The cycle


class PodGroupCycle:
    """Schedules one pod group at a time over the scheduler's cache, snapshot and queue."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        algorithm: Algorithm,
        cache: Cache,
        snapshot: Snapshot,
        queue: SchedulingQueue | None,
        hooks: PodGroupHooks,
        *,
        nominator: PodNominator | None = None,
        clock: Callable[[], float] = time.perf_counter,
        on_algorithm_duration: Callable[[float], None] | None = None,
    ) -> None:
        """``queue`` is where a popped pod's group is collected from (None offline, where the
        caller forms the group: ``schedule_group``); the nominator defaults to the queue's."""
        self.frameworks = frameworks
        self.algorithm = algorithm
        self.cache = cache
        self.snapshot = snapshot
        self.queue = queue
        self.hooks = hooks
        if nominator is None:
            nominator = queue.nominator if queue is not None else PodNominator()
        self.nominator = nominator
        self.clock = clock
        # scheduler_podgroup_scheduling_algorithm_duration_seconds
        self.on_algorithm_duration = on_algorithm_duration
        # The scheduling cycle OpportunisticBatching sees (upstream CurrentCycle: the queue's
        # count of pops, so every pod of a group shares one); offline, the caller's count.
        self.current_cycle: Callable[[], int] = (lambda: queue.scheduling_cycle) if queue is not None else (lambda: 0)

    # -- entry (upstream ScheduleOne's pod-group branch and scheduleOnePodGroup) --------------
    def schedule(self, q: QueuedPodInfo) -> PodGroupOutcome | None:
        """The popped pod ``q`` and its group: one cycle. None when nothing was attempted."""
        assert self.queue is not None
        try:
            group = collect_pod_group(self.queue, self.cache, q)
        except PodGroupError as exc:
            fw = self.frameworks.get(q.pod.scheduler_name)
            if fw is None:
                self.hooks.done(q.pod.uid)
                return None
            self.hooks.failure(fw, q, Status(Code.ERROR, str(exc), err=exc), LEAVE)
            return None
        return self.schedule_group(group)

    def schedule_group(self, group: QueuedPodGroup) -> PodGroupOutcome | None:
        """One cycle for a group already formed (upstream scheduleOnePodGroup)."""
        try:
            fw = framework_for_group(self.frameworks, group)
        except PodGroupError as exc:
            for member in group.queued:
                pfw = self.frameworks.get(member.pod.scheduler_name)
                if pfw is None:
                    log.error("no_profile_for_pod", pod=member.pod.key)
                    self.hooks.done(member.pod.uid)
                    return None
                self.hooks.failure(pfw, member, Status(Code.ERROR, str(exc), err=exc), CLEAR)
            return None
        self._skip_pods(group)
        if not group.queued:
            return None
        return self.cycle(fw, CycleState(), group)

    def _skip_pods(self, group: QueuedPodGroup) -> None:
        """Upstream skipPodGroupPodSchedule: pods being deleted or already assumed drop out."""
        kept = []
        for q in group.queued:
            if q.pod.deleting or self.cache.is_assumed(q.pod.uid):
                self.hooks.done(q.pod.uid)
                continue
            kept.append(q)
        if len(kept) != len(group.queued):
            group.set_queued(kept)

    def cycle(self, fw: Framework, group_state: CycleState, group: QueuedPodGroup) -> PodGroupOutcome:
        """Upstream podGroupCycle: the algorithm on one fresh snapshot, preemption for the group
        if that is on and needed, then the result applied."""
        start = self.clock()
        self.cache.update_snapshot(self.snapshot)
        result = self.algorithm_for(fw, group_state, group, PostFilterMode.RUN_ALL)
        if self.on_algorithm_duration is not None:
            self.on_algorithm_duration(self.clock() - start)
        st = result.status
        if fw.handle.features.enable_workload_aware_preemption and st is not None and st.code == Code.UNSCHEDULABLE:
            wap = self.workload_aware_preemption(fw, group_state, group)
            if _success(wap):
                result.waiting_on_preemption = True
            elif wap is not None and wap.code == Code.ERROR:
                result.status = wap
            elif wap is not None:
                result.status = Status(st.code, *st.reasons, wap.message, plugin=st.plugin, err=st.err)
        return self.submit(fw, group_state, group, result, start)

    # -- the algorithm (upstream podGroupSchedulingAlgorithm) --------------------------------
    def algorithm_for(
        self, fw: Framework, group_state: CycleState, group: QueuedPodGroup, mode: PostFilterMode
    ) -> GroupAttempt:
        if fw.handle.features.enable_topology_aware_workload_scheduling:
            return self.placement_algorithm(fw, group_state, group, mode)
        return self.default_algorithm(fw, group_state, group, mode)

    def default_algorithm(
        self, fw: Framework, group_state: CycleState, group: QueuedPodGroup, mode: PostFilterMode
    ) -> GroupAttempt:
        """Each pod in order; a pod that fits (or needs preemption) stays assumed in the snapshot
        for the ones after it; every assumption is reverted at the end."""
        res = GroupAttempt()
        reverts: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for q in group.queued:
                a, revert = self.pod_attempt(fw, group_state, q, mode)
                res.pods.append(a)
                if not _success(a.status) and not a.requires_preemption:
                    assert a.status is not None
                    if a.status.is_rejected():
                        # The group may still be schedulable if some pod's Permit succeeds.
                        continue
                    res.status = Status(
                        Code.ERROR, f"failed to schedule other pod from a pod group: {error_text(a.status)}"
                    )
                    res.waiting_on_preemption = False
                    break
                if revert is not None:
                    reverts.append(revert)
                requires_preemption = requires_preemption or a.requires_preemption
                if _success(a.permit):
                    if requires_preemption:
                        res.status = group_unschedulable(WAITING_FOR_PREEMPTION)
                        res.waiting_on_preemption = True
                    else:
                        res.status = None
        finally:
            for revert in reversed(reverts):
                revert()
        return res

    def pod_attempt(
        self, fw: Framework, group_state: CycleState, q: QueuedPodInfo, mode: PostFilterMode
    ) -> tuple[PodAttempt, Callable[[], None] | None]:
        """Upstream podGroupPodSchedulingAlgorithm: one pod of the group, assumed in the snapshot
        if it fits or needs preemption; returns what undoes that."""
        pod = q.pod
        state = CycleState()
        state.pod_group_cycle = group_state
        state.skip_all_post_filter = mode is PostFilterMode.WITHOUT
        start = self.clock()
        out = CycleOutcome(pod, state, signature=q.signature, cycle=self.current_cycle())
        a = PodAttempt(q, state, outcome=out)
        found = run_scheduling_algorithm(fw, self.algorithm, self.snapshot, out)
        a.result = out.result
        if found:
            assert out.result is not None
            a.host = out.result.suggested_host
        else:
            node = out.nominating[1]
            if node:
                # Preemption is needed: the pod is treated as placed on its nominated node so
                # the next pods see it there.
                a.host = node
                a.requires_preemption = True
                a.status = out.status
                a.nominating = out.nominating
            else:
                a.status = out.status
                a.nominating = out.nominating
                a.seconds = self.clock() - start
                return a, None
        host = a.host
        assumed = assumed_copy(pod, host)
        try:
            self.snapshot.assume_pod(assumed, host, in_group=True)
        except ValueError as exc:
            a.status, a.nominating, a.host, a.requires_preemption = (
                Status(Code.ERROR, str(exc), err=exc),
                CLEAR,
                "",
                False,
            )
            a.seconds = self.clock() - start
            return a, None
        self.nominator.delete(pod.uid)

        def revert() -> None:
            fw.run_unreserve(state, assumed, host)
            try:
                self.snapshot.forget_pod(assumed, in_group=True)
            except ValueError as exc:
                log.error("forget_pod_failed", pod=pod.key, error=str(exc))
            if pod.nominated_node_name:
                # Assuming dropped the nomination; the revert gives it back.
                self.nominator.add(assumed, OVERRIDE, pod.nominated_node_name)

        reserve = fw.run_reserve(state, assumed, host)
        if reserve is not None:
            revert()
            self._rejected_at(a, reserve, host)
            a.seconds = self.clock() - start
            return a, None
        _, permit = fw.run_permit(state, assumed, host)
        if permit is not None and permit.code != Code.WAIT:
            revert()
            self._rejected_at(a, permit, host)
            a.seconds = self.clock() - start
            return a, None
        a.permit = permit
        a.seconds = self.clock() - start
        return a, revert

    @staticmethod
    def _rejected_at(a: PodAttempt, st: Status, host: str) -> None:
        """A Reserve or Permit failure: a rejection becomes a one-node FitError, as upstream."""
        a.host, a.requires_preemption, a.nominating, a.result = "", False, CLEAR, None
        a.status = single_node_rejection(a.pod, host, st) if st.is_rejected() else st

    # -- placements (TopologyAwareWorkloadScheduling) ----------------------------------------
    def placement_algorithm(
        self, fw: Framework, group_state: CycleState, group: QueuedPodGroup, mode: PostFilterMode
    ) -> GroupAttempt:
        """Upstream podGroupSchedulingPlacementAlgorithm: the default algorithm once per
        generated placement; the best feasible placement wins."""
        nodes = list(self.snapshot.node_infos)
        placements, st = fw.run_placement_generate(group_state, group.info, nodes)
        if st is not None:
            return GroupAttempt(status=st)
        any_result: GroupAttempt | None = None
        feasible: list[tuple[Placement, GroupAttempt]] = []
        tried: dict[str, GroupAttempt] = {}
        for p in placements:
            try:
                self.snapshot.assume_placement(p.nodes)
            except ValueError as exc:
                return GroupAttempt(status=Status(Code.ERROR, f"failed to assume pod group placement: {exc}", err=exc))
            try:
                r = self.default_algorithm(fw, group_state, group, mode)
            finally:
                self.snapshot.forget_placement()
            if r.status is not None and r.status.code == Code.ERROR:
                return r
            if any_result is None:
                any_result = r
            tried.setdefault(p.name, r)
            if r.status is None or r.waiting_on_preemption:
                feasible.append((p, r))
        assert any_result is not None  # run_placement_generate returns at least one placement
        if not feasible:
            any_result.alternatives = tried
            first = any_result.status
            any_result.status = Status(
                Code.UNSCHEDULABLE,
                f"0/{len(placements)} placements are available, first placement status: "
                f"{error_text(first) if first is not None else ''}",
            )
            return any_result
        if len(feasible) == 1:
            return feasible[0][1]
        try:
            best, scores = self.find_best_placement(fw, group_state, group, feasible)
        except StatusError as exc:
            return GroupAttempt(status=exc.status)
        chosen = next(r for p, r in feasible if p is best)
        chosen.placement_scores = {s.placement.name: s.total_score for s in scores}
        return chosen

    def find_best_placement(
        self,
        fw: Framework,
        group_state: CycleState,
        group: QueuedPodGroup,
        feasible: list[tuple[Placement, GroupAttempt]],
    ) -> tuple[Placement, list[PlacementPluginScores]]:
        """PlacementScore plugins rank the feasible placements; ties go to a random pick."""
        assignments = [
            PodGroupAssignments(p, [ProposedAssignment(a.pod, a.host) for a in r.pods if a.host]) for p, r in feasible
        ]
        scores: list[PlacementPluginScores] = fw.run_placement_score(group_state, group.info, assignments)
        for s in scores:
            s.randomizer = self.algorithm.rng.getrandbits(62)
        best = scores[0]
        for s in scores[1:]:
            if s.total_score > best.total_score or (
                s.total_score == best.total_score and s.randomizer > best.randomizer
            ):
                best = s
        return best.placement, scores

    # -- WorkloadAwarePreemption -------------------------------------------------------------
    def workload_aware_preemption(self, fw: Framework, group_state: CycleState, group: QueuedPodGroup) -> Status | None:
        """Upstream runWorkloadAwarePreemption: the PodGroupPostFilter plugin on a backup of the
        snapshot, feasibility checked by the algorithm without PostFilter."""
        plugins = fw.pod_group_post_filter_plugins
        if not plugins:
            return Status(
                Code.UNSCHEDULABLE, "default preemption plugin is not registered, workload aware preemption is disabled"
            )
        try:
            pg = fw.handle.listers.get_pod_group(group.info.namespace, group.info.name)
        except NotFoundError as exc:
            return Status(Code.ERROR, f"failed to get pod group object: {exc}", err=exc)
        if pg.has_scheduling_constraints and pg.topology_keys:
            return Status(
                Code.UNSCHEDULABLE,
                "workload aware preemption is not supported for pod groups with scheduling constraints",
            )
        try:
            restore = self.snapshot.backup()
        except ValueError as exc:
            return Status(Code.ERROR, f"failed to backup snapshot: {exc}", err=exc)
        try:
            return plugins[0].pod_group_post_filter(
                pg,
                list(group.info.unscheduled_pods),
                lambda: self.algorithm_for(fw, group_state, group, PostFilterMode.WITHOUT).status,
            )
        finally:
            restore()

    # -- applying the result (upstream submitPodGroupAlgorithmResult) ------------------------
    def submit(
        self, fw: Framework, group_state: CycleState, group: QueuedPodGroup, result: GroupAttempt, start: float
    ) -> PodGroupOutcome:
        gst = result.status
        decisions: list[PodDecision] = []

        def fail(q: QueuedPodInfo, a: PodAttempt | None, st: Status, nominating: tuple[str, str]) -> None:
            out = a.outcome if a is not None and a.outcome is not None else CycleOutcome(q.pod, CycleState())
            decisions.append(PodDecision(q, out, st, nominating, a))
            self.hooks.failure(fw, q, st, nominating)

        for i, q in enumerate(group.queued):
            if i < len(result.pods):
                a: PodAttempt | None = result.pods[i]
            else:
                a = None  # a group-wide rejection or error left this pod untried
            pst = a.status if a is not None else gst
            if gst is not None and gst.code == Code.ERROR:
                fail(q, a, pst if pst is not None and pst.code == Code.ERROR else gst, CLEAR)
                continue
            if a is not None and _success(a.status):
                if gst is None:
                    out = self.prepare_for_binding(fw, a)
                    if out.assumed is None:
                        assert out.status is not None
                        fail(q, a, out.status, CLEAR)
                        continue
                    decisions.append(PodDecision(q, out, None, LEAVE, a))
                    self.hooks.assumed(fw, q, out)
                elif gst.is_rejected():
                    if result.waiting_on_preemption:
                        # Back to the queue until the preemption is done, nominated to its node.
                        fail(q, a, gst, (OVERRIDE, a.host))
                    else:
                        fail(q, a, _unscheduled_status(a, gst, False), CLEAR)
                else:
                    fail(
                        q,
                        a,
                        Status(
                            Code.ERROR,
                            f"received unexpected pod group scheduling algorithm status code: {code_string(gst.code)}",
                        ),
                        CLEAR,
                    )
                continue
            # A preemption the pod needed is moot when the group is not waiting on it.
            moot = a is not None and a.requires_preemption and not result.waiting_on_preemption
            nominating = CLEAR if moot else (a.nominating if a is not None else LEAVE)
            fail(q, a, _unscheduled_status(a, gst, result.waiting_on_preemption), nominating)

        condition, outcome = self._condition_for(result)
        self.hooks.condition(fw, group, condition)
        return PodGroupOutcome(
            group,
            fw.profile_name,
            outcome,
            gst,
            condition,
            decisions,
            self.clock() - start,
            result.placement_scores,
            {name: _unscheduled_messages(group, r) for name, r in result.alternatives.items()},
        )

    def prepare_for_binding(self, fw: Framework, a: PodAttempt) -> CycleOutcome:
        """The pod is assumed again, now in the cache, and goes through Reserve and Permit as a
        pod-by-pod cycle would (the group's cycle state is dropped first)."""
        a.state.pod_group_cycle = None
        out = CycleOutcome(a.pod, a.state, result=a.result)
        assume_reserve_permit(fw, self.cache, out, a.host)
        return out

    @staticmethod
    def _condition_for(result: GroupAttempt) -> tuple[dict[str, str], str]:
        st = result.status
        if st is None or st.code == Code.SUCCESS:
            message = "" if st is None else st.message
            return _condition("True", REASON_SCHEDULED, message), SCHEDULED
        if st.is_rejected():
            outcome = WAITING_ON_PREEMPTION if result.waiting_on_preemption else UNSCHEDULABLE
            return _condition("False", REASON_UNSCHEDULABLE, st.message), outcome
        return _condition("False", REASON_SCHEDULER_ERROR, error_text(st)), ERROR


def _condition(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": POD_GROUP_SCHEDULED, "status": status, "reason": reason, "message": message}


# ---------------------------------------------------------------------------------------------
# The PodGroupScheduled condition (upstream updatePodGroupCondition, apimeta.SetStatusCondition)


def next_conditions(pg: PodGroup, condition: Mapping[str, str], now: str) -> list[dict[str, Any]] | None:
    """The PodGroup's status.conditions with ``condition`` set, or None when nothing changes: a
    group already Scheduled is never set back to False, and an equal condition is not rewritten.
    ``now`` (RFC 3339) becomes lastTransitionTime when the status flips or the condition is new."""
    existing = pg.condition(condition["type"])
    if existing is not None and existing.get("status") == "True" and condition["status"] != "True":
        return None
    new: dict[str, Any] = dict(condition)
    if pg.generation:
        new["observedGeneration"] = pg.generation  # omitted when 0, as the API's JSON omits it
    conditions = [dict(c) for c in pg.conditions]
    for c in conditions:
        if c.get("type") != condition["type"]:
            continue
        changed = False
        if c.get("status") != new["status"]:
            c["status"] = new["status"]
            c["lastTransitionTime"] = now
            changed = True
        for k in ("reason", "message"):
            if c.get(k, "") != new[k]:
                c[k] = new[k]
                changed = True
        if int(c.get("observedGeneration") or 0) != pg.generation:
            c["observedGeneration"] = pg.generation
            changed = True
        return conditions if changed else None
    new["lastTransitionTime"] = now
    conditions.append(new)
    return conditions
