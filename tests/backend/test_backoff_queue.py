"""backoffQ: backoff times, 1-second ordering windows, the two heaps. Tables from upstream
pkg/scheduler/backend/queue/backoff_queue_test.go (v1.36.3), test names cited."""

from __future__ import annotations

import math

import pytest

from scheduler.backend.backoff_queue import BackoffQueue
from scheduler.plugins.queuesort import PrioritySort
from scheduler.testing.fakes import FakeClock
from tests.backend.queue_helpers import pod, queued

T = 1696118400.0  # 2023-10-01T00:00:00Z, a whole second
NO_BACKOFF = -math.inf  # upstream's zero time.Time
MAX_INT32, MAX_INT64 = 2**31 - 1, 2**63 - 1


def new_backoff_queue(
    clock: FakeClock, initial: float = 1.0, maximum: float = 10.0, *, windows: bool = True, phase: float = 0.0
) -> BackoffQueue:
    return BackoffQueue(clock, initial, maximum, PrioritySort().sort_key, windows=windows, phase=phase)


@pytest.mark.parametrize(
    ("initial", "maximum", "fields", "want"),
    [
        pytest.param(1, 32, {"unschedulable_count": 0}, NO_BACKOFF, id="no backoff"),
        # Upstream caches T+1ns; a float second cannot hold T+1ns, so the cached value is T+0.25.
        pytest.param(1, 32, {"unschedulable_count": 1, "backoff_expiration": T + 0.25}, T + 0.25,
                     id="backoff is returned from the cache"),
        pytest.param(1, 32, {"unschedulable_count": 16}, T + 32, id="backoff by UnschedulableCount"),
        pytest.param(1, 32, {"unschedulable_count": 5, "consecutive_errors_count": 16}, T + 32,
                     id="backoff is calculated with ConsecutiveErrorsCount"),
        pytest.param(0, 0, {"unschedulable_count": 16}, NO_BACKOFF, id="zero maxBackoffDuration means no backoff"),
    ],
)
def test_get_backoff_time(initial, maximum, fields, want):
    # TestBackoffQueue_getBackoffTime
    bq = new_backoff_queue(FakeClock(T), initial, maximum)
    assert bq.backoff_time(queued(pod("p"), timestamp=T, **fields)) == want


@pytest.mark.parametrize(
    ("initial_ns", "max_ns", "count", "want_ns"),
    [
        pytest.param(1, 32, 0, 0, id="no backoff"),
        pytest.param(3, 1000, 5, 48, id="normal"),  # 3 * 2^4
        pytest.param(1, 32, 16, 32, id="hitting max backoff duration"),
        pytest.param(1, MAX_INT32, 32, MAX_INT32, id="overflow_32bit"),
        pytest.param(1, MAX_INT64, 64, MAX_INT64, id="overflow_64bit"),
    ],
)
def test_calculate_backoff_duration(initial_ns, max_ns, count, want_ns):
    # TestBackoffQueue_calculateBackoffDuration: durations are integer nanoseconds, as time.Duration.
    bq = new_backoff_queue(FakeClock(T))
    bq.initial_ns, bq.max_ns = initial_ns, max_ns
    assert bq.duration(count) == want_ns / 1e9


@pytest.mark.parametrize(
    ("count", "want"),
    [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (50, 10)],  # defaults: 1 s doubling up to 10 s
)
def test_default_durations(count, want):
    assert new_backoff_queue(FakeClock(T)).duration(count) == want


NOW = 1000.37  # upstream's fake clock starts at time.Now(): not on a window start
POP_ALL_PODS = {
    "pod0": {"timestamp": NOW - 2, "unschedulable_count": 1, "plugins": ("plugin",)},
    "pod1": {"timestamp": NOW + 1, "unschedulable_count": 1, "plugins": ("plugin",)},
    "pod2": {"timestamp": NOW - 2, "consecutive_errors_count": 1, "plugins": ()},
    "pod3": {"timestamp": NOW + 1, "consecutive_errors_count": 1, "plugins": ()},
}


@pytest.mark.parametrize("windows", [True, False], ids=["popFromBackoffQ", "noPopFromBackoffQ"])
@pytest.mark.parametrize(
    ("in_backoff", "want"),
    [
        pytest.param([], [], id="Both queues empty, no pods moved to activeQ"),
        pytest.param(["pod0", "pod1"], ["pod0"], id="Pods only in backoffQ, some pods moved to activeQ"),
        pytest.param(["pod2", "pod3"], ["pod2"], id="Pods only in errorBackoffQ, some pods moved to activeQ"),
        pytest.param(["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"],
                     id="Pods in both queues, some pods moved to activeQ"),
        pytest.param(["pod0", "pod2"], ["pod0", "pod2"], id="Pods in both queues, all pods moved to activeQ"),
        pytest.param(["pod1", "pod3"], [], id="Pods in both queues, no pods moved to activeQ"),
    ],
)
def test_pop_all_backoff_completed(windows, in_backoff, want):
    # TestBackoffQueue_popAllBackoffCompleted
    bq = new_backoff_queue(FakeClock(NOW), windows=windows)
    for name in in_backoff:
        f = dict(POP_ALL_PODS[name])
        plugins = f.pop("plugins")
        bq.add(queued(pod(name), *plugins, **f))
    got = [q.pod.name for q in bq.pop_all_completed()]
    assert got == want
    assert len(bq) == len(in_backoff) - len(want)


ORDERING_PODS = [  # name, priority, timestamp offset from the window start N
    ("pod0", 1, 0.0),
    ("pod1", 1, -1.0),
    ("pod2", 2, -2.0 + 0.001),
    ("pod3", 1, -2.0),
    ("pod4", 2, -2.0),
    ("pod5", 1, -3.0),
]


@pytest.mark.parametrize(
    ("windows", "want"),
    [
        pytest.param(True, ["pod5", "pod4", "pod2", "pod3"],
                     id="Pods with the same window are ordered by priority if PopFromBackoffQ is enabled"),
        pytest.param(False, ["pod5", "pod3", "pod4", "pod2"],
                     id="Pods priority doesn't matter if PopFromBackoffQ is disabled"),
    ],
)
def test_backoff_queue_ordering(windows, want):
    # TestBackoffQueueOrdering: the clock on a window start N; each pod failed once (1 s).
    n = 1000.0
    bq = new_backoff_queue(FakeClock(n), windows=windows)
    for name, prio, offset in ORDERING_PODS:
        bq.add(queued(pod(name, priority=prio), "plugin", timestamp=n + offset, attempts=1, unschedulable_count=1))
    assert [q.pod.name for q in bq.pop_all_completed()] == want


@pytest.mark.parametrize(
    ("failed_at", "backing_off_until"),
    [
        # Expiry 1 s later, truncated to its window; backing off through that whole window.
        (1000.0, 1002.0),
        (1000.3, 1002.0),
        (1000.999, 1002.0),
        (1001.0, 1003.0),
    ],
)
def test_backoff_completes_when_the_window_after_its_expiry_starts(failed_at, backing_off_until):
    # isPodBackingoff: "If the pod backoff time is in the actual ordering window, it should
    # still be backing off".
    clock = FakeClock(failed_at)
    bq = new_backoff_queue(clock)
    qi = queued(pod("p"), "plugin", timestamp=failed_at, unschedulable_count=1)
    clock.t = backing_off_until - 0.001
    assert bq.is_backing_off(qi)
    clock.t = backing_off_until
    assert not bq.is_backing_off(qi)
    assert bq.completion_time(qi) == backing_off_until


def test_without_windows_the_expiry_is_exact():
    clock = FakeClock(1000.3)
    bq = new_backoff_queue(clock, windows=False)
    qi = queued(pod("p"), "plugin", timestamp=1000.3, unschedulable_count=1)
    clock.t = 1001.3
    assert bq.is_backing_off(qi)  # not yet before the expiry
    clock.t = 1001.31
    assert not bq.is_backing_off(qi)


@pytest.mark.parametrize("phase", [0.0, 0.25, 0.75])
def test_windows_start_at_the_phase(phase):
    # The live queue's clock is monotonic; the phase puts its window starts on wall seconds.
    bq = new_backoff_queue(FakeClock(0), phase=phase)
    for t in (1000.0, 1000.2, 1000.5, 1000.9):
        start = bq.align(t)
        assert start <= t < start + 1
        assert (start - phase) == math.floor(start - phase)


def test_errors_and_rejections_go_to_their_heaps():
    # backoffQueue.add: no rejecting plugin -> podErrorBackoffQ; popBackoff takes podBackoffQ only.
    clock = FakeClock(NOW)
    bq = new_backoff_queue(clock)
    err = queued(pod("err", priority=9), timestamp=NOW, consecutive_errors_count=1)
    rej = queued(pod("rej"), "plugin", timestamp=NOW, unschedulable_count=1)
    bq.add(err)
    assert bq.len_backoff() == 0 and len(bq) == 1
    assert bq.pop_backoff() is None
    bq.add(rej)
    assert bq.len_backoff() == 1 and len(bq) == 2
    assert bq.pop_backoff() is rej
    assert bq.len_backoff() == 0 and bq.get(err.pod.uid) is err
    # A pod re-added after a rejection moves to podBackoffQ.
    err.unschedulable_plugins = {"plugin"}
    bq.add(err)
    assert bq.len_backoff() == 1 and len(bq) == 1


def test_update_resorts_within_the_window():
    clock = FakeClock(1000.0)
    bq = new_backoff_queue(clock)
    a = queued(pod("a", priority=1), "plugin", timestamp=1000.1, unschedulable_count=1)
    b = queued(pod("b", priority=2), "plugin", timestamp=1000.2, unschedulable_count=1)
    bq.add(a)
    bq.add(b)
    a.pod = pod("a", priority=5)
    bq.update(a)
    assert [bq.pop_backoff(), bq.pop_backoff()] == [a, b]
    assert bq.pop_backoff() is None


def test_delete_and_next_completion():
    clock = FakeClock(1000.5)
    bq = new_backoff_queue(clock)
    a = queued(pod("a"), "plugin", timestamp=1000.5, unschedulable_count=2)  # 2 s: window 1002
    b = queued(pod("b"), timestamp=1000.5, consecutive_errors_count=1)  # 1 s: window 1001
    bq.add(a)
    bq.add(b)
    assert bq.next_completion() == 1002.0
    assert bq.delete(b.pod.uid) is b
    assert bq.delete(b.pod.uid) is None
    assert bq.next_completion() == 1003.0
    bq.delete(a.pod.uid)
    assert bq.next_completion() == math.inf and len(bq) == 0
