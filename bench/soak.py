"""`make soak`: an hour of steady pod churn against ``pyscheduler run`` on a local control plane.

    python3 bench/soak.py                         # 60 min, 1000 kwok nodes, 300 pods/min
    python3 bench/soak.py --minutes 5             # the short proof run
    KUBECONFIG=... python3 bench/soak.py          # an existing cluster with kwok nodes allowed

A local plane (e2e/controlplane/up.sh, ports the kernel picks) is started unless KUBECONFIG
answers; ``--nodes`` kwok nodes are created. The churn: every second, ``rate/60`` new pods (100m
cpu, 128Mi; a third with a preferred pod anti-affinity, a third spread over zones) are created
and as many of the oldest bound pods are deleted, so about ``--live`` pods stay placed. A watch
records when each pod is first seen bound (created -> bound latency). Every ``--sample``
seconds: the scheduler's RSS, its queue (scheduler_pending_pods) and cache
(scheduler_cache_size) from /metrics, and the created -> bound p50/p99 of the pods bound since
the previous sample (printed as it goes).

The report (stdout, and JSON with ``--json``), over the steady state (from the first deletion,
when the live target is reached, less ``--warmup`` of what follows): the RSS slope in MiB/hour
(least squares), the queue sizes at its start, end and their maximum, the cache sizes at its
start and end, the created -> bound p99 of each minute and its slope, and the pods created,
bound and deleted. A flat soak has a slope near 0, an empty queue (apart from pods just
created), a cache that holds the live pods, and a p99 that does not grow. Not CI.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from bench.stats import percentile  # noqa: E402
from e2e.controlplane.freeport import free_port  # noqa: E402
from e2e.support.apply import apply_yaml, ensure_namespace  # noqa: E402
from e2e.support.auth import metrics_reader_token  # noqa: E402
from e2e.support.objects import make_node  # noqa: E402
from e2e.support.plane import CONTROLPLANE_DIR, MANIFESTS_DIR, api_reachable, new_api_client  # noqa: E402
from scheduler.testing.process import SchedulerProcess  # noqa: E402

NAMESPACE = "soak"
SCHEDULER = "pyscheduler"
GROUP = {"pyscheduler.bench/soak": "1"}


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def vm_kib(pid: int, field: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def pod(i: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "nodeSelector": GROUP,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.2",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
    }
    app = f"a{i % 20}"
    if i % 3 == 1:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                               "topologyKey": "kubernetes.io/hostname"}}]}}
    elif i % 3 == 2:
        spec["topologySpreadConstraints"] = [{"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"s-{i:07d}", "namespace": NAMESPACE, "labels": {"app": app}}, "spec": spec}


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) in value per hour."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    den = sum((t - mx) ** 2 for t, _ in points)
    return None if den == 0 else 3600 * sum((t - mx) * (v - my) for t, v in points) / den


class Bound(threading.Thread):
    """When each soak pod is first seen bound (a watch of the namespace's pods)."""

    def __init__(self, core: client.CoreV1Api) -> None:
        super().__init__(daemon=True)
        self.core = core
        self.times: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        rv = ""
        while not self.stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(self.core.list_namespaced_pod, NAMESPACE, resource_version=rv or None,
                                   timeout_seconds=60, _request_timeout=90):
                    obj = ev["object"]
                    rv = obj.metadata.resource_version or rv
                    if obj.spec.node_name and obj.metadata.name not in self.times:
                        self.times[obj.metadata.name] = time.monotonic()
                    if self.stop.is_set():
                        break
            except ApiException as exc:
                if exc.status == 410:
                    rv = ""
            except Exception:
                time.sleep(1)


def local_plane(run: pathlib.Path) -> tuple[str, dict[str, str]]:
    env = {**os.environ, "PYSCHED_RUN": str(run)}
    for port in ("ETCD_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "KWOK_PORT"):
        env[f"PYSCHED_{port}"] = str(free_port())
    out = subprocess.run([str(CONTROLPLANE_DIR / "up.sh")], env=env, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    kubeconfig = next(ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("export KUBECONFIG="))
    return kubeconfig, env


def metric_sums(samples: dict[Any, float], name: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (sample, labels), v in samples.items():
        if sample == name:
            key = ",".join(f"{k}={val}" for k, val in labels if k in ("queue", "type"))
            out[key] = out.get(key, 0.0) + v
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=300, help="pods created (and deleted) per minute")
    ap.add_argument("--live", type=int, default=2000, help="bound pods kept alive")
    ap.add_argument("--sample", type=float, default=15, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=0.2, help="share of the run left out of the slope")
    ap.add_argument("--json", help="write the report here too")
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="soak-"))
    plane_env: dict[str, str] | None = None
    kubeconfig = os.environ.get("KUBECONFIG", "")
    if not (kubeconfig and api_reachable(kubeconfig)):
        say(f"starting a local control plane in {work / 'plane'}")
        kubeconfig, plane_env = local_plane(work / "plane")
    api = new_api_client(kubeconfig)
    api.configuration.connection_pool_maxsize = 16
    core = client.CoreV1Api(api)
    sched: SchedulerProcess | None = None
    bound = Bound(core)
    try:
        apply_yaml(api, MANIFESTS_DIR, skip_kinds={"Deployment"})
        ensure_namespace(core, NAMESPACE)
        token = metrics_reader_token(api, NAMESPACE)
        say(f"creating {args.nodes} kwok nodes")
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda i: core.create_node(make_node(f"soak-{i}", zone=f"zone-{i % 10}", labels=GROUP,
                                                             cpu="8", memory="32Gi", pods=110)),
                        range(args.nodes)))
        cfg = work / "config.yaml"
        cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                       "kind": "KubeSchedulerConfiguration",
                                       "leaderElection": {"leaderElect": False},
                                       "profiles": [{"schedulerName": SCHEDULER}]}))
        sched = SchedulerProcess(str(cfg), kubeconfig, work, "soak")
        sched.wait_ready(timeout=180)
        say(f"scheduler ready (log {sched.log_path}); churn {args.rate:.0f} pods/min for {args.minutes:g} min")
        bound.start()

        created: dict[str, float] = {}
        live: deque[str] = deque()
        deleted = 0
        seq = 0
        samples: list[dict[str, Any]] = []
        start = time.monotonic()
        end = start + args.minutes * 60
        next_sample = start
        last_lat_at = start
        per_tick = args.rate / 60.0
        owed = 0.0
        pool = concurrent.futures.ThreadPoolExecutor(16)
        rng = random.Random(1)
        while time.monotonic() < end:
            tick = time.monotonic()
            assert sched.proc.poll() is None, f"scheduler exited:\n{sched.logs()}"
            owed += per_tick
            batch = []
            while owed >= 1:
                batch.append(pod(seq))
                seq += 1
                owed -= 1
            futs = [pool.submit(core.create_namespaced_pod, NAMESPACE, p) for p in batch]
            for p, f in zip(batch, futs):
                f.result()
                created[p["metadata"]["name"]] = time.monotonic()
                live.append(p["metadata"]["name"])
            # Delete the oldest bound pods beyond the live target (unbound ones wait their turn).
            gone = []
            while len(live) > args.live and live[0] in bound.times:
                gone.append(live.popleft())
            for name in gone:
                pool.submit(lambda n=name: contextlib.suppress(ApiException) and core.delete_namespaced_pod(
                    n, NAMESPACE, grace_period_seconds=0))
            deleted += len(gone)
            if tick >= next_sample:
                now = time.monotonic()
                lat = [bound.times[n] - created[n] for n in list(created)
                       if n in bound.times and last_lat_at <= bound.times[n] < now]
                last_lat_at = now
                m = sched.metrics(token) or {}
                s = {
                    "t": round(now - start, 1),
                    "rss_mib": round(vm_kib(sched.proc.pid, "VmRSS") / 1024, 1),
                    "queue": metric_sums(m, "scheduler_pending_pods"),
                    "cache": metric_sums(m, "scheduler_cache_size"),
                    "bound": len(bound.times), "created": seq, "deleted": deleted,
                    "p50_s": percentile(lat, 0.5), "p99_s": percentile(lat, 0.99), "n": len(lat),
                }
                samples.append(s)
                say(json.dumps(s))
                next_sample += args.sample
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)) * (0.9 + 0.2 * rng.random()))
        pool.shutdown(wait=True)
        bound.stop.set()

        # Steady state: from the first deletion (the live target reached), less its warm-up share.
        t_steady = next((s["t"] for s in samples if s["deleted"] > 0), 0.0)
        t_from = t_steady + args.warmup * (samples[-1]["t"] - t_steady)
        warm = [s for s in samples if s["t"] >= t_from] or samples
        # created -> bound per minute of binding (enough pods per window for a p99).
        by_minute: dict[int, list[float]] = {}
        for name, at in created.items():
            if name in bound.times and bound.times[name] - start >= t_from:
                by_minute.setdefault(int((bound.times[name] - start) // 60), []).append(bound.times[name] - at)
        p99s = [(m, percentile(v, 0.99)) for m, v in sorted(by_minute.items()) if len(v) >= 50]

        def queue_max(key: str) -> float:
            return max((s["queue"].get(key, 0.0) for s in warm), default=0.0)

        report = {
            "minutes": args.minutes, "nodes": args.nodes, "rate_per_min": args.rate, "live_target": args.live,
            "created": seq, "bound": len(bound.times), "deleted": deleted, "steady_from_s": round(t_from),
            "rss_mib_start": warm[0]["rss_mib"], "rss_mib_end": warm[-1]["rss_mib"],
            "rss_slope_mib_per_hour": round(slope_per_hour([(s["t"], s["rss_mib"]) for s in warm]) or 0.0, 2),
            "queue_start": warm[0]["queue"], "queue_end": warm[-1]["queue"],
            "queue_max": {k: queue_max(k) for k in warm[-1]["queue"]},
            "cache_start": warm[0]["cache"], "cache_end": warm[-1]["cache"],
            "p99_s_per_minute": [round(v, 3) for _, v in p99s if v is not None],
            "p99_slope_s_per_hour": round(slope_per_hour([(60.0 * m, v) for m, v in p99s if v is not None]) or 0.0, 3),
            "samples": len(samples),
        }
        print(json.dumps(report, indent=1))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps({"report": report, "samples": samples}, indent=1))
        return 0
    finally:
        bound.stop.set()
        if sched is not None:
            sched.stop()
        api.close()
        if plane_env is not None:
            subprocess.run([str(CONTROLPLANE_DIR / "down.sh")], env=plane_env, check=False)


if __name__ == "__main__":
    sys.exit(main())
