"""Parsed forms of API subtrees, kept by the subtree's JSON.

Pods of one workload carry byte-identical tolerations, node affinity and container resources
(and every pod gets the same two default tolerations at admission), so their checked, parsed
and immutable forms are kept by the JSON of the subtree: a repeat costs one orjson.dumps and a
lookup. Bounded: a memo is cleared when full, so distinct values cannot grow it without limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson

_SUBTREE_MEMO_MAX = 4096
_T = TypeVar("_T")


def memoized(memo: dict[bytes, _T], raw: Any, compute: Callable[[Any], _T]) -> _T:
    """``compute(raw)`` (which checks, so it may raise), kept in ``memo`` by raw's JSON."""
    try:
        key = orjson.dumps(raw)
    except TypeError:  # not JSON (a test's or a YAML file's odd value): parse it every time
        return compute(raw)
    hit = memo.get(key)
    if hit is None:
        hit = compute(raw)  # a failed check raises here: bad subtrees are never kept
        if len(memo) >= _SUBTREE_MEMO_MAX:
            memo.clear()
        memo[key] = hit
    return hit
