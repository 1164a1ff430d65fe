"""Micro-benchmark of the scheduling queue's per-pod cost, in virtual time (no API server).

    python -m bench.queue_micro [--pods 20000] [--repeat 5]

Prints microseconds per pod for the paths the live loop takes per pod:

* ``add+pop+done``: a new pod enters activeQ, is popped and bound (the bench-live hot path);
* ``fail+event+pop``: a popped pod is rejected by NodeResourcesFit, parked as unschedulable,
  moved back by a Node add whose hint says it fits, popped again, done;
* ``error+flush+pop``: a popped pod fails with an error, waits out its backoff, is flushed to
  activeQ and popped again, done.

CPU time of this process; the best of ``--repeat`` runs is reported (the least disturbed by
the machine's other work).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scheduler.backend.queue import SchedulingQueue  # noqa: E402
from scheduler.config import load_config  # noqa: E402
from scheduler.core.profiles import build_frameworks  # noqa: E402
from scheduler.framework.events import ActionType, ClusterEvent  # noqa: E402
from scheduler.framework.interface import QueuedPodInfo  # noqa: E402
from scheduler.framework.listers import Listers  # noqa: E402
from scheduler.framework.snapshot import Snapshot  # noqa: E402
from scheduler.model.node import NodeInfo  # noqa: E402
from scheduler.model.pod import PodInfo  # noqa: E402
from scheduler.testing.builders import make_node, make_pod  # noqa: E402
from scheduler.testing.fakes import FakeClock  # noqa: E402


def _pods(n: int) -> list[PodInfo]:
    return [PodInfo(make_pod(f"p{i}", cpu="100m", priority=i % 7)) for i in range(n)]


def _drain(q: SchedulingQueue, after: Callable[[SchedulingQueue, QueuedPodInfo], object]) -> None:
    while (qi := q.pop_nowait()) is not None:
        after(q, qi)


def _done(q: SchedulingQueue, qi: QueuedPodInfo) -> None:
    q.done(qi.pod.uid)


def _rejected(q: SchedulingQueue, qi: QueuedPodInfo) -> None:
    qi.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(qi)


def _errored(q: SchedulingQueue, qi: QueuedPodInfo) -> None:
    qi.unschedulable_plugins = set()
    q.add_unschedulable_if_not_present(qi)


def add_pop_done(q: SchedulingQueue, clock: FakeClock, pods: list[PodInfo]) -> None:
    for p in pods:
        q.add(p)
    _drain(q, _done)


def _fail_then_retry(
    q: SchedulingQueue, clock: FakeClock, pods: list[PodInfo],
    failed: Callable[[SchedulingQueue, QueuedPodInfo], None], wake: Callable[[SchedulingQueue], object],
) -> None:
    for p in pods:
        q.add(p)
    _drain(q, failed)
    clock.step(30)
    wake(q)
    _drain(q, _done)


BIG = NodeInfo(make_node("big", cpu="1000"))


def fail_event_pop(q: SchedulingQueue, clock: FakeClock, pods: list[PodInfo]) -> None:
    _fail_then_retry(q, clock, pods, _rejected,
                     lambda q: q.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, BIG))


def error_flush_pop(q: SchedulingQueue, clock: FakeClock, pods: list[PodInfo]) -> None:
    _fail_then_retry(q, clock, pods, _errored, lambda q: q.flush_backoff_completed())


CASES: dict[str, Callable[[SchedulingQueue, FakeClock, list[PodInfo]], None]] = {
    "add+pop+done": add_pop_done,
    "fail+event+pop": fail_event_pop,
    "error+flush+pop": error_flush_pop,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    fws = build_frameworks(load_config(None), Snapshot(), Listers())
    for name, case in CASES.items():
        best = float("inf")
        for _ in range(args.repeat):
            pods = _pods(args.pods)
            clock = FakeClock()
            q = SchedulingQueue(fws, clock)
            t0 = time.process_time()
            case(q, clock, pods)
            best = min(best, time.process_time() - t0)
        print(f"{name:18s} {best / args.pods * 1e6:7.2f} us/pod  ({args.pods} pods, best of {args.repeat})")


if __name__ == "__main__":
    main()
