"""The contestants of the live benchmark: how each starts, what it costs, how it stops.

Every contestant uses the same kubeconfig identity (system:kube-scheduler, so API priority and
fairness treats them alike), qps/burst 5000 (scheduler_perf's client) and leader election off,
from one config file for both schedulers; the workload's feature gates go to both schedulers'
``--feature-gates``. ``kube`` is the real kube-scheduler v1.36.3, ``ours`` ``python -m scheduler
run`` (serving off on both: kube-scheduler's --secure-port=0), ``bind`` bench/live_bind.py
(binds every pending pod round-robin: the API path's limit) and ``bindev`` the same client also
writing kube-scheduler's Scheduled Event per bind.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import signal
import subprocess
import sys
from typing import Any

import yaml

from bench.live_plane import Plane
from bench.live_procfs import cpu_seconds, hwm_mb, process_tree
from scheduler.testing.process import run_argv, stop_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEDULER_NAME = "default-scheduler"
CONTESTANTS = {"kube": "kube-scheduler", "bind": "bind-only", "bindev": "bind+event", "ours": "pyscheduler"}


# --content-type: what both schedulers' clientConnection.contentType is set to (unset: v1's
# default, protobuf). kube-scheduler then reads its watches in that encoding too; ours always
# reads JSON and writes Bindings and Events in it.
CONTENT_TYPES = {"protobuf": "application/vnd.kubernetes.protobuf", "json": "application/json"}


def scheduler_config(path: pathlib.Path, kubeconfig: str, qps: int, content_type: str | None = None) -> None:
    connection: dict[str, Any] = {"kubeconfig": kubeconfig, "qps": qps, "burst": qps}
    if content_type is not None:
        connection["contentType"] = CONTENT_TYPES[content_type]
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def contestant_argv(
    key: str, plane: Plane, config: pathlib.Path, args: argparse.Namespace, gates: str = ""
) -> list[str]:
    """The command line of contestant ``key``; ``args`` has the bench's ``qps`` and
    ``bind_workers``; ``gates`` goes to both schedulers' --feature-gates."""
    gate_flags = [f"--feature-gates={gates}"] if gates else []
    if key == "kube":
        return [plane.kube_scheduler_bin, f"--config={config}", "--secure-port=0", *gate_flags]
    if key in ("bind", "bindev"):
        return [
            sys.executable, str(ROOT / "bench" / "live_bind.py"), "--kubeconfig", plane.sched_kubeconfig,
            "--scheduler-name", SCHEDULER_NAME, "--qps", str(args.qps), "--burst", str(args.qps),
            "--workers", str(args.bind_workers), *(["--events"] if key == "bindev" else []),
        ]  # fmt: skip
    if key == "ours":
        # Serving off, as kube-scheduler's --secure-port=0 above. PYSCHED_BENCH_OURS_ARGS: more
        # flags for an A/B run of one change (e.g. records off).
        extra = shlex.split(os.environ.get("PYSCHED_BENCH_OURS_ARGS", ""))
        return run_argv(config, "--secure-port", "0", *gate_flags, *extra)
    raise ValueError(key)


class Contestant:
    """One contestant process (its own session), its CPU and peak RSS read from /proc."""

    def __init__(self, key: str, argv: list[str], log_path: pathlib.Path, profile_to: pathlib.Path | None = None):
        self.key = key
        self.profile_to = profile_to
        if profile_to is not None:
            # --gil: only the thread holding the GIL is sampled, i.e. where Python CPU goes.
            argv = ["py-spy", "record", "--gil", "--rate", "100", "--format", "raw", "--output", str(profile_to),
                    "--", *argv]  # fmt: skip
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, start_new_session=True
        )
        self._peak = 0.0

    def exited(self) -> int | None:
        return self.proc.poll()

    def pids(self) -> list[int]:
        return process_tree(self.proc.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.pids())

    def peak_rss_mb(self) -> float:
        self._peak = max(self._peak, hwm_mb(self.pids()))
        return self._peak

    def stop(self) -> int | None:
        # py-spy writes its profile on SIGINT; the others stop on SIGTERM.
        sig = signal.SIGINT if self.profile_to else signal.SIGTERM
        rc = stop_process(self.proc, sig, grace=30 if self.profile_to else 10, group=True)
        self._log.close()
        return rc

    def log_tail(self, n: int = 5) -> str:
        return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
