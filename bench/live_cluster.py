"""What the live benchmark creates and deletes on the plane: bench nodes, namespaces, the initial
pods of a workload (bound, Running, on untainted nodes before any run) and the measured pods."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from bench.live_http import Kube
from bench.live_plane import say
from bench.live_shapes import FULL, QUICK, Workload
from e2e.support.waits import NOT_READY_TAINT_KEYS

BENCH_LABEL = "pyscheduler-bench"


def _all_namespaces() -> set[str]:
    """Every namespace any workload uses (a one-node build of each shape tells)."""
    out: set[str] = set()
    for w in FULL + QUICK:
        _, init, measured = dataclasses.replace(w, nodes=1).build(1)
        out |= {p["metadata"]["namespace"] for p in init + measured}
    return out


ALL_NAMESPACES = _all_namespaces()


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "uid"}
    return {**obj, "metadata": meta}


def renamed(pod: dict[str, Any], suffix: str) -> dict[str, Any]:
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
