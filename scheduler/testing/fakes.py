"""Fakes for the edge's collaborators, injected where production passes the real thing (no
monkeypatching): a clock, the core API the binder writes through, the leader's fence, the Lease
API, a kubeconfig on disk (upstream: k8s.io/utils/clock/testing, client-go's fake clientsets)."""

from __future__ import annotations

import contextlib
import copy
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import yaml
from aiohttp import web

from scheduler.live.kube.transport import ApiError


class FakeClock:
    """Virtual time: ``clock()`` reads it, ``step``/``sleep`` advance it (testingclock.FakeClock)."""

    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def step(self, d: float) -> None:
        self.t += d

    def sleep(self, d: float) -> None:
        self.t += d


class FakePermitTimer:
    """A PermitTimer on virtual time: ``advance`` fires, in deadline order, the timers that
    come due (upstream tests drive waitingPod timers with short real timeouts instead)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[list[Any]] = []  # [deadline, seq, fire, armed]

    def __call__(self, seconds: float, fire: Any) -> Any:
        t = [self.now + seconds, len(self._timers), fire, True]
        self._timers.append(t)

        def cancel() -> None:
            t[3] = False

        return cancel

    def armed(self) -> list[float]:
        """The deadlines still armed, in order."""
        return sorted(t[0] for t in self._timers if t[3])

    def advance(self, seconds: float) -> int:
        """Move time on; returns how many timers fired."""
        self.now += seconds
        fired = 0
        for t in sorted(self._timers, key=lambda t: (t[0], t[1])):
            if t[3] and t[0] <= self.now:
                t[3] = False
                t[2]()
                fired += 1
        return fired


class FakeCoreAPI:
    """The binder's CoreAPI in memory: records every write; ``bind_error`` fails every Binding."""

    def __init__(self, bind_error: ApiError | Exception | None = None) -> None:
        self.bind_error = bind_error
        self.bindings: list[tuple[str, str, dict[str, Any]]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.event_patches: list[tuple[str, str, dict[str, Any]]] = []
        self.status_patches: list[tuple[str, str, dict[str, Any]]] = []
        self.timeouts: list[float | None] = []
        self.uids: dict[tuple[str, str], str] = {}
        self.lose_response = False  # the Binding is stored but the reply never arrives
        self.get_errors: list[ApiError] = []  # raised by get_pod, one per call, first
        self.gets = 0
        self.deleted: list[tuple[str, str]] = []
        self.pod_group_patches: list[tuple[str, str, dict[str, Any]]] = []

        self.pod_patches: list[tuple[str, str, dict[str, Any]]] = []

    def create_binding(self, namespace: str, name: str, body: dict[str, Any], timeout: float | None = None) -> None:
        self.uids[(namespace, name)] = body["metadata"]["uid"]
        if self.bind_error is not None:
            raise self.bind_error
        self.timeouts.append(timeout)
        self.bindings.append((namespace, name, body))
        if self.lose_response:
            raise ApiError(0, "ProtocolError: Connection aborted")

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        self.gets += 1
        if self.get_errors:
            raise self.get_errors.pop(0)
        node = next((b["target"]["name"] for ns, n, b in self.bindings if (ns, n) == (namespace, name)), "")
        return {"metadata": {"uid": self.uids.get((namespace, name), "")}, "spec": {"nodeName": node}}

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self.events.append((namespace, body))

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.event_patches.append((namespace, name, body))

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.status_patches.append((namespace, name, body))

    def delete_pod(self, namespace: str, name: str) -> None:
        self.deleted.append((namespace, name))

    def patch_pod_group_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.pod_group_patches.append((namespace, name, body))

    def patch_pod(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.pod_patches.append((namespace, name, body))


class FakeFence:
    """A leader's fence held at fixed values; ``calls`` counts the checks."""

    def __init__(self, open_for: float, lease_left: float = 100.0) -> None:
        self.open = open_for
        self.left = lease_left
        self.calls = 0

    def open_for(self) -> float:
        self.calls += 1
        return self.open

    def lease_left(self) -> float:
        return self.left


class FakeLeaseAPI:
    """One Lease with resourceVersion conflicts; each call may take ``latency`` of ``clock``'s time."""

    def __init__(self, clock: FakeClock | None = None, latency: float = 0.0) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.fail = False  # simulate an unreachable API server
        self.writes = 0
        self.gets = 0
        self.clock = clock
        self.latency = latency  # virtual seconds each call takes

    def _tick(self) -> None:
        if self.clock is not None:
            self.clock.step(self.latency)

    def get(self, namespace: str, name: str, timeout: float | None = None) -> dict[str, Any] | None:
        self._tick()
        self.gets += 1
        if self.fail:
            raise ApiError(0, "connection refused")
        return copy.deepcopy(self.lease)

    def create(self, namespace: str, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        self._tick()
        if self.fail:
            raise ApiError(0, "connection refused")
        if self.lease is not None:
            raise ApiError(409, "exists")
        return self._store(body)

    def replace(self, namespace: str, name: str, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        self._tick()
        if self.fail:
            raise ApiError(0, "connection refused")
        assert self.lease is not None
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "conflict")
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        self.writes += 1
        return copy.deepcopy(self.lease)


def write_kubeconfig(tmp: pathlib.Path, user: dict[str, Any], server: str = "https://127.0.0.1:6443") -> str:
    """A one-context kubeconfig for ``user`` in ``tmp``; returns its path."""
    cluster: dict[str, Any] = {"server": server}
    if server.startswith("https:"):
        cluster["insecure-skip-tls-verify"] = True
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@contextlib.asynccontextmanager
async def serve_loopback(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on a free 127.0.0.1 port for the block; yields its base URL (a fake API
    server for the watcher and the app's start-up)."""
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
