"""Peak RSS of ``pyscheduler run`` with many pending pods on a live (local) control plane.

    PYSCHED_RUN=/tmp/pcp-x e2e/controlplane/up.sh
    KUBECONFIG=/tmp/pcp-x/kubeconfig python bench/live_rss.py --pods 10000 --nodes 100 [--unschedulable]

Creates kwok nodes and the pods (schedulerName pyscheduler) first, then starts the scheduler,
waits until every pod is bound (or, with --unschedulable, until every pod carries
PodScheduled=False), and prints the process's peak RSS (VmHWM). Cleans up its pods and nodes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.apply import ensure_namespace
from e2e.support.objects import create_nodes
from e2e.support.plane import new_api_client
from scheduler.testing.process import SchedulerProcess

NAMESPACE = "rss-bench"
LABEL = {"pyscheduler.bench/rss": "1"}


def vm_kib(pid: int, field: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def pod(i: int, unschedulable: bool) -> dict:
    spec: dict = {
        "schedulerName": "pyscheduler",
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.2",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
    }
    if unschedulable:
        spec["nodeSelector"] = {"pyscheduler.bench/none": "x"}
    else:
        spec["nodeSelector"] = LABEL
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i:05d}", "namespace": NAMESPACE, "labels": {"app": f"a{i % 50}"}},
            "spec": spec}


def handled(core: client.CoreV1Api, unschedulable: bool) -> int:
    """Pods bound (or, unschedulable, marked PodScheduled=False), read as raw JSON (cheap)."""
    resp = core.list_namespaced_pod(NAMESPACE, _preload_content=False, _request_timeout=120)
    items = json.loads(resp.read())["items"]
    if unschedulable:
        return sum(1 for p in items if any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                                           for c in (p.get("status") or {}).get("conditions") or ()))
    return sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--unschedulable", action="store_true", help="pods that fit nowhere: they stay pending")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args()
    kubeconfig = os.environ["KUBECONFIG"]
    api = new_api_client(kubeconfig)
    api.configuration.connection_pool_maxsize = 16
    core = client.CoreV1Api(api)
    ensure_namespace(core, NAMESPACE)
    nodes = create_nodes(core, args.nodes, prefix="rss", wait_ready=True, labels=LABEL)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda i: core.create_namespaced_pod(NAMESPACE, pod(i, args.unschedulable)), range(args.pods)))
    print(f"created {args.pods} pods in {time.monotonic() - t0:.0f}s", flush=True)

    work = pathlib.Path(tempfile.mkdtemp(prefix="rss-bench-"))
    cfg = work / "config.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                   "leaderElection": {"leaderElect": False},
                                   "profiles": [{"schedulerName": "pyscheduler"}]}))
    t0 = time.monotonic()
    # HTTPS serving on, no --authentication/--authorization-kubeconfig: the run this has always measured.
    sched = SchedulerProcess(str(cfg), kubeconfig, work, "sched", delegated_auth=False)
    proc = sched.proc
    peak_seen = 0
    try:
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"scheduler exited; log in {sched.log_path}"
            peak_seen = max(peak_seen, vm_kib(proc.pid, "VmHWM"))
            done = handled(core, args.unschedulable)
            print(f"{time.monotonic() - t0:6.0f}s handled {done}/{args.pods} "
                  f"rss {vm_kib(proc.pid, 'VmRSS') / 1024:.0f} MiB peak {peak_seen / 1024:.0f} MiB", flush=True)
            if done >= args.pods:
                break
            time.sleep(5)
        time.sleep(10)  # settle: watch events of the last bindings
        peak_seen = max(peak_seen, vm_kib(proc.pid, "VmHWM"))
        print(f"PEAK RSS (VmHWM) {peak_seen / 1024:.0f} MiB; now {vm_kib(proc.pid, 'VmRSS') / 1024:.0f} MiB; "
              f"{args.pods} pods, {args.nodes} nodes, unschedulable={args.unschedulable}", flush=True)
    finally:
        sched.stop()
        # Best effort: a slow API server may time out on the collection delete (it goes on).
        for n in nodes:
            with contextlib.suppress(ApiException):
                core.delete_node(n)
        for _ in range(60):
            with contextlib.suppress(ApiException):
                core.delete_collection_namespaced_pod(NAMESPACE, grace_period_seconds=0, _request_timeout=120)
            if not core.list_namespaced_pod(NAMESPACE, limit=1).items:
                break
            time.sleep(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
