"""NodeResourcesBalancedAllocation (upstream noderesources/balanced_allocation.go).

A node's balance is ``int64((1 - std) * 100)`` over its resource fractions (requested /
allocatable, capped at 1, *actual* requests, no non-zero defaults), float64 math in Go's order.
v1.36 scores the change the incoming pod makes: the balance with the pod against the balance
of the node alone (see ``balanced_resource_score``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.config.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, PreScorePlugin, ScorePlugin, SignPlugin
from scheduler.framework.listers import DraStore
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.noderesources.draextended import DraExtendedScorer, DraScoreState
from scheduler.plugins.noderesources.fit import sign_resources
from scheduler.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    ResourceSpec,
    duplicate,
    invalid,
    parse_resources,
    raise_aggregate,
)

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class BalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @staticmethod
    def parse(raw: Mapping[str, Any] | None) -> BalancedAllocationArgs:
        raw = raw or {}
        resources = parse_resources(raw.get("resources"), "resources")
        errs: list[str] = []
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                errs.append(duplicate(f"resources[{i}].name", r.name))
            else:
                seen.add(r.name)
            # Weights do not enter the math; upstream only accepts 1 (after defaulting 0 -> 1).
            if r.weight != 1:
                errs.append(invalid(f"resources[{i}].weight", r.weight, "must be 1"))
        raise_aggregate(errs)
        return BalancedAllocationArgs(resources)


def _balance(values: list[int], allocatable: list[int]) -> int:
    """balancedResourceScore: int64((1 - std) * 100) over fractions capped at 1."""
    fractions: list[float] = []
    total = 0.0
    for r, a in zip(values, allocatable):
        f = float(r) / float(a)
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    n = len(fractions)
    if n == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / float(n)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(n))
    return int((1 - std) * float(MAX_NODE_SCORE))


def _go_div(a: int, b: int) -> int:
    """Go int64 division: truncates toward zero."""
    q = abs(a) // b
    return q if a >= 0 else -q


def balanced_resource_score(
    requested: list[int], allocated: list[int], allocatable: list[int], weights: list[int]
) -> int:
    """balancedResourceScorer: how much the pod improves the node's balance.

    Both balances lie in [50, 100], so their difference is in [-50, 50]; upstream maps it back
    to [50, 100] as 50 + (50 + with - without) / 2 (int64 division), so "no change" is ~75.
    """
    with_pod = _balance(requested, allocatable)
    without_pod = _balance(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + _go_div(half + with_pod - without_pod, 2)


def _balance_batch(
    values: list[np.ndarray], allocatable: list[np.ndarray], present: list[np.ndarray | None], m: int
) -> np.ndarray:
    """_balance over columns; a node's fraction list holds only its present resources."""
    k = len(values)
    fracs: list[np.ndarray] = []
    for r, a, p in zip(values, allocatable, present):
        # int64 / int64 in numpy is float64(r) / float64(a), as in Go.
        f = r / (a if p is None else np.where(p, a, 1))
        np.minimum(f, 1.0, out=f)
        if p is not None:
            # Masked lanes get 0.0 and are excluded below (adding 0.0 never changes a float sum).
            f[~p] = 0.0
        fracs.append(f)
    if all(p is None for p in present):
        if k == 2:
            std = np.abs((fracs[0] - fracs[1]) / 2)
            return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        if k < 2:
            return np.full(m, MAX_NODE_SCORE, dtype=np.int64)
    # General case: the number of fractions may differ per node.
    masks = [np.ones(m, dtype=bool) if p is None else p for p in present]
    n = np.zeros(m, dtype=np.int64)
    total = np.zeros(m, dtype=np.float64)
    first = np.zeros(m, dtype=np.float64)
    second = np.zeros(m, dtype=np.float64)
    for f, p in zip(fracs, masks):
        total = total + f
        first = np.where(p & (n == 0), f, first)
        second = np.where(p & (n == 1), f, second)
        n = n + p
    std = np.zeros(m, dtype=np.float64)
    two = n == 2
    if two.any():
        std[two] = np.abs((first[two] - second[two]) / 2)
    many = n > 2
    if many.any():
        nf = n[many].astype(np.float64)
        mean = total[many] / nf
        acc = np.zeros(int(many.sum()), dtype=np.float64)
        for f, p in zip(fracs, masks):
            d = f[many] - mean
            acc = acc + np.where(p[many], d * d, 0.0)
        std[many] = np.sqrt(acc / nf)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_resource_score_batch(
    requested: list[np.ndarray],
    allocated: list[np.ndarray],
    allocatable: list[np.ndarray],
    present: list[np.ndarray | None],
    weights: list[int],
    m: int,
) -> np.ndarray:
    delta = _balance_batch(requested, allocatable, present, m) - _balance_batch(allocated, allocatable, present, m)
    half = MAX_NODE_SCORE // 2
    x = half + delta
    # Go's truncating division; x is never negative in practice but keep the semantics exact.
    q = np.abs(x) // 2
    return half + np.where(x >= 0, q, -q)


class _PreScoreState:
    __slots__ = ("dra", "pod_requests")

    def __init__(self, pod_requests: tuple[int, ...], dra: DraScoreState | None = None) -> None:
        self.pod_requests = pod_requests
        self.dra = dra


class BalancedAllocation(PreScorePlugin, ScorePlugin, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream BalancedAllocation.SignPod: as NodeResourcesFit's."""
        return sign_resources(pod, self.pod_level, self.dra)

    def __init__(
        self,
        args: BalancedAllocationArgs | None = None,
        features: Features = DEFAULT_FEATURES,
        dra: DraStore | None = None,
    ) -> None:
        self.args = args or BalancedAllocationArgs()
        # SignPod's inputs (upstream's flags on the plugin): the DRA objects only with
        # DRAExtendedResource.
        self.pod_level = features.enable_pod_level_resources
        self.dra = dra if features.enable_dra_extended_resource else None
        # NewBalancedAllocation: the scorer's flags are the gates.
        self.scorer = ResourceAllocationScorer(
            self.args.resources,
            balanced_resource_score,
            balanced_resource_score_batch,
            use_requested=True,
            pod_level=features.enable_pod_level_resources,
            use_status=features.enable_in_place_pod_vertical_scaling,
            pod_level_status=features.enable_in_place_pod_level_resources_vertical_scaling,
        )
        if self.dra is not None:
            # Upstream's scorer here has no CEL cache and would crash on a class with selectors;
            # this one evaluates them as NodeResourcesFit's does.
            self.scorer.dra = DraExtendedScorer(self.dra)

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> BalancedAllocation:
        dra = handle.listers.dra if handle.features.enable_dynamic_resource_allocation else None
        return cls(BalancedAllocationArgs.parse(args), handle.features, dra)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        reqs = self.scorer.pod_requests(pod)
        if self.scorer.is_best_effort(reqs):
            # Upstream skips best-effort pods so they do not all pile onto one node (#129138).
            return SKIP
        state.write(PRE_SCORE_KEY, _PreScoreState(reqs, self.scorer.dra_pre_score()))
        return None

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> _PreScoreState | None:
        s = state.get(PRE_SCORE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        # PreScore did not run: compute here, and score best-effort pods 0 as upstream does.
        reqs = self.scorer.pod_requests(pod)
        return None if self.scorer.is_best_effort(reqs) else _PreScoreState(reqs, self.scorer.dra_pre_score())

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = self._pre_score_state(state, pod)
        if s is None:
            return 0
        return self.scorer.score_node(node, s.pod_requests, s.dra)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray | None:
        s = self._pre_score_state(state, pod)
        idx = np.asarray(idx, dtype=np.intp)
        if s is None:
            return np.zeros(len(idx), dtype=np.int64)
        if s.dra is not None:
            return None  # devices counted per node
        return self.scorer.score_columns(snapshot.columns, idx, s.pod_requests)
