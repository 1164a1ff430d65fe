"""The contestants of the live benchmark and one measured run of one of them."""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time
from typing import Any

import yaml

from bench.live_cluster import create_pods, delete_pods, renamed
from bench.live_observe import BindObserver
from bench.live_plane import Kwok, Plane, say
from bench.live_procfs import cpu_seconds, hwm_mb, loadavg, process_tree
from bench.live_shapes import Workload
from scheduler.testing.process import run_argv, stop_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEDULER_NAME = "default-scheduler"
CONTESTANTS = {"kube": "kube-scheduler", "bind": "bind-only", "bindev": "bind+event", "ours": "pyscheduler"}


def scheduler_config(path: pathlib.Path, kubeconfig: str, qps: int) -> None:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": qps, "burst": qps},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def contestant_argv(key: str, plane: Plane, config: pathlib.Path, args: argparse.Namespace) -> list[str]:
    if key == "kube":
        return [plane.kube_scheduler_bin, f"--config={config}", "--secure-port=0"]
    if key in ("bind", "bindev"):
        return [
            sys.executable, str(ROOT / "bench" / "live_bind.py"), "--kubeconfig", plane.sched_kubeconfig,
            "--scheduler-name", SCHEDULER_NAME, "--qps", str(args.qps), "--burst", str(args.qps),
            "--workers", str(args.bind_workers), *(["--events"] if key == "bindev" else []),
        ]  # fmt: skip
    if key == "ours":
        # Serving off, as kube-scheduler's --secure-port=0 above: neither pays for a
        # self-signed certificate and an HTTPS listener before its first bind.
        # PYSCHED_BENCH_OURS_ARGS: more flags for an A/B run of one change (e.g. records off).
        return run_argv(config, "--secure-port", "0", *shlex.split(os.environ.get("PYSCHED_BENCH_OURS_ARGS", "")))
    raise ValueError(key)


def percentile_rate(times: list[float], lo: float, hi: float) -> float:
    n = len(times)
    i, j = max(0, math.ceil(lo * n) - 1), max(0, math.ceil(hi * n) - 1)
    span = times[j] - times[i]
    return (j - i) / span if span > 0 else float("inf")


def run_contestant(
    key: str,
    wl: Workload,
    rnd: int,
    measured: list[dict[str, Any]],
    plane: Plane,
    kwok: Kwok,
    config: pathlib.Path,
    args: argparse.Namespace,
    profile_to: pathlib.Path | None = None,
) -> dict[str, Any]:
    kube = plane.admin
    ns = measured[0]["metadata"]["namespace"]
    n = len(measured)
    # Names unique per run: a component that lags (kwok resumed after SIGSTOP) and acts on a
    # deleted pod by name must not hit the next run's pod of the same name.
    suffix = f"-{key}{rnd}{'p' if profile_to else ''}"
    create_pods(kube, [renamed(p, suffix) for p in measured])
    pending, rv = kube.list_names(f"/api/v1/namespaces/{ns}/pods", "fieldSelector=spec.nodeName%3D")
    if len(pending) != n:
        raise RuntimeError(f"{ns}: {len(pending)} pending pods, expected {n}")
    time.sleep(args.settle)
    obs = BindObserver(kube, ns, rv, n)
    obs.start()
    if not obs.ready.wait(30) or obs.error:
        raise RuntimeError(obs.error or "watch did not start")
    argv = contestant_argv(key, plane, config, args)
    if profile_to is not None:
        # --gil: only the thread holding the GIL is sampled, i.e. where Python CPU goes (threads
        # blocked in socket reads would otherwise dominate).
        argv = [
            "py-spy",
            "record",
            "--gil",
            "--rate",
            "100",
            "--format",
            "raw",
            "--output",
            str(profile_to),
            "--",
            *argv,
        ]
    tag = f"bench-{wl.name.replace('/', '_')}-{key}-r{rnd}{'-profile' if profile_to else ''}"
    log_path = plane.run / "logs" / f"{tag}.log"
    api_pid, etcd_pid = plane.pid("kube-apiserver"), plane.pid("etcd")
    load0 = loadavg()
    proc: subprocess.Popen[bytes] | None = None
    status = "ok"
    try:
        kwok.pause()
        api0, etcd0 = cpu_seconds([api_pid]), cpu_seconds([etcd_pid])
        t0 = time.monotonic()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        deadline = t0 + args.run_timeout
        while not obs.done.wait(0.05):
            if proc.poll() is not None:
                status = f"exited {proc.returncode}"
                break
            if obs.error:
                status = obs.error
                break
            if time.monotonic() > deadline:
                status = "timeout"
                break
        t_end = time.monotonic()
        pids = process_tree(proc.pid)
        cpu, rss = cpu_seconds(pids), hwm_mb(pids)
        api1, etcd1 = cpu_seconds([api_pid]), cpu_seconds([etcd_pid])
    finally:
        if proc is not None:
            # The contestant has its own session: its whole process group goes.
            sig = signal.SIGINT if profile_to else signal.SIGTERM
            stop_process(proc, sig, grace=30 if profile_to else 10, group=True)
        obs.stop()
        kwok.resume()
    times = sorted(t - t0 for t in obs.times.values())
    bound = len(times)
    res: dict[str, Any] = {
        "workload": wl.name,
        "contestant": key,
        "round": rnd,
        "status": status,
        "pods": n,
        "bound": bound,
        "wall_s": round(t_end - t0, 3),
        "pods_per_s": round(bound / times[-1], 1) if bound and status == "ok" else None,
        "pods_per_s_10_90": round(percentile_rate(times, 0.1, 0.9), 1) if bound >= 10 and status == "ok" else None,
        "first_bind_s": round(times[0], 3) if bound else None,
        "cpu_s": round(cpu, 2),
        "cpu_s_per_1000": round(cpu / (n / 1000), 2),
        "apiserver_cpu_s": round(api1 - api0, 2),
        "etcd_cpu_s": round(etcd1 - etcd0, 2),
        "peak_rss_mb": round(rss, 1),
        "distinct_nodes": len(obs.nodes),
        "loadavg_before": load0,
        "loadavg_after": loadavg(),
        "log": str(log_path),
    }
    if status != "ok":
        tail = log_path.read_text(errors="replace").splitlines()[-5:]
        say(f"  {key} round {rnd}: {status}; {bound}/{n} bound; log {log_path}: " + " | ".join(tail))
    delete_pods(kube, ns)
    return res
