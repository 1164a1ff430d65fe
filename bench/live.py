"""`make bench-live`: kube-scheduler v1.36.3's own scheduler_perf workloads, live, side by side.

A benchmark, not a test (never part of `make test`). The workloads are read at run time from
the v1.36.3 module in the Go module cache (bench/perf_config.py: the ``performance`` workloads
of affinity, misc, topology_spreading, volumes, dra, event_handling and nodedeclaredfeatures;
by default one per test case, 39 in all; ``--workloads`` picks others by full
``TestCase/Workload`` name or substring; ``--list`` shows them). For each workload, round and
contestant (the order rotates per round), as scheduler_perf runs a workload:

1. a fresh control plane (bench/live_plane.py: etcd, kube-apiserver with scheduler_perf's
   admission plugins and the workload's feature gates, kube-controller-manager, kwok, which
   plays the kubelet: bound pods go Running; ``--kwok-paused`` pauses it during the measured
   window instead), and the pod watch of the bench (bench/perf_tracker.py);
2. the contestant, started with the workload's feature gates, then every op of the workload
   in order (bench/perf_executor.py), with every count multiplied by the scale;
3. the metric window(s) of the workload measure the scheduling throughput as scheduler_perf's
   collector does (pods/s: the average of per-second samples, ``pods_per_s``), and also pods/s
   from the window's start to its last bind, seconds to the first bind, the contestant's CPU
   (its process tree, per 1000 pods bound in the window), the API server's CPU during the
   window and the contestant's peak RSS;
4. contestant and plane stopped.

Scale: ``--scale F`` multiplies every count of every op (nodes, pods, namespaces, objects) by F
for every contestant; without it each workload runs at its default scale (``DEFAULT_SCALES``,
sized to take a few minutes per contestant on a 2-core machine). The size used is in the table.

Writes ``--out DIR`` (default bench/out/live-<time>): ``rounds.jsonl`` (one JSON line per
round: workload, contestant, round, pods_per_s, complete, the figures, size, scale, gates,
windows) and ``table.md``, the table also printed at the end (medians over rounds). A contestant
that leaves measured pods unbound (``complete`` false) is marked ``!`` in the table.
``--quick``: SchedulingBasic at scale 0.1.

Contestants: ``kube`` (kube-scheduler v1.36.3), ``ours`` (``python -m scheduler run``), and
``bind``/``bindev`` (bench/live_bind.py: every pending pod bound round-robin; the API path's
limit, without and with the Scheduled Event). bench/live_contestants.py has the details.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import datetime as dt
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench import live_apimetrics as apimetrics
from bench.live_contestants import CONTENT_TYPES, CONTESTANTS, Contestant, contestant_argv, scheduler_config
from bench.live_http import ApiError, Kube
from bench.live_plane import Kwok, Plane, say, start_plane
from bench.live_procfs import cpu_seconds, loadavg, machine_idle_s, self_cpu_s
from bench.live_report import incomplete_notes, medians, summarize_profile, table
from bench.perf_config import (
    ConfigError,
    Workload,
    apiserver_args,
    load_workloads,
    resolve_ops,
    select_workloads,
    size_of,
    workload_gates,
)
from bench.perf_executor import Executor
from bench.perf_tracker import PodTracker, Window

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"

# Default scale per test case: sized so that one contestant's run takes a few minutes on the
# 2-core development machine. Unlisted: 1 (upstream's size; SchedulingBasic's 5,000 nodes and
# 11,000 pods take about 80 s there). These four create 25,000-50,000 pods at scale 1.
DEFAULT_SCALES: dict[str, float] = {
    "SchedulingDaemonset": 0.5,  # 15,001 nodes, 30,000 pods
    "SchedulingGatedPodsWithPodAffinityImpactForThroughput": 0.5,  # 30,000 pods on one node
    "SchedulingWhileGated": 0.3,  # 50,000 pods on one node, 20,000 deleted at 50/s
    "PreemptionAsync": 0.4,  # 25,000 pods and a preempting churn
}
QUICK = ("SchedulingBasic/5000Nodes_10000Pods", 0.1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Live side-by-side benchmark (see the module docstring).")
    ap.add_argument("--workloads", help="comma-separated TestCase/Workload names or substrings (default: one per case)")
    ap.add_argument("--scale", type=float, help="multiply every count of every op by this (default: per workload)")
    ap.add_argument("--quick", action="store_true", help=f"only {QUICK[0]} at scale {QUICK[1]}")
    ap.add_argument("--list", action="store_true", help="print the selected workloads, their sizes and exit")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--contestants", default="kube,ours", help="comma-separated: kube, ours, bind, bindev")
    ap.add_argument("--out", type=pathlib.Path, help="output directory (default bench/out/live-<time>)")
    ap.add_argument("--qps", type=int, default=5000, help="client qps and burst of every contestant")
    ap.add_argument("--bind-workers", type=int, default=16, help="threads of the bind-only client")
    ap.add_argument("--wait-timeout", type=float, default=600.0, help="seconds an op may wait for pods (upstream 600)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds between the contestant's start and the ops")
    ap.add_argument("--content-type", choices=sorted(CONTENT_TYPES),
                    help="both schedulers' clientConnection.contentType (default: unset, i.e. protobuf)")
    ap.add_argument("--kwok-paused", action="store_true", help="pause kwok during measured windows")
    ap.add_argument("--profile", action="store_true", help="one extra py-spy run of ours per workload (not measured)")
    args = ap.parse_args(argv)
    bad = set(args.contestants.split(",")) - set(CONTESTANTS)
    if bad:
        ap.error(f"unknown contestants {sorted(bad)}; choose from {sorted(CONTESTANTS)}")
    if args.profile and not shutil.which("py-spy"):
        ap.error("--profile needs py-spy (pip install py-spy; a dev tool, not a dependency)")
    if args.scale is not None and args.scale <= 0:
        ap.error("--scale must be > 0")
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def planned(args: argparse.Namespace) -> list[tuple[Workload, float]]:
    """The workloads to run, each with its scale."""
    all_wl = load_workloads()
    if args.quick:
        return [(w, args.scale or QUICK[1]) for w in select_workloads(all_wl, QUICK[0])]
    return [(w, args.scale or DEFAULT_SCALES.get(w.case, 1.0)) for w in select_workloads(all_wl, args.workloads)]


# The plane's processes whose CPU a window's breakdown shows beside the contestant's.
PLANE_PARTS = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager")


@dataclasses.dataclass
class RunHooks:
    """What the executor tells the driver: windows (CPU samples, kwok) and liveness."""

    contestant: Contestant
    plane_pids: dict[str, int]
    kwok: Kwok
    admin: Kube | None = None
    marks: dict[int, dict[str, float]] = dataclasses.field(default_factory=dict)
    costs: dict[int, dict[str, float]] = dataclasses.field(default_factory=dict)
    api_marks: dict[int, dict[str, float]] = dataclasses.field(default_factory=dict)
    api_counts: dict[int, dict[str, int]] = dataclasses.field(default_factory=dict)

    def _sample(self) -> dict[str, float]:
        # Where a saturated machine's time goes: each plane part, the bench (pod creation and
        # the tracker's watch), the contestant and what was left idle.
        out = {name: cpu_seconds([pid]) for name, pid in self.plane_pids.items()}
        out.update(contestant=self.contestant.cpu(), bench=self_cpu_s(), idle=machine_idle_s())
        return out

    def window_started(self, win: Window) -> None:
        self.kwok.pause()
        self.marks[id(win)] = self._sample()
        if self.admin is not None:
            self.api_marks[id(win)] = apimetrics.scrape(self.admin)

    def window_stopped(self, win: Window) -> None:
        start, end = self.marks[id(win)], self._sample()
        self.costs[id(win)] = {k: end[k] - start[k] for k in end}
        if self.admin is not None and id(win) in self.api_marks:
            self.api_counts[id(win)] = apimetrics.delta(self.api_marks[id(win)], apimetrics.scrape(self.admin))
        self.contestant.peak_rss_mb()
        self.kwok.resume()

    def check(self) -> None:
        rc = self.contestant.exited()
        if rc is not None:
            raise RuntimeError(f"{CONTESTANTS[self.contestant.key]} exited with {rc}: {self.contestant.log_tail()}")


def run_once(
    wl: Workload,
    scale: float,
    key: str,
    rnd: int,
    args: argparse.Namespace,
    out: pathlib.Path,
    profile_to: pathlib.Path | None = None,
) -> dict[str, Any]:
    """One contestant through one workload on a fresh plane: the round's JSON record (a run
    that could not start or finish has ``error`` set and ``complete`` false)."""
    gates = workload_gates(wl)
    ops = resolve_ops(wl, scale)
    tag = f"{wl.full_name.replace('/', '_')}-{key}-r{rnd}{'-profile' if profile_to else ''}"
    rec: dict[str, Any] = {
        "workload": wl.full_name,
        "contestant": key,
        "round": rnd,
        "pods_per_s": None,
        "complete": False,
        "error": None,
        "scale": scale,
        "size": size_of(ops),
        "gates": gates.flag(),
        "gates_dropped": dict(gates.dropped),
        "upstream_threshold": wl.threshold,
        "ops_total": len(ops),
        "loadavg_before": loadavg(),
    }
    plane: Plane | None = None
    tracker: PodTracker | None = None
    contestant: Contestant | None = None
    executor: Executor | None = None
    hooks: RunHooks | None = None
    t0 = time.monotonic()
    try:
        plane = start_plane(scheduler_perf=True, apiserver_args=apiserver_args(gates))
        config = plane.run / "bench-live-scheduler.yaml"
        scheduler_config(config, plane.sched_kubeconfig, args.qps, args.content_type)
        tracker = PodTracker(plane.admin)
        tracker.start()
        if not tracker.ready.wait(60) or tracker.error:
            raise RuntimeError(f"pod watch did not start: {tracker.error}")
        argv = contestant_argv(key, plane, config, args, gates.flag())
        contestant = Contestant(key, argv, out / "logs" / f"{tag}.log", profile_to)
        rec["log"] = str(contestant.log_path)
        pids = {name: plane.pid(name) for name in PLANE_PARTS}
        hooks = RunHooks(contestant, pids, Kwok(plane, enabled=args.kwok_paused), plane.admin)
        time.sleep(args.settle)
        hooks.check()
        executor = Executor(plane.admin, tracker, wl, ops, hooks, gates.used, wait_timeout=args.wait_timeout)
        t_ops = time.monotonic()
        executor.run()
        rec["ops_s"] = round(time.monotonic() - t_ops, 1)
        rec["cpu_s_total"] = round(contestant.cpu(), 2)
        rec["peak_rss_mb"] = round(contestant.peak_rss_mb(), 1)
        rec["error"] = executor.error
    except (ApiError, TimeoutError, RuntimeError, OSError, subprocess.CalledProcessError, ConfigError) as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if contestant is not None:
            contestant.stop()
        if tracker is not None:
            tracker.stop()
        if plane is not None:
            plane.cp.stop()
    rec["wall_s"] = round(time.monotonic() - t0, 1)
    rec["pod_events"] = tracker.events if tracker else 0
    rec["loadavg_after"] = loadavg()
    windows = []
    for win, info in executor.closed if executor else []:
        cost = hooks.costs.get(id(win)) if hooks else None
        cpu, api = (cost["contestant"], cost["kube-apiserver"]) if cost else (None, None)
        binds = info["binds"]
        info["cpu_breakdown_s"] = {k: round(v, 2) for k, v in cost.items()} if cost else None
        info["apiserver_counts"] = hooks.api_counts.get(id(win)) if hooks else None
        info["cpu_s"] = round(cpu, 2) if cpu is not None else None
        info["cpu_s_per_1000"] = round(cpu / (binds / 1000), 2) if cpu is not None and binds else None
        info["apiserver_cpu_s"] = round(api, 2) if api is not None else None
        windows.append(info)
    main = next((w for w in windows if w["binds"]), windows[0] if windows else {})
    rec.update(
        pods_per_s=main.get("throughput", {}).get("Average"),
        complete=rec["error"] is None and bool(windows) and all(w["complete"] for w in windows),
        pods_per_s_to_last_bind=main.get("pods_per_s_to_last_bind"),
        first_bind_s=main.get("first_bind_s"),
        cpu_s=main.get("cpu_s"),
        cpu_s_per_1000=main.get("cpu_s_per_1000"),
        apiserver_cpu_s=main.get("apiserver_cpu_s"),
        windows=windows,
        ops_done=executor.ops_done if executor else 0,
    )
    return rec


def bench_workload(
    wl: Workload, scale: float, keys: list[str], args: argparse.Namespace, out: pathlib.Path
) -> dict[str, Any]:
    """Every round of every contestant (order rotating per round); the table row."""
    runs: list[dict[str, Any]] = []
    for rnd in range(1, args.rounds + 1):
        shift = (rnd - 1) % len(keys)
        for key in keys[shift:] + keys[:shift]:
            res = run_once(wl, scale, key, rnd, args, out)
            runs.append(res)
            with open(out / "rounds.jsonl", "a") as f:
                f.write(json.dumps(res) + "\n")
            say(
                f"{wl.full_name} r{rnd} {CONTESTANTS[key]:15} complete={res['complete']} "
                f"pods/s={res['pods_per_s']} to-last-bind={res['pods_per_s_to_last_bind']} "
                f"first={res['first_bind_s']}s cpu/1000={res['cpu_s_per_1000']} api={res['apiserver_cpu_s']}s "
                f"rss={res.get('peak_rss_mb')}MB ops {res['ops_done']}/{res['ops_total']} in {res.get('ops_s')}s"
                + (f" ERROR {res['error']}" if res["error"] else "")
            )
            brk = next((w.get("cpu_breakdown_s") for w in res.get("windows", []) if w.get("binds")), None)
            if brk:
                say("  window CPU-s: " + " ".join(f"{k}={v}" for k, v in brk.items()))
            blog = next((w.get("backlog") for w in res.get("windows", []) if w.get("binds")), None)
            if blog:
                every5 = blog["per_s"][::5]
                say(f"  backlog: last create {blog['last_create_s']}s, max {blog['max']}, every 5 s {every5}")
            settled = next((w for w in res.get("windows", []) if w.get("binds") and "settle_s" in w), None)
            if settled:
                say(f"  kwok settled {settled['settle_s']}s before the window,"
                    f" {settled['starting_at_open']} pods starting")
            counts = next((w.get("apiserver_counts") for w in res.get("windows", []) if w.get("binds")), None)
            if counts:
                say("  API server: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    row = {
        "workload": wl.full_name,
        "scale": scale,
        "size": runs[0]["size"],
        "medians": {k: medians([r for r in runs if r["contestant"] == k]) for k in keys},
    }
    if args.profile and "ours" in keys:
        prof = out / f"profile-{wl.full_name.replace('/', '_')}.txt"
        say(f"{wl.full_name}: profiling ours with py-spy -> {prof}")
        run_once(wl, scale, "ours", 0, args, out, profile_to=prof)
        row["profile"] = summarize_profile(prof)
        print(f"{wl.full_name}: py-spy self time of ours (% of samples):")
        for fn, pct in row["profile"]["self"]:
            print(f"  {pct:5.1f}%  {fn}")
        print("  inclusive time in scheduler/:")
        for fn, pct in row["profile"]["inclusive_scheduler"]:
            print(f"  {pct:5.1f}%  {fn}")
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        plan = planned(args)
        for wl, scale in plan:
            resolve_ops(wl, scale)  # every workload must parse before anything starts
    except ConfigError as exc:
        print(f"bench-live: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for wl, scale in plan:
            size = size_of(resolve_ops(wl, scale))
            print(f"{wl.full_name:80} scale {scale:<6g} {size} gates {workload_gates(wl).flag()}")
        return 0
    os.environ.setdefault("PYSCHED_RUN", f"/tmp/pyscheduler-bench-live-{os.getpid()}")
    # Paused kwok renews no node lease; a long window must not see nodes turn NotReady.
    os.environ.setdefault("PYSCHED_NODE_MONITOR_GRACE_PERIOD", "30m")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    keys = args.contestants.split(",")
    started = dt.datetime.now(dt.UTC)
    out = args.out or OUT / f"live-{started.strftime('%Y%m%dT%H%M%SZ')}"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    meta = {
        "command": " ".join(sys.argv),
        "started": started.isoformat(),
        "cpus": os.cpu_count(),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (out / "run.json").write_text(json.dumps(meta, indent=1))
    # An installed scheduler starts from bytecode (pip compiles the wheel, the image keeps it).
    compileall.compile_dir(str(ROOT / "scheduler"), quiet=1)
    rows: list[dict[str, Any]] = []
    status = 0
    try:
        for wl, scale in plan:
            rows.append(bench_workload(wl, scale, keys, args, out))
            (out / "table.md").write_text(table(rows, keys) + "\n")
    except KeyboardInterrupt:
        say("interrupted")
        status = 130
    except (ApiError, TimeoutError, RuntimeError, OSError, subprocess.CalledProcessError, ConfigError) as exc:
        say(f"bench-live failed: {exc}")
        status = 1
    if rows:
        text = table(rows, keys)
        notes = incomplete_notes(rows)
        (out / "table.md").write_text(text + "\n" + ("\n" + "\n".join(notes) + "\n" if notes else ""))
        print("\n" + text)
        if notes:
            print("\nIncomplete runs:\n" + "\n".join(notes))
    print(f"\nrounds: {out / 'rounds.jsonl'}  table: {out / 'table.md'}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
