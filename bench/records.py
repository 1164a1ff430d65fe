"""What the decision records cost the scheduling cycle (python -m bench.records).

The live loop's recording, timed apart from the attempt it records: SchedulingBasic pods placed
on 5,000 nodes (scheduler_perf's node template), then pods too big for any node (every node
rejected: the largest records). Each attempt is one ``Simulator.attempt`` (the scheduling cycle
and its binding: the core the live loop runs) and one ``DecisionStore.record``, into two stores:

* ``record``: the store as ``run`` makes it: references only while its budget lasts (this
  benchmark's runs stay within it, as a burst does; compaction then waits for the loop to idle);
* ``record_full_budget``: a store whose budget is always full, so every record also compacts
  the oldest attempt in the cycle: the cost under sustained load past the budget.

Prints, per case, medians and p99 in microseconds, each store's share of the attempts' time,
and what explaining one whole attempt costs (when someone asks; off the hot path).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.shapes import node
from bench.stats import percentile
from scheduler.boot.gcpolicy import long_lived_objects
from scheduler.config import load_config
from scheduler.core.decision import explain
from scheduler.live.decisions import DecisionStore
from scheduler.simulate.simulator import Simulator, build_cluster


def _pod(i: int, cpu: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "500Mi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "bench", "uid": f"u{i}"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": res}}]}}


def _p99(xs: list[float], q: float) -> float:
    v = percentile(xs, q)
    assert v is not None  # every list here has one value per pod
    return v


def run(nodes: int, pods: int, cpu: str) -> dict[str, Any]:
    docs = [node(i) for i in range(nodes)] + [_pod(i, cpu) for i in range(pods)]
    # As the live scheduler treats what its first LIST builds: out of the collector's way.
    with long_lived_objects():
        sim = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim.frameworks.values()))
    store = DecisionStore()
    full = DecisionStore(budget=1)
    cycle: list[float] = []
    rec: list[float] = []
    rec_full: list[float] = []
    last = None
    for q in list(sim.pending):
        t0 = time.perf_counter()
        out = sim.attempt(q.pod)
        t1 = time.perf_counter()
        assert out is not None
        last = store.record(q.pod, fw, out, sim.snapshot.node_infos, 1, t0, t1 - t0)
        t2 = time.perf_counter()
        full.record(q.pod, fw, out, sim.snapshot.node_infos, 1, t0, t1 - t0)
        rec_full.append(time.perf_counter() - t2)
        rec.append(t2 - t1)
        cycle.append(t1 - t0)
    assert last is not None
    t0 = time.perf_counter()
    explain(last)
    explained = time.perf_counter() - t0
    return {
        "nodes": nodes, "pods": pods, "cpu": cpu,
        "attempt_us_median": round(statistics.median(cycle) * 1e6, 1),
        "attempt_us_p99": round(_p99(cycle, 0.99) * 1e6, 1),
        "record_us_median": round(statistics.median(rec) * 1e6, 1),
        "record_us_p99": round(_p99(rec, 0.99) * 1e6, 1),
        "record_share_of_attempts": round(sum(rec) / sum(cycle), 4),
        "record_full_budget_us_median": round(statistics.median(rec_full) * 1e6, 1),
        "record_full_budget_us_p99": round(_p99(rec_full, 0.99) * 1e6, 1),
        "record_full_budget_share_of_attempts": round(sum(rec_full) / sum(cycle), 4),
        "compacted_in_cycle": full.compacted_in_cycle,
        "explain_one_full_ms": round(explained * 1e3, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--unschedulable", type=int, default=200)
    args = ap.parse_args()
    print(json.dumps(run(args.nodes, args.pods, "100m")))
    print(json.dumps(run(args.nodes, args.unschedulable, "64")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
