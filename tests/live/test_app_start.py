"""``run``'s start-up: which kinds it watches for a configuration (kube-scheduler v1.36.3's
informers: scheduler.go New, eventhandlers.go addAllEventHandlers, the plugins' New), the one
line it stops with when the cluster does not serve one of them, and delayCacheUntilActive
(cmd/kube-scheduler/app/server.go Run: informers start in OnStartedLeading)."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from scheduler.config import API_VERSION, KIND, parse_config
from scheduler.live.app import App
from scheduler.live.kube.clients import CredentialSource
from scheduler.live.metrics import Metrics
from scheduler.plugins.registry import default_registry
from scheduler.testing.fakes import serve_loopback, write_kubeconfig

UPSTREAM_DEFAULT_PROFILE_KINDS = [
    "Pod", "Node", "Namespace", "Service", "ReplicationController", "ReplicaSet", "StatefulSet", "PersistentVolume",
    "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment",
    "PodDisruptionBudget", "ResourceClaim", "DeviceClass", "ResourceSlice",
]
NO_VOLUMES_NO_PREEMPTION = {"multiPoint": {"disabled": [
    {"name": n} for n in ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DefaultPreemption",
                          "DynamicResources")]}}
LIST_NO_CONSTRAINTS = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
LIST_WITH_CONSTRAINTS = [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": [
    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]}}]


def config(*profiles: dict[str, Any], **top: Any) -> Any:
    return parse_config({"apiVersion": API_VERSION, "kind": KIND, "leaderElection": {"leaderElect": False},
                         "profiles": list(profiles), **top})


def make_app(cfg: Any, tmp_path: pathlib.Path, server: str = "https://127.0.0.1:1") -> App:
    creds = CredentialSource(write_kubeconfig(tmp_path, {"token": "t"}, server=server))
    return App(cfg, default_registry(), Metrics(), creds, None)


@pytest.mark.parametrize(
    ("profiles", "want"),
    [
        ([{"schedulerName": "a"}], UPSTREAM_DEFAULT_PROFILE_KINDS),
        # Without the volume plugins, preemption and default spreading, kube-scheduler still
        # watches pods, nodes, namespaces (the queue), CSINodes (the shared CSI manager) and, with
        # DynamicResourceAllocation GA and on, the DRA manager's kinds, even with DynamicResources off.
        ([{"schedulerName": "a", "plugins": NO_VOLUMES_NO_PREEMPTION, "pluginConfig": LIST_NO_CONSTRAINTS}],
         ["Pod", "Node", "Namespace", "CSINode", "ResourceClaim", "DeviceClass", "ResourceSlice"]),
        # Default constraints of its own make PodTopologySpread read the pods' owners.
        ([{"schedulerName": "a", "plugins": NO_VOLUMES_NO_PREEMPTION, "pluginConfig": LIST_WITH_CONSTRAINTS}],
         ["Pod", "Node", "Namespace", "Service", "ReplicationController", "ReplicaSet", "StatefulSet", "CSINode",
          "ResourceClaim", "DeviceClass", "ResourceSlice"]),
        # The union over profiles.
        ([{"schedulerName": "a", "plugins": NO_VOLUMES_NO_PREEMPTION, "pluginConfig": LIST_NO_CONSTRAINTS},
          {"schedulerName": "b", "plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
              {"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "VolumeRestrictions"}]}}}],
         ["Pod", "Node", "Namespace", "PersistentVolumeClaim", "CSINode", "ResourceClaim", "DeviceClass",
          "ResourceSlice"]),
    ],
)
def test_watched_kinds_follow_the_profiles(profiles: list[dict[str, Any]], want: list[str],
                                           tmp_path: pathlib.Path) -> None:
    # Each list is the v1.36.3 binary's, run with the same profiles on the local plane: its
    # reflectors' "Caches populated" lines at -v=4 name exactly these types.
    app = make_app(config(*profiles), tmp_path)
    try:
        assert list(app.watcher.kinds) == want
    finally:
        app._close()


# --- against a fake API server that serves no resource.k8s.io ----------------------------------

CORE = ["pods", "nodes", "namespaces", "services", "replicationcontrollers", "persistentvolumes",
        "persistentvolumeclaims"]
GROUPS = {
    "/api/v1": CORE,
    "/apis/apps/v1": ["replicasets", "statefulsets"],
    "/apis/storage.k8s.io/v1": ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities",
                                "volumeattachments"],
    "/apis/policy/v1": ["poddisruptionbudgets"],
}


@pytest.fixture
async def cluster_without_dra() -> AsyncIterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path.rstrip("/") == "/version":
            return web.json_response({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "x",
                                      "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                                      "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"})
        if request.path in GROUPS:
            return web.json_response({"kind": "APIResourceList", "resources": [
                {"name": n} for n in GROUPS[request.path]]})
        return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound",
                                  "message": "the server could not find the requested resource"}, status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    async with serve_loopback(app) as url:
        yield url, seen


async def test_a_cluster_without_resource_k8s_io_v1_stops_the_start_with_one_line(
    cluster_without_dra: tuple[str, list[str]], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # kube-scheduler v1.36.3 would wait for its ResourceClaim informer forever (never ready, never
    # scheduling); pyscheduler says why and exits 1.
    server, seen = cluster_without_dra
    app = make_app(config({"schedulerName": "a"}), tmp_path, server=server)
    code = await asyncio.wait_for(app.run(), 30)
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: the API server does not serve kinds kube-scheduler v1.36.3 watches, so no pod could be scheduled: "
        + ", ".join(f"{k} ({p}.resource.k8s.io: resource.k8s.io/v1 is not served; needed by the scheduler itself "
                    "(feature gate DynamicResourceAllocation))"
                    for k, p in (("ResourceClaim", "resourceclaims"), ("DeviceClass", "deviceclasses"),
                                 ("ResourceSlice", "resourceslices")))
    ]
    # Nothing was listed: discovery answered first.
    assert not [p for p in seen if p.count("/") > 3 or p.startswith("/api/v1/")]


# --- delayCacheUntilActive ----------------------------------------------------------------------


class FakeElector:
    def __init__(self) -> None:
        self.lead = asyncio.Event()
        self.lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def acquire(self) -> None:
        await self.lead.wait()

    async def keep(self) -> None:
        await self.lost

    def check(self) -> None:
        return None

    def stop(self) -> None: ...

    async def release(self) -> bool:
        return True


@pytest.mark.parametrize("delay", [True, False])
async def test_delay_cache_until_active(delay: bool, tmp_path: pathlib.Path) -> None:
    cfg = parse_config({"apiVersion": API_VERSION, "kind": KIND, "delayCacheUntilActive": delay})
    app = make_app(cfg, tmp_path)
    elector = FakeElector()
    app.elector = elector  # type: ignore[assignment]
    watching = asyncio.Event()

    async def watch() -> None:
        watching.set()
        await app.watcher._stop.wait()

    async def api_up(*_: Any, **__: Any) -> int:
        return 1

    app.watcher.run = watch  # type: ignore[method-assign]
    import scheduler.live.app as app_module

    orig = app_module.wait_for_api
    app_module.wait_for_api = api_up  # type: ignore[assignment]
    task = asyncio.create_task(app.run())
    try:
        await asyncio.sleep(0.2)
        # A standby with the option has no watch; without it, it watches while it waits.
        assert watching.is_set() is not delay
        elector.lead.set()
        await asyncio.wait_for(watching.wait(), 5)
    finally:
        app_module.wait_for_api = orig  # type: ignore[assignment]
        app.shutdown.set()
        await asyncio.wait_for(task, 15)


def test_prebind_writes_have_the_bindings_threads_and_rate_limit(tmp_path: pathlib.Path) -> None:
    # A claim pod's PreBind makes two writes before its Binding; on the 4 start-up threads they
    # capped SchedulingWithResourceClaimTemplate near 90 pods/s (docs/benchmarks.md, fifth pass).
    from scheduler.live.app import BIND_THREADS

    app = make_app(config({"schedulerName": "a"}), tmp_path)
    lane = app.volume_api.lane
    assert lane.limiter is app.binder.limiter  # one clientset's rate limit
    assert lane._workers == BIND_THREADS and lane._executor is None
    assert lane is not app.binder.binds  # Bindings never queue behind PreBind writes


def test_events_are_written_as_many_at_once_as_the_lane_has_threads(tmp_path: pathlib.Path) -> None:
    # Upstream sends each Event from its own goroutine; with 4 writers ours dropped 3,449 of
    # SchedulingDaemonset's 6,000 Scheduled Events at its 1000-deep queue (docs/benchmarks.md,
    # ninth pass). Writers and threads are one number: more tasks than threads only queue.
    from scheduler.live.app import EVENT_THREADS

    app = make_app(config({"schedulerName": "a"}), tmp_path)
    assert EVENT_THREADS >= 16
    assert app.recorder.workers == EVENT_THREADS == app.binder.events.workers
    assert app.recorder.lane is app.binder.events


@pytest.mark.parametrize(
    ("content_type", "json_only"),
    [
        (None, False),  # upstream's default, application/vnd.kubernetes.protobuf
        ("application/vnd.kubernetes.protobuf", False),
        ("application/json", True),
    ],
)
def test_bindings_and_events_follow_the_content_type(
    tmp_path: pathlib.Path, content_type: str | None, json_only: bool
) -> None:
    # clientConnection.contentType picks the encoding of kube-scheduler's writes (its clients'
    # ContentType); ours encodes Bindings and Events in protobuf unless it names JSON.
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if content_type is not None:
        doc["clientConnection"] = {"contentType": content_type}
    app = make_app(parse_config(doc), tmp_path)
    assert app.binder.api._json_only is json_only  # type: ignore[attr-defined]
    assert app.binder.events_api._json_only is json_only  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("method", "want_paths"),
    [
        # A new leader's quorum read of every bound pod (bindings the previous leader made).
        ("_list_bound", ["/api/v1/pods?fieldSelector=spec.nodeName%21%3D"]),
        # The cache debugger's comparison (upstream CacheComparer lists nodes and pods).
        ("_list_cluster", ["/api/v1/nodes",
                           "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"]),
    ],
)
async def test_start_up_lists_go_through_the_connection(method: str, want_paths: list[str],
                                                        tmp_path: pathlib.Path) -> None:
    seen: list[tuple[str, str]] = []
    items = {"/api/v1/nodes": [{"metadata": {"name": "n1"}}],
             "/api/v1/pods": [{"metadata": {"uid": "u1"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}},
                              {"metadata": {"uid": "u2"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}}]}

    async def handle(request: web.Request) -> web.Response:
        seen.append((request.path_qs, request.headers.get("Authorization", "")))
        return web.json_response({"kind": "List", "items": items[request.path]})

    api = web.Application()
    api.router.add_get("/api/v1/{kind}", handle)
    async with serve_loopback(api) as url:
        app = make_app(config({"schedulerName": "a"}), tmp_path, server=url)
        try:
            got = await asyncio.get_running_loop().run_in_executor(None, getattr(app, method))
        finally:
            app._close()
    assert [p for p, _ in seen] == want_paths and {a for _, a in seen} == {"Bearer t"}
    if method == "_list_bound":
        assert got == {"u1": "n1"}  # terminal pods hold nothing
    else:
        assert got == (["n1"], ["u1", "u2"])  # the server's selector filters; the fake does not


_FOOTPRINT_PROBE = """
import json, pathlib, sys, tempfile
from scheduler.boot.lazyimport import defer_reexports
assert defer_reexports()
from scheduler.config import API_VERSION, KIND, parse_config
from scheduler.live.app import App
from scheduler.live.kube.clients import CredentialSource
from scheduler.live.metrics import Metrics
from scheduler.plugins.registry import default_registry
from scheduler.testing.fakes import write_kubeconfig
cfg = parse_config({"apiVersion": API_VERSION, "kind": KIND, "leaderElection": {"leaderElect": True},
                    "profiles": [{"schedulerName": "a"}]})
creds = CredentialSource(write_kubeconfig(pathlib.Path(tempfile.mkdtemp()), {"token": "t"},
                                          server="https://127.0.0.1:1"))
app = App(cfg, default_registry(), Metrics(), creds, None)
before = sorted(m for m in ("pydantic", "numpy.random", "kubernetes.client.api_client") if m in sys.modules)
handle = next(iter(app.scheduler.frameworks.values())).handle
api = type(handle.client_set).__name__
print(json.dumps({"before": before, "api": api, "after": "pydantic" in sys.modules}))
"""


def test_the_live_app_starts_without_the_client_models_or_numpy_random() -> None:
    # The generated client's ApiClient imports pydantic (about 9 MB resident) and numpy.random
    # holds about 6 MB: neither serves a decision, and PublishResourceSlices' peak RSS was
    # above 1.5x kube-scheduler's with them (docs/benchmarks.md, eighth pass).
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FOOTPRINT_PROBE], capture_output=True, text=True, check=True,
                         timeout=120)
    got = json.loads(out.stdout)
    assert got["before"] == []
    # A plugin that reads Handle.client_set still gets the kubernetes ApiClient, built then.
    assert got["api"] == "ApiClient" and got["after"]
