"""Watch-layer benchmark against a live API server (e.g. a local plane with kwok nodes).

    PYSCHED_RUN=/tmp/pcp-bench e2e/controlplane/up.sh
    export KUBECONFIG=/tmp/pcp-bench/kubeconfig
    python -m bench.watch populate --nodes 5000 --pods 10000
    python -m bench.watch startup            # cache sync: wall and CPU seconds to "synced"
    python -m bench.watch events --count 5000 # CPU per delivered watch event (label patches)
    python -m bench.watch startup --impl kopf # the same with the previous kopf-handler watcher

``--impl kopf`` loads scheduler/watcher.py as of ``--old-rev`` (git) and runs it as the app did:
kopf.operator with @kopf.on.event handlers, synced once every uid of one LIST was delivered.
The handlers are the real ones (scheduler.Scheduler with its cache and queue), so the figures
include parsing and cache updates.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scheduler.backend.cache import Cache  # noqa: E402
from scheduler.backend.queue import SchedulingQueue  # noqa: E402
from scheduler.config import load_config  # noqa: E402
from scheduler.core.algorithm import Algorithm  # noqa: E402
from scheduler.core.profiles import build_frameworks  # noqa: E402
from scheduler.framework.listers import Listers  # noqa: E402
from scheduler.framework.snapshot import Snapshot  # noqa: E402
from scheduler.live.kube.binder import Binder  # noqa: E402
from scheduler.live.kube.clients import Credentials, CredentialSource  # noqa: E402
from scheduler.live.kube.transport import KubeCoreAPI, TokenBucket  # noqa: E402
from scheduler.live.loop import Scheduler  # noqa: E402
from scheduler.live.metrics import Metrics  # noqa: E402

NS = "bench-watch"
LABEL = "bench-watch"


def load_kube() -> tuple[Any, Credentials]:
    """An API client and the watcher's credentials from $KUBECONFIG (in-cluster otherwise)."""
    source = CredentialSource(os.environ.get("KUBECONFIG"))
    return source.api_client("scheduler", pool_size=32), source.credentials()


def _core() -> Any:
    from kubernetes import client

    api, _ = load_kube()
    return client.CoreV1Api(api)


def populate(nodes: int, pods: int, workers: int) -> None:
    from kubernetes.client.rest import ApiException

    core = _core()
    try:
        core.create_namespace({"metadata": {"name": NS}})
    except ApiException as exc:
        if exc.status != 409:
            raise

    def node(i: int) -> None:
        body = {
            "metadata": {"name": f"bw-{i}", "labels": {"type": "kwok", LABEL: "1",
                                                         "topology.kubernetes.io/zone": f"z{i % 3}"},
                         "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
        }
        try:
            core.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def pod(i: int) -> None:
        body = {
            "metadata": {"name": f"bw-{i}", "labels": {LABEL: "1", "app": f"a{i % 50}"}},
            "spec": {
                "nodeName": f"bw-{i % nodes}",
                "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "c", "image": "fake",
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            },
        }
        try:
            core.create_namespaced_pod(NS, body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    start = time.monotonic()
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(node, range(nodes)))
        print(f"nodes: {nodes} in {time.monotonic() - start:.1f}s", flush=True)
        list(ex.map(pod, range(pods)))
    print(f"pods: {pods}, total {time.monotonic() - start:.1f}s", flush=True)


def _old_watcher_module(rev: str) -> types.ModuleType:
    src = subprocess.run(["git", "show", f"{rev}:scheduler/watcher.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("old_watcher", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_watcher"] = mod  # dataclasses look their module up
    exec(compile(src, "old_watcher.py", "exec"), mod.__dict__)
    return mod


def _scheduler(api_client: Any) -> Scheduler:
    metrics = Metrics()
    binder = Binder(KubeCoreAPI(api_client), TokenBucket(0, 1))
    snapshot, listers = Snapshot(), Listers()
    frameworks = build_frameworks(load_config(None), snapshot, listers, client=binder,
                                  observers=metrics.extension_point_observer)
    queue = SchedulingQueue(frameworks, time.monotonic)
    return Scheduler(frameworks, Cache(), snapshot, listers, queue, Algorithm(random.Random()), binder, metrics)


def _list_uids(core: Any) -> dict[str, set[str]]:
    out = {"Node": set(), "Pod": set()}
    for kind, fn in (("Node", core.list_node), ("Pod", core.list_pod_for_all_namespaces)):
        out[kind] = {i.metadata.uid for i in fn(_preload_content=True).items}
    return out


async def _start(impl: str, rev: str) -> tuple[Any, Scheduler, asyncio.Task[Any], float, float]:
    api_client, creds = load_kube()
    sched = _scheduler(api_client)
    t0, c0 = time.monotonic(), time.process_time()
    if impl == "new":
        from scheduler.live.watch.watcher import Watcher

        w = Watcher(sched, lambda: creds, scheduler_names=sched.frameworks)
        task = asyncio.create_task(w.run())
        await w.synced.wait()
    else:
        from kubernetes import client

        old = _old_watcher_module(rev)
        w = old.Watcher(sched, lambda: creds)
        task = asyncio.create_task(w.run())
        await w.ready_flag.wait()
        # The old barrier: every uid of a LIST delivered (one LIST here; the app re-listed every 3 s).
        want = await asyncio.get_running_loop().run_in_executor(None, _list_uids, client.CoreV1Api(api_client))
        while any(w.has_seen(k, v) for k, v in want.items()):
            await asyncio.sleep(0.05)
    return w, sched, task, time.monotonic() - t0, time.process_time() - c0


async def startup(impl: str, rev: str) -> None:
    w, sched, task, wall, cpu = await _start(impl, rev)
    print(f"{impl}: synced nodes={sched.cache.node_count()} pods={sched.cache.pod_count()} "
          f"wall={wall:.2f}s cpu={cpu:.2f}s", flush=True)
    w.stop()
    await asyncio.wait([task], timeout=10)


def _patch(count: int, workers: int, value: str, what: str) -> None:
    core = _core()
    if what == "labels":
        body: dict[str, Any] = {"metadata": {"labels": {"bench-round": value}}}
        fn = core.patch_namespaced_pod
    else:  # status churn, as kubelet/kwok condition updates: nothing the scheduler reads
        body = {"status": {"conditions": [{"type": "example.com/bench", "status": "True", "message": value}]}}
        fn = core.patch_namespaced_pod_status
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(lambda i: fn(f"bw-{i}", NS, body), range(count)))


def _marked(raw: dict[str, Any], value: str, what: str) -> bool:
    if what == "labels":
        return ((raw.get("metadata") or {}).get("labels") or {}).get("bench-round") == value
    return any(c.get("message") == value for c in (raw.get("status") or {}).get("conditions") or ())


async def events(impl: str, rev: str, count: int, workers: int, what: str) -> None:
    w, sched, task, _, _ = await _start(impl, rev)
    await asyncio.sleep(2)  # let the start-up burst (kwok status writes) settle
    value = str(time.time_ns())
    base = w.events
    c0, t0 = time.process_time(), time.monotonic()
    # The patches come from another process so that only the watching side's CPU is counted.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.watch", "patch", "--count", str(count), "--workers", str(workers),
        "--value", value, "--what", what, cwd=ROOT)

    # Count every pod event that reaches the watcher's entry point (delivered to handlers or not).
    seen = 0
    if impl == "new":
        dispatch = w.dispatch

        def counting_dispatch(kind: str, etype: str | None, raw: dict[str, Any]) -> None:
            nonlocal seen
            if kind == "Pod" and _marked(raw, value, what):
                seen += 1
            dispatch(kind, etype, raw)

        w.dispatch = counting_dispatch
    else:
        on_pod = sched.on_pod

        def counting(etype: str | None, raw: dict[str, Any]) -> None:
            nonlocal seen
            if _marked(raw, value, what):
                seen += 1
            on_pod(etype, raw)

        sched.on_pod = counting  # type: ignore[method-assign]
    while seen < count:
        await asyncio.sleep(0.2)
    c1, t1 = time.process_time(), time.monotonic()
    await proc.wait()
    delivered = w.events - base
    print(f"{impl} ({what}): {count} pod updates observed in {t1 - t0:.2f}s, watcher cpu {c1 - c0:.2f}s, "
          f"{(c1 - c0) / count * 1e6:.0f} us cpu per update ({delivered} handler calls)", flush=True)
    w.stop()
    await asyncio.wait([task], timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("populate")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--workers", type=int, default=32)
    for name in ("startup", "events"):
        s = sub.add_parser(name)
        s.add_argument("--impl", choices=("new", "kopf"), default="new")
        s.add_argument("--old-rev", default="b09ae28")
        if name == "events":
            s.add_argument("--count", type=int, default=5000)
            s.add_argument("--workers", type=int, default=16)
            s.add_argument("--what", choices=("labels", "status"), default="labels")
    pt = sub.add_parser("patch")
    pt.add_argument("--count", type=int, required=True)
    pt.add_argument("--workers", type=int, default=16)
    pt.add_argument("--value", required=True)
    pt.add_argument("--what", choices=("labels", "status"), default="labels")
    a = ap.parse_args()
    from scheduler.live import log as logconf
    logconf.configure()
    if a.cmd == "populate":
        populate(a.nodes, a.pods, a.workers)
    elif a.cmd == "startup":
        asyncio.run(startup(a.impl, a.old_rev))
    elif a.cmd == "events":
        asyncio.run(events(a.impl, a.old_rev, a.count, a.workers, a.what))
    else:
        _patch(a.count, a.workers, a.value, a.what)


if __name__ == "__main__":
    main()
