"""MostAllocated scoring strategy (upstream noderesources/most_allocated.go).

Per resource: ``min(requested, allocatable) * 100 / allocatable``; node score: weighted mean
with integer division.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework.status import MAX_NODE_SCORE
from scheduler.plugins.noderesources.resource_allocation import (
    safe_divisor,
    weighted_mean_int,
    weighted_mean_score,
)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Requests may exceed capacity because pods without requests count non-zero defaults.
    requested = min(requested, capacity)
    return requested * MAX_NODE_SCORE // capacity


def most_resource_score(requested: list[int], allocated: list[int], allocatable: list[int], weights: list[int]) -> int:
    # Upstream passes the node-only amounts too; only BalancedAllocation reads them.
    return weighted_mean_score(most_requested_score, requested, allocatable, weights)


def most_resource_score_batch(
    requested: list[np.ndarray],
    allocated: list[np.ndarray],
    allocatable: list[np.ndarray],
    present: list[np.ndarray | None],
    weights: list[int],
    m: int,
) -> np.ndarray:
    scores = [
        np.minimum(r, a) * MAX_NODE_SCORE // safe_divisor(a, p) for r, a, p in zip(requested, allocatable, present)
    ]
    return weighted_mean_int(scores, present, weights, m)
