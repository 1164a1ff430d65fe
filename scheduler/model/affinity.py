"""Affinity and topology spread read from a pod spec: node affinity (checked and memoised),
pod (anti-)affinity terms with their selectors compiled, and topology spread constraints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.model.kinds import Raw
from scheduler.model.labels import (
    NOTHING,
    LabelSelector,
    NodeSelector,
    PreferredSchedulingTerm,
    Requirement,
    parse_preferred_terms,
)
from scheduler.model.memo import memoized
from scheduler.model.schema import AFFINITY, check

if TYPE_CHECKING:
    from scheduler.model.pod import PodInfo

# Every pod of a workload carries the same node affinity (see scheduler.model.memo).
_node_affinity_memo: dict[bytes, tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]] = {}


def _check_parse_node_affinity(affinity: Raw) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    check(affinity, AFFINITY, "spec.affinity")
    na = affinity.get("nodeAffinity") or {}
    return (
        NodeSelector.parse(na.get("requiredDuringSchedulingIgnoredDuringExecution")),
        parse_preferred_terms(na.get("preferredDuringSchedulingIgnoredDuringExecution")),
    )


def checked_node_affinity(
    affinity: Raw | None,
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    """spec.affinity checked whole (pod affinity too), and its node affinity parsed."""
    return memoized(_node_affinity_memo, affinity, _check_parse_node_affinity) if affinity else (None, ())


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A v1.PodAffinityTerm with the selector compiled and match/mismatchLabelKeys folded in.

    ``namespaces`` is the explicit set (the pod's own namespace when both it and the namespace
    selector are empty); ``namespace_selector`` is None when absent.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches_namespace(self, namespace: str, ns_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces:
            return True
        if self.namespace_selector is None:
            return False
        return self.namespace_selector.matches(ns_labels or {})

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        return self.matches_namespace(pod.namespace, ns_labels) and self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


def parse_affinity_term(raw: Raw, pod_ns: str, pod_labels: Mapping[str, str]) -> AffinityTerm:
    selector = LabelSelector.parse(raw.get("labelSelector"))
    if selector is None:
        selector = NOTHING  # a nil selector matches nothing (upstream: labels.Nothing())
    extra: list[Requirement] = []
    # matchLabelKeys / mismatchLabelKeys: only when a selector is set, keys the pod has.
    if raw.get("labelSelector") is not None:
        for key in raw.get("matchLabelKeys") or []:
            if key in pod_labels:
                extra.append(Requirement(key, "In", frozenset([pod_labels[key]])))
        for key in raw.get("mismatchLabelKeys") or []:
            if key in pod_labels:
                extra.append(Requirement(key, "NotIn", frozenset([pod_labels[key]])))
    if extra:
        selector = selector.and_(tuple(extra))
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or [])
    ns_sel = LabelSelector.parse(raw.get("namespaceSelector"))
    if not namespaces and ns_sel is None:
        namespaces = frozenset([pod_ns])
    return AffinityTerm(selector, namespaces, ns_sel, str(raw.get("topologyKey", "")))


def parse_weighted_terms(
    raw: list[Raw] | None, ns: str, labels: Mapping[str, str]
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(
        WeightedAffinityTerm(int(w.get("weight", 0)), parse_affinity_term(w.get("podAffinityTerm") or {}, ns, labels))
        for w in raw or []
    )


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector
    min_domains: int | None
    node_affinity_policy: str  # Honor | Ignore (default Honor)
    node_taints_policy: str  # Honor | Ignore (default Ignore)
    match_label_keys: tuple[str, ...]
    # labelSelector as written, without matchLabelKeys folded in (``selector`` has them): what
    # PodTopologySpread uses when the MatchLabelKeysInPodTopologySpread gate is off.
    label_selector: LabelSelector = NOTHING


def parse_spread_constraints(raw: list[Raw] | None, labels: Mapping[str, str]) -> tuple[TopologySpreadConstraint, ...]:
    out = []
    for c in raw or []:
        sel = LabelSelector.parse(c.get("labelSelector"))
        keys = tuple(str(k) for k in c.get("matchLabelKeys") or [])
        written = NOTHING if sel is None else sel
        if sel is None:
            sel = NOTHING
        elif keys:
            extra = tuple(Requirement(k, "In", frozenset([labels[k]])) for k in keys if k in labels)
            sel = sel.and_(extra)
        md = c.get("minDomains")
        out.append(
            TopologySpreadConstraint(
                max_skew=int(c.get("maxSkew", 1)),
                topology_key=str(c.get("topologyKey", "")),
                when_unsatisfiable=str(c.get("whenUnsatisfiable", "DoNotSchedule")),
                selector=sel,
                min_domains=int(md) if md is not None else None,
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or "Honor"),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or "Ignore"),
                match_label_keys=keys,
                label_selector=written,
            )
        )
    return tuple(out)
