"""The lane's threads (scheduler/live/kube/lanethreads.py)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from scheduler.live.kube import lanethreads
from scheduler.live.kube.lanethreads import LaneThreads


def boom() -> None:
    raise ValueError("refused")


@pytest.mark.parametrize(
    ("fn", "args", "want"),
    [
        (lambda a, b: a + b, (2, 3), 5),
        (lambda: threading.current_thread().name.startswith("bind_"), (), True),  # never on the loop's thread
        (boom, (), ValueError),
    ],
)
def test_result_or_error_reaches_the_awaiting_coroutine(fn: object, args: tuple, want: object) -> None:
    async def go() -> object:
        lane = LaneThreads(2, "bind")
        try:
            return await lane.submit(fn, *args)  # type: ignore[arg-type]
        finally:
            lane.shutdown()

    if isinstance(want, type) and issubclass(want, BaseException):
        with pytest.raises(want):
            asyncio.run(go())
    else:
        assert asyncio.run(go()) == want


@pytest.mark.parametrize("allowed", [True, False])
def test_lane_threads_run_under_sched_batch_where_allowed(allowed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the policy an idle thread woken for a write preempts the loop that still holds
    # the GIL; where the call is refused (seccomp) the lane works as before.
    if not hasattr(os, "SCHED_BATCH"):
        pytest.skip("no SCHED_BATCH on this platform")
    if not allowed:
        def refuse(*_: object) -> None:
            raise PermissionError("sched_setscheduler refused")

        monkeypatch.setattr(lanethreads.os, "sched_setscheduler", refuse)

    async def go() -> int:
        lane = LaneThreads(1, "bind")
        try:
            return int(await lane.submit(os.sched_getscheduler, 0))
        finally:
            lane.shutdown()

    assert asyncio.run(go()) == (os.SCHED_BATCH if allowed else os.SCHED_OTHER)


def test_results_that_finish_together_wake_the_loop_once() -> None:
    gate = threading.Event()
    wakes: list[int] = []

    async def go() -> list[int]:
        lane = LaneThreads(4, "bind")
        deliver = lane._deliver

        def counted(loop: asyncio.AbstractEventLoop) -> None:
            wakes.append(1)
            deliver(loop)

        lane._deliver = counted  # type: ignore[method-assign]
        futs = [lane.submit(lambda i=i: (gate.wait(), i)[1]) for i in range(4)]
        await asyncio.sleep(0.05)  # all four threads blocked on the gate
        gate.set()
        await asyncio.sleep(0.05)  # ... and all four done before the loop runs again
        out = list(await asyncio.gather(*futs))
        lane.shutdown()
        return out

    assert asyncio.run(go()) == [0, 1, 2, 3]
    assert 1 <= len(wakes) < 4


def test_threads_are_capped_and_reused() -> None:
    async def go() -> int:
        lane = LaneThreads(2, "bind")
        for _ in range(3):
            await asyncio.gather(*(lane.submit(lambda: None) for _ in range(10)))
        n = len(lane._threads)
        lane.shutdown()
        return n

    assert asyncio.run(go()) <= 2


def test_shutdown_cancels_calls_not_started() -> None:
    gate = threading.Event()

    async def go() -> tuple[bool, bool]:
        lane = LaneThreads(1, "bind")
        running = lane.submit(gate.wait)
        queued = lane.submit(lambda: "never")
        await asyncio.sleep(0.05)
        lane.shutdown()
        gate.set()
        await running
        await asyncio.sleep(0.05)
        with pytest.raises(RuntimeError):
            lane.submit(lambda: None)
        return running.result(), queued.cancelled()

    assert asyncio.run(go()) == (True, True)


def test_a_cancelled_await_leaves_the_others() -> None:
    gate = threading.Event()

    async def go() -> int:
        lane = LaneThreads(2, "bind")
        a = lane.submit(gate.wait)
        b = lane.submit(lambda: (gate.wait(), 7)[1])
        a.cancel()
        gate.set()
        out = await b
        lane.shutdown()
        return out

    assert asyncio.run(go()) == 7
