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
from prometheus_client import CollectorRegistry

from scheduler.config import DEFAULT_SCHEDULER_NAME, load_config, load_run_config
from scheduler.live.metrics.auth import AuthMetrics, compress_username
from scheduler.live.metrics.kit import exposition
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

    srv.attach_metrics(AuthMetrics(CollectorRegistry()))
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
    got, cache_control, body = await _get(server, path, token)
    assert got == status, body
    assert cache_control == "no-cache, private"
    if status in (401, 403):
        st = json.loads(body)
        assert (st["kind"], st["status"], st["code"]) == ("Status", "Failure", status)
        assert st["reason"] == ("Unauthorized" if status == 401 else "Forbidden")
        if message:
            assert st["message"] == message
    if status == 200:
        assert body == "ok"


async def _get(server: SecureServer, path: str, token: str | None) -> tuple[int, str, str]:
    """(status, Cache-Control, body) of a GET over HTTPS with an optional bearer token."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s, s.get(
        f"https://127.0.0.1:{server.port}{path}", headers=headers, ssl=ctx
    ) as r:
        return r.status, r.headers.get("Cache-Control", ""), await r.text()


def _samples(m: AuthMetrics) -> dict[tuple[str, ...], float]:
    """(family sample name, label values...) -> value, for the counters and the gauge."""
    reg = CollectorRegistry()
    for c in (m.user_requests, m.attempts):
        reg.register(c)
    out: dict[tuple[str, ...], float] = {}
    for fam in [*reg.collect(), *m.authz_attempts.collect(), *m.cache_requests.collect(),
                *m.cache_fetches.collect(), *m.cache_active.collect()]:
        for smp in fam.samples:
            if not smp.name.endswith("_created"):
                out[(smp.name, *smp.labels.values())] = smp.value
    return out


@pytest.mark.parametrize(
    ("path", "token", "authn", "user", "authz", "fetch"),
    [
        # endpoints/filters/metrics.go: every request is counted by authentication (anonymous
        # ones too, as "other"), those that pass by authorization; a token goes through the
        # TokenReview cache (token/cache/stats.go), a miss fetching once.
        ("/healthz", None, "success", "other", "allowed", None),
        ("/healthz", "wrong", "failure", None, None, "ok"),
        ("/metrics", None, "success", "other", "no-opinion", None),
        ("/metrics", "nobody", "success", "other", "no-opinion", "ok"),
        ("/metrics", "reader", "success", "other", "allowed", "ok"),
        ("/metrics", "broken", "success", "other", "error", "ok"),
    ],
)
async def test_authentication_and_authorization_metrics(
    server: SecureServer, path: str, token: str | None, authn: str, user: str | None, authz: str | None,
    fetch: str | None,
) -> None:
    m = server.metrics
    assert m is not None
    await _get(server, path, token)
    await _get(server, path, token)  # the second time the token is in the cache
    got = _samples(m)
    assert got[("authentication_attempts", authn)] == 2
    assert m.duration.labels(authn).counts and sum(m.duration.labels(authn).counts) == 2
    if user is not None:
        assert got[("authenticated_user_requests", user)] == 2
    else:
        assert not any(k[0] == "authenticated_user_requests" for k in got)
    if authz is not None:
        assert got[("authorization_attempts_total", authz)] == 2
        assert sum(m.authz_duration.labels(authz).counts) == 2
    else:
        assert not any(k[0] == "authorization_attempts_total" for k in got)
    if fetch is None:
        assert not any(k[0].startswith("authentication_token_cache") for k in got)
    else:
        assert got[("authentication_token_cache_request_total", "miss")] == 1
        assert got[("authentication_token_cache_request_total", "hit")] == 1
        assert got[("authentication_token_cache_fetch_total", fetch)] == 1
        assert got[("authentication_token_cache_active_fetch_count", "in_flight")] == 0
        assert got[("authentication_token_cache_active_fetch_count", "blocked")] == 0


def test_counters_named_without_total_are_exposed_as_go_names_them() -> None:
    reg = CollectorRegistry()
    m = AuthMetrics(reg)
    m.authenticated("success", "system:serviceaccount:kube-system:default", 0.002)
    m.authenticated("failure", None, 0.0005)
    m.authorized("allowed", 0.0001)
    text = exposition(reg).decode()
    help_line = "# HELP authenticated_user_requests [ALPHA] Counter of authenticated requests broken out by username."
    assert help_line + "\n" in text
    assert "# TYPE authentication_attempts counter\n" in text
    assert 'authenticated_user_requests{username="system:serviceaccount:kube-system:default"} 1.0\n' in text
    assert 'authentication_attempts{result="failure"} 1.0\n' in text
    assert 'authorization_attempts_total{result="allowed"} 1.0\n' in text
    assert 'authentication_duration_seconds_bucket{le="0.002",result="success"} 1.0\n' in text
    assert "_total{" not in text.replace("authorization_attempts_total{", "")


@pytest.mark.parametrize(
    ("name", "label"),
    [("admin", "admin"), ("kubelet", "kubelet"), ("system:serviceaccount:kube-system:default",
                                                  "system:serviceaccount:kube-system:default"),
     ("jane@example.com", "email_id"), ("system:serviceaccount:ns:reader", "other"), ("system:anonymous", "other")],
)
def test_username_label(name: str, label: str) -> None:
    assert compress_username(name) == label


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
