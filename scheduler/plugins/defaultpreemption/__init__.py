"""DefaultPreemption (upstream plugins/defaultpreemption): PostFilter that evicts lower-priority
pods so an unschedulable pod fits, plus the PreEnqueue gate of async preemption.

With SchedulerAsyncPreemption (beta, on by default in v1.36.3) PostFilter nominates the node at
once and the victims are deleted off the scheduling loop; until that is done the preemptor stays
out of activeQ ("waiting for the preemption for this pod to be finished"). Without the gate
PreEnqueue lets every pod through.

Workload-aware scheduling: with WorkloadAwarePreemption the pods of a pod group are not
preempted for one by one; the pod-group cycle calls ``pod_group_post_filter`` for the whole
group instead (framework/podgrouppreemption.py), and PreEnqueue holds the group's pods while
that runs. With TopologyAwareWorkloadScheduling a pod of a group with scheduling constraints
does not preempt either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    Handle,
    NodeToStatus,
    PodGroupPostFilterPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from scheduler.framework.podgrouppreemption import PodGroupEvaluator
from scheduler.framework.preemption import Evaluator, filter_pods_with_pdb_violation, importance_key
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.model.storage import NotFoundError

NAME = "DefaultPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
WAITING = "waiting for the preemption for this pod to be finished"
WAITING_GROUP = "waiting for the preemption for this pod group to be finished"
GROUP_NOT_FOUND = "preemption: pod group for pod not found"
NOT_ELIGIBLE_PLACEMENT = "preemption: not eligible due to placement-based pod group scheduling limitation"
NOT_ELIGIBLE_WAP = "preemption: not eligible due to workload aware preemption enabled"


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


def _int_arg(args: Mapping[str, Any], key: str, default: int) -> int:
    v = args.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{key}: expected an integer, got {v!r}")
    return v


def parse_args(args: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
    """Upstream defaults (10 %, 100) and ValidateDefaultPreemptionArgs, with its messages."""
    args = dict(args or {})
    unknown = sorted(set(args) - {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"})
    if unknown:
        raise ValueError(f'strict decoding error: unknown field "{unknown[0]}"')
    pct = _int_arg(args, "minCandidateNodesPercentage", 10)
    ab = _int_arg(args, "minCandidateNodesAbsolute", 100)
    errs: list[str] = []
    if pct < 0 or pct > 100:
        errs.append(f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
    if ab < 0:
        errs.append(f"minCandidateNodesAbsolute: Invalid value: {ab}: not in valid range [0, inf)")
    if pct == 0 and ab == 0:
        errs.append(
            f"minCandidateNodesPercentage: Invalid value: {pct}: cannot be zero at the same time as "
            "minCandidateNodesAbsolute"
        )
        errs.append(
            f"minCandidateNodesAbsolute: Invalid value: {ab}: cannot be zero at the same time as "
            "minCandidateNodesPercentage"
        )
    if len(errs) == 1:
        raise ValueError(errs[0])
    if errs:
        raise ValueError("[" + ", ".join(errs) + "]")
    return DefaultPreemptionArgs(pct, ab)


def pod_terminating_by_preemption(p: PodInfo) -> bool:
    """Being deleted, with the DisruptionTarget=True condition the scheduler's preemption set."""
    if not p.deleting:
        return False
    raw = p.raw if isinstance(p.raw, dict) else {}
    for c in (raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionTarget":
            return c.get("status") == "True" and c.get("reason") == "PreemptionByScheduler"
    return False


class DefaultPreemption(Evaluator, PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions, PodGroupPostFilterPlugin):
    name = NAME
    plugin_name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        Evaluator.__init__(self, handle)
        self.args = args
        # SchedulerAsyncPreemption (beta, on): without it PreEnqueue never holds a preemptor back
        # and no event is registered. The victims are still deleted off the scheduling loop here
        # (the loop cannot wait for API calls), where upstream's synchronous mode waits for them.
        self.async_preemption = handle.features.enable_async_preemption
        self.pod_group_evaluator = PodGroupEvaluator(handle, NAME)

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> DefaultPreemption:
        return cls(parse_args(args), handle)

    # -- PostFilter --------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        fw = self.fw
        if fw is None:
            raise StatusError(Status(Code.ERROR, "DefaultPreemption: framework not wired"))
        try:
            workload = self.handle.features
            if pod.scheduling_group is not None and workload.enable_topology_aware_workload_scheduling:
                try:
                    pg = self.handle.listers.get_pod_group(pod.namespace, pod.scheduling_group)
                except NotFoundError:
                    return None, Status(Code.UNSCHEDULABLE, GROUP_NOT_FOUND)
                if pg.has_scheduling_constraints:
                    # Preempting once per topology option would evict too much.
                    return None, Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_PLACEMENT)
            if pod.scheduling_group is not None and workload.enable_workload_aware_preemption:
                # The pod-group cycle preempts for the whole group instead.
                return None, Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_WAP)
            result, s = self.preempt(fw, state, pod, statuses)
        finally:
            if self.handle.preemption is not None:
                self.handle.preemption.attempted()
        msg = s.message
        if msg:
            return result, Status(s.code, "preemption: " + msg)
        return result, s

    # -- PreEnqueue / events (async preemption) ----------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not self.async_preemption:
            return None
        actuator = self.handle.preemption
        if pod.scheduling_group is not None and self.handle.features.enable_workload_aware_preemption:
            try:
                pg = self.handle.listers.get_pod_group(pod.namespace, pod.scheduling_group)
            except NotFoundError:
                return None  # holding pods without their PodGroup is not this plugin's job
            if actuator is not None and actuator.is_running(pg.uid):
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_GROUP)
            return None
        if actuator is not None and actuator.is_running(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING)
        return None

    # -- PodGroupPostFilter (WorkloadAwarePreemption) ----------------------------------------
    def pod_group_post_filter(
        self, pod_group: PodGroup, pods: list[PodInfo], feasible: Callable[[], Status | None]
    ) -> Status | None:
        return self.pod_group_evaluator.preempt(pod_group, pods, feasible)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.async_preemption:
            return []
        # Registered so gated preemptors are looked at on pod deletions; the hint always skips:
        # the plugins that rejected the pod decide when it is worth retrying.
        return [ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), _skip)]

    # -- policy --------------------------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def is_preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return victim.priority < preemptor.priority

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nom = pod.nominated_node_name
        if nom:
            if nominated_status is not None and nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                # The nominated node cannot be helped: look elsewhere.
                return True, ""
            ni = self.handle.snapshot.get(nom)
            if ni is not None:
                for p in ni.pods:
                    if self.is_preemption_allowed(ni, p, pod) and pod_terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def victimless(self, node: NodeInfo, pod: PodInfo) -> Status | None:
        # select_victims_on_node's first answer, when no pod of the node may be evicted by this
        # one (most nodes, when most pods share a priority). A subclass with its own selection
        # is asked itself.
        if type(self).select_victims_on_node is not DefaultPreemption.select_victims_on_node:
            return None
        for p in node.pods:
            if self.is_preemption_allowed(node, p, pod):
                return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)

    def select_victims_on_node(
        self, fw: Framework, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream SelectVictimsOnNode on a copy of the node: remove every lower-priority pod;
        if the pod then fits, add them back most important first (PDB-violating ones before
        the others), keeping out only those without which it does not fit."""

        def remove(p: PodInfo) -> Status | None:
            node.remove_pod(p)
            return fw.run_pre_filter_extension_remove_pod(state, pod, p, node)

        def add(p: PodInfo) -> Status | None:
            node.add_pod(p)
            return fw.run_pre_filter_extension_add_pod(state, pod, p, node)

        potential = [p for p in node.pods if self.is_preemption_allowed(node, p, pod)]
        for p in potential:
            s = remove(p)
            if s is not None:
                return [], 0, s
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        s = fw.run_filter_with_nominated_pods(state, pod, node)
        if s is not None:
            return [], 0, s
        potential.sort(key=importance_key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(p: PodInfo) -> tuple[bool, Status | None]:
            s = add(p)
            if s is not None:
                return False, s
            fits = fw.run_filter_with_nominated_pods(state, pod, node) is None
            if not fits:
                s = remove(p)
                if s is not None:
                    return False, s
                victims.append(p)
            return fits, None

        num_violating = 0
        for p in violating:
            fits, err = reprieve(p)
            if err is not None:
                return [], 0, err
            if not fits:
                num_violating += 1
        for p in non_violating:
            _, err = reprieve(p)
            if err is not None:
                return [], 0, err
        if violating and non_violating:
            victims.sort(key=importance_key)
        return victims, num_violating, None


def _skip(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP
