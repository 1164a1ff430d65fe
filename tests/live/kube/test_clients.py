"""Credential refresh and the start-up wait for the API (clients.py). Expected behaviour from
client-go: a kubeconfig tokenFile / projected ServiceAccount token is re-read about once a
minute (transport.NewCachedFileTokenSource); separate clients per purpose."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from scheduler.live.kube.clients import TOKEN_REREAD_PERIOD, CredentialSource, describe_error, wait_for_api
from scheduler.testing.fakes import write_kubeconfig


@contextlib.contextmanager
def plain_http_api(tmp_path: pathlib.Path, handler: type, token: str) -> Iterator[Any]:
    """A Connection from a kubeconfig (CredentialSource) for ``handler`` served over plain HTTP
    on a loopback port: the real client stack, a scripted API server."""
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = write_kubeconfig(tmp_path, {"token": token}, server=f"http://127.0.0.1:{server.server_port}")
        yield CredentialSource(path).connection("scheduler", pool_size=1)
    finally:
        server.shutdown()


def test_token_file_is_reread_when_rotated(tmp_path, clock, kubeconfig):
    # A projected ServiceAccount token is rotated by the kubelet: the file changes underneath.
    token = tmp_path / "token"
    token.write_text("first\n")
    src = CredentialSource(kubeconfig({"tokenFile": "token"}), clock=clock)
    assert src.header() == "Bearer first"
    token.write_text("second\n")
    clock.t += TOKEN_REREAD_PERIOD - 1
    assert src.header() == "Bearer first"  # cached for a minute, as client-go
    clock.t += 2
    assert src.header() == "Bearer second"
    assert src.credentials().token == "second" and src.credentials().scheme == "Bearer"


def test_write_clients_and_watcher_share_the_refreshing_source(tmp_path, clock, kubeconfig):
    token = tmp_path / "token"
    token.write_text("one")
    src = CredentialSource(kubeconfig({"tokenFile": str(token)}), clock=clock)
    binds = src.connection("scheduler", pool_size=4)
    events = src.connection("events", pool_size=2)
    assert binds.configuration is not events.configuration  # own pools
    assert binds.user_agent.endswith("scheduler") and events.user_agent.endswith("events")
    token.write_text("two")
    clock.t += TOKEN_REREAD_PERIOD + 1
    # The client's auth hook runs before every request.
    assert binds.configuration.get_api_key_with_prefix("authorization") == "Bearer two"
    assert events.configuration.get_api_key_with_prefix("authorization") == "Bearer two"
    assert src.credentials().token == "two"


def test_static_token_is_kept(clock, kubeconfig):
    src = CredentialSource(kubeconfig({"token": "abc"}), clock=clock)
    assert src.header() == "Bearer abc"
    assert src.host == "https://127.0.0.1:6443"


async def test_wait_for_api_logs_one_line_per_attempt():
    calls = {"n": 0}

    def probe() -> None:
        calls["n"] += 1
        if calls["n"] < 4:
            raise ConnectionRefusedError("[Errno 111] Connection refused")

    slept: list[float] = []

    async def sleep(d: float) -> None:
        slept.append(d)

    with structlog.testing.capture_logs() as logs:
        attempts = await wait_for_api(probe, sleep=sleep, initial_delay=0.5, max_delay=2.0)
    assert attempts == 4
    lines = [e for e in logs if e["event"] == "api_unreachable"]
    assert [e["attempt"] for e in lines] == [1, 2, 3]
    assert all("Connection refused" in e["error"] and "\n" not in e["error"] for e in lines)
    assert slept == [0.5, 1.0, 2.0]  # doubling, capped
    assert [e["event"] for e in logs] == ["api_unreachable"] * 3 + ["api_reachable"]


async def test_wait_for_api_is_cancellable():
    def probe() -> None:
        raise OSError("down")

    task = asyncio.ensure_future(wait_for_api(probe, initial_delay=0.01))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_describe_error_unwraps_urllib3():
    import urllib3

    inner = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused")
    outer = urllib3.exceptions.MaxRetryError(None, "/version", inner)
    text = describe_error(outer)
    assert text.startswith("NewConnectionError") and "refused" in text and "Max retries" not in text


def test_fence_checked_right_before_the_bytes_leave(tmp_path):
    # The fence is open when the bind thread checks it and closes before the request is
    # written (a SIGSTOP between the two): the connection itself refuses to send.
    from scheduler.live.kube.binder import Binder
    from scheduler.live.kube.transport import Fenced, KubeCoreAPI, TokenBucket
    from scheduler.model.pod import PodInfo
    from scheduler.testing.builders import make_pod

    received: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(self.path)
            self.send_response(201)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_api(tmp_path, Handler, "t") as api:

        class Fence:
            def __init__(self, open_checks: int) -> None:
                self.left = open_checks

            def open_for(self) -> float:
                self.left -= 1
                return 5.0 if self.left >= 0 else 0.0

            def lease_left(self) -> float:
                return 10.0

        pod = PodInfo(make_pod("web", "prod", uid="u-1"))
        ok = Binder(KubeCoreAPI(api), TokenBucket(0, 1), fence=Fence(100))
        asyncio.run(ok.bind(pod, "n1"))
        assert received == ["/api/v1/namespaces/prod/pods/web/binding"]
        closing = Binder(KubeCoreAPI(api), TokenBucket(0, 1), fence=Fence(2))  # open for the early checks only
        with pytest.raises(Fenced):
            asyncio.run(closing.bind(pod, "n1"))
        assert len(received) == 1  # nothing reached the server


@pytest.mark.parametrize(
    ("method_name", "args", "body", "reply", "request_line", "content_type", "status"),
    [
        # A Binding the API server refuses as already bound: its Status message is the error
        # (kube-scheduler logs and reports that message).
        ("create_binding", ("prod", "web"), {"kind": "Binding"}, 409,
         "POST /api/v1/namespaces/prod/pods/web/binding", "application/json", 409),
        ("get_pod", ("prod", "web"), None, 404, "GET /api/v1/namespaces/prod/pods/web", None, 404),
        # Conditions merge by type (strategic merge patch), as client-go's status patch does.
        ("patch_pod_status", ("prod", "web"), {"status": {}}, 200,
         "PATCH /api/v1/namespaces/prod/pods/web/status", "application/strategic-merge-patch+json", 0),
        ("create_event", ("prod",), {"kind": "Event"}, 201,
         "POST /apis/events.k8s.io/v1/namespaces/prod/events", "application/json", 0),
        ("delete_pod", ("prod", "victim"), None, 200, "DELETE /api/v1/namespaces/prod/pods/victim", None, 0),
    ],
)  # fmt: skip
def test_core_api_requests_and_status_errors(tmp_path, method_name, args, body, reply, request_line, content_type,
                                             status):  # fmt: skip
    import json

    from scheduler.live.kube.transport import ApiError, KubeCoreAPI

    seen: list[tuple[str, str | None, str | None, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            seen.append((f"{self.command} {self.path}", self.headers.get("Content-Type"),
                         self.headers.get("Authorization"), self.rfile.read(n)))  # fmt: skip
            reply_body = json.dumps({"kind": "Status", "message": f"answer {reply}"}).encode()
            self.send_response(reply)
            self.send_header("Content-Length", str(len(reply_body)))
            self.end_headers()
            self.wfile.write(reply_body)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_api(tmp_path, Handler, "t0k") as client:
        call = getattr(KubeCoreAPI(client), method_name)
        call_args = (*args, body) if body is not None else args
        if status:
            with pytest.raises(ApiError) as info:
                call(*call_args)
            assert (info.value.status, info.value.message) == (status, f"answer {reply}")
        else:
            call(*call_args)
    ((got_line, got_type, auth, sent),) = seen
    assert (got_line, got_type, auth) == (request_line, content_type, "Bearer t0k")
    assert (json.loads(sent) if sent else None) == body


class ScriptedAPI(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``reply`` (status, JSON body) and records it in ``seen``."""

    seen: list[tuple[str, str | None, bytes]] = []
    reply: tuple[int, Any] = (200, {})

    def _answer(self) -> None:
        import json

        n = int(self.headers.get("Content-Length") or 0)
        self.seen.append((f"{self.command} {self.path}", self.headers.get("Authorization"), self.rfile.read(n)))
        status, doc = self.reply
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args: object) -> None:
        pass


def scripted(status: int, doc: Any) -> type[ScriptedAPI]:
    return type("Scripted", (ScriptedAPI,), {"seen": [], "reply": (status, doc)})


LEASE = {"kind": "Lease", "metadata": {"name": "kube-scheduler", "namespace": "kube-system"}}
NOT_FOUND = {"kind": "Status", "code": 404, "message": 'leases.coordination.k8s.io "kube-scheduler" not found'}
CONFLICT = {"kind": "Status", "code": 409, "message": "the object has been modified"}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


@pytest.mark.parametrize(
    ("call", "status", "doc", "want", "request_line", "error"),
    [
        # client-go's leaderelection reads the Lease first; NotFound means "create it".
        ("get", 200, LEASE, LEASE, f"GET {LEASES}/kube-scheduler", None),
        ("get", 404, NOT_FOUND, None, f"GET {LEASES}/kube-scheduler", None),
        ("get", 403, {"kind": "Status", "message": "forbidden"}, None, f"GET {LEASES}/kube-scheduler", 403),
        ("create", 201, LEASE, LEASE, f"POST {LEASES}", None),
        ("replace", 200, LEASE, LEASE, f"PUT {LEASES}/kube-scheduler", None),
        # Another candidate renewed first: the conflict reaches the elector as a status.
        ("replace", 409, CONFLICT, None, f"PUT {LEASES}/kube-scheduler", 409),
    ],
)
def test_lease_calls_over_the_write_transport(tmp_path, call, status, doc, want, request_line, error):
    import json

    from scheduler.live.kube.elector import KubeLeaseAPI
    from scheduler.live.kube.transport import ApiError, KubeCoreAPI

    handler = scripted(status, doc)
    with plain_http_api(tmp_path, handler, "t0k") as conn:
        api = KubeLeaseAPI(KubeCoreAPI(conn))
        args: tuple[Any, ...] = {"get": ("kube-system", "kube-scheduler"), "create": ("kube-system", LEASE),
                                 "replace": ("kube-system", "kube-scheduler", LEASE)}[call]
        if error:
            with pytest.raises(ApiError) as info:
                getattr(api, call)(*args)
            assert info.value.status == error and info.value.message == doc["message"]
        else:
            assert getattr(api, call)(*args) == want
    ((line, auth, sent),) = handler.seen
    assert (line, auth) == (request_line, "Bearer t0k")
    assert (json.loads(sent) if sent else None) == (LEASE if call != "get" else None)


@pytest.mark.parametrize(
    ("status", "doc", "error"),
    [
        (200, {"major": "1", "minor": "36", "gitVersion": "v1.36.3"}, None),
        # Not yet authorized (RBAC still being applied): a failed attempt, retried by wait_for_api.
        (403, {"kind": "Status", "message": 'forbidden: User "x" cannot get path "/version"'}, 403),
    ],
)
def test_probe_reads_the_version_once(tmp_path, status, doc, error):
    from scheduler.live.kube.clients import probe_api
    from scheduler.live.kube.transport import ApiError

    handler = scripted(status, doc)
    with plain_http_api(tmp_path, handler, "t0k") as conn:
        if error:
            with pytest.raises(ApiError) as info:
                probe_api(conn)
            assert info.value.status == error and info.value.message == doc["message"]
        else:
            probe_api(conn)
    assert [(line, auth) for line, auth, _ in handler.seen] == [("GET /version", "Bearer t0k")]


def test_api_client_serves_the_generated_apis_on_its_own_connection(tmp_path):
    # What a plugin gets as Handle.client_set: the kubernetes ApiClient with the scheduler's
    # credentials, User-Agent and instrumented pool.
    from kubernetes import client

    version = {"major": "1", "minor": "36", "gitVersion": "v1.36.3", "gitCommit": "c", "gitTreeState": "clean",
               "buildDate": "2026-11-01T00:00:00Z", "goVersion": "go1.26", "compiler": "gc", "platform": "linux/amd64"}
    handler = scripted(200, version)
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = write_kubeconfig(tmp_path, {"token": "t0k"}, server=f"http://127.0.0.1:{server.server_port}")
        api = CredentialSource(path).api_client("scheduler", pool_size=1)
        assert api.user_agent.endswith(" scheduler")
        assert client.VersionApi(api).get_code().git_version == "v1.36.3"
    finally:
        server.shutdown()
    assert [(line, auth) for line, auth, _ in handler.seen] == [("GET /version/", "Bearer t0k")]
