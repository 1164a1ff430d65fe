"""Steady arrival, side by side: created -> bound latency under a constant pod creation rate.

A benchmark, not a test (``make bench-arrival``). SchedulingBasic's cluster (scheduler_perf's
node and pod templates, bench/shapes.py) at ``--nodes`` kwok nodes with its init pods bound; kwok
live (bound pods go Running and are updated as a kubelet would; ``--kwok-paused`` stops it during
the measured window). Per round, rate and contestant (the order rotates per round):

1. the contestant starts; a probe pod is created and the window opens once it is bound (both
   schedulers have listed the cluster and are idle: start-up is not what this measures);
2. pods are created at ``rate`` per second for ``--duration`` seconds, each at its own instant
   (i / rate after the start: no bursts), by a few client threads;
3. a watch of bound pods records when each is first seen bound; the latency of a pod is that
   moment minus the moment its create request was sent (the API server stamps the pod then);
4. once all are bound (or ``--duration`` + 120 s passed), the contestant's CPU (process tree)
   and peak RSS and the API server's CPU are read; the contestant stops, the pods go.

Reports, per rate and contestant (median over rounds): p50, p90, p99 and max latency in ms, pods
bound, CPU-s per 1000 pods, API server CPU-s, peak RSS. Writes ``--out``/arrival.jsonl, one line
per run, and prints the table. The issue's targets: p50 and p99 at or below kube-scheduler's.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.live_cluster import create_pods, delete_pods, prepare_workload, renamed
from bench.live_contestants import CONTESTANTS, contestant_argv, scheduler_config
from bench.live_observe import BindObserver
from bench.live_plane import Kwok, Plane, say, start_plane
from bench.live_procfs import cpu_seconds, hwm_mb, process_tree
from bench.live_shapes import Workload
from bench.stats import percentile
from scheduler.testing.process import stop_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
# A create holds its thread for its round trip (~30 ms, ~100 ms at p99 on a busy plane): 6 threads
# held 200/s down to ~160/s. Enough threads for the rate times a slow answer keeps the rate true.
CREATE_SLOW_S = 0.15


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Steady-arrival latency, side by side (see the module docstring).")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--rates", default="50,200", help="pods created per second, comma-separated")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of creation per run")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--contestants", default="kube,ours", help="comma-separated: kube, ours")
    ap.add_argument("--qps", type=int, default=5000, help="client qps and burst of every contestant")
    ap.add_argument("--bind-workers", type=int, default=16)
    ap.add_argument("--kwok-paused", action="store_true", help="pause kwok during the measured window")
    ap.add_argument("--dump", action="store_true",
                    help="also write each pod's create sent/answered and bound times (wall clock) to pods-*.json")
    ap.add_argument("--profile", help="run ours under py-spy (not measured the same: say so), writing this file")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "arrival"), help="directory for arrival.jsonl")
    args = ap.parse_args(argv)
    bad = set(args.contestants.split(",")) - {"kube", "ours"}
    if bad:
        ap.error(f"unknown contestants {sorted(bad)}; choose from kube, ours")
    return args


class Creator:
    """Creates ``pods`` at ``rate`` per second, each at its own instant; records when each create
    request was sent (monotonic)."""

    def __init__(self, plane: Plane, pods: list[dict[str, Any]], rate: float) -> None:
        self.plane, self.pods, self.rate = plane, pods, rate
        self.sent: dict[str, float] = {}
        self.answered: dict[str, float] = {}  # when each create's answer came back (monotonic)
        self.late = 0  # creates that started more than 50 ms after their instant
        self._next = 0
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def run(self) -> None:
        self.t0 = time.monotonic()
        count = max(4, int(self.rate * CREATE_SLOW_S) + 1)
        threads = [threading.Thread(target=self._work, daemon=True) for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _work(self) -> None:
        kube = self.plane.admin
        while True:
            with self._lock:
                i = self._next
                if i >= len(self.pods):
                    return
                self._next += 1
            pod = self.pods[i]
            at = self.t0 + i / self.rate
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif wait < -0.05:
                self.late += 1
            ns = pod["metadata"]["namespace"]
            sent = time.monotonic()
            try:
                kube.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
            except Exception as exc:  # a lost create is reported, the run goes on
                self.errors.append(f"{pod['metadata']['name']}: {exc}")
                continue
            self.answered[pod["metadata"]["name"]] = time.monotonic()
            self.sent[pod["metadata"]["name"]] = sent


def wait_bound(plane: Plane, ns: str, name: str, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        pod = plane.admin.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        if (pod.get("spec") or {}).get("nodeName"):
            return True
        time.sleep(0.1)
    return False


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def run_one(
    key: str, rate: float, rnd: int, template: list[dict[str, Any]], plane: Plane, kwok: Kwok,
    config: pathlib.Path, args: argparse.Namespace,
) -> dict[str, Any]:
    kube = plane.admin
    n = int(rate * args.duration)
    ns = template[0]["metadata"]["namespace"]
    pods = [renamed(template[i % len(template)], f"-a{key}{int(rate)}r{rnd}-{i}") for i in range(n)]
    probe = renamed(template[0], f"-probe-{key}{int(rate)}r{rnd}")
    log_path = plane.run / "logs" / f"arrival-{key}-{int(rate)}-r{rnd}.log"
    api_pid = plane.pid("kube-apiserver")
    proc: subprocess.Popen[bytes] | None = None
    res: dict[str, Any] = {"contestant": key, "rate": rate, "round": rnd, "pods": n, "nodes": args.nodes}
    try:
        argv = contestant_argv(key, plane, config, args)
        if args.profile and key == "ours":
            argv = ["py-spy", "record", "--gil", "--rate", "100", "--format", "raw", "--output",
                    f"{args.profile}.{int(rate)}", "--", *argv]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True)
        create_pods(kube, [probe])
        if not wait_bound(plane, ns, probe["metadata"]["name"], 300, proc):
            raise RuntimeError(f"{key}: the probe pod was not bound (log {log_path})")
        _, rv = kube.list_names(f"/api/v1/namespaces/{ns}/pods", "limit=1")
        obs = BindObserver(kube, ns, rv, n)
        obs.start()
        if not obs.ready.wait(30) or obs.error:
            raise RuntimeError(obs.error or "watch did not start")
        if args.kwok_paused:
            kwok.pause()
        pids = process_tree(proc.pid)
        cpu0, api0 = cpu_seconds(pids), cpu_seconds([api_pid])
        creator = Creator(plane, pods, rate)
        creator.run()
        created_s = time.monotonic() - creator.t0
        obs.done.wait(max(0.0, creator.t0 + args.duration + 120 - time.monotonic()))
        pids = process_tree(proc.pid)
        cpu, api = cpu_seconds(pids) - cpu0, cpu_seconds([api_pid]) - api0
        rss = hwm_mb(pids)
        obs.stop()
        if args.dump:  # wall clock, to line up with the contestant's log
            wall = time.time() - time.monotonic()
            per_pod = {k: [creator.sent[k] + wall, creator.answered[k] + wall, obs.times[k] + wall]
                       for k in creator.sent if k in obs.times}
            (pathlib.Path(args.out) / f"pods-{key}-{int(rate)}-r{rnd}.json").write_text(json.dumps(per_pod))
        lat = [(obs.times[k] - creator.sent[k]) * 1000 for k in creator.sent if k in obs.times]
        res.update({
            "bound": len(lat), "complete": len(lat) == n, "create_errors": len(creator.errors),
            "late_creates": creator.late, "created_per_s": round(len(creator.sent) / created_s, 1),
            "p50_ms": _ms(percentile(lat, 0.5)),
            "p90_ms": _ms(percentile(lat, 0.9)),
            "p99_ms": _ms(percentile(lat, 0.99)),
            "max_ms": round(max(lat), 1) if lat else None,
            "cpu_s_per_1000": round(cpu / (n / 1000), 2), "apiserver_cpu_s": round(api, 2),
            "peak_rss_mb": round(rss, 1), "log": str(log_path),
        })  # fmt: skip
    finally:
        kwok.resume()
        if proc is not None:
            prof = bool(args.profile and key == "ours")
            stop_process(proc, signal.SIGINT if prof else signal.SIGTERM, grace=30 if prof else 10, group=True)
        delete_pods(kube, ns)
    return res


def table(rows: list[dict[str, Any]], keys: list[str], rates: list[float]) -> str:
    cols = ("p50_ms", "p90_ms", "p99_ms", "max_ms", "cpu_s_per_1000", "apiserver_cpu_s", "peak_rss_mb")
    lines = [f"{'rate':>6} {'contestant':16}" + "".join(f"{c:>16}" for c in cols) + f"{'bound':>12}"]
    for rate in rates:
        med: dict[str, dict[str, float]] = {}
        for key in keys:
            runs = [r for r in rows if r["contestant"] == key and r["rate"] == rate]
            vals = {c: statistics.median([r[c] for r in runs if r.get(c) is not None] or [float("nan")]) for c in cols}
            med[key] = vals
            bound = f"{sum(r.get('bound', 0) for r in runs)}/{sum(r['pods'] for r in runs)}"
            figures = "".join(f"{vals[c]:>16g}" for c in cols)
            lines.append(f"{rate:>6g} {CONTESTANTS[key]:16}{figures}{bound:>12}")
        if "kube" in med and "ours" in med:
            ratio = "".join(f"{(med['ours'][c] / med['kube'][c] if med['kube'][c] else float('nan')):>15.2f}x"
                            for c in cols)
            lines.append(f"{rate:>6g} {'ours/kube':16}" + ratio)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("PYSCHED_RUN", f"/tmp/pyscheduler-bench-arrival-{os.getpid()}")
    os.environ.setdefault("PYSCHED_NODE_MONITOR_GRACE_PERIOD", "30m")
    keys = args.contestants.split(",")
    rates = [float(r) for r in args.rates.split(",")]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plane = start_plane()
    kwok = Kwok(plane, enabled=args.kwok_paused)
    rows: list[dict[str, Any]] = []
    try:
        config = plane.run / "bench-arrival-scheduler.yaml"
        scheduler_config(config, plane.sched_kubeconfig, args.qps)
        wl = Workload(f"SchedulingBasic/{args.nodes}Nodes", "SchedulingBasic", args.nodes)
        nodes, init, measured = wl.build(500)
        prepare_workload(plane.admin, wl, nodes, init, {p["metadata"]["namespace"] for p in init + measured})
        with open(out / "arrival.jsonl", "a") as f:
            for rnd in range(1, args.rounds + 1):
                for rate in rates:
                    order = keys[(rnd - 1) % len(keys):] + keys[: (rnd - 1) % len(keys)]
                    for key in order:
                        res = run_one(key, rate, rnd, measured, plane, kwok, config, args)
                        rows.append(res)
                        f.write(json.dumps(res) + "\n")
                        f.flush()
                        say(f"{rate:g}/s r{rnd} {CONTESTANTS[key]:15} bound {res.get('bound')}/{res['pods']} "
                            f"p50={res.get('p50_ms')}ms p99={res.get('p99_ms')}ms max={res.get('max_ms')}ms "
                            f"cpu/1000={res.get('cpu_s_per_1000')} api={res.get('apiserver_cpu_s')}s "
                            f"late_creates={res.get('late_creates')} created/s={res.get('created_per_s')}")
    finally:
        kwok.resume()
        plane.cp.stop()
    print(f"\nSteady arrival, SchedulingBasic/{args.nodes}Nodes, {args.duration:g}s per run, median of "
          f"{args.rounds} round(s), kwok {'paused' if args.kwok_paused else 'live'}:")
    print(table(rows, keys, rates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
