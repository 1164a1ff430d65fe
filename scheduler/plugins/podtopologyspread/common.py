"""Constraints, plugin args and default selectors (upstream podtopologyspread/common.go,
plugin.go, helper/spread.go and apis/config/validation for PodTopologySpreadArgs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.config.pluginargs import is_qualified_name
from scheduler.framework.listers import Listers
from scheduler.model.labels import NOTHING, LabelSelector, Requirement
from scheduler.model.node import LABEL_HOSTNAME, LABEL_ZONE
from scheduler.model.pod import PodInfo

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


@dataclass(frozen=True, slots=True)
class Constraint:
    """upstream topologySpreadConstraint: a v1 constraint with its selector compiled."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int
    affinity_honor: bool  # nodeAffinityPolicy == Honor
    taints_honor: bool  # nodeTaintsPolicy == Honor


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int
    affinity_honor: bool
    taints_honor: bool


SYSTEM_DEFAULT_CONSTRAINTS: tuple[DefaultConstraint, ...] = (
    DefaultConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY, 1, True, False),
    DefaultConstraint(5, LABEL_ZONE, SCHEDULE_ANYWAY, 1, True, False),
)


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


# ---------------------------------------------------------------------------------------------
# Validation (apis/config/validation.ValidatePodTopologySpreadArgs), messages as field.Error.


def _go_value(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _policy(raw: Any, default: str) -> bool:
    return (str(raw) if raw else default) == HONOR


def parse_args(args: Mapping[str, Any] | None) -> PodTopologySpreadArgs:
    """Defaults (v1: defaultingType System) then validation; raises ValueError like upstream."""
    args = args or {}
    dtype = str(args.get("defaultingType") or SYSTEM_DEFAULTING)
    raw_list: Sequence[Mapping[str, Any]] = list(args.get("defaultConstraints") or [])
    errs: list[str] = []
    if dtype not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(
            f'defaultingType: Unsupported value: {_go_value(dtype)}: supported values: "System", "List"'
        )
    elif dtype == SYSTEM_DEFAULTING and raw_list:
        errs.append(
            f"defaultingType: Invalid value: {_go_value(dtype)}: when .defaultConstraints are not empty"
        )
    out: list[DefaultConstraint] = []
    for i, c in enumerate(raw_list):
        p = f"defaultConstraints[{i}]"
        max_skew = int(c.get("maxSkew") or 0)
        key = str(c.get("topologyKey") or "")
        when = str(c.get("whenUnsatisfiable") or "")
        if max_skew <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {max_skew}: not in valid range (0, inf)")
        if not key:
            errs.append(f"{p}.topologyKey: Required value: can not be empty")
        else:
            errs.extend(
                f"{p}.topologyKey: Invalid value: {_go_value(key)}: {m}" for m in is_qualified_name(key)
            )
        if not when:
            errs.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
        elif when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(
                f'{p}.whenUnsatisfiable: Unsupported value: {_go_value(when)}: supported values: "DoNotSchedule", '
                '"ScheduleAnyway"'
            )
        if c.get("labelSelector") is not None:
            errs.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        for j in range(i):
            o = raw_list[j]
            if str(o.get("topologyKey") or "") == key and str(o.get("whenUnsatisfiable") or "") == when:
                errs.append(f'defaultConstraints[{i}]: Duplicate value: "{{{key}, {when}}}"')
                break
        md = c.get("minDomains")
        out.append(
            DefaultConstraint(
                max_skew,
                key,
                when,
                int(md) if md is not None else 1,
                _policy(c.get("nodeAffinityPolicy"), HONOR),
                _policy(c.get("nodeTaintsPolicy"), IGNORE),
            )
        )
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return PodTopologySpreadArgs(tuple(out), dtype)


# ---------------------------------------------------------------------------------------------
# Default selector (helper.DefaultSelector / GetPodServices)


def _as_map(sel: LabelSelector | None) -> dict[str, str]:
    """A Service / RC map selector (compiled as single-value In requirements) back to a map."""
    out: dict[str, str] = {}
    if sel is None:
        return out
    for r in sel.requirements:
        if r.op == "In" and len(r.values) == 1:
            out[r.key] = next(iter(r.values))
    return out


def _from_set(label_set: Mapping[str, str]) -> list[Requirement]:
    return [Requirement(k, "In", frozenset([v])) for k, v in sorted(label_set.items())]


def default_selector(pod: PodInfo, listers: Listers) -> LabelSelector:
    """The selector deduced from the Services, RCs, ReplicaSets and StatefulSets of the pod."""
    label_set: dict[str, str] = {}
    for svc in listers.owners_in(pod.namespace, "Service"):
        # A Service without a selector matches nothing, not everything.
        if svc.selector is not None and svc.selector.matches(pod.labels):
            label_set.update(_as_map(svc.selector))
    reqs = _from_set(label_set)
    owner = next((o for o in pod.owner_refs if o.controller), None)
    if owner is not None:
        key = f"{pod.namespace}/{owner.name}"
        obj = (
            listers.owners.get(owner.kind, {}).get(key)
            if owner.kind
            in (
                "ReplicationController",
                "ReplicaSet",
                "StatefulSet",
            )
            else None
        )
        if obj is not None:
            if owner.kind == "ReplicationController":
                label_set.update(_as_map(obj.selector))
                reqs = _from_set(label_set)
            elif obj.selector is not None and obj.selector is not NOTHING:
                reqs = reqs + list(obj.selector.requirements)
    return LabelSelector(tuple(reqs))


# ---------------------------------------------------------------------------------------------
# Constraints of a pod


def pod_constraints(
    pod: PodInfo,
    action: str,
    defaults: tuple[DefaultConstraint, ...],
    listers: Listers,
    match_label_keys: bool = True,
) -> list[Constraint]:
    """filterTopologySpreadConstraints on the pod's own constraints (matchLabelKeys merged into
    the selector only with the MatchLabelKeysInPodTopologySpread gate), else
    buildDefaultConstraints."""
    if pod.spread_constraints:
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                c.selector if match_label_keys else c.label_selector,
                c.min_domains if c.min_domains is not None else 1,
                c.node_affinity_policy == HONOR,
                c.node_taints_policy == HONOR,
            )
            for c in pod.spread_constraints
            if c.when_unsatisfiable == action
        ]
    picked = [d for d in defaults if d.when_unsatisfiable == action]
    if not picked:
        return []
    sel = default_selector(pod, listers)
    if sel.empty:
        return []
    return [
        Constraint(d.max_skew, d.topology_key, sel, d.min_domains, d.affinity_honor, d.taints_honor)
        for d in picked
    ]


def count_pods_match_selector(pods: Sequence[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """countPodsMatchSelector: same namespace, not terminating; an empty selector counts nothing."""
    if selector.empty:
        return 0
    match = selector.matches
    return sum(1 for p in pods if not p.deleting and p.namespace == namespace and match(p.labels))


def go_round(x: float) -> int:
    """math.Round: half away from zero (scores here are never negative)."""
    import math

    r = math.floor(x)
    if x - r >= 0.5:
        r += 1
    return int(r)
