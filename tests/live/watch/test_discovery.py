"""Start-up discovery and the reflector's 403/404 lines.

kube-scheduler v1.36.3 starts one informer per kind and waits for every one to sync; a LIST the
API server does not serve (404) or forbids (403) is retried forever by client-go's reflector
(tools/cache/reflector.go, ListAndWatch with its backoff), so the binary never schedules. pyscheduler
refuses to start when discovery shows a kind missing, and says once which permission a
forbidden LIST or WATCH lacks, then retries as the reflector does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import structlog
from aiohttp import web

from scheduler.live.kube.clients import Credentials
from scheduler.live.watch import discovery
from scheduler.live.watch.watcher import NotServed, Watcher, WatchSettings
from scheduler.model.kinds import KINDS, why_watched
from scheduler.testing.fakes import serve_loopback

DRA = ("ResourceClaim", "DeviceClass", "ResourceSlice")


def targets(*kinds: str) -> dict[str, tuple[str, str]]:
    return {k: (KINDS[k].api_version, KINDS[k].plural) for k in kinds}


def test_group_versions_and_paths() -> None:
    t = targets("Pod", "Node", "ReplicaSet", "StatefulSet", "ResourceClaim", "ResourceSlice")
    assert discovery.group_versions(t.values()) == ("v1", "apps/v1", "resource.k8s.io/v1")
    assert discovery.discovery_path("v1") == "/api/v1"
    assert discovery.discovery_path("resource.k8s.io/v1") == "/apis/resource.k8s.io/v1"
    assert discovery.rbac_resource(("v1", "pods")) == "pods"
    assert discovery.rbac_resource(("resource.k8s.io/v1", "resourceslices")) == "resourceslices.resource.k8s.io"


def test_resources_of_leaves_subresources_out() -> None:
    doc = {"kind": "APIResourceList", "resources": [
        {"name": "pods"}, {"name": "pods/status"}, {"name": "pods/binding"}, {"name": "nodes"}, {"bad": 1}, "x"]}
    assert discovery.resources_of(doc) == frozenset({"pods", "nodes"})
    assert discovery.resources_of(None) == frozenset()
    assert discovery.resources_of({"resources": None}) == frozenset()


@pytest.mark.parametrize(
    ("served", "want"),
    [
        # A cluster older than 1.34 (no resource.k8s.io/v1): all three DRA kinds.
        ({"v1": frozenset({"pods"}), "resource.k8s.io/v1": None}, list(DRA)),
        # The group/version served, one resource turned off (--runtime-config).
        ({"resource.k8s.io/v1": frozenset({"resourceclaims", "deviceclasses"})}, ["ResourceSlice"]),
        ({"resource.k8s.io/v1": frozenset({"resourceclaims", "deviceclasses", "resourceslices"})}, []),
        # Not asked (discovery forbidden): nothing to report, the LISTs will tell.
        ({}, []),
    ],
)
def test_unserved(served: dict[str, Any], want: list[str]) -> None:
    assert discovery.unserved(targets("Pod", *DRA), served) == want


def test_unserved_message_names_kind_resource_and_who_needs_it() -> None:
    served = {"resource.k8s.io/v1": None, "v1": frozenset({"pods"})}
    t = {**targets("ResourceClaim", "PersistentVolume"), "foos.v1.example.com": ("example.com/v1", "foos")}
    msg = discovery.unserved_message(["ResourceClaim", "PersistentVolume", "foos.v1.example.com"], t, served,
                           lambda k: why_watched(k, {"VolumeBinding", "VolumeZone"}) if k in KINDS else "a plugin")
    assert msg == (
        "the API server does not serve kinds kube-scheduler v1.36.3 watches, so no pod could be scheduled: "
        "ResourceClaim (resourceclaims.resource.k8s.io: resource.k8s.io/v1 is not served; needed by the "
        "scheduler itself (feature gate DynamicResourceAllocation)), "
        "PersistentVolume (persistentvolumes: v1 has no persistentvolumes; needed by plugins VolumeBinding, "
        "VolumeZone), "
        "foos.v1.example.com (foos.example.com: example.com/v1 is not served; needed by a plugin)"
    )


# --- against a fake API server ------------------------------------------------------------------


class FakeAPI:
    """Serves core/v1 nodes; resource.k8s.io/v1 only if ``dra``; 403s nodes while ``forbid``."""

    def __init__(self) -> None:
        self.dra = True
        self.forbid = 0  # answer this many node LISTs with 403
        self.node_lists = 0

    async def core(self, _: web.Request) -> web.Response:
        return web.json_response({"kind": "APIResourceList", "groupVersion": "v1",
                                  "resources": [{"name": "nodes"}, {"name": "nodes/status"}]})

    async def resource(self, _: web.Request) -> web.Response:
        if not self.dra:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return web.json_response({"kind": "APIResourceList", "groupVersion": "resource.k8s.io/v1",
                                  "resources": [{"name": "resourceclaims"}]})

    async def nodes(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await asyncio.sleep(float(request.query.get("timeoutSeconds", 1)))
            return resp
        self.node_lists += 1
        if self.forbid > 0:
            self.forbid -= 1
            return web.json_response({
                "kind": "Status", "code": 403, "reason": "Forbidden",
                "message": 'nodes is forbidden: User "system:serviceaccount:x:y" cannot list resource "nodes" '
                           'in API group "" at the cluster scope'}, status=403)
        body = {"kind": "NodeList", "metadata": {"resourceVersion": "5"},
                "items": [{"metadata": {"name": "n0", "resourceVersion": "5"}}]}
        return web.Response(body=orjson.dumps(body), content_type="application/json")


    async def claims(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            return await self.nodes(request)
        return web.json_response({"kind": "ResourceClaimList", "metadata": {"resourceVersion": "5"}, "items": []})


class Recorder:
    def __init__(self) -> None:
        self.nodes: list[str] = []

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None:
        self.nodes.append(raw["metadata"]["name"])

    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None: ...


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeAPI, str]]:
    api = FakeAPI()
    app = web.Application()
    app.router.add_get("/api/v1", api.core)
    app.router.add_get("/apis/resource.k8s.io/v1", api.resource)
    app.router.add_get("/api/v1/nodes", api.nodes)
    app.router.add_get("/apis/resource.k8s.io/v1/resourceclaims", api.claims)
    async with serve_loopback(app) as url:
        yield api, url


def _watcher(url: str, kinds: tuple[str, ...]) -> Watcher:
    return Watcher(Recorder(), lambda: Credentials(server=url), kinds=kinds,
                   settings=WatchSettings(server_timeout=1, backoff=0.01, max_backoff=0.02))


async def _logs_until_synced(w: Watcher) -> list[dict[str, Any]]:
    """Run the watcher until every kind has listed once; what it logged meanwhile."""
    task = asyncio.create_task(w.run())
    try:
        with structlog.testing.capture_logs() as logs:
            await asyncio.wait_for(w.synced.wait(), 10)
    finally:
        w.stop()
        await asyncio.wait_for(task, 5)
    return logs


async def test_a_missing_group_stops_the_watcher_with_one_line(fake: tuple[FakeAPI, str]) -> None:
    api, url = fake
    api.dra = False
    w = _watcher(url, ("Node", "ResourceClaim"))
    with pytest.raises(NotServed, match=r"^the API server does not serve kinds .*: ResourceClaim "
                                        r"\(resourceclaims.resource.k8s.io: resource.k8s.io/v1 is not served; "):
        await asyncio.wait_for(w.run(), 10)
    assert api.node_lists == 0  # nothing listed before the answer


async def test_served_kinds_are_listed(fake: tuple[FakeAPI, str]) -> None:
    api, url = fake
    logs = await _logs_until_synced(_watcher(url, ("Node", "ResourceClaim")))
    found = [e for e in logs if e["event"] == "api_discovered"]
    assert found == [{"event": "api_discovered", "log_level": "info", "group_versions": ["resource.k8s.io/v1", "v1"],
                      "kinds": ["Node", "ResourceClaim"]}]
    assert api.node_lists == 1


async def test_a_forbidden_list_is_said_once_then_retried_until_granted(fake: tuple[FakeAPI, str]) -> None:
    api, url = fake
    api.forbid = 4  # four refused LISTs, then RBAC is granted
    w = _watcher(url, ("Node",))
    # kopf retries a 403 itself before the reflector sees it; no waiting for that here.
    w.kopf_settings.networking.error_backoffs = []
    logs = await _logs_until_synced(w)
    assert api.node_lists == 5
    forbidden = [e for e in logs if e["event"] == "watch_forbidden"]
    assert forbidden == [{
        "event": "watch_forbidden", "log_level": "error", "kind": "Node", "permission": "list nodes (all namespaces)",
        "reason": 'nodes is forbidden: User "system:serviceaccount:x:y" cannot list resource "nodes" in API '
                  'group "" at the cluster scope',
        "retrying": True,
    }]
    assert not [e for e in logs if e["event"] == "watch_failed" and e["log_level"] != "debug"]
    assert w.handlers.nodes == ["n0"]  # type: ignore[attr-defined]
