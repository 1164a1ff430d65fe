"""Parsed subtrees kept by their JSON: bounded, and values that are not JSON are parsed each time."""

from __future__ import annotations

import pytest

from scheduler.model import memo, taints
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod


def test_subtree_memo_is_bounded_and_skips_values_that_are_not_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "_SUBTREE_MEMO_MAX", 8)
    monkeypatch.setattr(taints, "_tolerations_memo", {})
    for i in range(20):
        PodInfo(make_pod(f"p{i}", tolerations=[{"key": f"k{i}", "operator": "Exists"}]))
        assert len(taints._tolerations_memo) <= 8
    odd = [{"key": "k", "operator": "Exists", 1: "not a JSON key"}]
    p = PodInfo(make_pod("odd", tolerations=odd))
    assert [(t.key, t.operator) for t in p.tolerations] == [("k", "Exists")]
    assert all(b"not a JSON key" not in k for k in taints._tolerations_memo)


def test_a_failed_compute_is_not_kept() -> None:
    kept: dict[bytes, int] = {}

    def bad(_: object) -> int:
        raise ValueError("bad")

    with pytest.raises(ValueError):
        memo.memoized(kept, [1], bad)
    assert kept == {}
    assert memo.memoized(kept, [1], len) == 1 and list(kept) == [b"[1]"]
