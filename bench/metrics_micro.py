"""Micro-benchmark: what kube-scheduler's metrics cost the scheduling cycle.

Runs the synchronous cycle (core/cycle.py: filter, score, assume, Reserve, Permit) for the same
pods on the same nodes with the metrics off (no observer, the no-op recorder), on as the live
app wires them (extension points every cycle, per-plugin timing in one cycle in ten), and on
with every cycle sampled (the cost of one sampled cycle). Prints microseconds per cycle, the
median of ``--repeat`` runs. Runs against any tree on PYTHONPATH (an older tree has no
sampling: its "sampled" row is left out), so the same command compares two commits. CPU time
of the process, best and median of the runs:

    PYTHONPATH=. python3 bench/metrics_micro.py --nodes 5000 --pods 500
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.config import load_config
from scheduler.core.algorithm import Algorithm
from scheduler.core.cycle import scheduling_cycle
from scheduler.core.profiles import build_frameworks
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.live.metrics import Metrics
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod


def _run(mode: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> float:
    metrics = Metrics()
    snap, listers = Snapshot(), Listers()
    observers = None if mode == "off" else metrics.extension_point_observer
    fws = build_frameworks(load_config(None), snap, listers, observers=observers)
    fw = fws["default-scheduler"]
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    queue = SchedulingQueue(fws, time.monotonic)
    if mode != "off" and hasattr(metrics, "attach"):
        metrics.attach(fws, queue, cache.sizes, lambda: 0)
        if mode == "sampled":
            fw.handle.metrics.sample = lambda: True  # type: ignore[method-assign]
    alg = Algorithm(random.Random(0))
    infos = [PodInfo(p) for p in pods]
    start = time.process_time()  # CPU time: other processes on a shared machine do not count
    for pod in infos:
        t0 = time.perf_counter()
        out = scheduling_cycle(fw, alg, cache, snap, pod)
        if mode != "off":
            # What the loop records around each cycle.
            metrics.scheduling_algorithm_duration.observe(time.perf_counter() - t0)
            metrics.attempt("scheduled" if out.assumed is not None else "unschedulable", fw.profile_name,
                            time.perf_counter() - t0)
    return (time.process_time() - start) / len(infos) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    nodes = [make_node(f"n{i}", cpu="32", memory="128Gi", pods=110,
                       labels={"topology.kubernetes.io/zone": f"z{i % 3}"}) for i in range(args.nodes)]
    pods = [make_pod(f"p{i}", cpu="100m", memory="128Mi") for i in range(args.pods)]
    modes = ["off", "on"]
    if hasattr(Metrics(), "attach"):
        modes.append("sampled")
    results: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.repeat):
        for m in modes:  # interleaved, so drift on a shared machine hits every mode alike
            results[m].append(_run(m, nodes, pods))
    for m in modes:
        print(f"{m:8s} best {min(results[m]):7.1f}  median {statistics.median(results[m]):7.1f} us/cycle   (runs: "
              + ", ".join(f"{v:.1f}" for v in results[m]) + ")")


if __name__ == "__main__":
    main()
