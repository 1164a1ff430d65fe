"""RequestedToCapacityRatio scoring strategy (upstream noderesources/requested_to_capacity_ratio.go
and plugins/helper/shape_score.go).

The user's shape maps utilization (0..100) to a score (0..10, scaled by 10 to 0..100) through
a broken-linear function with integer math. Only resources scoring above 0 enter the weighted
mean, which is rounded half away from zero (Go math.Round of a float64 quotient).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.framework.status import MAX_NODE_SCORE

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


def broken_linear(shape: Sequence[ShapePoint], p: int) -> int:
    """helper.BuildBrokenLinearFunction evaluated at p (shape scores already scaled)."""
    for i, pt in enumerate(shape):
        if p <= pt.utilization:
            if i == 0:
                return shape[0].score
            prev = shape[i - 1]
            # Go's int64 division truncates toward zero; the slope may be negative.
            num = (pt.score - prev.score) * (p - prev.utilization)
            den = pt.utilization - prev.utilization
            q = abs(num) // den
            return prev.score + (q if num >= 0 else -q)
    return shape[-1].score


def go_round(x: float) -> int:
    """math.Round for x >= 0: half away from zero, exact on the float64 value."""
    t = float(int(x))
    if x - t >= 0.5:
        t += 1.0
    return int(t)


class RequestedToCapacityRatioScorer:
    __slots__ = ("shape", "table")

    def __init__(self, shape: Sequence[ShapePoint]) -> None:
        # Points come in the user's 0..10 score scale; the scheduler works in 0..100.
        factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.shape = tuple(ShapePoint(p.utilization, p.score * factor) for p in shape)
        # Utilization is always an integer in [0, 100], so the function is a 101-entry table.
        self.table = np.array([broken_linear(self.shape, u) for u in range(MAX_UTILIZATION + 1)], dtype=np.int64)

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(self.shape, MAX_UTILIZATION)
        return broken_linear(self.shape, requested * MAX_UTILIZATION // capacity)

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int], weights: list[int]) -> int:
        node_score = 0
        weight_sum = 0
        for r, a, w in zip(requested, allocatable, weights):
            s = self.resource_score(r, a)
            if s > 0:
                node_score += s * w
                weight_sum += w
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    def score_batch(
        self,
        requested: list[np.ndarray],
        allocated: list[np.ndarray],
        allocatable: list[np.ndarray],
        present: list[np.ndarray | None],
        weights: list[int],
        m: int,
    ) -> np.ndarray:
        num = np.zeros(m, dtype=np.int64)
        den = np.zeros(m, dtype=np.int64)
        for r, a, p, w in zip(requested, allocatable, present, weights):
            safe = a if p is None else np.where(p, a, 1)
            util = np.minimum(r, safe) * MAX_UTILIZATION // safe  # requested > capacity -> 100
            s = self.table.take(util)
            use = s > 0 if p is None else p & (s > 0)
            num += np.where(use, s * w, 0)
            den += use * w
        out = np.zeros(m, dtype=np.int64)
        nz = den != 0
        if not nz.any():
            return out
        # Go: int64(math.Round(float64(num) / float64(den))), half away from zero.
        x = num[nz] / den[nz]
        t = np.trunc(x)
        out[nz] = (t + (x - t >= 0.5)).astype(np.int64)
        return out
