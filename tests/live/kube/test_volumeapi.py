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

from scheduler.live.kube.transport import ApiError, TokenBucket
from scheduler.live.kube.volumeapi import KubeVolumeAPI

CONFLICT = 'Operation cannot be fulfilled on persistentvolumes "taken": the object has been modified'


class Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.requests.append((request.method, request.path, body))
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
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    conf = client.Configuration(host=f"http://127.0.0.1:{port}")
    executor = ThreadPoolExecutor(max_workers=2)
    api = KubeVolumeAPI(client.ApiClient(conf), TokenBucket(0, 1), executor)
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
