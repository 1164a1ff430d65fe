"""The endpoints kube-scheduler v1.36.3 serves beside /healthz and /metrics: /configz, /flagz,
/statusz, /metrics/slis, /debug/flags/v, /debug/pprof, and the named health checks. Status codes
and bodies as upstream's (component-base configz, apiserver server/flagz, server/statusz,
server/healthz, server/routes; the binary's answers are in e2e/test_endpoints.py), and each path
behind the same authorization as /metrics (a nonResourceURL get; put for /debug/flags/v)."""

from __future__ import annotations

import json
import random
import ssl
import types
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler.config import load_config, parse_config
from scheduler.live import log as logconf
from scheduler.live.app import App, _set_verbosity
from scheduler.live.serving.authn import TokenAuthenticator
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.debug import DebugFlags, Profiling
from scheduler.live.serving.health import HealthEndpoint, HealthSLIs, NamedCheck
from scheduler.live.serving.options import ServingOptions
from scheduler.live.serving.server import SecureServer
from scheduler.live.serving.tls import ssl_context
from scheduler.live.serving.zpages import NOT_ACCEPTABLE, Flagz, Statusz, aggregate_paths, config_object, negotiate
from scheduler.testing.serving import no_sleep

FLAGZ = "application/json;as=Flagz;v=v1beta1;g=config.k8s.io"
STATUSZ = "application/json;as=Statusz;v=v1beta1;g=config.k8s.io"


def _app_routes(cfg: Any = None, elector: Any = None, synced: bool = True) -> dict[str, Any]:
    """App.routes on a stand-in App: the routes need only these attributes."""
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text="# metrics\n")

    fake = types.SimpleNamespace(
        cfg=cfg or load_config(None), elector=elector, flags={"v": "0", "config": "c.yaml"},
        slis=HealthSLIs(start_time=1_000_000.0), _metrics=metrics, _metrics_resources=metrics, synced=synced,
        shutdown=types.SimpleNamespace(is_set=lambda: False),
    )
    fake._leader_check = lambda: App._leader_check(fake)  # type: ignore[arg-type]
    fake._shutdown_check = lambda: App._shutdown_check(fake)  # type: ignore[arg-type]
    fake._sync_check = lambda: App._sync_check(fake)  # type: ignore[arg-type]
    return App.routes(fake)  # type: ignore[arg-type]


async def _client(routes: dict[str, Any]) -> TestClient:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_route("*", path, handler)
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


# ---------------------------------------------------------------------------------------------
# Which paths exist (server.go newEndpointsHandler)


def test_routes_as_newEndpointsHandler_installs_them() -> None:
    paths = set(_app_routes())
    assert {"/healthz", "/livez", "/readyz", "/configz", "/metrics", "/metrics/resources", "/metrics/slis", "/flagz",
            "/statusz", "/debug/pprof/", "/debug/flags/v"} <= paths
    off = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "enableProfiling": False})
    # Profiling off: neither /debug/pprof nor /debug/flags/v.
    assert not any(p.startswith("/debug/") for p in _app_routes(off))
    # --feature-gates=ComponentFlagz=false,ComponentStatusz=false: neither page.
    from scheduler.config.features import parse_feature_gates

    gated = load_config(None, parse_feature_gates(["ComponentFlagz=false,ComponentStatusz=false"]))
    assert {"/flagz", "/statusz"}.isdisjoint(_app_routes(gated))


async def test_statusz_lists_the_paths_upstream_lists() -> None:
    client = await _client(_app_routes())
    try:
        r = await client.get("/statusz", headers={"Accept": STATUSZ})
        obj = await r.json()
    finally:
        await client.close()
    # The binary: /configz /flagz /healthz /livez /metrics /readyz (debug paths unlisted).
    assert obj["paths"] == ["/configz", "/flagz", "/healthz", "/livez", "/metrics", "/readyz"]


# ---------------------------------------------------------------------------------------------
# Health checks (apiserver server/healthz handleRootHealth)


@pytest.mark.parametrize(
    ("path", "query", "synced", "status", "body"),
    [
        ("/healthz", "", True, 200, "ok"),
        ("/healthz", "?verbose", True, 200, "[+]ping ok\nhealthz check passed\n"),
        ("/livez", "?verbose", True, 200, "[+]ping ok\nlivez check passed\n"),
        ("/readyz", "?verbose", True, 200, "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"),
        ("/readyz", "", False, 500,
         "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"),
        ("/readyz", "?exclude=sched-handler-sync", False, 200, "ok"),
        ("/readyz", "?verbose&exclude=nope", True, 200,
         '[+]shutdown ok\n[+]sched-handler-sync ok\nwarn: some health checks cannot be excluded: no matches for '
         '"nope"\nreadyz check passed\n'),
    ],
)
async def test_health_paths(path: str, query: str, synced: bool, status: int, body: str) -> None:
    client = await _client(_app_routes(synced=synced))
    try:
        r = await client.get(path + query)
        assert (r.status, await r.text()) == (status, body)
    finally:
        await client.close()


def test_leader_election_check_on_healthz_and_readyz() -> None:
    elector = types.SimpleNamespace(check=lambda: "failed election to renew leadership on lease x")
    slis = HealthSLIs(start_time=0.0)
    healthz = HealthEndpoint("healthz", [NamedCheck("leaderElection", elector.check)], slis)
    assert healthz.run([], False) == (500, "[-]leaderElection failed: reason withheld\nhealthz check failed\n")
    assert slis.registry.get_sample_value("kubernetes_healthcheck", {"name": "leaderElection", "type": "healthz"}) == 0
    assert slis.registry.get_sample_value(
        "kubernetes_healthchecks_total", {"name": "leaderElection", "type": "healthz", "status": "error"}) == 1


def test_slis_exposition_as_component_base_writes_it() -> None:
    slis = HealthSLIs(start_time=1_700_000_000.0)
    text = slis.exposition().decode()
    # No sample yet: only the start time (the binary before any health request).
    assert "kubernetes_healthcheck{" not in text and "# HELP kubernetes_healthcheck " not in text
    assert "process_start_time_seconds 1.7e+09" in text
    HealthEndpoint("livez", [], slis).run([], False)
    text = slis.exposition().decode()
    assert 'kubernetes_healthcheck{name="ping",type="livez"} 1.0' in text
    assert 'kubernetes_healthchecks_total{name="ping",status="success",type="livez"} 1.0' in text
    assert "_created" not in text
    assert "# TYPE kubernetes_healthchecks_total counter" in text


# ---------------------------------------------------------------------------------------------
# /configz


def test_configz_renders_the_effective_v1_configuration() -> None:
    cfg = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "s", "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}],
    })
    obj = config_object(cfg)
    # Key order and values as the binary's /configz for the same file.
    assert list(obj) == ["kind", "apiVersion", "parallelism", "leaderElection", "clientConnection",
                         "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
                         "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles"]
    assert obj["leaderElection"] == {"leaderElect": False, "leaseDuration": "15s", "renewDeadline": "10s",
                                     "retryPeriod": "2s", "resourceLock": "leases", "resourceName": "kube-scheduler",
                                     "resourceNamespace": "kube-system"}
    prof = obj["profiles"][0]
    assert list(prof["plugins"])[-3:] == ["multiPoint", "placementGenerate", "placementScore"]
    assert prof["plugins"]["multiPoint"]["enabled"][4] == {"name": "TaintToleration", "weight": 3}
    names = [c["name"] for c in prof["pluginConfig"]]
    # The given args first, then every enabled plugin with typed args, by name.
    assert names == ["NodeResourcesFit", "DefaultPreemption", "DynamicResources", "InterPodAffinity", "NodeAffinity",
                     "NodeResourcesBalancedAllocation", "PodTopologySpread", "VolumeBinding"]
    assert prof["pluginConfig"][0]["args"] == {"kind": "NodeResourcesFitArgs",
                                               "apiVersion": "kubescheduler.config.k8s.io/v1",
                                               "scoringStrategy": {"type": "MostAllocated"}}
    assert prof["pluginConfig"][-1]["args"]["bindTimeoutSeconds"] == 600


async def test_configz_body_is_keyed_componentconfig() -> None:
    client = await _client(_app_routes())
    try:
        r = await client.get("/configz")
        assert r.headers["Content-Type"] == "application/json"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        body = await r.json()
    finally:
        await client.close()
    assert list(body) == ["componentconfig"]
    assert body["componentconfig"]["kind"] == "KubeSchedulerConfiguration"


# ---------------------------------------------------------------------------------------------
# /flagz and /statusz: negotiation and formats


@pytest.mark.parametrize(
    ("accept", "kind", "chosen"),
    [
        ("", "Flagz", ("text/plain", "")),
        ("text/plain", "Flagz", ("text/plain", "")),
        ("*/*", "Flagz", ("text/plain", "")),
        (FLAGZ, "Flagz", ("application/json", "v1beta1")),
        ("application/yaml;as=Flagz;v=v1beta1;g=config.k8s.io", "Flagz", ("application/yaml", "v1beta1")),
        ("application/json;as=Flagz;v=v1alpha1;g=config.k8s.io", "Flagz", ("application/json", "v1alpha1")),
        ("application/json", "Flagz", None),  # no as=: the binary answers 406
        ("text/html", "Flagz", None),
        (FLAGZ, "Statusz", None),  # the other endpoint's kind
        ("text/html, " + STATUSZ, "Statusz", ("application/json", "v1beta1")),
    ],
)
def test_negotiate(accept: str, kind: str, chosen: tuple[str, str] | None) -> None:
    assert negotiate(accept, kind) == chosen


async def test_flagz_text_and_structured() -> None:
    fz = Flagz("kube-scheduler", {"v": "2", "config": "c.yaml"}, rng=random.Random(0))
    client = await _client({"/flagz": fz.handler})
    try:
        r = await client.get("/flagz")
        text = await r.text()
        assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
        r2 = await client.get("/flagz", headers={"Accept": FLAGZ})
        obj = await r2.json()
        assert r2.headers["Content-Type"] == "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"
        r3 = await client.get("/flagz", headers={"Accept": "application/json;as=Flagz;v=v1alpha1;g=config.k8s.io"})
        assert r3.headers["Warning"] == (
            '299 - "This version of the flagz endpoint is deprecated. Please use a newer version."')
        r4 = await client.get("/flagz", headers={"Accept": "application/yaml;as=Flagz;v=v1beta1;g=config.k8s.io"})
        assert yaml.safe_load(await r4.text())["flags"] == {"config": "c.yaml", "v": "2"}
        r5 = await client.get("/flagz", headers={"Accept": "application/json"})
        st = await r5.json()
    finally:
        await client.close()
    lines = text.split("\n")
    assert lines[:3] == ["", "kube-scheduler flagz", "Warning: This endpoint is not meant to be machine parseable, "
                         "has no formatting compatibility guarantees and is for debugging purposes only."]
    sep = lines[3][len("config"):-len("c.yaml")]
    assert sep in (":", ": ", "=", " ") and lines[4] == f"v{sep}2"  # sorted, one separator throughout
    assert obj == {"kind": "Flagz", "apiVersion": "config.k8s.io/v1beta1", "metadata": {"name": "kube-scheduler"},
                   "flags": {"config": "c.yaml", "v": "2"}}
    assert r5.status == 406
    assert (st["reason"], st["message"], st["code"]) == ("NotAcceptable", NOT_ACCEPTABLE, 406)
    assert fz.text() == text  # the page is made once, separator included


def test_statusz_text_and_object() -> None:
    sz = Statusz("kube-scheduler", "0.1.0", "1.36", 1_000_000.0, ["/healthz", "/metrics/slis", "/metrics", "/api/x"],
                 clock=lambda: 1_003_723.5, rng=random.Random(1))
    obj = sz.object("v1beta1")
    assert obj == {"kind": "Statusz", "apiVersion": "config.k8s.io/v1beta1", "metadata": {"name": "kube-scheduler"},
                   "startTime": "1970-01-12T13:46:40Z", "uptimeSeconds": 3723, "goVersion": obj["goVersion"],
                   "binaryVersion": "0.1.0", "emulationVersion": "1.36", "paths": ["/healthz", "/metrics"]}
    assert obj["goVersion"].startswith("python3.")
    text = sz.text()
    assert text.startswith("\nkube-scheduler statusz\nWarning: ")
    body = text.split("\n")[4:]
    # One separator, drawn at random, then a space (upstream's "Up%[1]s %[3]s").
    (d,) = [d for d in (":", ": ", "=", " ") if body[1] == f"Up{d} 1 hr 02 min 03 sec"]
    assert body[0].startswith(f"Started{d} ")
    assert body[3] == f"Binary version{d} 0.1.0"
    assert body[4] == f"Emulation version{d} 1.36"
    assert body[5] == f"Paths{d} /healthz /metrics"


def test_aggregate_paths() -> None:
    assert aggregate_paths(["/metrics/slis", "/metrics", "/", "/apis/x", "/debug/pprof/", "/zz"]) == [
        "/debug", "/metrics", "/zz"]


# ---------------------------------------------------------------------------------------------
# /debug/flags/v and /debug/pprof (apiserver routes.DebugFlags, routes.Profiling)


async def test_debug_flags_v_put_changes_the_verbosity() -> None:
    comp = logconf.verbose("schedule_one")
    flags = DebugFlags(_set_verbosity)
    client = await _client({"/debug/flags/v": flags.v, "/debug/flags/": flags.index})
    try:
        r = await client.put("/debug/flags/v", data="10")
        assert (r.status, await r.text()) == (200, "successfully set klog.logging.verbosity to 10\n")
        assert comp.level == 10
        r = await client.put("/debug/flags/v", data="abc")
        assert (r.status, await r.text()) == (400, 'strconv.ParseUint: parsing "abc": invalid syntax\n')
        r = await client.get("/debug/flags/v")
        assert (r.status, await r.text()) == (406, "unsupported http method\n")
        r = await client.get("/debug/flags/")
        assert "<tr>v<br>" in await r.text()
    finally:
        logconf.set_verbosity(0)
        await client.close()
    assert comp.level == 0


async def test_pprof_profiles() -> None:
    prof = Profiling(contention=True, argv=["pyscheduler", "run"])
    client = await _client(prof.routes())
    try:
        index = await (await client.get("/debug/pprof/")).text()
        assert all(f"href='{n}?debug=1'" in index for n in ("profile", "goroutine", "heap", "block", "cmdline"))
        r = await client.get("/debug/pprof/nosuch")
        assert (r.status, await r.text()) == (404, "Unknown profile\n")
        assert await (await client.get("/debug/pprof/cmdline")).text() == "pyscheduler\x00run"
        assert "task " in await (await client.get("/debug/pprof/goroutine?debug=2")).text()
        assert "heap profile:" in await (await client.get("/debug/pprof/heap")).text()
        r = await client.get("/debug/pprof/profile?seconds=0.2")
        assert r.headers["Content-Type"] == "application/octet-stream"
        import marshal

        stats = marshal.loads(await r.read())
        assert isinstance(stats, dict)  # a pstats table: (file, line, function) -> counts
        text = await (await client.get("/debug/pprof/profile?seconds=0.1&debug=1")).text()
        assert "function calls" in text
        r = await client.get("/debug/pprof/profile?seconds=x")
        assert r.status == 400
    finally:
        await client.close()
    no_contention = Profiling(contention=False)
    assert "block" not in no_contention.profiles and "mutex" not in no_contention.profiles


# ---------------------------------------------------------------------------------------------
# Authorization: every new path as /metrics (a nonResourceURL SubjectAccessReview)


async def test_new_paths_are_authorized_like_metrics() -> None:
    asked: list[dict[str, Any]] = []

    async def sar(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body["spec"]["nonResourceAttributes"])
        return {"status": {"allowed": False}}

    srv = SecureServer(ServingOptions(bind_address="127.0.0.1", secure_port=0), TokenAuthenticator(None),
                       DelegatingAuthorizer(sar, sleep=no_sleep), ssl_context(None, None))
    await srv.start(_app_routes())
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    calls = [("GET", p) for p in ("/configz", "/flagz", "/statusz", "/metrics/slis", "/debug/pprof/")]
    calls.append(("PUT", "/debug/flags/v"))
    try:
        async with aiohttp.ClientSession() as s:
            for method, path in calls:
                async with s.request(method, f"https://127.0.0.1:{srv.port}{path}", ssl=ctx, data="3") as r:
                    st = json.loads(await r.text())
                    assert r.status == 403
                    verb = method.lower()
                    assert st["message"] == f'forbidden: User "system:anonymous" cannot {verb} path "{path}"'
    finally:
        await srv.stop()
    assert asked == [{"path": p, "verb": m.lower()} for m, p in calls]
    assert logconf.verbosity() == 0  # the refused PUT changed nothing
