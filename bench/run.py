"""`make bench`: scheduler_perf shapes run offline through `simulate --output placements`.

Prints pods/s (scheduling only: start-up and parsing excluded, measured inside simulate) and
the peak RSS of the simulate process, against each shape's target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shapes import SHAPES  # noqa: E402

OUT = ROOT / "bench" / "out"


# Workload -> (shape, target pods/s on this machine: see the issues for where each comes from).
TARGETS: dict[str, tuple[str, float]] = {
    "SchedulingBasic/5000Nodes_10000Pods": ("SchedulingBasic", 2000.0),
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods": ("SchedulingPodAntiAffinity", 120.0),
    "SchedulingPreferredPodAffinity/5000Nodes_5000Pods": ("SchedulingPreferredPodAffinity", 180.0),
    "TopologySpreading/5000Nodes_5000Pods": ("TopologySpreading", 920.0),
    "PreferredTopologySpreading/5000Nodes_5000Pods": ("PreferredTopologySpreading", 680.0),
}


def write_cluster(path: Path, shape: str) -> int:
    # Initial pods are pre-bound round-robin so only the measured pods are timed.
    nodes, init, measure = SHAPES[shape](bind_init=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": nodes + init + measure}, f)
    return len(measure)


def run_one(cluster: Path, seed: int) -> tuple[dict, float]:
    cmd = [
        sys.executable,
        "-m",
        "scheduler",
        "simulate",
        "--cluster",
        str(cluster),
        "--output",
        "placements",
        "--seed",
        str(seed),
        "--stats",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"simulate failed ({proc.returncode}): {err.strip()}")
    stats = json.loads([line for line in err.splitlines() if line.startswith("{")][-1])
    return stats, usage.ru_maxrss / 1024.0  # ru_maxrss is KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run only shapes whose name contains this text")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    failed = False
    print(f"{'workload':52} {'pods':>6} {'pods/s':>9} {'target':>8} {'peak RSS MB':>12}")
    for name, (shape, target) in TARGETS.items():
        if args.only and args.only not in name:
            continue
        path = OUT / (name.replace("/", "_") + ".json")
        n = write_cluster(path, shape)
        stats, rss = run_one(path, args.seed)
        ok = stats["pods_per_second"] >= target and rss < 600
        failed |= not ok
        verdict = "ok" if ok else "BELOW TARGET"
        print(f"{name:52} {n:6d} {stats['pods_per_second']:9.1f} {target:8.0f} {rss:12.1f} {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
