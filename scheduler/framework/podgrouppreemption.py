"""Preemption for a whole pod group (upstream framework/preemption/podgrouppreemption.go and
types.go, WorkloadAwarePreemption gate).

The domain is the cluster. Every pod on a node is a victim on its own, except the pods of a
PodGroup whose disruptionMode is PodGroup: those go together, at the group's priority. All
victims of lower priority than the preemptor group are removed from the (backed-up) snapshot;
if the group then fits (the pod-group algorithm without PostFilter), victims are given back,
most important first (PDB-violating units before the others), as long as the group still fits.
The rest are evicted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key

from scheduler.framework.interface import Handle
from scheduler.framework.preemption import pod_start_time
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import DISRUPTION_MODE_POD_GROUP, PodGroup
from scheduler.model.storage import NotFoundError

NO_VICTIMS = "No preemption victims found for incoming preemptor"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."


@dataclass(slots=True)
class Victim:
    """One unit of eviction: a pod, or the pods of a PodGroup (disruptionMode PodGroup)."""

    pods: list[PodInfo]
    priority: int
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    group: PodGroup | None = None

    @property
    def is_pod_group(self) -> bool:
        # Upstream looks at the first pod's schedulingGroup.
        return self.pods[0].scheduling_group is not None

    def earliest_start_time(self) -> float:
        """The earliest start of its pods (util.GetPodStartTime: status.startTime, else now)."""
        return min(pod_start_time(p) for p in self.pods)


def _before(a: float, b: float) -> bool:
    return a < b


def more_important_victim(a: Victim, b: Victim) -> bool:
    """Upstream moreImportantVictim: priority, then groups before pods, then (pods) the earlier
    start, (groups) the larger group, then the earlier start."""
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.is_pod_group != b.is_pod_group:
        return a.is_pod_group
    if not a.is_pod_group:
        return _before(a.earliest_start_time(), b.earliest_start_time())
    if len(a.pods) != len(b.pods):
        return len(a.pods) > len(b.pods)
    return _before(a.earliest_start_time(), b.earliest_start_time())


def _cmp(a: Victim, b: Victim) -> int:
    return -1 if more_important_victim(a, b) else (1 if more_important_victim(b, a) else 0)


def domain_victims(nodes: Sequence[NodeInfo], pod_group_of: Callable[[PodInfo], PodGroup | None]) -> list[Victim]:
    """Upstream newDomainForWorkloadPreemption's victims, in node then pod order."""
    by_key: dict[str, Victim] = {}
    for ni in nodes:
        for p in ni.pods:
            pg = pod_group_of(p)
            if pg is None or pg.disruption_mode != DISRUPTION_MODE_POD_GROUP:
                by_key[f"pod/{p.uid}"] = Victim([p], p.priority, {ni.name: ni})
                continue
            v = by_key.get(f"group/{pg.uid}")
            if v is None:
                by_key[f"group/{pg.uid}"] = Victim([p], pg.priority, {ni.name: ni}, pg)
            else:
                v.pods.append(p)
                v.nodes[ni.name] = ni
    return list(by_key.values())


def filter_victims_with_pdb_violation(
    victims: Sequence[Victim], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Victim], list[Victim]]:
    """Upstream filterVictimsWithPDBViolation: a unit violates if any of its pods takes some
    budget below zero (its later pods are then not counted)."""
    allowed = [b.disruptions_allowed for b in pdbs]

    def violating(p: PodInfo) -> bool:
        if not p.labels:
            return False
        for i, b in enumerate(pdbs):
            if not b.matches(p.namespace, p.labels) or p.name in b.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                return True
        return False

    bad: list[Victim] = []
    ok: list[Victim] = []
    for v in victims:
        (bad if any(violating(p) for p in v.pods) else ok).append(v)
    return bad, ok


class PodGroupEvaluator:
    """Upstream PodGroupEvaluator; the actuator carries the decision out."""

    def __init__(self, handle: Handle, plugin_name: str) -> None:
        self.handle = handle
        self.plugin_name = plugin_name

    def _pod_group_of(self, p: PodInfo) -> PodGroup | None:
        if p.scheduling_group is None:
            return None
        try:
            return self.handle.listers.get_pod_group(p.namespace, p.scheduling_group)
        except NotFoundError:
            return None

    def preempt(self, pg: PodGroup, pods: list[PodInfo], feasible: Callable[[], Status | None]) -> Status | None:
        snap = self.handle.snapshot
        victims, st = self.select_victims(pg, pods, list(snap.node_infos), feasible)
        if st is not None:
            return st
        actuator = self.handle.preemption
        preempt_group = getattr(actuator, "preempt_group", None)
        if preempt_group is not None:
            done: Status | None = preempt_group(pg, pods, victims, self.plugin_name)
            if done is not None and not done.is_success():
                return done
        return None

    def select_victims(
        self, pg: PodGroup, pods: list[PodInfo], nodes: list[NodeInfo], feasible: Callable[[], Status | None]
    ) -> tuple[list[PodInfo], Status | None]:
        """Upstream selectVictimsOnDomain: the pods to evict, or why none can be."""
        if any(p.preemption_policy == "Never" for p in pods):
            return [], Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_NEVER)
        snap = self.handle.snapshot

        def remove(v: Victim) -> None:
            for p in v.pods:
                ni = snap.node_map.get(p.node_name)
                if ni is not None:
                    ni.remove_pod(p)
                    snap.replace_node(ni, False)  # the columns follow the NodeInfo

        def add(v: Victim) -> None:
            for p in v.pods:
                ni = snap.node_map.get(p.node_name)
                if ni is not None:
                    ni.add_pod(p)
                    snap.replace_node(ni, False)

        potential = [v for v in domain_victims(nodes, self._pod_group_of) if v.priority < pg.priority]
        if not potential:
            return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        for v in potential:
            remove(v)
        st = feasible()
        if st is not None and st.code != Code.SUCCESS:
            return [], st
        potential.sort(key=cmp_to_key(_cmp))
        violating, non_violating = filter_victims_with_pdb_violation(potential, list(self.handle.listers.pdbs.values()))
        evict: list[Victim] = []
        for v in (*violating, *non_violating):
            add(v)
            st = feasible()
            if st is not None and st.code != Code.SUCCESS:
                remove(v)
                evict.append(v)
        evict.sort(key=cmp_to_key(_cmp))
        return [p for v in evict for p in v.pods], None
