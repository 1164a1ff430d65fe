"""How many threads the bind lane needs: Binding POSTs per second and the worst event-loop stall
for each thread count, through the scheduler's own Binder, unlimited qps.

Needs a running API server: ``KUBECONFIG`` (admin) set, e.g. from ``e2e/controlplane/up.sh``.
Creates one fake node and N pods per thread count in a scratch namespace; binds them; deletes
the namespace's pods afterwards.

    python -m bench.bind_lanes --pods 300 --threads 1 2 4 8 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client

from e2e.support.apply import ensure_namespace
from e2e.support.objects import make_node, make_pod
from e2e.support.plane import new_api_client
from scheduler.live.kube.binder import Binder
from scheduler.live.kube.clients import CredentialSource
from scheduler.live.kube.transport import KubeCoreAPI, TokenBucket
from scheduler.model.pod import PodInfo


async def _stall_probe(stop: asyncio.Event, worst: list[float]) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.005)
        worst[0] = max(worst[0], time.perf_counter() - t - 0.005)


async def run_one(src: CredentialSource, core: client.CoreV1Api, ns: str, node: str, n: int,
                  threads: int, run: int) -> tuple[float, float]:
    names = [f"r{run}-t{threads}-{i}" for i in range(n)]
    with ThreadPoolExecutor(8) as ex:
        pods = list(ex.map(lambda nm: core.create_namespaced_pod(
            ns, make_pod(nm, ns, scheduler_name="nobody")), names))
    infos = [PodInfo(client.ApiClient().sanitize_for_serialization(p)) for p in pods]
    api = src.api_client("scheduler", pool_size=threads + 2)
    binder = Binder(KubeCoreAPI(api), TokenBucket(0, 1),
                    executor=ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bind"))
    stop, worst = asyncio.Event(), [0.0]
    probe = asyncio.create_task(_stall_probe(stop, worst))
    start = time.perf_counter()
    await asyncio.gather(*(binder.bind(p, node) for p in infos))
    took = time.perf_counter() - start
    stop.set()
    await probe
    binder.shutdown()
    api.close()
    return n / took, worst[0]


async def main_async(args: argparse.Namespace) -> None:
    kubeconfig = os.environ["KUBECONFIG"]
    src = CredentialSource(kubeconfig)
    admin = new_api_client(kubeconfig)
    core = client.CoreV1Api(admin)
    ns = f"bench-bind-{uuid.uuid4().hex[:6]}"
    ensure_namespace(core, ns)
    node = f"bench-bind-{uuid.uuid4().hex[:6]}"
    core.create_node(make_node(node, pods=100000))
    try:
        print(f"{'threads':>7} {'binds/s':>8} {'worst loop stall ms':>20}")
        for run, t in enumerate(args.threads):
            rate, stall = await run_one(src, core, ns, node, args.pods, t, run)
            print(f"{t:>7} {rate:>8.0f} {stall * 1000:>20.1f}")
    finally:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        core.delete_node(node)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
