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
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.live_http import ApiError, Kube
from bench.live_shapes import FULL, QUICK, Workload
from e2e.support.apply import iter_yaml_documents
from e2e.support.plane import (
    CONTROLPLANE_DIR,
    MANIFESTS_DIR,
    ControlPlane,
    local_binaries_present,
    start_local_control_plane,
)
from e2e.support.waits import NOT_READY_TAINT_KEYS

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
BENCH_LABEL = "pyscheduler-bench"
SCHEDULER_NAME = "default-scheduler"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _all_namespaces() -> set[str]:
    """Every namespace any workload uses (a one-node build of each shape tells)."""
    out: set[str] = set()
    for w in FULL + QUICK:
        _, init, measured = dataclasses.replace(w, nodes=1).build(1)
        out |= {p["metadata"]["namespace"] for p in init + measured}
    return out


ALL_NAMESPACES = _all_namespaces()
CONTESTANTS = {"kube": "kube-scheduler", "bind": "bind-only", "bindev": "bind+event", "ours": "pyscheduler"}


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# /proc sampling
# ---------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str]:
    # Fields after "(comm)": comm may contain spaces and parentheses.
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat_fields(int(d))[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError, IndexError):
            f = _stat_fields(p)
            total += int(f[11]) + int(f[12])  # utime, stime
    return total / CLK_TCK


def hwm_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024.0


def loadavg() -> float:
    return float(pathlib.Path("/proc/loadavg").read_text().split()[0])


# ---------------------------------------------------------------------------
# Control plane
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Plane:
    cp: ControlPlane
    run: pathlib.Path
    admin: Kube
    sched_kubeconfig: str
    kube_scheduler_bin: str

    def pid(self, name: str) -> int:
        return int((self.run / "pids" / f"{name}.pid").read_text().strip())


def component_paths() -> dict[str, str]:
    script = f'source "{CONTROLPLANE_DIR}/lib.sh"; echo "$KUBE_SCHEDULER_BIN"'
    out = subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.PIPE, text=True).stdout
    return {"kube-scheduler": out.strip()}


def start_plane() -> Plane:
    paths = component_paths()
    missing = [c for c in ("kube-scheduler",) if not os.access(paths[c], os.X_OK)]
    if not local_binaries_present():
        missing = ["etcd", "kube-apiserver", "kwok", *missing]
    if missing:
        say(f"building {' '.join(missing)} (e2e/controlplane/build.sh)")
        subprocess.run([str(CONTROLPLANE_DIR / "build.sh"), *missing], check=True)
    say(f"control plane in {os.environ['PYSCHED_RUN']}")
    cp = start_local_control_plane()
    assert cp.run_dir is not None
    admin = Kube(cp.kubeconfig)
    # One identity for all contestants: system:kube-scheduler has the upstream role; the
    # pyscheduler ClusterRole (manifests/rbac.yaml) adds what ours also lists.
    role = next(
        d for d in iter_yaml_documents(MANIFESTS_DIR / "rbac.yaml") if d["kind"] == "ClusterRole"
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "pyscheduler-bench-live"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}],
    }
    base = "/apis/rbac.authorization.k8s.io/v1"
    admin.request("POST", f"{base}/clusterroles", role, ok=(201, 409))
    admin.request("POST", f"{base}/clusterrolebindings", binding, ok=(201, 409))
    return Plane(cp, cp.run_dir, admin, str(cp.run_dir / "pki" / "kube-scheduler.kubeconfig"), paths["kube-scheduler"])


# ---------------------------------------------------------------------------
# Cluster objects
# ---------------------------------------------------------------------------


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "uid"}
    return {**obj, "metadata": meta}


def _renamed(pod: dict[str, Any], suffix: str) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "name": pod["metadata"]["name"] + suffix}}


def wait_until(desc: str, fn: Any, timeout: float, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not fn():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {desc}")
        time.sleep(interval)


def delete_pods(kube: Kube, namespace: str, timeout: float = 300) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    kube.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}, ok=(200,))
    wait_until(f"pods of {namespace} deleted", lambda: kube.count(path) == 0, timeout)
    # Scheduling events pile up otherwise (kube-scheduler and ours emit one per pod).
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/events", ok=(200,))


def delete_bench_nodes(kube: Kube, timeout: float = 300) -> None:
    q = f"labelSelector={BENCH_LABEL}"
    if kube.count("/api/v1/nodes", q):
        kube.request("DELETE", f"/api/v1/nodes?{q}", ok=(200,))
        wait_until("bench nodes deleted", lambda: kube.count("/api/v1/nodes", q) == 0, timeout)


def ensure_namespaces(kube: Kube, names: set[str]) -> None:
    for ns in sorted(names):
        kube.request(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            ok=(201, 409),
        )


def create_pods(kube: Kube, pods: list[dict[str, Any]]) -> None:
    kube.parallel([("POST", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", _clean(p)) for p in pods])


def not_ready_nodes(kube: Kube) -> int:
    doc = kube.request("GET", f"/api/v1/nodes?labelSelector={BENCH_LABEL}")
    return sum(
        1
        for n in doc.get("items") or []
        if any(t.get("key") in NOT_READY_TAINT_KEYS for t in (n.get("spec") or {}).get("taints") or [])
    )


def prepare_workload(
    kube: Kube, wl: Workload, nodes: list[dict[str, Any]], init: list[dict[str, Any]], namespaces: set[str]
) -> None:
    """Nodes and bound init pods of ``wl``; what already matches (a rerun on a kept plane) stays."""
    t = time.monotonic()
    want_nodes = {}
    for n in nodes:
        n = _clean(n)
        n["metadata"]["labels"] = {**n["metadata"]["labels"], BENCH_LABEL: "live"}
        want_nodes[n["metadata"]["name"]] = n
    have = {m["name"]: m.get("labels") for m in kube.list_meta("/api/v1/nodes", f"labelSelector={BENCH_LABEL}")[0]}
    keep = have == {k: v["metadata"]["labels"] for k, v in want_nodes.items()}
    init_ns = {p["metadata"]["namespace"] for p in init}
    init_names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in init}
    have_pods = {
        (m["namespace"], m["name"])
        for ns in sorted(init_ns)
        for m in kube.list_meta(f"/api/v1/namespaces/{ns}/pods")[0]
    }
    keep_pods = keep and have_pods == init_names
    # Measured pods left by an interrupted run, and pods of another workload (other
    # namespaces, same node names), go.
    for ns in sorted(ALL_NAMESPACES - init_ns if keep_pods else ALL_NAMESPACES):
        if kube.count(f"/api/v1/namespaces/{ns}/pods"):
            delete_pods(kube, ns)
    ensure_namespaces(kube, namespaces)
    if not keep:
        delete_bench_nodes(kube)
        kube.parallel([("POST", "/api/v1/nodes", n) for n in want_nodes.values()])
    if not keep_pods:
        create_pods(kube, init)
    # kwok turns the bound init pods Running: wait so that it is idle during the runs.
    for ns in sorted({p["metadata"]["namespace"] for p in init}):
        path = f"/api/v1/namespaces/{ns}/pods"
        wait_until(
            f"init pods of {ns} Running",
            lambda p=path: kube.count(p, "fieldSelector=status.phase%21%3DRunning") == 0,
            600,
            1.0,
        )
    # A new node carries node.kubernetes.io/not-ready until kube-controller-manager's node
    # lifecycle controller lifts it (tens per second at 5,000 nodes, minutes in all): a run
    # started earlier would see most nodes filtered out and the rest changing under it.
    wait_until(
        "bench nodes free of not-ready/unreachable taints",
        lambda: not_ready_nodes(kube) == 0,
        900,
        2.0,
    )
    reused = " (reused)" if keep_pods else ""
    say(f"{wl.name}: {len(nodes)} nodes, {len(init)} init pods ready{reused} in {time.monotonic() - t:.0f}s")


# ---------------------------------------------------------------------------
# Observing bindings
# ---------------------------------------------------------------------------


class BindObserver(threading.Thread):
    """Records when each pod of one namespace is first seen bound (a watch of bound pods only)."""

    def __init__(self, kube: Kube, namespace: str, resource_version: str, expected: int) -> None:
        super().__init__(daemon=True)
        self.kube, self.namespace, self.rv, self.expected = kube, namespace, resource_version, expected
        self.times: dict[str, float] = {}
        self.nodes: Counter[str] = Counter()
        self.ready = threading.Event()
        self.done = threading.Event()
        self.error: str | None = None
        # No socket timeout: the watch is quiet until the contestant binds (a scheduler may
        # take minutes to sync); the driver's own deadline and stop() end it.
        self._conn = kube.connect(timeout=None)
        self._stopping = False

    def run(self) -> None:
        try:
            resumes = 0
            while not self._stopping and not self.done.is_set():
                ended = self._watch_once()
                if ended is None:
                    return
                # The API server ends a watch whose reader falls behind (or at its timeout):
                # resume from the last event seen, as a reflector would, a bounded number of times.
                resumes += 1
                if resumes > 20:
                    self.error = f"watch ended early {resumes} times ({ended})"
                    return
                self._conn.close()
                self._conn = self.kube.connect(timeout=None)
        except Exception as exc:
            if not self._stopping:
                self.error = f"watch failed: {exc!r}"
        finally:
            self.ready.set()

    def _watch_once(self) -> str | None:
        """One WATCH from self.rv. Returns why it ended when it may be resumed, else None."""
        path = (
            f"/api/v1/namespaces/{self.namespace}/pods?watch=1&resourceVersion={self.rv}"
            "&fieldSelector=spec.nodeName%21%3D&timeoutSeconds=3600&allowWatchBookmarks=true"
        )
        self._conn.request("GET", path, headers=self.kube.headers)
        resp = self._conn.getresponse()
        if resp.status != 200:
            self.error = f"watch: HTTP {resp.status} {resp.read()[:200]!r}"
            return None
        self.ready.set()
        while not self._stopping:
            line = resp.readline()
            if not line:
                return None if self.done.is_set() else "closed by the server"
            now = time.monotonic()
            ev = json.loads(line)
            obj = ev["object"]
            if ev.get("type") == "ERROR":
                self.error = f"watch error: {obj}"
                return None
            self.rv = obj["metadata"].get("resourceVersion") or self.rv
            if ev.get("type") == "BOOKMARK":
                continue
            name = obj["metadata"]["name"]
            node = obj.get("spec", {}).get("nodeName")
            if node and name not in self.times:
                self.times[name] = now
                self.nodes[node] += 1
                if len(self.times) >= self.expected:
                    self.done.set()
        return None

    def stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            if self._conn.sock is not None:
                self._conn.sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()


# ---------------------------------------------------------------------------
# Contestants
# ---------------------------------------------------------------------------


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
        return [
            # Serving off, as kube-scheduler's --secure-port=0 above: neither pays for a
            # self-signed certificate and an HTTPS listener before its first bind.
            sys.executable, "-m", "scheduler", "run", "--config", str(config), "--secure-port", "0",
        ]  # fmt: skip
    raise ValueError(key)


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
    """Signal the contestant's process group (it has its own session), then SIGKILL it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    # Leftover members of its group (none expected) go too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class Kwok:
    """SIGSTOP/SIGCONT of the plane's kwok; always resumed."""

    def __init__(self, plane: Plane, enabled: bool) -> None:
        self.pid = plane.pid("kwok") if enabled else None
        self.paused = False

    def pause(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.paused and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
            self.paused = False


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
    create_pods(kube, [_renamed(p, suffix) for p in measured])
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
            stop_process(proc, signal.SIGINT if profile_to else signal.SIGTERM, grace=30 if profile_to else 10)
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


# ---------------------------------------------------------------------------
# Profile summary (py-spy --format raw: "frame;frame;... count" per line)
# ---------------------------------------------------------------------------


def summarize_profile(path: pathlib.Path, top: int = 15) -> dict[str, Any]:
    self_t: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, cnt = line.rpartition(" ")
        if not stack or not cnt.isdigit():
            continue
        c = int(cnt)
        total += c
        frames = [f.rsplit(":", 1)[0] + ")" if ":" in f else f for f in stack.split(";")]
        frames = [_short(f) for f in frames]
        self_t[frames[-1]] += c
        for f in set(frames):
            incl[f] += c

    def pct(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(k, round(100.0 * v / total, 1)) for k, v in counter.most_common(top)] if total else []

    ours = Counter({k: v for k, v in incl.items() if "(scheduler/" in k})
    return {"samples": total, "self": pct(self_t), "inclusive": pct(incl), "inclusive_scheduler": pct(ours)}


def _short(frame: str) -> str:
    # "func (/path/to/site-packages/pkg/mod.py)" -> "func (pkg/mod.py)"
    for marker in ("site-packages/", "/lib/python3.11/", str(ROOT) + "/"):
        if marker in frame:
            head, _, tail = frame.partition("(")
            return f"{head}({tail.split(marker, 1)[1]}"
    return frame


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

COLUMNS = [
    ("pods_per_s", "pods/s", "{:.0f}"),
    ("pods_per_s_10_90", "pods/s 10-90%", "{:.0f}"),
    ("first_bind_s", "first bind s", "{:.2f}"),
    ("cpu_s_per_1000", "CPU-s/1000 pods", "{:.2f}"),
    ("apiserver_cpu_s", "apiserver CPU-s", "{:.1f}"),
    ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
]


def medians(results: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for col, _, _ in COLUMNS:
        # Failed runs (timeout, crash) are listed in the JSON but not in the medians.
        vals = [r[col] for r in results if r["status"] == "ok" and r.get(col) is not None]
        out[col] = statistics.median(vals) if vals else None
    out["rounds_ok"] = sum(r["status"] == "ok" for r in results)
    return out


def table(wl: str, meta: str, med: dict[str, dict[str, float | None]]) -> str:
    lines = [f"{wl}  ({meta})"]
    head = f"  {'':22}" + "".join(f"{h:>17}" for _, h, _ in COLUMNS) + f"{'ok runs':>9}"
    lines.append(head)
    for key, m in med.items():
        cells = "".join(f"{(fmt.format(m[c]) if m[c] is not None else '-'):>17}" for c, _, fmt in COLUMNS)
        lines.append(f"  {CONTESTANTS[key]:22}{cells}{m['rounds_ok']:>9}")
    if "ours" in med:
        for other in ("kube", "bind", "bindev"):
            if other not in med:
                continue
            cells = ""
            for c, _, _ in COLUMNS:
                a, b = med["ours"][c], med[other][c]
                cells += f"{(f'{a / b:.2f}x' if a is not None and b else '-'):>17}"
            lines.append(f"  {'ours/' + CONTESTANTS[other]:22}{cells}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("PYSCHED_RUN", f"/tmp/pyscheduler-bench-live-{os.getpid()}")
    # kwok is paused during runs, so node leases go unrenewed: with kube-controller-manager's
    # 50 s a slow contestant's run would see nodes turn NotReady and tainted under it.
    os.environ.setdefault("PYSCHED_NODE_MONITOR_GRACE_PERIOD", "30m")
    # Stop cleanly (finally blocks run) on SIGTERM/SIGHUP as on Ctrl-C.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    workloads = QUICK if args.quick else FULL
    if args.only:
        workloads = [w for w in workloads if args.only in w.name]
    if args.nodes:
        workloads = [
            dataclasses.replace(w, nodes=args.nodes, name=f"{w.name.split('/')[0]}/{args.nodes}Nodes")
            for w in workloads
        ]
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
    tables: list[str] = []
    # An installed scheduler starts from bytecode (pip compiles the wheel, the image keeps it);
    # a checkout under PYTHONDONTWRITEBYTECODE would compile every module at each start.
    compileall.compile_dir(str(ROOT / "scheduler"), quiet=1)
    try:
        plane = start_plane()
        kwok = Kwok(plane, enabled=not args.kwok_live)
        config = plane.run / "bench-live-scheduler.yaml"
        scheduler_config(config, plane.sched_kubeconfig, args.qps)
        for wl in workloads:
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
            report["workloads"][wl.name] = entry
            meta = (
                f"{len(nodes)} nodes, {len(init)} init pods, {len(measured)} measured pods, "
                f"median of {args.rounds} rounds"
            )
            tables.append(table(wl.name, meta, med))
            print(tables[-1], flush=True)
            if "profile" in entry:
                print("  py-spy self time of ours (% of samples):")
                for fn, p in entry["profile"]["self"]:
                    print(f"    {p:5.1f}%  {fn}")
                print("  py-spy inclusive time in scheduler/ (% of samples):")
                for fn, p in entry["profile"]["inclusive_scheduler"]:
                    print(f"    {p:5.1f}%  {fn}")
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
        if kwok is not None:
            kwok.resume()
        if plane is not None:
            if args.keep_plane or not plane.cp.started_here:
                say(f"control plane left running: PYSCHED_RUN={plane.run} e2e/controlplane/down.sh")
            else:
                plane.cp.stop()
    print(
        f"\nJSON: {out_path}\n(load average at start {report['loadavg_at_start']}, at end {report['loadavg_at_end']}; "
        f"{report['cpus']} CPUs shared with whatever else runs on this machine)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
