"""bench/perf_tracker.py: scheduler_perf's throughput collector (util.go throughputCollector)
and the bench's pod watch state, without a plane."""

from __future__ import annotations

from typing import Any

import pytest

from bench.perf_tracker import PodTracker, Sampler, Window, summarize


@pytest.mark.parametrize(
    ("ticks", "want"),
    [
        # (time, scheduled pods) at each tick. Before the first pod nothing is sampled; the
        # first non-zero count only sets the base; then one rate per interval.
        ([(1, 0), (2, 0), (3, 5), (4, 10), (5, 30)], [5.0, 20.0]),
        # Intervals with no new pod are skipped; the next rate is recorded once per interval.
        ([(1, 5), (2, 10), (3, 10), (4, 10), (5, 16)], [5.0, 2.0, 2.0, 2.0]),
        # The rate is over the time actually elapsed (a late tick), not the nominal second.
        ([(1, 4), (2.5, 10)], [4.0]),
        # A window that ends within two ticks of the first bind has no sample.
        ([(1, 0), (2, 7)], []),
    ],
)
def test_sampler(ticks: list[tuple[float, int]], want: list[float]) -> None:
    s = Sampler(0, 0.0)
    for now, scheduled in ticks:
        s.observe(now, scheduled)
    assert s.samples == pytest.approx(want)


def test_summary_percentiles() -> None:
    # Perc<p> is sorted[ceil(n*p/100)-1]; Average the mean.
    got = summarize([float(x) for x in range(10, 0, -1)])
    assert got == {"samples": 10, "Average": 5.5, "Perc50": 5.0, "Perc90": 9.0, "Perc95": 10.0, "Perc99": 10.0}
    assert summarize([]) == {"samples": 0}


class _Conn:
    sock = None

    def close(self) -> None:
        pass


class _Kube:
    def connect(self, timeout: float | None = None) -> _Conn:
        return _Conn()


def pod(name: str, ns: str = "ns", uid: str = "", node: str = "", labels: dict[str, str] | None = None,
        scheduled: str | None = None) -> dict[str, Any]:  # fmt: skip
    status = {"conditions": [{"type": "PodScheduled", "status": scheduled, "reason": "Unschedulable",
                              "message": "0/1 nodes"}]} if scheduled else {}  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": ns, "uid": uid or name, "labels": labels or {}},
        "spec": {"nodeName": node} if node else {},
        "status": status,
    }


def test_binds_are_counted_once_per_pod() -> None:
    t = PodTracker(_Kube())  # type: ignore[arg-type]
    t._apply("ADDED", pod("bound-before", node="n1"), 0.0)
    win = Window("w", ["ns"], {"type": "unsched"})
    other = Window("all", ["ns"], None)
    t.open_window(win)
    t.open_window(other)
    try:
        # The window counts the bound pods it starts with (an informer replays them).
        assert (win.count(), other.count()) == (0, 1)
        t._apply("ADDED", pod("a", labels={"type": "unsched"}), 1.0)
        t._apply("MODIFIED", pod("a", labels={"type": "unsched"}, scheduled="False"), 1.5)
        assert t.stages("ns", {"type": "unsched"}) == (0, 1, 0)
        t._apply("MODIFIED", pod("a", node="n1", labels={"type": "unsched"}), 2.0)
        t._apply("MODIFIED", pod("a", node="n1", labels={"type": "unsched"}), 3.0)  # kwok: Running
        assert (win.count(), other.count(), win.bind_times) == (1, 2, [2.0])
        # Same name, new pod: a new bind.
        t._apply("DELETED", pod("a", node="n1", labels={"type": "unsched"}), 4.0)
        assert t.stages("ns", {"type": "unsched"}) == (0, 0, 0)
        t._apply("ADDED", pod("a", uid="a2", node="n2", labels={"type": "unsched"}), 5.0)
        assert (win.count(), other.count()) == (2, 3)
        # Another namespace is not counted.
        t._apply("ADDED", pod("b", ns="elsewhere", node="n1", labels={"type": "unsched"}), 6.0)
        assert (win.count(), other.count()) == (2, 3)
    finally:
        t.close_window(win)
        t.close_window(other)


def test_timeout_names_a_pending_pod() -> None:
    t = PodTracker(_Kube())  # type: ignore[arg-type]
    t._apply("ADDED", pod("z"), 0.0)
    t._apply("ADDED", pod("y", scheduled="False"), 0.0)
    with pytest.raises(TimeoutError) as err:
        t.wait_for("2 pods", lambda: False, 0.05, lambda: None, ("ns",))
    # An attempted pod first, with its condition.
    assert "at least pod ns/y is not scheduled (Unschedulable: 0/1 nodes)" in str(err.value)


@pytest.mark.parametrize(
    ("node", "status", "meta", "want"),
    [
        ("", {}, {}, (0, 0)),  # not bound: not kwok's yet
        ("n1", {}, {}, (1, 1)),  # bound, kwok has not started it
        ("n1", {"phase": "Pending"}, {}, (1, 1)),
        ("n1", {"phase": "Running"}, {}, (0, 1)),
        ("n1", {"phase": "Succeeded"}, {}, (0, 1)),
        ("n1", {"phase": "Pending"}, {"deletionTimestamp": "2026-01-01T00:00:00Z"}, (0, 1)),  # going away
    ],
)
def test_starting_counts_bound_pods_kwok_has_not_run(
    node: str, status: dict[str, Any], meta: dict[str, Any], want: tuple[int, int]
) -> None:
    t = PodTracker(_Kube())  # type: ignore[arg-type]
    obj = pod("p", node=node)
    obj["status"] = status
    obj["metadata"].update(meta)
    t._apply("ADDED", obj, 0.0)
    t._apply("ADDED", pod("running", node="n2") | {"status": {"phase": "Running"}}, 0.0)
    got = t.starting()
    assert got == (want[0], want[1] + 1)
