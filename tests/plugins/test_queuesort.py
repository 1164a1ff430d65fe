"""PrioritySort; cases from upstream plugins/queuesort/priority_sort_test.go TestLess."""

from __future__ import annotations

import heapq
import itertools
import random

import pytest

from scheduler.framework.interface import QueuedPodInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.queuesort import PrioritySort
from scheduler.testing.builders import make_pod

LOW, HIGH = 1, 2


def q(priority: int | None, ts: float, seq: int = 0, name: str = "p") -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod(name, priority=priority)), ts, seq)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # "p1.priority less than p2.priority"
        (q(LOW, 1.0), q(HIGH, 1.0), False),
        # "p1.priority greater than p2.priority"
        (q(HIGH, 1.0), q(LOW, 1.0), True),
        # "equal priority. p1 is added to schedulingQ earlier than p2"
        (q(HIGH, 1.0), q(HIGH, 2.0), True),
        # "equal priority. p2 is added to schedulingQ earlier than p1"
        (q(HIGH, 2.0), q(HIGH, 1.0), False),
        # nil priority counts as 0 (corev1helpers.PodPriority)
        (q(None, 1.0), q(-1, 1.0), True),
        # equal priority and timestamp: neither is less
        (q(HIGH, 1.0), q(HIGH, 1.0), False),
    ],
    ids=["p1-lower", "p1-higher", "equal-p1-earlier", "equal-p2-earlier", "nil-is-zero", "tie"],
)
def test_less(a: QueuedPodInfo, b: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort().less(a, b) is expected


def test_sort_key_consistent_with_less() -> None:
    pl = PrioritySort()
    rng = random.Random(7)
    items = [
        q(rng.choice([None, -5, 0, 3, 1000]), float(rng.randint(0, 5)), seq=i, name=f"p{i}")
        for i in range(300)
    ]
    for a in items[:60]:
        for b in items:
            if pl.less(a, b):
                assert pl.sort_key(a) < pl.sort_key(b)
            if pl.sort_key(a) < pl.sort_key(b):
                assert not pl.less(b, a)
    # A heap on the key pops in an order ``less`` agrees with.
    heap = [(pl.sort_key(x), x.seq, x) for x in items]
    heapq.heapify(heap)
    popped = [heapq.heappop(heap)[2] for _ in range(len(items))]
    for x, y in itertools.pairwise(popped):
        assert not pl.less(y, x)


def test_name() -> None:
    assert PrioritySort.name == "PrioritySort"
