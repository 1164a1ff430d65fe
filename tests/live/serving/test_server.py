"""Secure serving: the whole chain (TLS, authentication, authorization) over HTTPS on loopback
with fake review calls, and the Status bodies it answers with.

Upstream references: apiserver endpoints/handlers/responsewriters (messages).
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import aiohttp
import pytest

from scheduler.config import DEFAULT_SCHEDULER_NAME, load_config, load_run_config
from scheduler.live.serving.authn import ANONYMOUS_USER, ReviewError, TokenAuthenticator, UserInfo
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.options import ServingOptions
from scheduler.live.serving.server import SecureServer, forbidden_message
from scheduler.live.serving.tls import ssl_context
from scheduler.testing.serving import NOT_AUTHENTICATED, SA, FakeReview, authenticated, no_sleep

# ---------------------------------------------------------------------------------------------
# HTTP answers


def test_forbidden_message() -> None:
    # responsewriters/errors.go forbiddenMessage for non-resource requests, NewForbidden's "forbidden: ".
    assert forbidden_message(ANONYMOUS_USER, "get", "/metrics", "") == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    assert forbidden_message(SA, "get", "/metrics", "no RBAC policy matched").endswith(
        'cannot get path "/metrics": no RBAC policy matched'
    )


# ---------------------------------------------------------------------------------------------
# The whole chain over HTTPS on loopback (fake reviews)


def _tokens(**users: UserInfo) -> FakeReview:
    class ByToken(FakeReview):
        async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
            self.calls.append(body)
            u = users.get(body["spec"]["token"])
            if u is None:
                return NOT_AUTHENTICATED
            return authenticated(u.name, list(u.groups), u.uid)

    return ByToken({})


@pytest.fixture
async def server():
    readers = {"system:serviceaccount:ns:reader"}

    async def sar(body: dict[str, Any]) -> dict[str, Any]:
        spec = body["spec"]
        if spec["user"] == "system:serviceaccount:ns:broken":
            raise ReviewError(500, "etcd down")
        ok = spec["user"] in readers and spec["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        return {"status": {"allowed": ok}}

    authn = TokenAuthenticator(
        _tokens(
            reader=UserInfo("system:serviceaccount:ns:reader"),
            nobody=UserInfo("system:serviceaccount:ns:nobody"),
            broken=UserInfo("system:serviceaccount:ns:broken"),
        ),
        sleep=no_sleep,
    )
    srv = SecureServer(
        ServingOptions(bind_address="127.0.0.1", secure_port=0), authn, DelegatingAuthorizer(sar, sleep=no_sleep),
        ssl_context(None, None),
    )

    async def ok(_: Any) -> Any:
        from aiohttp import web

        return web.Response(text="ok")

    await srv.start({"/healthz": ok, "/readyz": ok, "/livez": ok, "/metrics": ok})
    yield srv
    await srv.stop()


@pytest.mark.parametrize(
    ("path", "token", "status", "message"),
    [
        ("/healthz", None, 200, None),
        ("/readyz", None, 200, None),
        ("/livez", None, 200, None),
        ("/healthz", "reader", 200, None),
        ("/healthz", "wrong", 401, "Unauthorized"),  # a bad token fails before authorization
        ("/metrics", None, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'),
        ("/metrics", "wrong", 401, "Unauthorized"),
        ("/metrics", "nobody", 403, 'forbidden: User "system:serviceaccount:ns:nobody" cannot get path "/metrics"'),
        ("/metrics", "reader", 200, None),
        ("/metrics", "broken", 500, None),
        ("/healthz/x", None, 403, 'forbidden: User "system:anonymous" cannot get path "/healthz/x"'),
        ("/nowhere", "nobody", 403, None),
    ],
)
async def test_https_chain(
    server: SecureServer, path: str, token: str | None, status: int, message: str | None
) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s, s.get(
        f"https://127.0.0.1:{server.port}{path}", headers=headers, ssl=ctx
    ) as r:
        body = await r.text()
        assert r.status == status, body
        assert r.headers["Cache-Control"] == "no-cache, private"
        if status in (401, 403):
            st = json.loads(body)
            assert (st["kind"], st["status"], st["code"]) == ("Status", "Failure", status)
            assert st["reason"] == ("Unauthorized" if status == 401 else "Forbidden")
            if message:
                assert st["message"] == message
        if status == 200:
            assert body == "ok"


async def test_plain_http_gets_no_answer(server: SecureServer) -> None:
    got: int | None = None
    async with aiohttp.ClientSession() as s:
        try:
            async with s.get(f"http://127.0.0.1:{server.port}/healthz") as r:
                got = r.status
        except aiohttp.ClientError:
            got = None  # the TLS server drops a plain-HTTP client
    assert got is None


# ---------------------------------------------------------------------------------------------
# `run` without --config never takes kube-scheduler's names


def test_run_defaults_are_pyschedulers_own() -> None:
    cfg = load_run_config(None)
    assert [p.scheduler_name for p in cfg.profiles] == ["pyscheduler"]
    le = cfg.leader_election
    assert (le.leader_elect, le.resource_namespace, le.resource_name) == (True, "pyscheduler", "pyscheduler")
    # Everything else is the upstream default configuration.
    upstream = load_config(None)
    assert upstream.profiles[0].scheduler_name == DEFAULT_SCHEDULER_NAME
    assert cfg.profiles[0].plugins == upstream.profiles[0].plugins
    assert (cfg.parallelism, cfg.client_connection) == (upstream.parallelism, upstream.client_connection)


def test_run_with_a_file_keeps_its_values(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    assert load_run_config(str(p)) == load_config(str(p))
