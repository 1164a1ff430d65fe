"""PodGroups (scheduling.k8s.io/v1alpha2) as kube-scheduler v1.36.3's workload-aware scheduling
reads them: the scheduling policy (gang with its minCount, or basic), the topology constraint,
the disruption mode and priority (PodGroup preemption), and the status conditions the scheduler
writes its ``PodGroupScheduled`` condition into.

A pod joins a group through ``spec.schedulingGroup.podGroupName`` (PodInfo.scheduling_group);
the group is looked up in the pod's namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.kinds import Raw, as_list, as_map, metadata
from scheduler.model.schema import PODGROUP, FieldError, object_error

# status.conditions[].type and reasons the scheduler writes (v1alpha2 types.go).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_SCHEDULED = "Scheduled"
DISRUPTION_MODE_POD_GROUP = "PodGroup"


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    uid: str
    generation: int
    # spec.schedulingPolicy.gang.minCount; None when the policy is not Gang.
    gang_min_count: int | None
    # spec.schedulingConstraints is set at all (DefaultPreemption's placement limitation reads
    # that), and its topology keys (the API allows one).
    has_scheduling_constraints: bool
    topology_keys: tuple[str, ...]
    disruption_mode: str | None
    # spec.priority as admission resolved it; util.PodGroupPriority reads nil as 0.
    priority: int
    conditions: tuple[Mapping[str, Any], ...]
    raw: Raw

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.gang_min_count is not None

    def condition(self, ctype: str) -> Mapping[str, Any] | None:
        for c in self.conditions:
            if c.get("type") == ctype:
                return c
        return None

    @staticmethod
    def parse(raw: Raw) -> PodGroup:
        try:
            return _parse(raw)
        except Exception as exc:
            raise object_error("PodGroup", raw, PODGROUP, exc, "default") from None


def _parse(raw: Raw) -> PodGroup:
    meta = metadata(raw)
    spec = as_map(raw.get("spec"))
    status = as_map(raw.get("status"))
    policy = as_map(spec.get("schedulingPolicy"))
    gang = policy.get("gang")
    min_count: int | None = None
    if gang is not None:
        min_count = int(as_map(gang).get("minCount") or 0)
        if not -(2**31) <= min_count < 2**31:
            raise FieldError("spec.schedulingPolicy.gang.minCount", "must be a 32-bit integer")
    constraints = spec.get("schedulingConstraints")
    keys = tuple(str(as_map(t).get("key") or "") for t in as_list(as_map(constraints).get("topology")))
    prio = spec.get("priority")
    mode = spec.get("disruptionMode")
    return PodGroup(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"),
        generation=int(meta.get("generation") or 0),
        gang_min_count=min_count,
        has_scheduling_constraints=constraints is not None,
        topology_keys=keys,
        disruption_mode=None if mode is None else str(mode),
        priority=0 if prio is None else int(prio),
        conditions=tuple(as_map(c) for c in as_list(status.get("conditions"))),
        raw=raw,
    )
