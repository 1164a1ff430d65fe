"""PodTopologySpread (upstream podtopologyspread/{plugin,filtering,scoring}.go).

Counting works on domain ids instead of topology-value maps: a per-node count of matching
pods (kept incrementally by ``TopologyIndex``) is summed per domain with ``np.bincount``.
The per-node ``filter``/``score`` read the same state through the value -> id map.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
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
from scheduler.framework.signers import SignFragment
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Code, Status, StatusError
from scheduler.model.node import LABEL_HOSTNAME, NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.podtopologyspread import hints
from scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    Constraint,
    PodTopologySpreadArgs,
    count_pods_match_selector,
    go_round,
    parse_args,
    pod_constraints,
)
from scheduler.plugins.topologyindex import (
    DomainMap,
    TopologyIndex,
    node_matches_required_affinity,
    node_taints_tolerated,
)

NAME = "PodTopologySpread"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
MAX_INT32 = (1 << 31) - 1

_UNRESOLVABLE_LABEL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
_UNSCHEDULABLE_SKEW = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)


class CriticalPaths:
    """Upstream criticalPaths: the two lowest-count domains, updated on AddPod/RemovePod."""

    __slots__ = ("n0", "n1", "v0", "v1")

    def __init__(self) -> None:
        self.v0, self.n0, self.v1, self.n1 = "", MAX_INT32, "", MAX_INT32

    def update(self, value: str, num: int) -> None:
        i = 0 if value == self.v0 else 1 if value == self.v1 else -1
        if i >= 0:
            if i == 0:
                self.n0 = num
            else:
                self.n1 = num
            if self.n0 > self.n1:
                self.v0, self.n0, self.v1, self.n1 = self.v1, self.n1, self.v0, self.n0
        elif num < self.n0:
            self.v1, self.n1 = self.v0, self.n0
            self.v0, self.n0 = value, num
        elif num < self.n1:
            self.v1, self.n1 = value, num

    def clone(self) -> CriticalPaths:
        c = CriticalPaths()
        c.v0, c.n0, c.v1, c.n1 = self.v0, self.n0, self.v1, self.n1
        return c


def _build_paths(dm: DomainMap, present_ids: np.ndarray, counts: np.ndarray) -> CriticalPaths:
    """Paths as after inserting the domains one by one (upstream walks its map; any order gives
    the same minimum). Domain-id order, so equal counts keep the first-seen domain first."""
    p = CriticalPaths()
    if len(present_ids) == 0:
        return p
    values = dm.values
    if "" in dm.vid:
        # The empty value collides with the paths' initial empty value: replay exactly.
        for i in present_ids.tolist():
            p.update(values[i], int(counts[i]))
        return p
    vals = counts[present_ids]
    order = np.argsort(vals, kind="stable")[:2].tolist()
    p.v0, p.n0 = values[int(present_ids[order[0]])], int(vals[order[0]])
    if len(order) > 1:
        p.v1, p.n1 = values[int(present_ids[order[1]])], int(vals[order[1]])
    return p


class _FilterState:
    """preFilterState: per constraint, matching-pod counts per domain and the critical paths."""

    __slots__ = (
        "constraints",
        "counts",
        "doms",
        "extra",
        "ndomains",
        "paths",
        "pod",
        "present",
        "self_match",
    )

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        self.doms: list[DomainMap] = []
        self.counts: list[np.ndarray] = []  # per domain id
        self.present: list[np.ndarray] = []  # domain id -> has an eligible node (a map entry upstream)
        self.extra: list[dict[str, int]] = []  # map entries for values the domain map lacks
        self.ndomains: list[int] = []
        self.paths: list[CriticalPaths] = []
        self.self_match: list[int] = []
        self.pod: PodInfo | None = None

    def clone(self) -> _FilterState:
        c = _FilterState()
        c.constraints = self.constraints
        c.doms = self.doms
        c.counts = [a.copy() for a in self.counts]
        c.present = [a.copy() for a in self.present]
        c.extra = [dict(e) for e in self.extra]
        c.ndomains = list(self.ndomains)
        c.paths = [p.clone() for p in self.paths]
        c.self_match = self.self_match
        c.pod = self.pod
        return c

    def count(self, i: int, value: str) -> int:
        j = self.doms[i].vid.get(value)
        if j is not None and j < len(self.counts[i]):
            return int(self.counts[i][j])
        return self.extra[i].get(value, 0)

    def min_match(self, i: int) -> int:
        if self.ndomains[i] < self.constraints[i].min_domains:
            return 0
        return self.paths[i].n0


class _ScoreState:
    __slots__ = (
        "cand",
        "constraints",
        "dom_counts",
        "doms",
        "eff_ids",
        "hostname",
        "ignored",
        "ignored_aligned",
        "namespace",
        "weights",
    )

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        self.ignored: set[str] = set()
        self.ignored_aligned: np.ndarray = np.zeros(0, dtype=bool)
        self.cand: np.ndarray = np.zeros(0, dtype=np.int64)
        self.weights: list[float] = []
        self.hostname: list[bool] = []
        self.doms: list[DomainMap] = []
        self.eff_ids: list[np.ndarray] = []  # per constraint: per node domain id ("" for missing)
        self.dom_counts: list[np.ndarray] = []
        self.namespace = ""

    def clone(self) -> _ScoreState:
        return self


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = NAME
    has_normalize = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream PodTopologySpread.SignPod: no pod with constraints of its own or defaulted ones
        (so the system defaults keep every pod unsignable)."""
        if pod.spread_constraints:
            return Status(Code.UNSCHEDULABLE, "pods with topology constraints are not signable")
        if self.default_constraints:
            return Status(Code.UNSCHEDULABLE, "pods with default topology constraints are not signable")
        return []

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else args.default_constraints
        )
        self.match_label_keys = handle.features.enable_match_label_keys_in_pod_topology_spread
        self.taint_comparison = handle.features.enable_taint_toleration_comparison_operators

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> PodTopologySpread:
        return cls(parse_args(args), handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(ClusterEvent("Pod", pod_actions), self._after_pod_change),
            ClusterEventWithHint(ClusterEvent("Node", node_actions), self._after_node_change),
        ]

    def _after_pod_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        return hints.after_pod_change(self.constraints(pod, DO_NOT_SCHEDULE), pod, old_obj, new_obj)

    def _after_node_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        return hints.after_node_change(self.constraints(pod, DO_NOT_SCHEDULE), pod, old_obj, new_obj)

    def constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        return pod_constraints(pod, action, self.default_constraints, self.handle.listers, self.match_label_keys)

    # -- helpers -----------------------------------------------------------------------------
    def _inclusion(
        self, idx: TopologyIndex, snap: Snapshot, pod: PodInfo, c: Constraint
    ) -> np.ndarray | None:
        """Nodes passing the constraint's inclusion policies (None: all of them)."""
        mask: np.ndarray | None = None
        if c.affinity_honor and (pod.node_selector or pod.node_affinity_required is not None):
            key = ("affinity", tuple(sorted(pod.node_selector.items())), pod.node_affinity_required)
            mask = idx.node_mask(snap, key, lambda ni: node_matches_required_affinity(pod, ni))
        if c.taints_honor:
            cmp = self.taint_comparison
            tm = idx.node_mask(
                snap, ("taints", pod.tolerations, cmp), lambda ni: node_taints_tolerated(pod, ni, cmp)
            )
            mask = tm if mask is None else mask & tm
        return mask

    @staticmethod
    def _counter(idx: TopologyIndex, snap: Snapshot, pod: PodInfo, c: Constraint) -> np.ndarray | None:
        if c.selector.empty:
            return None  # countPodsMatchSelector counts nothing for an empty selector
        ns, sel = pod.namespace, c.selector
        match = sel.matches

        def make() -> Any:
            return lambda p: p.namespace == ns and not p.deleting and match(p.labels)

        return idx.pod_counts(snap, ("spread", ns, sel), make)

    # -- PreFilter / Filter ------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> PreFilterResult | Status | None:
        cons = self.constraints(pod, DO_NOT_SCHEDULE)
        if not cons:
            return SKIP
        snap = self.handle.snapshot
        idx = TopologyIndex.of(snap)
        s = _FilterState()
        s.constraints = cons
        s.pod = pod
        doms = [idx.domain(snap, c.topology_key) for c in cons]
        all_keys = np.ones(len(snap.node_infos), dtype=bool)
        for dm in doms:
            all_keys &= dm.ids >= 0
        for c, dm in zip(cons, doms):
            elig = all_keys
            inc = self._inclusion(idx, snap, pod, c)
            if inc is not None:
                elig = elig & inc
            ids = dm.ids[elig]
            present = np.zeros(dm.size, dtype=bool)
            present[ids] = True
            per_node = self._counter(idx, snap, pod, c)
            if per_node is None or len(ids) == 0:
                counts = np.zeros(dm.size, dtype=np.int64)
            else:
                counts = np.bincount(ids, weights=per_node[elig], minlength=dm.size).astype(np.int64)
            pres_ids = np.flatnonzero(present)
            s.doms.append(dm)
            s.counts.append(counts)
            s.present.append(present)
            s.extra.append({})
            s.ndomains.append(len(pres_ids))
            s.paths.append(_build_paths(dm, pres_ids, counts))
            s.self_match.append(1 if c.selector.matches(pod.labels) else 0)
        state.write(PRE_FILTER_KEY, s)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.read(PRE_FILTER_KEY, _FilterState)
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return _UNRESOLVABLE_LABEL
            skew = s.count(i, value) + s.self_match[i] - s.min_match(i)
            if skew > c.max_skew:
                return _UNSCHEDULABLE_SKEW
        return None

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        s = state.read(PRE_FILTER_KEY, _FilterState)
        if any(s.extra) or snapshot is not self.handle.snapshot:
            return None
        ok = np.ones(len(idx), dtype=bool)
        for i, c in enumerate(s.constraints):
            d = s.doms[i].ids[idx]
            has = d >= 0
            counts = s.counts[i]
            if len(counts) == 0:
                cnt = np.zeros(len(idx), dtype=np.int64)
            else:
                cnt = counts[np.where(has, d, 0)]
            ok &= has & (cnt + (s.self_match[i] - s.min_match(i)) <= c.max_skew)
        return ok

    def filter_batch_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> Sequence[Status | None] | None:
        # filter's answer for each node, from the same arrays as filter_batch: the first
        # constraint a node fails decides, a missing label before a skew.
        s = state.read(PRE_FILTER_KEY, _FilterState)
        if any(s.extra) or snapshot is not self.handle.snapshot:
            return None
        verdict = np.full(len(idx), -1, dtype=np.int8)  # -1 passes, 0 label, 1 skew
        for i, c in enumerate(s.constraints):
            d = s.doms[i].ids[idx]
            has = d >= 0
            counts = s.counts[i]
            cnt = counts[np.where(has, d, 0)] if len(counts) else np.zeros(len(idx), dtype=np.int64)
            open_ = verdict < 0
            verdict[open_ & ~has] = 0
            verdict[open_ & has & (cnt + (s.self_match[i] - s.min_match(i)) > c.max_skew)] = 1
        table = (_UNRESOLVABLE_LABEL, _UNSCHEDULABLE_SKEW)
        return [table[v] if v >= 0 else None for v in verdict.tolist()]

    # PreFilterExtensions: preemption simulating the removal / addition of pods.
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        self._update(state.read(PRE_FILTER_KEY, _FilterState), pod_to_add, pod, node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        self._update(state.read(PRE_FILTER_KEY, _FilterState), pod_to_remove, pod, node, -1)
        return None

    def _update(self, s: _FilterState, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int) -> None:
        if updated.namespace != preemptor.namespace or not node.node_present:
            return
        labels = node.labels
        for c in s.constraints:
            if c.topology_key not in labels:
                return
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated.labels):
                continue
            if c.affinity_honor and not node_matches_required_affinity(preemptor, node):
                continue
            if c.taints_honor and not node_taints_tolerated(preemptor, node, self.taint_comparison):
                continue
            value = labels[c.topology_key]
            j = s.doms[i].vid.get(value)
            if j is not None and j < len(s.counts[i]):
                if not s.present[i][j]:
                    s.present[i][j] = True
                    s.ndomains[i] += 1
                s.counts[i][j] += delta
                num = int(s.counts[i][j])
            else:
                if value not in s.extra[i]:
                    s.ndomains[i] += 1
                num = s.extra[i][value] = s.extra[i].get(value, 0) + delta
            s.paths[i].update(value, num)

    # -- PreScore / Score --------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        snap = self.handle.snapshot
        if len(snap.node_infos) == 0:
            return SKIP
        cons = self.constraints(pod, SCHEDULE_ANYWAY)
        if not cons:
            return SKIP
        # Only non-system-default rules require every topology label on a node, so nodes
        # without a zone still get hostname spreading under the system defaults.
        require_all = bool(pod.spread_constraints) or not self.system_defaulted
        idx = TopologyIndex.of(snap)
        doms = [idx.domain(snap, c.topology_key) for c in cons]
        n = len(snap.node_infos)
        all_keys = np.ones(n, dtype=bool)
        for dm in doms:
            all_keys &= dm.ids >= 0
        cand = np.fromiter((ni.index for ni in nodes), dtype=np.int64, count=len(nodes))
        if require_all:
            ign_aligned = ~all_keys[cand]
        else:
            ign_aligned = np.zeros(len(cand), dtype=bool)
        kept = cand[~ign_aligned]
        s = _ScoreState()
        s.constraints = cons
        s.cand = cand
        s.ignored_aligned = ign_aligned
        s.ignored = {nodes[i].name for i in np.flatnonzero(ign_aligned).tolist()}
        s.namespace = pod.namespace
        s.doms = doms
        for c, dm in zip(cons, doms):
            host = c.topology_key == LABEL_HOSTNAME
            s.hostname.append(host)
            if host:
                s.eff_ids.append(dm.ids)
                s.dom_counts.append(np.zeros(0, dtype=np.int64))
                s.weights.append(math.log(float(len(nodes) - len(s.ignored) + 2)))
                continue
            # A missing label reads as "" upstream (only reachable without require_all).
            ids = dm.ids
            if not require_all:
                empty = dm.vid.get("", dm.size)
                ids = np.where(ids >= 0, ids, empty)
            size = dm.size + 1
            present = np.zeros(size, dtype=bool)
            present[ids[kept]] = True
            s.weights.append(math.log(float(int(present.sum()) + 2)))
            elig = present[ids]
            if require_all:
                elig &= all_keys
            inc = self._inclusion(idx, snap, pod, c)
            if inc is not None:
                elig &= inc
            per_node = self._counter(idx, snap, pod, c)
            if per_node is None or not elig.any():
                counts = np.zeros(size, dtype=np.int64)
            else:
                counts = np.bincount(ids[elig], weights=per_node[elig], minlength=size).astype(np.int64)
            s.eff_ids.append(ids)
            s.dom_counts.append(counts)
        state.write(PRE_SCORE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = state.read(PRE_SCORE_KEY, _ScoreState)
        if node.name in s.ignored:
            return 0
        total = 0.0
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if s.hostname[i]:
                cnt = count_pods_match_selector(node.pods, c.selector, s.namespace)
            else:
                j = s.doms[i].vid.get(value)
                cnt = int(s.dom_counts[i][j]) if j is not None and j < len(s.dom_counts[i]) else 0
            total += float(cnt) * s.weights[i] + float(c.max_skew - 1)
        return go_round(total)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        s = state.read(PRE_SCORE_KEY, _ScoreState)
        if snapshot is not self.handle.snapshot:
            return None
        tix = TopologyIndex.of(snapshot)
        total = np.zeros(len(idx), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            dm = tix.domain(snapshot, c.topology_key)
            has = dm.ids[idx] >= 0
            if s.hostname[i]:
                per_node = self._counter(tix, snapshot, pod, c)
                cnt = per_node[idx] if per_node is not None else np.zeros(len(idx), dtype=np.int64)
            else:
                cnt = s.dom_counts[i][s.eff_ids[i][idx]]
            term = cnt.astype(np.float64) * s.weights[i] + float(c.max_skew - 1)
            total = total + np.where(has, term, 0.0)
        r = np.floor(total)
        out = (r + ((total - r) >= 0.5)).astype(np.int64)
        if s.ignored:
            if len(idx) == len(s.cand) and np.array_equal(idx, s.cand):
                out[s.ignored_aligned] = 0
            else:
                infos = snapshot.node_infos
                for k, i in enumerate(idx.tolist()):
                    if infos[i].name in s.ignored:
                        out[k] = 0
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        s = state.read(PRE_SCORE_KEY, _ScoreState)
        if len(scores) == 0:
            return None
        if s.ignored:
            if len(scores) != len(s.ignored_aligned):
                raise StatusError(
                    Status(Code.ERROR, "PodTopologySpread: scores do not match the PreScore nodes")
                )
            ign = s.ignored_aligned
        else:
            ign = np.zeros(len(scores), dtype=bool)
        live = scores[~ign]
        if len(live) == 0:
            scores[...] = 0
            return None
        lo = int(live.min())
        hi = max(int(live.max()), 0)
        if hi == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            out = MAX_NODE_SCORE * (hi + lo - scores) // hi
        out[ign] = 0
        scores[...] = out
        return None
