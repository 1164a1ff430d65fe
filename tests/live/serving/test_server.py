"""Secure serving: the authentication/authorization decisions of k8s.io/apiserver's delegating
filters as kube-scheduler v1.36.3 configures them, with fake review calls.

Upstream references: apiserver pkg/authentication/request/bearertoken (bearertoken_test.go
header cases), authenticatorfactory/delegating.go (anonymous after a failing token is 401),
group/authenticated_group_adder.go, pkg/authorization/path (path_test.go), plugin/pkg/
authorizer/webhook (webhook_test.go caching), endpoints/handlers/responsewriters (messages).
"""

from __future__ import annotations

import argparse
import json
import ssl
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from scheduler import cli
from scheduler.config.config import DEFAULT_SCHEDULER_NAME, load_config, load_run_config
from scheduler.live.serving.server import (
    ANONYMOUS_USER,
    DelegatingAuthorizer,
    PathAuthorizer,
    ReviewError,
    SecureServer,
    ServingError,
    ServingOptions,
    TokenAuthenticator,
    UserInfo,
    bearer_token,
    forbidden_message,
    options_from_args,
    parse_duration,
    self_signed_pair,
    ssl_context,
)
from scheduler.testing.fakes import FakeClock


class FakeReview:
    """Answers from a script: a dict is returned, a ReviewError raised; the last one repeats."""

    def __init__(self, *answers: dict[str, Any] | ReviewError) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, ReviewError):
            raise a
        return a


async def no_sleep(_: float) -> None:
    return None


def authenticated(name: str, groups: list[str] | None = None, uid: str = "", extra: dict | None = None) -> dict:
    user: dict[str, Any] = {"username": name, "groups": groups or []}
    if uid:
        user["uid"] = uid
    if extra:
        user["extra"] = extra
    return {"status": {"authenticated": True, "user": user}}


NOT_AUTHENTICATED = {"status": {"authenticated": False}}
ALLOWED = {"status": {"allowed": True}}
DENIED = {"status": {"allowed": False, "reason": ""}}


# ---------------------------------------------------------------------------------------------
# Bearer token extraction (bearertoken_test.go)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),  # scheme is case-insensitive
        ("  Bearer abc  ", "abc"),  # header trimmed first
        ("Bearer abc extra", "abc"),  # split in at most three parts
        ("Bearer", None),  # no token part
        ("Bearer  abc", None),  # "TestEmptyBearerToken"-style: empty token before a space
        ("Basic dXNlcjpwYXNz", None),  # another scheme: not for this authenticator
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


# ---------------------------------------------------------------------------------------------
# Authentication


async def test_no_token_is_anonymous_without_a_review() -> None:
    review = FakeReview(authenticated("x"))
    authn = TokenAuthenticator(review, sleep=no_sleep)
    for header in (None, "Basic abc", "Bearer "):
        assert (await authn.authenticate(header)).user == ANONYMOUS_USER
    assert review.calls == []


async def test_token_without_review_client_is_anonymous() -> None:
    # No --authentication-kubeconfig and not in a cluster: only the anonymous authenticator.
    assert (await TokenAuthenticator(None).authenticate("Bearer t")).user == ANONYMOUS_USER


@pytest.mark.parametrize(
    ("answer", "user"),
    [
        (
            authenticated("system:serviceaccount:ns:sa", ["system:serviceaccounts"], uid="u1"),
            UserInfo("system:serviceaccount:ns:sa", "u1", ("system:serviceaccounts", "system:authenticated")),
        ),
        # The group adder leaves users that already carry either group alone.
        (
            authenticated("alice", ["system:authenticated", "dev"]),
            UserInfo("alice", "", ("system:authenticated", "dev")),
        ),
        (authenticated("bob", ["system:unauthenticated"]), UserInfo("bob", "", ("system:unauthenticated",))),
        (authenticated("system:anonymous", []), UserInfo("system:anonymous", "", ())),
        (
            authenticated("carol", [], extra={"scopes": ["a", "b"]}),
            UserInfo("carol", "", ("system:authenticated",), (("scopes", ("a", "b")),)),
        ),
    ],
)
async def test_token_review_user(answer: dict, user: UserInfo) -> None:
    review = FakeReview(answer)
    result = await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer tok")
    assert result.user == user
    assert review.calls == [
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "tok"}}
    ]


@pytest.mark.parametrize(
    ("answer", "error", "cached"),
    [
        (NOT_AUTHENTICATED, "invalid bearer token", True),  # a plain "no" is cached (failure TTL)
        ({"status": {"authenticated": False, "error": "token expired"}}, "token expired", False),
        (ReviewError(403, "Forbidden"), "token review failed: Forbidden", False),  # errors are not cached
    ],
)
async def test_failed_token_is_401_and_caching(answer: dict | ReviewError, error: str, cached: bool) -> None:
    review = FakeReview(answer)
    authn = TokenAuthenticator(review, sleep=no_sleep)
    first = await authn.authenticate("Bearer bad")
    assert first.user is None and first.error == error
    await authn.authenticate("Bearer bad")
    assert len(review.calls) == (1 if cached else 2)


async def test_token_cache_ttl(clock: FakeClock) -> None:
    review = FakeReview(authenticated("a"))
    authn = TokenAuthenticator(review, cache_ttl=10, clock=clock, sleep=no_sleep)
    await authn.authenticate("Bearer t1")
    clock.step(9.9)
    await authn.authenticate("Bearer t1")
    assert len(review.calls) == 1
    await authn.authenticate("Bearer t2")  # another token, another review
    assert len(review.calls) == 2
    clock.step(0.2)  # t1's entry expired
    await authn.authenticate("Bearer t1")
    assert len(review.calls) == 3


async def test_review_retries_transient_errors_with_backoff() -> None:
    sleeps: list[float] = []

    async def sleep(d: float) -> None:
        sleeps.append(d)

    review = FakeReview(ReviewError(500, "boom"), ReviewError(429, "slow down"), authenticated("a"))
    result = await TokenAuthenticator(review, sleep=sleep).authenticate("Bearer t")
    assert result.user is not None and result.user.name == "a"
    assert len(review.calls) == 3
    # 0.5 s then x1.5, each with up to 20 % jitter.
    assert 0.5 <= sleeps[0] <= 0.6 and 0.75 <= sleeps[1] <= 0.9


async def test_review_gives_up_after_five_tries_and_not_on_4xx() -> None:
    review = FakeReview(ReviewError(0, "connection reset"))
    assert (await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer t")).user is None
    assert len(review.calls) == 5
    review = FakeReview(ReviewError(403, "Forbidden"))
    assert (await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer t")).user is None
    assert len(review.calls) == 1


# ---------------------------------------------------------------------------------------------
# Authorization


SA = UserInfo("system:serviceaccount:ns:sa", "u1", ("system:serviceaccounts", "system:authenticated"))


@pytest.mark.parametrize(
    ("path", "user", "sar", "allowed", "reviews"),
    [
        # AlwaysAllowPaths defaults are exact paths, anyone (anonymous too) may read them.
        ("/healthz", ANONYMOUS_USER, DENIED, True, 0),
        ("/readyz", ANONYMOUS_USER, DENIED, True, 0),
        ("/livez", ANONYMOUS_USER, DENIED, True, 0),
        ("healthz", ANONYMOUS_USER, DENIED, True, 0),  # leading "/" optional (path.go)
        # ...but not their subpaths: those go to a SubjectAccessReview.
        ("/healthz/ping", ANONYMOUS_USER, DENIED, False, 1),
        ("/readyz/shutdown", SA, ALLOWED, True, 1),
        ("/metrics", ANONYMOUS_USER, DENIED, False, 1),
        ("/metrics", SA, ALLOWED, True, 1),
        ("/metrics", SA, DENIED, False, 1),
        # AlwaysAllowGroups: system:masters skips the review.
        ("/metrics", UserInfo("admin", "", ("system:masters", "system:authenticated")), DENIED, True, 0),
        ("/nowhere", SA, DENIED, False, 1),
    ],
)
async def test_authorize(path: str, user: UserInfo, sar: dict, allowed: bool, reviews: int) -> None:
    review = FakeReview(sar)
    decision = await DelegatingAuthorizer(review, sleep=no_sleep).authorize(user, path, "get")
    assert decision.allowed is allowed and decision.error == ""
    assert len(review.calls) == reviews


async def test_subject_access_review_body() -> None:
    review = FakeReview(ALLOWED)
    user = UserInfo("carol", "u2", ("g1", "system:authenticated"), (("scopes", ("a",)),))
    await DelegatingAuthorizer(review, sleep=no_sleep).authorize(user, "/metrics", "get")
    assert review.calls == [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "carol",
                "groups": ["g1", "system:authenticated"],
                "uid": "u2",
                "extra": {"scopes": ["a"]},
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            },
        }
    ]


async def test_authorization_cache_ttls(clock: FakeClock) -> None:
    # webhook_test.go TestWebhookCache: allowed and denied answers have their own TTLs.
    review = FakeReview(ALLOWED)
    authz = DelegatingAuthorizer(review, authorized_ttl=10, unauthorized_ttl=2, clock=clock, sleep=no_sleep)
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    clock.step(5)
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    assert len(review.calls) == 1
    await authz.authorize(SA, "/metrics", "head")  # another verb is another question
    assert len(review.calls) == 2

    review.answers = [DENIED]
    other = UserInfo("other", "", ("system:authenticated",))
    assert not (await authz.authorize(other, "/metrics", "get")).allowed
    clock.step(1.9)
    assert not (await authz.authorize(other, "/metrics", "get")).allowed
    assert len(review.calls) == 3
    clock.step(0.2)
    await authz.authorize(other, "/metrics", "get")
    assert len(review.calls) == 4


async def test_authorization_error_is_not_cached() -> None:
    review = FakeReview(ReviewError(403, "cannot create subjectaccessreviews"), ALLOWED)
    authz = DelegatingAuthorizer(review, sleep=no_sleep)
    d = await authz.authorize(SA, "/metrics", "get")
    assert not d.allowed and d.error == "subject access review failed: cannot create subjectaccessreviews"
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    assert len(review.calls) == 2


async def test_authorization_allowed_and_denied_is_an_error() -> None:
    d = await DelegatingAuthorizer(FakeReview({"status": {"allowed": True, "denied": True}})).authorize(
        SA, "/metrics", "get"
    )
    assert not d.allowed and "both allow and deny" in d.error


async def test_no_review_client_forbids_all_but_paths_and_groups() -> None:
    authz = DelegatingAuthorizer(None)
    assert (await authz.authorize(ANONYMOUS_USER, "/healthz", "get")).allowed
    d = await authz.authorize(SA, "/metrics", "get")
    assert not d.allowed and d.error == ""


@pytest.mark.parametrize(
    ("paths", "path", "allowed"),
    [  # path_test.go
        (["/healthz/*"], "/healthz/ping", True),
        (["/healthz/*"], "/healthz/", True),
        (["/healthz/*"], "/healthz", False),
        (["/"], "/", True),
        (["/"], "/x", False),
        (["/foo*"], "/foobar", True),
        (["/metrics"], "/metrics/resources", False),
    ],
)
def test_path_authorizer(paths: list[str], path: str, allowed: bool) -> None:
    assert PathAuthorizer(paths).allows(path) is allowed


def test_path_authorizer_rejects_inner_star() -> None:
    with pytest.raises(ServingError, match=r"only trailing \* allowed"):
        PathAuthorizer(["/he*lthz"])


def test_forbidden_message() -> None:
    # responsewriters/errors.go forbiddenMessage for non-resource requests, NewForbidden's "forbidden: ".
    assert forbidden_message(ANONYMOUS_USER, "get", "/metrics", "") == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    assert forbidden_message(SA, "get", "/metrics", "no RBAC policy matched").endswith(
        'cannot get path "/metrics": no RBAC policy matched'
    )


# ---------------------------------------------------------------------------------------------
# Options, durations, TLS material


@pytest.mark.parametrize(
    ("text", "seconds"), [("10s", 10.0), ("0", 0.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5h", 5400.0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "s", "1x", "-1s"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (ServingOptions(secure_port=70000), "--secure-port 70000 must be between 0 and 65535"),
        (ServingOptions(bind_address="localhost"), "--bind-address 'localhost' is not an IP address"),
        (ServingOptions(tls_cert_file="c.pem"), "must be given together"),
        (ServingOptions(always_allow_paths=("/a*b",)), r"only trailing \* allowed"),
    ],
)
def test_options_validate(opts: ServingOptions, message: str) -> None:
    with pytest.raises(ServingError, match=message):
        opts.validate()


def test_cli_defaults_and_flags() -> None:
    args = cli._parser().parse_args(["run"])
    o = options_from_args(args)
    assert (o.bind_address, o.secure_port, o.tls_cert_file) == ("0.0.0.0", 10259, None)
    assert o.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (o.token_cache_ttl, o.authorized_ttl, o.unauthorized_ttl) == (10.0, 10.0, 10.0)
    args = cli._parser().parse_args(
        ["run", "--port", "1234", "--bind-address", "127.0.0.1", "--authorization-always-allow-paths",
         "/healthz,/healthz/*", "--authentication-token-webhook-cache-ttl", "1m", "--authentication-kubeconfig",
         "k"]
    )
    o = options_from_args(args)
    assert (o.secure_port, o.bind_address, o.token_cache_ttl) == (1234, "127.0.0.1", 60.0)
    assert o.always_allow_paths == ("/healthz", "/healthz/*")
    assert (o.authentication_kubeconfig, o.authorization_kubeconfig) == ("k", None)


def test_self_signed_pair_like_kube_scheduler() -> None:
    chain, key = self_signed_pair()
    certs = x509.load_pem_x509_certificates(chain)
    assert len(certs) == 2
    leaf, ca = certs
    assert leaf.subject.rfc4514_string().startswith("CN=localhost@")
    assert ca.subject.rfc4514_string().startswith("CN=localhost-ca@")
    assert leaf.issuer == ca.subject
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert b"PRIVATE KEY" in key
    # The leaf is signed by the CA and its key is the one returned (ECDSA, not kube-scheduler's
    # RSA: see self_signed_pair).
    priv = serialization.load_pem_private_key(key, password=None)
    assert isinstance(priv, ec.EllipticCurvePrivateKey)
    assert priv.public_key().public_numbers() == leaf.public_key().public_numbers()
    ca.public_key().verify(leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm))


def test_tls_files_errors_are_one_line(tmp_path) -> None:
    with pytest.raises(ServingError, match="cannot load --tls-cert-file"):
        ssl_context(str(tmp_path / "missing.crt"), str(tmp_path / "missing.key"))


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


def test_parse_args_namespace_is_complete() -> None:
    # options_from_args reads every serving flag cli.py defines.
    args = cli._parser().parse_args(["run"])
    assert isinstance(args, argparse.Namespace)
    options_from_args(args).validate()
