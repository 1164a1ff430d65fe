"""DefaultNormalizeScore; cases from upstream plugins/helper/normalize_score_test.go
TestDefaultNormalizeScore."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.plugins.helper import default_normalize_score

CASES = [
    # (case id in upstream order, reverse, scores, expected)
    ("case_0", False, [1, 2, 3, 4], [25, 50, 75, 100]),
    ("case_1", True, [1, 2, 3, 4], [75, 50, 25, 0]),
    ("case_2", False, [1000, 10, 20, 30], [100, 1, 2, 3]),
    ("case_3", True, [1000, 10, 20, 30], [0, 99, 98, 97]),
    ("case_4", False, [1, 1, 1, 1], [100, 100, 100, 100]),
    ("case_5", False, [1000, 1, 1, 1], [100, 0, 0, 0]),
    ("case_6", True, [0, 1, 1, 1], [100, 0, 0, 0]),
    ("case_7", False, [0, 0, 0, 0], [0, 0, 0, 0]),
    ("case_8", True, [0, 0, 0, 0], [100, 100, 100, 100]),
]


@pytest.mark.parametrize(("reverse", "scores", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    arr = np.array(scores, dtype=np.int64)
    out = default_normalize_score(arr, 100, reverse)
    assert out is arr  # in place
    assert arr.tolist() == expected
    assert arr.dtype == np.int64


def test_go_truncating_division_on_negative_scores() -> None:
    # Go's int64 division truncates toward zero; max stays the largest positive score.
    arr = np.array([-7, 3], dtype=np.int64)
    default_normalize_score(arr, 100)
    assert arr.tolist() == [-233, 100]  # 100*-7/3 = -233.33 -> -233 (floor would give -234)


def test_all_negative_keeps_scores_unless_reversed() -> None:
    # maxCount starts at 0: nothing above it means "all zero" handling.
    arr = np.array([-1, -5], dtype=np.int64)
    default_normalize_score(arr, 100)
    assert arr.tolist() == [-1, -5]
    default_normalize_score(arr, 100, reverse=True)
    assert arr.tolist() == [100, 100]


def test_empty_and_custom_max() -> None:
    arr = np.array([], dtype=np.int64)
    default_normalize_score(arr)
    assert arr.size == 0
    arr = np.array([5, 10], dtype=np.int64)
    default_normalize_score(arr, 10)
    assert arr.tolist() == [5, 10]
