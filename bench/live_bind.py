"""Bind-only contestant of `make bench-live`: the limit of the API path for binding.

Lists the nodes and the pending pods of one scheduler name once, then POSTs a Binding per pod,
nodes taken round-robin, from ``--workers`` threads with one keep-alive connection each, under
the same client-side rate limit (qps/burst) as the schedulers. No filtering, no scoring, no
watch. When every pod is bound it prints a JSON summary on stdout and stays alive (idle) until
terminated, so the driver samples its CPU and peak RSS from /proc like the other contestants'.

With ``--events`` each Binding is followed by the events.k8s.io/v1 ``Scheduled`` Event that
kube-scheduler writes for a bound pod (same fields, same size): the API path's limit for any
scheduler that writes what kube-scheduler writes per pod (contestant ``bindev``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.live_http import ApiError, Kube


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--scheduler-name", default="default-scheduler")
    ap.add_argument("--qps", type=float, default=5000)
    ap.add_argument("--burst", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--exit", action="store_true", help="exit when done instead of idling")
    ap.add_argument("--events", action="store_true", help="POST kube-scheduler's Scheduled Event after each bind")
    args = ap.parse_args()

    kube = Kube(args.kubeconfig)
    nodes = [name for _, name in kube.list_names("/api/v1/nodes")[0]]
    metas, _ = kube.list_meta(
        "/api/v1/pods", f"fieldSelector=spec.nodeName%3D,spec.schedulerName%3D{args.scheduler_name}"
    )
    pending = [(m.get("namespace", ""), m["name"], m.get("uid", ""), m.get("resourceVersion", "")) for m in metas]
    if not nodes:
        print(json.dumps({"error": "no nodes"}), flush=True)
        return 1
    bucket = TokenBucket(args.qps, args.burst)
    work = iter(enumerate(pending))
    lock = threading.Lock()
    bound = itertools.count()
    failures: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                item = next(work, None)
            if item is None:
                return
            i, (ns, name, uid, rv) = item
            node = nodes[i % len(nodes)]
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

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        json.dumps({"pending": len(pending), "nodes": len(nodes), "bound": next(bound), "failures": failures[:5]}),
        flush=True,
    )
    if not args.exit:
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    raise SystemExit(main())
