"""Bind-only contestant of `make bench-live`: the limit of the API path for binding.

Watches the nodes and the pending pods of one scheduler name (metadata only) and POSTs a Binding
per pending pod as it appears, nodes taken round-robin, from ``--workers`` threads with one
keep-alive connection each, under the same client-side rate limit (qps/burst) as the
schedulers. No filtering, no scoring: pods a scheduler would leave pending get bound too. Runs
until terminated (the driver samples its CPU and peak RSS from /proc like the other
contestants'), then prints a JSON summary on stdout.

With ``--events`` each Binding is followed by the events.k8s.io/v1 ``Scheduled`` Event that
kube-scheduler writes for a bound pod (same fields, same size): the API path's limit for any
scheduler that writes what kube-scheduler writes per pod (contestant ``bindev``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.live_http import ApiError, Kube

META_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


class TokenBucket:
    """client-go's flowcontrol token bucket: ``qps`` refill, ``burst`` capacity."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> None:
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.last) * self.qps)
                self.last = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.qps
            time.sleep(wait)


def scheduled_event(ns: str, name: str, uid: str, rv: str, node: str) -> bytes:
    """The Event kube-scheduler records for a bound pod (reason Scheduled, action Binding)."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    return json.dumps(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{int(now * 1e9):x}", "namespace": ns},
            "eventTime": stamp,
            "reportingController": "default-scheduler",
            "reportingInstance": f"default-scheduler-{os.uname().nodename}",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
            "note": f"Successfully assigned {ns}/{name} to {node}",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid,
                          "resourceVersion": rv},
        }
    ).encode()


def watch_metas(kube: Kube, path: str, query: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
    """List then watch ``path`` (metadata only), resuming from the last resourceVersion; calls
    ``on_event(type, metadata)`` with ADDED for every listed object. Runs until the process ends."""
    metas, rv = kube.list_meta(path, query)
    for m in metas:
        on_event("ADDED", m)
    while True:
        conn = kube.connect(timeout=None)
        conn.request(
            "GET",
            f"{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion={rv}&{query}",
            headers={**kube.headers, "Accept": META_WATCH},
        )
        resp = conn.getresponse()
        if resp.status != 200:
            raise ApiError("WATCH", path, resp.status, resp.read())
        while line := resp.readline():
            ev = json.loads(line)
            meta = (ev.get("object") or {}).get("metadata") or {}
            rv = meta.get("resourceVersion") or rv
            if ev.get("type") == "ERROR":
                raise ApiError("WATCH", path, 410, line)
            if ev.get("type") != "BOOKMARK":
                on_event(ev["type"], meta)
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--scheduler-name", default="default-scheduler")
    ap.add_argument("--qps", type=float, default=5000)
    ap.add_argument("--burst", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--events", action="store_true", help="POST kube-scheduler's Scheduled Event after each bind")
    args = ap.parse_args()

    kube = Kube(args.kubeconfig)
    nodes: list[str] = []
    node_set: set[str] = set()
    lock = threading.Lock()
    work: queue.SimpleQueue[tuple[str, str, str, str]] = queue.SimpleQueue()
    seen: set[tuple[str, str]] = set()

    def on_node(kind: str, meta: dict[str, Any]) -> None:
        with lock:
            name = meta["name"]
            if kind == "DELETED" and name in node_set:
                node_set.discard(name)
                nodes.remove(name)
            elif kind != "DELETED" and name not in node_set:
                node_set.add(name)
                nodes.append(name)

    def on_pod(kind: str, meta: dict[str, Any]) -> None:
        key = (meta.get("namespace", ""), meta["name"])
        if kind == "DELETED" or meta.get("deletionTimestamp") or key in seen:
            return
        seen.add(key)
        work.put((key[0], key[1], meta.get("uid", ""), meta.get("resourceVersion", "")))

    pod_query = f"fieldSelector=spec.nodeName%3D,spec.schedulerName%3D{args.scheduler_name}"
    for target in (
        lambda: watch_metas(kube, "/api/v1/nodes", "", on_node),
        lambda: watch_metas(kube, "/api/v1/pods", pod_query, on_pod),
    ):
        threading.Thread(target=target, daemon=True).start()
    bucket = TokenBucket(args.qps, args.burst)
    rr = itertools.count()
    bound = itertools.count()
    failures: list[str] = []

    def worker() -> None:
        while True:
            ns, name, uid, rv = work.get()
            with lock:
                node = nodes[next(rr) % len(nodes)] if nodes else ""
            if not node:
                time.sleep(0.1)
                work.put((ns, name, uid, rv))
                continue
            body = json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name, "namespace": ns},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                }
            ).encode()
            bucket.take()
            try:
                kube.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body, ok=(201,))
                next(bound)
                if args.events:
                    bucket.take()
                    kube.request("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events",
                                 scheduled_event(ns, name, uid, rv, node), ok=(201,))
            except (ApiError, OSError) as exc:
                failures.append(f"{ns}/{name}: {exc}")

    for _ in range(args.workers):
        threading.Thread(target=worker, daemon=True).start()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    print(json.dumps({"bound": next(bound), "failures": len(failures), "first_failures": failures[:5]}), flush=True)
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    raise SystemExit(main())
