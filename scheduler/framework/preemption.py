"""The preemption evaluator shared by preemption plugins (upstream framework/preemption).

``Evaluator.preempt`` runs the steps of upstream Preempt for one unschedulable pod: check it
may preempt, dry-run the removal of lower-priority pods on the nodes that failed with a
resolvable status, choose one candidate node, and hand the victims to the actuator (the
live app deletes them through the API off the scheduling loop; ``simulate`` removes them).
The plugin supplies the policy parts (eligibility, victim selection, candidate count), as
upstream's ``preemption.Interface``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import Victims
from scheduler.framework.interface import Handle, NodeToStatus, PostFilterResult
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework

log = structlog.get_logger(__name__)

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"
MAX_INT32 = 2**31 - 1
MIN_INT64 = -(2**63)

# Time source for pods without status.startTime (upstream GetPodStartTime uses time.Now()).
now: Callable[[], float] = time.time


def pod_start_time(p: PodInfo) -> float:
    return p.start_ts if p.start_ts else now()


def more_important_pod(a: PodInfo, b: PodInfo) -> bool:
    """Upstream util.MoreImportantPod: higher priority, then the earlier start."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return pod_start_time(a) < pod_start_time(b)


def importance_key(p: PodInfo) -> tuple[int, float]:
    """Sort key equivalent to ``more_important_pod`` (most important first; stable on ties)."""
    return (-p.priority, pod_start_time(p))


@dataclass(slots=True)
class Candidate:
    name: str
    victims: Victims


def earliest_pod_start_time(v: Victims) -> float | None:
    """Upstream GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    if not v.pods:
        return None
    earliest = pod_start_time(v.pods[0])
    top = v.pods[0].priority
    for p in v.pods:
        if p.priority == top:
            t = pod_start_time(p)
            if t < earliest:
                earliest = t
        elif p.priority > top:
            top = p.priority
            earliest = pod_start_time(p)
    return earliest


def _default_score_funcs(m: dict[str, Victims]) -> list[Callable[[str], float]]:
    def min_pdb_violations(n: str) -> float:
        return -m[n].num_pdb_violations

    def min_highest_priority(n: str) -> float:
        return -m[n].pods[0].priority

    def min_sum_priorities(n: str) -> float:
        # Shifted by MaxInt32+1 so that negative priorities still add up to more with more pods.
        return -sum(p.priority + MAX_INT32 + 1 for p in m[n].pods)

    def min_num_pods(n: str) -> float:
        return -len(m[n].pods)

    def latest_start_time(n: str) -> float:
        t = earliest_pod_start_time(m[n])
        return float(MIN_INT64) if t is None else t

    return [min_pdb_violations, min_highest_priority, min_sum_priorities, min_num_pods, latest_start_time]


def pick_one_node_for_preemption(
    nodes_to_victims: dict[str, Victims], score_funcs: Sequence[Callable[[str], float]] | None = None
) -> str:
    """Upstream pickOneNodeForPreemption: apply each score function in turn, keeping the nodes
    with the highest score, until one is left; then the first (candidate order)."""
    if not nodes_to_victims:
        return ""
    cands = list(nodes_to_victims)
    funcs = list(score_funcs) if score_funcs else _default_score_funcs(nodes_to_victims)
    for f in funcs:
        best = float("-inf")
        selected: list[str] = []
        for n in cands:
            s = f(n)
            if s > best:
                best = s
                selected = []
            if s == best:
                selected.append(n)
        if len(selected) == 1:
            return selected[0]
        cands = selected
    return cands[0]


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Upstream filterPodsWithPDBViolation: walking the pods in order, each matching budget
    not already counting the pod as disrupted loses one allowed disruption; a pod that takes
    some budget below zero violates it. Returns (violating, non-violating), order kept."""
    allowed = [b.disruptions_allowed for b in pdbs]
    violating: list[PodInfo] = []
    ok: list[PodInfo] = []
    for p in pods:
        bad = False
        if p.labels:
            for i, b in enumerate(pdbs):
                if not b.matches(p.namespace, p.labels):
                    continue
                if p.name in b.disrupted_pods:
                    continue  # the API server already processed its eviction
                allowed[i] -= 1
                if allowed[i] < 0:
                    bad = True
        (violating if bad else ok).append(p)
    return violating, ok


class _CandidateList:
    __slots__ = ("cap", "items")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.items: list[Candidate] = []

    def add(self, c: Candidate) -> None:
        if len(self.items) < self.cap:
            self.items.append(c)

    def size(self) -> int:
        return len(self.items)


class Evaluator:
    """Upstream preemption.Evaluator; the plugin subclasses it and fills in the policy."""

    plugin_name = ""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.fw: Framework | None = None  # set by the plugin once the framework exists

    def set_framework(self, fw: Framework) -> None:
        self.fw = fw

    # -- the policy (upstream preemption.Interface) ------------------------------------------
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        raise NotImplementedError

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        raise NotImplementedError

    def select_victims_on_node(
        self, fw: Framework, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status | None]:
        raise NotImplementedError

    def ordered_score_funcs(self, m: dict[str, Victims]) -> list[Callable[[str], float]] | None:
        return None

    def victimless(self, node: NodeInfo, pod: PodInfo) -> Status | None:
        """What ``select_victims_on_node`` answers for a node where it would find nothing to
        evict, when that shows without the copies a dry run makes of the node and the cycle
        state; None: ask it (the default)."""
        return None

    # -- the steps ---------------------------------------------------------------------------
    def preempt(
        self, fw: Framework, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        nominated_status = statuses.get(pod.nominated_node_name)
        ok, msg = self.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)
        all_nodes = self.handle.snapshot.node_infos
        try:
            candidates, node_statuses, errors = self.find_candidates(fw, state, all_nodes, pod, statuses)
        except _NoNodes as exc:
            return None, Status(Code.ERROR, str(exc))
        if errors and not candidates:
            return None, Status(Code.ERROR, _aggregate(errors))
        if not candidates:
            # What a FitError over the dry run's statuses says; unvisited nodes are not helpful.
            node_statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, fit_error_message(len(all_nodes), node_statuses))
        candidates, st = self.call_extenders(pod, candidates)
        if st is not None:
            return None, st
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, NO_CANDIDATE)
        actuator = self.handle.preemption
        if actuator is not None:
            st = actuator.preempt(pod, best.name, best.victims.pods, self.plugin_name)
            if st is not None and not st.is_success():
                return None, st
        return PostFilterResult(best.name, list(best.victims.pods)), Status(Code.SUCCESS)

    def find_candidates(
        self, fw: Framework, state: CycleState, all_nodes: Sequence[NodeInfo], pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        if not all_nodes:
            raise _NoNodes("no nodes available")
        potential = nodes_for_status_code(statuses, all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return [], default_node_to_status(), []
        pdbs = list(self.handle.listers.pdbs.values())
        offset, num = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(fw, state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Upstream DryRunPreemption, visiting the nodes in order from ``offset`` (upstream runs
        them in parallel and stops once it has enough; sequentially that is the same set when
        the first ``num_candidates`` found are kept)."""
        non_violating = _CandidateList(num_candidates)
        violating = _CandidateList(num_candidates)
        node_statuses = default_node_to_status()
        errors: list[str] = []
        n = len(potential)
        for i in range(n):
            ni = potential[(offset + i) % n]
            quick = self.victimless(ni, pod)
            if quick is not None:
                node_statuses.statuses[ni.name] = quick
                continue
            copy = ni.clone()
            victims, num_violations, s = self.select_victims_on_node(fw, state.clone(), pod, copy, pdbs)
            if s is None and victims:
                c = Candidate(copy.name, Victims(victims, num_violations))
                (non_violating if num_violations == 0 else violating).add(c)
                nv, vs = non_violating.size(), violating.size()
                if nv > 0 and nv + vs >= num_candidates:
                    break
                continue
            if s is None:
                s = Status(Code.ERROR, f'expected at least one victim pod on node "{copy.name}"')
            if s.code == Code.ERROR:
                errors.append(s.message)
            node_statuses.statuses[copy.name] = s
        return non_violating.items + violating.items, node_statuses, errors

    def call_extenders(self, pod: PodInfo, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        """Upstream callExtenders: each interested extender that supports preemption trims the
        candidates and may choose other victims; the next one sees what it returned. A failing
        or victimless answer is an error, unless the extender is ignorable."""
        extenders = self.handle.extenders
        if not extenders:
            return candidates, None
        victims = self.candidates_to_victims_map(candidates)
        if not victims:
            return candidates, None
        for ext in extenders:
            if not ext.supports_preemption() or not ext.is_interested(pod):
                continue
            try:
                answer = ext.process_preemption(pod, victims, self.handle.snapshot)
            except Exception as exc:
                if ext.is_ignorable():
                    log.info("extender_skipped", point="preempt", extender=ext.name(), pod=pod.key, error=str(exc))
                    continue
                return [], Status(Code.ERROR, str(exc), err=exc)
            for node in list(answer):
                v = answer[node]
                if v is None or not v.pods:
                    if ext.is_ignorable():
                        del answer[node]
                        log.info("extender_node_without_victims", extender=ext.name(), node=node)
                        continue
                    return [], Status(Code.ERROR, f'expected at least one victim pod on node "{node}"')
            victims = answer
            if not victims:
                break
        return [Candidate(node, v) for node, v in victims.items()], None

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        m = self.candidates_to_victims_map(candidates)
        node = pick_one_node_for_preemption(m, self.ordered_score_funcs(m))
        v = m.get(node)
        if v is not None:
            return Candidate(node, v)
        return candidates[0]


class _NoNodes(Exception):
    pass


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several in brackets."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


def nodes_for_status_code(statuses: NodeToStatus, all_nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
    """Upstream NodesForStatusCode: the nodes whose recorded (or, when absent, default) status
    has ``code``, in snapshot order."""
    absent = statuses.absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    explicit = statuses.statuses
    if absent.code == code:
        if not explicit:
            return list(all_nodes)
        return [n for n in all_nodes if explicit.get(n.name, absent).code == code]
    return [n for n in all_nodes if (s := explicit.get(n.name)) is not None and s.code == code]


def default_node_to_status() -> NodeToStatus:
    """Upstream NewDefaultNodeToStatus: absent nodes are UnschedulableAndUnresolvable."""
    nts = NodeToStatus()
    nts.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    return nts


def fit_error_message(num_all_nodes: int, nts: NodeToStatus) -> str:
    """FitError.Error() without PreFilter/PostFilter parts: the sorted reason histogram."""
    counts: dict[str, int] = {}
    for st in nts.statuses.values():
        for r in st.reasons:
            counts[r] = counts.get(r, 0) + 1
    absent = num_all_nodes - len(nts.statuses)
    if absent > 0 and nts.absent is not None:
        for r in nts.absent.reasons:
            counts[r] = counts.get(r, 0) + absent
    msg = f"0/{num_all_nodes} nodes are available:"
    hist = sorted(f"{v} {k}" for k, v in counts.items())
    if hist:
        msg += f" {', '.join(hist)}."
    return msg
