"""KubeVolumeAPI against a loopback API stand-in: VolumeBinding's PreBind writes are Updates
(PUT) of the PV and of the claim with the stored body (resourceVersion included), as upstream
binder.go bindAPIUpdate; a 409 surfaces as the API server's message (what client-go's
StatusError prints), which PreBind reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes import client

from scheduler.live.kube.transport import ApiError, KubeCoreAPI, Lane, TokenBucket
from scheduler.live.kube.volumeapi import KubeVolumeAPI

CONFLICT = 'Operation cannot be fulfilled on persistentvolumes "taken": the object has been modified'


class Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.content_types: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        data = await request.read()
        body = orjson.loads(data) if data else {}
        body.setdefault("metadata", {"name": request.match_info["name"], "resourceVersion": "0"})
        self.requests.append((request.method, request.path, body))
        self.content_types.append(request.content_type)
        if body["metadata"]["name"] == "taken":
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": CONFLICT,
                      "reason": "Conflict", "code": 409}
            return web.Response(status=409, body=orjson.dumps(status), content_type="application/json")
        out = dict(body)
        out["metadata"] = {**body["metadata"], "resourceVersion": str(int(body["metadata"]["resourceVersion"]) + 1)}
        return web.Response(body=orjson.dumps(out), content_type="application/json")


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, KubeVolumeAPI]]:
    srv = Server()
    app = web.Application()
    app.router.add_put("/api/v1/persistentvolumes/{name}", srv.handle)
    app.router.add_put("/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}", srv.handle)
    claims = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}"
    app.router.add_get(claims, srv.handle)
    app.router.add_put(claims, srv.handle)
    app.router.add_put(claims + "/status", srv.handle)
    app.router.add_patch(claims + "/status", srv.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    conf = client.Configuration(host=f"http://127.0.0.1:{port}")
    executor = ThreadPoolExecutor(max_workers=2)
    api = KubeVolumeAPI(KubeCoreAPI(client.ApiClient(conf)), Lane(TokenBucket(0, 1), executor))
    yield srv, api
    executor.shutdown(wait=False)
    await runner.cleanup()


async def test_updates_pv_and_claim(served: tuple[Server, KubeVolumeAPI]) -> None:
    srv, api = served
    pv = {"metadata": {"name": "pv-1", "resourceVersion": "7"},
          "spec": {"claimRef": {"namespace": "ns", "name": "c", "uid": "u"}}}
    got = await api.update_persistent_volume(pv)
    assert got["metadata"]["resourceVersion"] == "8"
    pvc = {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "3",
                        "annotations": {"volume.kubernetes.io/selected-node": "n1"}}, "spec": {}}
    got = await api.update_persistent_volume_claim(pvc)
    assert got["metadata"]["annotations"] == {"volume.kubernetes.io/selected-node": "n1"}
    (m1, p1, b1), (m2, p2, b2) = srv.requests
    assert (m1, p1) == ("PUT", "/api/v1/persistentvolumes/pv-1")
    assert (m2, p2) == ("PUT", "/api/v1/namespaces/ns/persistentvolumeclaims/c")
    # The stored resourceVersion goes along (optimistic concurrency), with kind and apiVersion.
    assert (b1["kind"], b1["apiVersion"], b1["metadata"]["resourceVersion"]) == ("PersistentVolume", "v1", "7")
    assert (b2["kind"], b2["metadata"]["resourceVersion"]) == ("PersistentVolumeClaim", "3")
    assert api.writes == 2


async def test_conflict_is_the_api_message(served: tuple[Server, KubeVolumeAPI]) -> None:
    _, api = served
    with pytest.raises(ApiError) as exc:
        await api.update_persistent_volume({"metadata": {"name": "taken", "resourceVersion": "1"}, "spec": {}})
    assert exc.value.status == 409
    assert str(exc.value) == CONFLICT


CLAIM = {"metadata": {"name": "gpu", "namespace": "ns", "resourceVersion": "4"}, "spec": {}}
CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/gpu"


# DynamicResources' claim calls (upstream dynamicresources.go: Get, Update, UpdateStatus, and the
# status patch of device conditions): method, path, content type and body kind.
@pytest.mark.parametrize(
    ("call", "method", "path", "content_type"),
    [
        (lambda api: api.get_resource_claim("ns", "gpu"), "GET", CLAIM_PATH, "application/octet-stream"),
        (lambda api: api.update_resource_claim(CLAIM), "PUT", CLAIM_PATH, "application/json"),
        (lambda api: api.update_resource_claim_status(CLAIM), "PUT", CLAIM_PATH + "/status", "application/json"),
        (lambda api: api.patch_resource_claim_status("ns", "gpu", {"status": {}}), "PATCH", CLAIM_PATH + "/status",
         "application/strategic-merge-patch+json"),
    ],
)
async def test_claim_calls(served: tuple[Server, KubeVolumeAPI], call: Any, method: str, path: str,
                           content_type: str) -> None:
    srv, api = served
    await call(api)
    ((m, p, body),) = srv.requests
    assert (m, p, srv.content_types[0]) == (method, path, content_type)
    if method == "PUT":
        assert (body["kind"], body["apiVersion"]) == ("ResourceClaim", "resource.k8s.io/v1")
