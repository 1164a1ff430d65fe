"""InterPodAffinity (upstream interpodaffinity/{plugin,filtering,scoring}.go).

Upstream's per-pod walks over all pods become, per distinct term, a per-node count kept
incrementally by ``TopologyIndex`` and summed per topology domain with ``np.bincount``:
- incoming pod's terms: one pod counter per (merged) term;
- existing pods' terms: grouped by identical term (``TermIndex``), matched once against the
  incoming pod.
The per-node ``filter``/``score`` read the resulting (key, value) counts through the domain
maps' value -> id dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.listers import Listers
from scheduler.framework.signers import LABELS_SIGNER, SignFragment, pod_spec
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Code, Status
from scheduler.model.affinity import AffinityTerm
from scheduler.model.labels import LabelSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.interpodaffinity import hints
from scheduler.plugins.topologyindex import (
    PREF_AFFINITY,
    PREF_ANTI,
    REQ_AFFINITY,
    REQ_ANTI,
    DomainMap,
    TopologyIndex,
)

NAME = "InterPodAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_AFFINITY_FAIL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
_ANTI_FAIL = Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_FAIL = Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def parse_args(args: Mapping[str, Any] | None) -> InterPodAffinityArgs:
    args = args or {}
    w = args.get("hardPodAffinityWeight")
    weight = 1 if w is None else int(w)
    if weight < 0 or weight > 100:
        raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]")
    return InterPodAffinityArgs(weight, bool(args.get("ignorePreferredTermsOfExistingPods", False)))


@dataclass(frozen=True, slots=True)
class MergedTerm:
    """An incoming pod's term after mergeAffinityTermNamespacesIfNotEmpty: the namespace
    selector is unrolled into the namespace set (or is ``{}``, matching every namespace)."""

    all_namespaces: bool
    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str

    def matches(self, pod: PodInfo) -> bool:
        return (self.all_namespaces or pod.namespace in self.namespaces) and self.selector.matches(pod.labels)

    @property
    def counter_key(self) -> tuple[Any, ...]:
        return ("ipa", self.all_namespaces, self.namespaces, self.selector)


def merge_term(t: AffinityTerm, listers: Listers) -> MergedTerm:
    sel = t.namespace_selector
    if sel is None:
        return MergedTerm(False, t.namespaces, t.selector, t.topology_key)
    if sel.empty:
        return MergedTerm(True, t.namespaces, t.selector, t.topology_key)
    names = {ns.name for ns in listers.namespaces.values() if sel.matches(ns.labels)}
    return MergedTerm(False, t.namespaces | names, t.selector, t.topology_key)


def _matches_all(terms: Sequence[MergedTerm], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    if not terms:
        return False
    return all(t.matches(pod) for t in terms)


class TopoCounts:
    """topologyToMatchedTermCount: (topology key, value) -> count, as per-domain arrays."""

    __slots__ = ("arrays", "doms", "extra")

    def __init__(self) -> None:
        self.doms: dict[str, DomainMap] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.extra: dict[tuple[str, str], int] = {}

    def add_array(self, dm: DomainMap, per_domain: np.ndarray) -> None:
        key = dm.key
        cur = self.arrays.get(key)
        if cur is None:
            self.doms[key] = dm
            self.arrays[key] = per_domain
        else:
            self.arrays[key] = cur + per_domain

    def get(self, key: str, value: str) -> int:
        arr = self.arrays.get(key)
        if arr is not None:
            j = self.doms[key].vid.get(value)
            if j is not None and j < len(arr):
                return int(arr[j]) + self.extra.get((key, value), 0)
        return self.extra.get((key, value), 0)

    def update(self, node: NodeInfo, key: str, delta: int) -> None:
        value = node.labels.get(key)
        if value is None:
            return
        arr = self.arrays.get(key)
        if arr is not None:
            j = self.doms[key].vid.get(value)
            if j is not None and j < len(arr):
                arr[j] += delta
                return
        self.extra[(key, value)] = self.extra.get((key, value), 0) + delta

    def nonempty(self) -> bool:
        """len(map) > 0 upstream, where zero entries are deleted."""
        return any(a.any() for a in self.arrays.values()) or any(self.extra.values())

    def clone(self) -> TopoCounts:
        c = TopoCounts()
        c.doms = dict(self.doms)
        c.arrays = {k: a.copy() for k, a in self.arrays.items()}
        c.extra = dict(self.extra)
        return c


class _FilterState:
    __slots__ = (
        "affinity",
        "affinity_terms",
        "anti",
        "anti_terms",
        "existing",
        "ns_labels",
        "pod",
        "self_match",
    )

    def __init__(self) -> None:
        self.existing = TopoCounts()
        self.affinity = TopoCounts()
        self.anti = TopoCounts()
        self.affinity_terms: list[MergedTerm] = []
        self.anti_terms: list[MergedTerm] = []
        self.ns_labels: Mapping[str, str] = {}
        self.pod: PodInfo | None = None
        self.self_match = False

    def clone(self) -> _FilterState:
        c = _FilterState()
        c.existing = self.existing.clone()
        c.affinity = self.affinity.clone()
        c.anti = self.anti.clone()
        c.affinity_terms = self.affinity_terms
        c.anti_terms = self.anti_terms
        c.ns_labels = self.ns_labels
        c.pod = self.pod
        c.self_match = self.self_match
        return c


class _ScoreState:
    __slots__ = ("scores",)

    def __init__(self) -> None:
        self.scores = TopoCounts()

    def clone(self) -> _ScoreState:
        return self


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = NAME
    has_normalize = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream InterPodAffinity.SignPod: no pod with affinity terms; else its labels (others'
        terms may match them)."""
        aff = pod_spec(pod).get("affinity")
        if isinstance(aff, Mapping) and (aff.get("podAffinity") is not None or aff.get("podAntiAffinity") is not None):
            return Status(Code.UNSCHEDULABLE, "pods with InterPodAffinity are not signable")
        if self.args.ignore_preferred_terms_of_existing_pods:
            # Only pods with affinity terms count then, so this pod's labels do not matter.
            return []
        meta = pod.raw.get("metadata") if isinstance(pod.raw, Mapping) else None
        return [(LABELS_SIGNER, meta.get("labels") if isinstance(meta, Mapping) else None)]

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> InterPodAffinity:
        return cls(parse_args(args), handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints on (the default) upstream does not register UpdateNodeTaint here.
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                hints.after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL), hints.after_node_change
            ),
        ]

    def _ns_labels(self, pod: PodInfo) -> Mapping[str, str]:
        return self.handle.listers.namespace_labels(pod.namespace) or {}

    # -- PreFilter ---------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> PreFilterResult | Status | None:
        snap = self.handle.snapshot
        listers = self.handle.listers
        idx = TopologyIndex.of(snap)
        s = _FilterState()
        s.pod = pod
        s.ns_labels = self._ns_labels(pod)
        s.affinity_terms = [merge_term(t, listers) for t in pod.affinity_required]
        s.anti_terms = [merge_term(t, listers) for t in pod.anti_affinity_required]

        # Existing pods' required anti-affinity terms that the incoming pod matches.
        ti = idx.term_index(snap)
        for sig in ti.sigs(REQ_ANTI):
            term = sig[2]
            if term.matches(pod, s.ns_labels):
                dm = idx.domain(snap, term.topology_key)
                s.existing.add_array(dm, _domain_sums(dm, ti.counts[sig]))

        if s.affinity_terms:
            terms = s.affinity_terms
            key = ("ipa-all", tuple(t.counter_key for t in terms))
            per_node = idx.pod_counts(snap, key, lambda: lambda p: all(t.matches(p) for t in terms))
            for t in terms:
                dm = idx.domain(snap, t.topology_key)
                s.affinity.add_array(dm, _domain_sums(dm, per_node))
            s.self_match = _matches_all(terms, pod)
        for t in s.anti_terms:
            per_node = idx.pod_counts(snap, t.counter_key, lambda t=t: t.matches)  # type: ignore[misc]
            dm = idx.domain(snap, t.topology_key)
            s.anti.add_array(dm, _domain_sums(dm, per_node))

        if not s.existing.nonempty() and not s.affinity_terms and not s.anti_terms:
            return SKIP
        state.write(PRE_FILTER_KEY, s)
        return None

    # -- Filter ------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.read(PRE_FILTER_KEY, _FilterState)
        labels = node.labels
        if s.affinity_terms:
            pods_exist = True
            for t in s.affinity_terms:
                value = labels.get(t.topology_key)
                if value is None:
                    return _AFFINITY_FAIL  # every topology label must exist on the node
                if s.affinity.get(t.topology_key, value) <= 0:
                    pods_exist = False
            # The first pod of a group with affinity to itself may go anywhere with the labels.
            if not pods_exist and not (not s.affinity.nonempty() and s.self_match):
                return _AFFINITY_FAIL
        if s.anti_terms and s.anti.nonempty():
            for t in s.anti_terms:
                value = labels.get(t.topology_key)
                if value is not None and s.anti.get(t.topology_key, value) > 0:
                    return _ANTI_FAIL
        if s.existing.nonempty():
            for key in s.existing.arrays.keys() | {k for k, _ in s.existing.extra}:
                value = labels.get(key)
                if value is not None and s.existing.get(key, value) > 0:
                    return _EXISTING_FAIL
        return None

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        s = state.read(PRE_FILTER_KEY, _FilterState)
        if s.existing.extra or s.affinity.extra or s.anti.extra or snapshot is not self.handle.snapshot:
            return None
        ok = np.ones(len(idx), dtype=bool)
        if s.affinity_terms:
            has_all = np.ones(len(idx), dtype=bool)
            exist = np.ones(len(idx), dtype=bool)
            for t in s.affinity_terms:
                cnt, has = _lookup(s.affinity, t.topology_key, idx)
                has_all &= has
                exist &= cnt > 0
            if not (not s.affinity.nonempty() and s.self_match):
                ok &= has_all & exist
            else:
                ok &= has_all
        if s.anti_terms and s.anti.nonempty():
            for key in {t.topology_key for t in s.anti_terms}:
                cnt, has = _lookup(s.anti, key, idx)
                ok &= ~(has & (cnt > 0))
        if s.existing.nonempty():
            for key in s.existing.arrays:
                cnt, has = _lookup(s.existing, key, idx)
                ok &= ~(has & (cnt > 0))
        return ok

    # -- PreFilterExtensions -----------------------------------------------------------------
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        self._update(state.read(PRE_FILTER_KEY, _FilterState), pod_to_add, node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        self._update(state.read(PRE_FILTER_KEY, _FilterState), pod_to_remove, node, -1)
        return None

    @staticmethod
    def _update(s: _FilterState, p: PodInfo, node: NodeInfo, delta: int) -> None:
        incoming = s.pod
        assert incoming is not None
        for t in p.anti_affinity_required:
            if t.matches(incoming, s.ns_labels):
                s.existing.update(node, t.topology_key, delta)
        if _matches_all(s.affinity_terms, p):
            for mt in s.affinity_terms:
                s.affinity.update(node, mt.topology_key, delta)
        for mt in s.anti_terms:
            if mt.matches(p):
                s.anti.update(node, mt.topology_key, delta)

    # -- PreScore / Score --------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        has_constraints = bool(pod.affinity_preferred or pod.anti_affinity_preferred)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        snap = self.handle.snapshot
        listers = self.handle.listers
        idx = TopologyIndex.of(snap)
        ns_labels = self._ns_labels(pod)
        sc = _ScoreState()
        matched = False

        def add(dm: DomainMap, per_node: np.ndarray, weight: int) -> None:
            nonlocal matched
            sel = (per_node != 0) & (dm.ids >= 0)
            if not sel.any():
                return
            matched = True  # upstream's topologyScore gains an entry, even if the sum is 0
            sums = np.bincount(dm.ids[sel], weights=per_node[sel], minlength=dm.size).astype(np.int64)
            sc.scores.add_array(dm, sums * weight)

        for wt, sign in [(w, 1) for w in pod.affinity_preferred] + [
            (w, -1) for w in pod.anti_affinity_preferred
        ]:
            mt = merge_term(wt.term, listers)
            per_node = idx.pod_counts(snap, mt.counter_key, lambda mt=mt: mt.matches)  # type: ignore[misc]
            add(idx.domain(snap, mt.topology_key), per_node, wt.weight * sign)

        ti = idx.term_index(snap)
        hard = self.args.hard_pod_affinity_weight
        for kind, sign in ((REQ_AFFINITY, 1), (PREF_AFFINITY, 1), (PREF_ANTI, -1)):
            if kind == REQ_AFFINITY and hard <= 0:
                continue
            for sig in ti.sigs(kind):
                term = sig[2]
                if term.matches(pod, ns_labels):
                    weight = hard if kind == REQ_AFFINITY else sig[1]
                    add(idx.domain(snap, term.topology_key), ti.counts[sig], weight * sign)

        if not matched:
            return SKIP
        state.write(PRE_SCORE_KEY, sc)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = state.read(PRE_SCORE_KEY, _ScoreState)
        total = 0
        labels = node.labels
        for key in s.scores.arrays:
            value = labels.get(key)
            if value is not None:
                total += s.scores.get(key, value)
        return total

    def score_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        s = state.read(PRE_SCORE_KEY, _ScoreState)
        if snapshot is not self.handle.snapshot:
            return None
        total = np.zeros(len(idx), dtype=np.int64)
        for key in s.scores.arrays:
            cnt, has = _lookup(s.scores, key, idx)
            total += np.where(has, cnt, 0)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        state.read(PRE_SCORE_KEY, _ScoreState)
        if len(scores) == 0:
            return None
        lo = int(scores.min())
        hi = int(scores.max())
        diff = hi - lo
        if diff > 0:
            scores[...] = (float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))).astype(
                np.int64
            )
        else:
            scores[...] = 0
        return None


def _domain_sums(dm: DomainMap, per_node: np.ndarray) -> np.ndarray:
    sel = (per_node != 0) & (dm.ids >= 0)
    if not sel.any():
        return np.zeros(dm.size, dtype=np.int64)
    return np.bincount(dm.ids[sel], weights=per_node[sel], minlength=dm.size).astype(np.int64)


def _lookup(tc: TopoCounts, key: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(count at the node's value, node has the key) for snapshot positions ``idx``."""
    dm = tc.doms[key]
    d = dm.ids[idx]
    has = d >= 0
    arr = tc.arrays[key]
    if len(arr) == 0:
        return np.zeros(len(idx), dtype=np.int64), has
    return arr[np.where(has, d, 0)], has
