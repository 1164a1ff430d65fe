"""LeastAllocated scoring strategy (upstream noderesources/least_allocated.go).

Per resource: ``(allocatable - requested) * 100 / allocatable`` (0 when over-committed); node
score: weighted mean with integer division.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework.status import MAX_NODE_SCORE
from scheduler.plugins.noderesources.resource_allocation import (
    safe_divisor,
    weighted_mean_int,
    weighted_mean_score,
)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_score(requested: list[int], allocated: list[int], allocatable: list[int], weights: list[int]) -> int:
    # Upstream passes the node-only amounts too; only BalancedAllocation reads them.
    return weighted_mean_score(least_requested_score, requested, allocatable, weights)


def least_resource_score_batch(
    requested: list[np.ndarray],
    allocated: list[np.ndarray],
    allocatable: list[np.ndarray],
    present: list[np.ndarray | None],
    weights: list[int],
    m: int,
) -> np.ndarray:
    scores = []
    for r, a, p in zip(requested, allocatable, present):
        free = a - r
        # free < 0 (over-committed) scores 0; masked lanes are dropped by the weighted mean.
        s = np.maximum(free, 0) * MAX_NODE_SCORE // safe_divisor(a, p)
        scores.append(s)
    return weighted_mean_int(scores, present, weights, m)
