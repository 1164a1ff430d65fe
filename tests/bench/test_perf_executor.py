"""bench/perf_executor.py against a fake API server: what upstream's executor.go writes for the
ops of v1.36.3's TopologySpreading and SchedulingWhileGated workloads (op numbering, node
names and strategies, namespaces, barrier bookkeeping, metric windows)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bench import perf_schema
from bench.live_http import ApiError
from bench.perf_config import Workload, load_workloads, perf_dir, resolve_ops
from bench.perf_executor import Executor
from bench.perf_tracker import PodTracker, Window

pytestmark = pytest.mark.skipif(
    not perf_dir().is_dir(), reason="k8s.io/kubernetes@v1.36.3 is not in the Go module cache"
)


class FakeKube:
    """Nodes, namespaces and pods in memory; every created pod is bound at once (``bind``) or
    left pending, and reported to the tracker as the watch would."""

    def __init__(self, bind: bool) -> None:
        self.bind = bind
        self.tracker: PodTracker | None = None
        self.nodes: dict[str, dict[str, Any]] = {}
        self.namespaces: list[str] = []
        self.pods: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, str]] = []
        self.headers: dict[str, str] = {}

    def connect(self, timeout: float | None = None) -> Any:
        class Conn:
            sock = None

            def close(self) -> None:
                pass

        return Conn()

    def request(self, method: str, path: str, body: Any = None, ok: Any = (200, 201), **_: Any) -> Any:
        obj = json.loads(body) if isinstance(body, bytes) else body
        self.calls.append((method, path.split("?")[0]))
        route = path.split("?")[0]
        if method == "POST" and route == "/api/v1/nodes":
            name = obj["metadata"]["name"]
            if name in self.nodes:
                raise ApiError(method, path, 409, b"exists")
            self.nodes[name] = obj
            return obj
        if method == "GET" and route == "/openapi/v3/api/v1":
            # Kinds without properties: field names pass as written (perf_schema is tested apart).
            gvk = [{"group": "", "version": "v1", "kind": k} for k in ("Pod", "Node", "Namespace")]
            return {"components": {"schemas": {g["kind"]: {"x-kubernetes-group-version-kind": [g]} for g in gvk}}}
        if method == "GET" and route == "/api/v1/nodes":
            return {"items": list(self.nodes.values())}
        if method == "PATCH" and (m := re.fullmatch(r"/api/v1/nodes/([^/]+)", route)):
            self.nodes[m.group(1)]["metadata"]["labels"].update(obj["metadata"]["labels"])
            return {}
        if method == "POST" and route == "/api/v1/namespaces":
            self.namespaces.append(obj["metadata"]["name"])
            return obj
        if method == "POST" and (m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", route)):
            ns = m.group(1)
            pods = self.pods.setdefault(ns, [])
            name = f"{obj['metadata'].get('generateName', 'p-')}{len(pods)}"
            pod = {**obj, "metadata": {**obj["metadata"], "name": name, "namespace": ns, "uid": f"{ns}/{name}"}}
            pods.append(pod)
            assert self.tracker is not None
            self.tracker._apply("ADDED", pod, 0.0)
            gated = bool(obj["spec"].get("schedulingGates"))
            if self.bind and not gated:
                # Bound, and made Running at once as kwok would.
                bound = {**pod, "spec": {**pod["spec"], "nodeName": "n"}, "status": {"phase": "Running"}}
                self.tracker._apply("MODIFIED", bound, 0.0)
            elif gated:  # the API server sets PodScheduled=False (SchedulingGated) on a gated pod
                st = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}
                self.tracker._apply("MODIFIED", {**pod, "status": st}, 0.0)
            return pod
        raise AssertionError(f"unexpected {method} {path}")


class Hooks:
    def __init__(self) -> None:
        self.windows: list[tuple[str, str]] = []

    def window_started(self, win: Window) -> None:
        self.windows.append(("start", win.name))

    def window_stopped(self, win: Window) -> None:
        self.windows.append(("stop", win.name))

    def check(self) -> None:
        pass


@pytest.fixture(autouse=True)
def fresh_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perf_schema, "_DOCS", {})
    monkeypatch.setattr(perf_schema, "_ROOTS", {})


def run(full_name: str, scale: float, bind: bool = True) -> tuple[Executor, FakeKube, Hooks]:
    wl: Workload = next(w for w in load_workloads() if w.full_name == full_name)
    kube = FakeKube(bind)
    tracker = PodTracker(kube)  # type: ignore[arg-type]
    kube.tracker = tracker
    hooks = Hooks()
    ex = Executor(kube, tracker, wl, resolve_ops(wl, scale), hooks, {}, wait_timeout=0.5, workers=2)  # type: ignore[arg-type]
    ex.run()
    return ex, kube, hooks


def test_topology_spreading() -> None:
    # createNodes with node-default.yaml and labelNodePrepareStrategy zone moon-1..3, round robin
    # over the name-sorted nodes; then createPods into namespace-1 and namespace-2.
    ex, kube, hooks = run("TopologySpreading/5000Nodes", 0.002)
    assert ex.error is None, ex.error
    names = sorted(kube.nodes)
    assert len(names) == 10 and all(re.fullmatch(r"scheduler-perf-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)
    zones = [kube.nodes[n]["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in names]
    assert zones == ["moon-1", "moon-2", "moon-3"] * 3 + ["moon-1"]
    assert all(kube.nodes[n]["metadata"]["labels"]["kubernetes.io/hostname"] == n for n in names)
    assert {ns: len(p) for ns, p in kube.pods.items()} == {"namespace-1": 10, "namespace-2": 4}
    assert hooks.windows == [("start", "namespace-2"), ("stop", "namespace-2")]
    (_, info), = ex.closed
    assert (info["matching_pods"], info["bound_pods"], info["binds"], info["complete"]) == (4, 4, 4, True)


def test_scheduling_while_gated_until_the_unbound_wait() -> None:
    # Gated pods (skipWaitToCompletion) in namespace-1, a barrier on Attempted (the gated pods
    # carry PodScheduled=False), then createPods in namespace-3, which waits for binds: nothing
    # binds here, so the op fails with the pending pod named, as upstream's timeout does.
    ex, kube, hooks = run("SchedulingWhileGated/1Node_10000GatedPods", 0.0005, bind=False)
    assert list(kube.nodes) == ["scheduler-perf-node"]
    assert ex.pending == {"namespace-1": 5, "namespace-3": 0}
    assert ex.ops_done == 3
    assert ex.error is not None and ex.error.startswith("op 3 (createPods): timed out after 0s waiting for 10 pods")
    assert "at least pod namespace-3/light-pod-0 is not scheduled (not attempted)" in ex.error
    assert hooks.windows == []


def test_a_window_opens_once_kwok_started_the_bound_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    # The 10 pods of namespace-1 are bound but not Running when namespace-2's window would
    # open; kwok starts them 0.3 s later, and only then does the window open.
    import threading
    import time

    from bench import perf_executor

    monkeypatch.setattr(perf_executor, "SETTLE_FEW", 0)
    wl: Workload = next(w for w in load_workloads() if w.full_name == "TopologySpreading/5000Nodes")
    kube = FakeKube(True)
    tracker = PodTracker(kube)  # type: ignore[arg-type]
    kube.tracker = tracker
    real_apply = tracker._apply
    started: list[dict[str, Any]] = []

    def apply(kind: str | None, obj: Any, now: float) -> None:
        if obj["metadata"]["namespace"] == "namespace-1" and obj["spec"].get("nodeName"):
            obj = {**obj, "status": {}}  # bound, still Pending
            started.append(obj)
        real_apply(kind, obj, now)

    monkeypatch.setattr(tracker, "_apply", apply)

    def kwok() -> None:
        time.sleep(0.3)
        for p in started:
            real_apply("MODIFIED", {**p, "status": {"phase": "Running"}}, 0.0)

    hooks = Hooks()
    ex = Executor(kube, tracker, wl, resolve_ops(wl, 0.002), hooks, {}, wait_timeout=5, workers=2)  # type: ignore[arg-type]
    threading.Thread(target=kwok, daemon=True).start()
    ex.run()
    assert ex.error is None, ex.error
    (_, info), = ex.closed
    assert len(started) == 10
    assert info["settle_s"] >= 0.25 and info["starting_at_open"] == 0


def test_settling_gives_up_after_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import perf_executor

    monkeypatch.setattr(perf_executor, "SETTLE_FEW", 0)
    monkeypatch.setattr(perf_executor, "SETTLE_MAX_S", 0.2)

    class Stuck:
        def starting(self) -> tuple[int, int]:
            return 5, 100  # kwok never gets to them

    ex = Executor.__new__(Executor)
    ex.tracker = Stuck()  # type: ignore[assignment]
    import threading

    ex.cancel = threading.Event()
    waited, starting = ex._settle()
    assert 0.2 <= waited < 1.0 and starting == 5
