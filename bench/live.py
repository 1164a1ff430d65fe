"""`make bench-live`: scheduler_perf shapes on the local control plane, side by side.

A benchmark, not a test (never part of `make test`). Per workload (bench/live_shapes.py: the
offline shapes of bench/shapes.py at 5,000 kwok nodes; ``--quick``: SchedulingBasic at 1,000)
it creates the nodes and the shape's initial pods (pre-bound round-robin, so every contestant
sees the same occupied cluster), waits until kube-controller-manager has lifted every new
node's not-ready taint, then for each round and each contestant, in an order that
rotates per round:

1. creates the measured pods (``--pods``, default 2,000), all pending, none scheduled yet;
2. watches bindings of that namespace from the list's resourceVersion, pauses kwok (SIGSTOP,
   so its status updates of bound pods do not compete for the 2 cores; ``--kwok-live`` keeps it
   running; the plane's node-monitor grace period is raised so that unrenewed node leases do
   not turn nodes NotReady during a long run) and starts the contestant;
3. stops when every measured pod is bound (or on timeout / exit of the contestant), samples
   the contestant's CPU (utime+stime of its process tree) and peak RSS (VmHWM) from /proc,
   and the API server's CPU since the start;
4. stops the contestant, resumes kwok, deletes the measured pods (grace 0), waits until gone.

Contestants (same kubeconfig identity system:kube-scheduler, so API priority and fairness
treats them alike; qps/burst 5000; leader election off; one config file for both schedulers):
``kube`` the real kube-scheduler v1.36.3, ``bind`` bench/live_bind.py (list pending, POST
Bindings round-robin from ``--bind-workers`` threads: the API path's limit; ``--bind-workers 1``
gives a sequential client), ``bindev`` the same client writing kube-scheduler's Scheduled Event
after each Binding (the limit for a scheduler that writes what kube-scheduler writes; not in the
default set), ``ours`` ``python -m scheduler run``.

Metrics (median over rounds): pods/s from process start to the last bind; pods/s between the
10% and 90% binds; seconds to the first bind; scheduler CPU-s per 1000 pods; API server CPU-s
during the run; peak RSS MB. Writes bench/out/live-<time>.json. The control plane lives in its
own run dir (``$PYSCHED_RUN`` or /tmp/pyscheduler-bench-live-<pid>) and is stopped at the end
unless it was already up.

This file is the driver; the parts are bench/live_plane.py (plane, RBAC identity, kwok pause),
live_cluster.py (bench nodes and pods), live_observe.py (BindObserver), live_contestants.py
(one measured run), live_procfs.py (/proc sampling) and live_report.py (medians, table, profile).
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
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.live_cluster import prepare_workload
from bench.live_contestants import CONTESTANTS, run_contestant, scheduler_config
from bench.live_http import ApiError
from bench.live_plane import Kwok, Plane, say, start_plane
from bench.live_procfs import loadavg
from bench.live_report import medians, print_workload, summarize_profile, table
from bench.live_shapes import FULL, QUICK, Workload

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Live side-by-side benchmark (see the module docstring).")
    ap.add_argument("--quick", action="store_true", help="SchedulingBasic at 1,000 nodes only")
    ap.add_argument("--only", help="only workloads whose name contains this text")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pods", type=int, default=2000, help="measured pods per run")
    ap.add_argument("--nodes", type=int, help="override the node count of every workload")
    ap.add_argument("--contestants", default="kube,bind,ours", help="comma-separated: kube, bind, bindev, ours")
    ap.add_argument("--qps", type=int, default=5000, help="client qps and burst of every contestant")
    ap.add_argument("--bind-workers", type=int, default=16, help="threads of the bind-only client")
    ap.add_argument("--run-timeout", type=float, default=600.0, help="seconds per contestant run")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds of quiet before each run")
    ap.add_argument("--kwok-live", action="store_true", help="do not pause kwok during runs")
    ap.add_argument("--profile", action="store_true", help="one extra py-spy run of ours per workload (not measured)")
    ap.add_argument("--keep-plane", action="store_true", help="leave the control plane running")
    args = ap.parse_args(argv)
    bad = set(args.contestants.split(",")) - set(CONTESTANTS)
    if bad:
        ap.error(f"unknown contestants {sorted(bad)}; choose from {sorted(CONTESTANTS)}")
    if args.profile and not shutil.which("py-spy"):
        ap.error("--profile needs py-spy (pip install py-spy; a dev tool, not a dependency)")
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def select_workloads(args: argparse.Namespace) -> list[Workload]:
    workloads = QUICK if args.quick else FULL
    if args.only:
        workloads = [w for w in workloads if args.only in w.name]
    if args.nodes:
        workloads = [
            dataclasses.replace(w, nodes=args.nodes, name=f"{w.name.split('/')[0]}/{args.nodes}Nodes")
            for w in workloads
        ]
    return workloads


def bench_workload(
    wl: Workload, keys: list[str], plane: Plane, kwok: Kwok, config: pathlib.Path, args: argparse.Namespace
) -> tuple[dict[str, Any], str]:
    """Every round of every contestant on ``wl`` (the order rotates per round), then the
    profile run if asked: the report entry and the table."""
    nodes, init, measured = wl.build(args.pods)
    namespaces = {p["metadata"]["namespace"] for p in init + measured}
    prepare_workload(plane.admin, wl, nodes, init, namespaces)
    runs: list[dict[str, Any]] = []
    for rnd in range(1, args.rounds + 1):
        order = keys[(rnd - 1) % len(keys) :] + keys[: (rnd - 1) % len(keys)]
        for key in order:
            res = run_contestant(key, wl, rnd, measured, plane, kwok, config, args)
            runs.append(res)
            say(
                f"{wl.name} r{rnd} {CONTESTANTS[key]:15} {res['status']:8} {res['bound']}/{res['pods']} "
                f"pods/s={res['pods_per_s']} 10-90={res['pods_per_s_10_90']} first={res['first_bind_s']}s "
                f"cpu={res['cpu_s']}s api={res['apiserver_cpu_s']}s rss={res['peak_rss_mb']}MB "
                f"load={res['loadavg_before']}"
            )
    med = {k: medians([r for r in runs if r["contestant"] == k]) for k in keys}
    entry: dict[str, Any] = {
        "nodes": len(nodes),
        "init_pods": len(init),
        "measured_pods": len(measured),
        "runs": runs,
        "median": med,
    }
    if args.profile and "ours" in keys:
        prof = OUT / f"profile-{wl.name.replace('/', '_')}.txt"
        say(f"{wl.name}: profiling ours with py-spy -> {prof}")
        pres = run_contestant("ours", wl, 0, measured, plane, kwok, config, args, profile_to=prof)
        entry["profile"] = {"file": str(prof), "run": pres, **summarize_profile(prof)}
    meta = (
        f"{len(nodes)} nodes, {len(init)} init pods, {len(measured)} measured pods, "
        f"median of {args.rounds} rounds"
    )
    return entry, table(wl.name, meta, med)


def release(plane: Plane | None, kwok: Kwok | None, keep: bool) -> None:
    """Resume kwok; stop the plane unless asked to keep it or it was up before."""
    if kwok is not None:
        kwok.resume()
    if plane is not None:
        if keep or not plane.cp.started_here:
            say(f"control plane left running: PYSCHED_RUN={plane.run} e2e/controlplane/down.sh")
        else:
            plane.cp.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("PYSCHED_RUN", f"/tmp/pyscheduler-bench-live-{os.getpid()}")
    # kwok is paused during runs, so node leases go unrenewed: with kube-controller-manager's
    # 50 s a slow contestant's run would see nodes turn NotReady and tainted under it.
    os.environ.setdefault("PYSCHED_NODE_MONITOR_GRACE_PERIOD", "30m")
    # Stop cleanly (finally blocks run) on SIGTERM/SIGHUP as on Ctrl-C.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    workloads = select_workloads(args)
    keys = args.contestants.split(",")
    started = dt.datetime.now(dt.UTC)
    OUT.mkdir(parents=True, exist_ok=True)
    out_path = OUT / f"live-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    report: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "started": started.isoformat(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": loadavg(),
        "args": vars(args),
        "workloads": {},
    }
    plane: Plane | None = None
    kwok: Kwok | None = None
    # An installed scheduler starts from bytecode (pip compiles the wheel, the image keeps it);
    # a checkout under PYTHONDONTWRITEBYTECODE would compile every module at each start.
    compileall.compile_dir(str(ROOT / "scheduler"), quiet=1)
    try:
        plane = start_plane()
        kwok = Kwok(plane, enabled=not args.kwok_live)
        config = plane.run / "bench-live-scheduler.yaml"
        scheduler_config(config, plane.sched_kubeconfig, args.qps)
        for wl in workloads:
            entry, table_text = bench_workload(wl, keys, plane, kwok, config, args)
            report["workloads"][wl.name] = entry
            print_workload(table_text, entry)
            out_path.write_text(json.dumps(report, indent=1))
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except (ApiError, TimeoutError, RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        say(f"bench-live failed: {exc}")
        return 1
    finally:
        report["loadavg_at_end"] = loadavg()
        if report["workloads"]:
            out_path.write_text(json.dumps(report, indent=1))
        release(plane, kwok, keep=args.keep_plane)
    print(
        f"\nJSON: {out_path}\n(load average at start {report['loadavg_at_start']}, at end {report['loadavg_at_end']}; "
        f"{report['cpus']} CPUs shared with whatever else runs on this machine)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
