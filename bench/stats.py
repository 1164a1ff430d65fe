"""Small statistics the benchmarks share."""

from __future__ import annotations


def percentile(xs: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``xs`` (the element at index q*n of the sorted values), None when
    empty."""
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]
