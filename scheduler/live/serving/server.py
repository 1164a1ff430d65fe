"""Secure serving of the health and metrics endpoints, the way kube-scheduler v1.36.3 does it.

kube-scheduler serves /healthz, /livez, /readyz and /metrics on HTTPS port 10259 only, behind
the k8s.io/apiserver delegating filters (cmd/kube-scheduler/app/server.go buildHandlerChain,
options.go NewOptionsWithComponentGlobalsRegistry). This module reproduces that chain:

TLS
    --tls-cert-file/--tls-private-key-file, else a self-signed pair made at start (a CA
    "localhost-ca@<unix>" and a serving cert "localhost@<unix>" for localhost and 127.0.0.1,
    as SecureServingOptions.MaybeDefaultWithSelfSignedCerts with an empty cert directory).
    TLS 1.2 or newer.
Authentication (DelegatingAuthenticationOptions defaults)
    A request without a bearer token is ``system:anonymous`` (anonymous auth is on). A bearer
    token goes to the API server as a TokenReview; not authenticated, or the review failing,
    answers 401 whatever the path, health paths included. Answers are cached 10 s by token;
    errors are not cached. Authenticated users get the ``system:authenticated`` group.
    Without a kubeconfig for reviews (--authentication-kubeconfig, else in-cluster), every
    request is anonymous. Client certificates and front-proxy headers are not supported.
Authorization (DelegatingAuthorizationOptions defaults)
    Allowed at once: the ``system:masters`` group, and the paths /healthz, /readyz, /livez
    (exact matches; a trailing ``*`` in --authorization-always-allow-paths makes a prefix).
    Otherwise a SubjectAccessReview with nonResourceAttributes {path, verb: lowercase HTTP
    method}; allowed answers cached 10 s, denied ones 10 s, errors not cached. Not allowed
    answers 403 (a Status naming user, verb and path); a review that failed answers 500.
    Without a kubeconfig for reviews, everything outside the allowed paths/groups is 403.

The review calls are blocking kubernetes-client calls; the server runs them in the
executor it is given. The decision logic takes the review calls as plain async callables
so tests can fake the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import ipaddress
import json
import os
import random
import shutil
import ssl
import tempfile
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import web

log = structlog.get_logger(__name__)

DEFAULT_SECURE_PORT = 10259
DEFAULT_BIND_ADDRESS = "0.0.0.0"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS = (MASTERS,)
DEFAULT_CACHE_TTL = 10.0
REVIEW_TIMEOUT = 10.0
# The webhook retry backoff of DefaultAuthWebhookRetryBackoff: 0.5 s, x1.5, 20 % jitter, 5 tries.
RETRY_FIRST, RETRY_FACTOR, RETRY_JITTER, RETRY_STEPS = 0.5, 1.5, 0.2, 5
CACHE_MAX_ENTRIES = 4096


class ServingError(Exception):
    """Bad serving options or key material; one line, reported before the scheduler starts."""


class ReviewError(Exception):
    """A TokenReview/SubjectAccessReview call failed. ``status`` 0: no HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# A review call: request body in, the API server's answer (a dict) out; raises ReviewError.
ReviewCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


# ---------------------------------------------------------------------------------------------
# Options


@dataclass(slots=True)
class ServingOptions:
    bind_address: str = DEFAULT_BIND_ADDRESS
    secure_port: int = DEFAULT_SECURE_PORT  # 0 turns secure serving off, as upstream
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    authorized_ttl: float = DEFAULT_CACHE_TTL
    unauthorized_ttl: float = DEFAULT_CACHE_TTL
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS

    def validate(self) -> None:
        if not 0 <= self.secure_port <= 65535:
            raise ServingError(f"--secure-port {self.secure_port} must be between 0 and 65535, inclusive")
        try:
            ipaddress.ip_address(self.bind_address)
        except ValueError:
            raise ServingError(f"--bind-address {self.bind_address!r} is not an IP address") from None
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise ServingError("--tls-cert-file and --tls-private-key-file must be given together")
        PathAuthorizer(self.always_allow_paths)  # raises on a misplaced '*'


# ---------------------------------------------------------------------------------------------
# Identities and decisions


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS_USER = UserInfo(ANONYMOUS, "", (UNAUTHENTICATED,))


@dataclass(frozen=True, slots=True)
class AuthnResult:
    """``user`` None: the request failed authentication (401); ``error`` says why, for the log."""

    user: UserInfo | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""
    error: str = ""  # set: the review failed (500 unless something else allowed)


class TTLCache:
    """Bounded cache whose entries expire; the oldest entry goes first when full."""

    def __init__(self, clock: Callable[[], float], max_entries: int = CACHE_MAX_ENTRIES) -> None:
        self._clock = clock
        self._max = max_entries
        self._data: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def get(self, key: str) -> tuple[bool, Any]:
        hit = self._data.get(key)
        if hit is None:
            return False, None
        if hit[0] <= self._clock():
            del self._data[key]
            return False, None
        return True, hit[1]

    def put(self, key: str, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        self._data[key] = (self._clock() + ttl, value)
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def _retriable(exc: ReviewError) -> bool:
    # DefaultShouldRetry: connection trouble, 500, 504 (timeout) and 429 are transient.
    return exc.status in (0, 429, 500, 504)


async def call_with_backoff(
    call: ReviewCall, body: dict[str, Any], sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: Callable[[], float] = random.random,
) -> dict[str, Any]:
    delay = RETRY_FIRST
    for attempt in range(RETRY_STEPS):
        try:
            return await call(body)
        except ReviewError as exc:
            if attempt == RETRY_STEPS - 1 or not _retriable(exc):
                raise
        await sleep(delay * (1 + RETRY_JITTER * rng()))
        delay *= RETRY_FACTOR
    raise AssertionError("unreachable")


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is none to check."""
    auth = (header or "").strip()
    if not auth:
        return None
    parts = auth.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    return parts[1] or None


class TokenAuthenticator:
    """Anonymous unless a bearer token is sent; a token is checked with a (cached) TokenReview."""

    def __init__(
        self,
        review: ReviewCall | None,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.review = review
        self.cache_ttl = cache_ttl
        self.cache = TTLCache(clock)
        self._sleep = sleep
        self._inflight: dict[str, asyncio.Future[AuthnResult]] = {}

    async def authenticate(self, authorization: str | None) -> AuthnResult:
        token = bearer_token(authorization)
        if self.review is None or token is None:
            # No TokenReview client: the anonymous authenticator is the only one, token or not.
            return AuthnResult(ANONYMOUS_USER)
        key = hashlib.sha256(token.encode()).hexdigest()
        hit, cached = self.cache.get(key)
        if hit:
            return cached  # type: ignore[no-any-return]
        pending = self._inflight.get(key)
        if pending is not None:
            # Concurrent requests with one token share one review.
            return await asyncio.shield(pending)
        fut: asyncio.Future[AuthnResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result, cacheable = await self._review(token)
            if cacheable:
                self.cache.put(key, result, self.cache_ttl)
            fut.set_result(result)
            return result
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            del self._inflight[key]

    async def _review(self, token: str) -> tuple[AuthnResult, bool]:
        assert self.review is not None
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await call_with_backoff(self.review, body, self._sleep)
        except ReviewError as exc:
            return AuthnResult(None, f"token review failed: {exc}"), False
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            err = str(status.get("error") or "")
            # An error in the status is an error (not cached); a plain "no" is cached.
            return AuthnResult(None, err or "invalid bearer token"), not err
        u = status.get("user") or {}
        groups = tuple(str(g) for g in u.get("groups") or ())
        name = str(u.get("username") or "")
        if name != ANONYMOUS and AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups = (*groups, AUTHENTICATED)
        extra = tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in (u.get("extra") or {}).items()))
        return AuthnResult(UserInfo(name, str(u.get("uid") or ""), groups, extra)), True


class PathAuthorizer:
    """Paths allowed for anyone: exact, or prefixes written with a trailing '*' (leading '/' optional)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for p in paths:
            p = p.removeprefix("/")
            if not p:
                self.exact.add(p)
                continue
            if "*" in p[:-1]:
                raise ServingError(f"only trailing * allowed in {p!r}")
            if p.endswith("*"):
                self.prefixes.append(p[:-1])
            else:
                self.exact.add(p)

    def allows(self, path: str) -> bool:
        p = path.removeprefix("/")
        return p in self.exact or any(p.startswith(pre) for pre in self.prefixes)


class DelegatingAuthorizer:
    """Privileged groups, then always-allowed paths, then a (cached) SubjectAccessReview."""

    def __init__(
        self,
        review: ReviewCall | None,
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        always_allow_groups: Sequence[str] = DEFAULT_ALWAYS_ALLOW_GROUPS,
        authorized_ttl: float = DEFAULT_CACHE_TTL,
        unauthorized_ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.review = review
        self.paths = PathAuthorizer(always_allow_paths)
        self.groups = frozenset(always_allow_groups)
        self.authorized_ttl = authorized_ttl
        self.unauthorized_ttl = unauthorized_ttl
        self.cache = TTLCache(clock)
        self._sleep = sleep

    async def authorize(self, user: UserInfo, path: str, verb: str) -> Decision:
        if self.groups.intersection(user.groups):
            return Decision(True)
        if self.paths.allows(path):
            return Decision(True)
        if self.review is None:
            return Decision(False)
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        spec["nonResourceAttributes"] = {"path": path, "verb": verb}
        key = json.dumps(spec, sort_keys=True)
        hit, status = self.cache.get(key)
        if not hit:
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
            try:
                answer = await call_with_backoff(self.review, body, self._sleep)
            except ReviewError as exc:
                return Decision(False, "", f"subject access review failed: {exc}")
            status = answer.get("status") or {}
            allowed = bool(status.get("allowed"))
            self.cache.put(key, status, self.authorized_ttl if allowed else self.unauthorized_ttl)
        reason = str(status.get("reason") or "")
        if status.get("denied") and status.get("allowed"):
            return Decision(False, reason, "webhook subject access review returned both allow and deny response")
        return Decision(bool(status.get("allowed")) and not status.get("denied"), reason)


# ---------------------------------------------------------------------------------------------
# HTTP answers (metav1.Status bodies as the apiserver filters write them)


def _status_body(code: int, reason: str, message: str, details: bool) -> bytes:
    body: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason,
    }
    if details:
        body["details"] = {}
    body["code"] = code
    return (json.dumps(body, separators=(",", ":")) + "\n").encode()


def unauthorized_response() -> web.Response:
    return web.Response(status=401, body=_status_body(401, "Unauthorized", "Unauthorized", False),
                        content_type="application/json")


def forbidden_message(user: UserInfo, verb: str, path: str, reason: str) -> str:
    msg = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
    return f"{msg}: {reason}" if reason else msg


def forbidden_response(user: UserInfo, verb: str, path: str, reason: str) -> web.Response:
    resp = web.Response(status=403, content_type="application/json",
                        body=_status_body(403, "Forbidden", forbidden_message(user, verb, path, reason), True))
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


# ---------------------------------------------------------------------------------------------
# TLS


def self_signed_pair(host: str = "localhost", ips: Sequence[str] = ("127.0.0.1",)) -> tuple[bytes, bytes]:
    """PEM (certificate chain, private key): a fresh CA and a serving certificate it signed, one year.

    ECDSA P-256 keys: kube-scheduler's pair is RSA 2048, but two RSA key generations cost 0.1 to
    0.5 s of start-up here against well under a millisecond, and any TLS client accepts either."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp())
    until = now + datetime.timedelta(days=365)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"{host}-ca@{stamp}")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=True,
                                     content_commitment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    try:
        sans.insert(0, x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        sans.insert(0, x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(f"{host}@{stamp}")).issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False,
                                     content_commitment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return chain, key_pem


def ssl_context(cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ServingError(f"cannot load --tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                               f"{getattr(exc, 'strerror', None) or exc}") from None
        return ctx
    chain, key = self_signed_pair()
    # The ssl module loads key material from files only: write them to a private directory
    # (the Deployment mounts an emptyDir on /tmp) and remove it once loaded.
    tmp = tempfile.mkdtemp(prefix="pyscheduler-serving-")
    try:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in ((cert_path, chain), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        ctx.load_cert_chain(cert_path, key_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ctx


# ---------------------------------------------------------------------------------------------
# Review calls over the kubernetes client


class KubeReviewAPI:
    """TokenReview and SubjectAccessReview creation (blocking client calls run in ``executor``)."""

    def __init__(self, api_client: Any, executor: Executor | None) -> None:
        from kubernetes import client

        self.authn = client.AuthenticationV1Api(api_client)
        self.authz = client.AuthorizationV1Api(api_client)
        self.executor = executor

    def _call(self, fn: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = fn(body, _preload_content=False, _request_timeout=REVIEW_TIMEOUT)
            data = resp.read()
            resp.release_conn()
        except Exception as exc:
            status = getattr(exc, "status", None)
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            raise ReviewError(status if isinstance(status, int) else 0, " ".join(str(reason).split())) from None
        answer = json.loads(data)
        return answer if isinstance(answer, dict) else {}

    async def token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._call, self.authn.create_token_review, body)

    async def subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._call, self.authz.create_subject_access_review, body)


def review_client(kubeconfig: str | None, what: str) -> Any | None:
    """The ApiClient for delegated reviews: the given kubeconfig, else in-cluster, else None
    (RemoteKubeConfigFileOptional: out of cluster without a kubeconfig is not an error)."""
    from kubernetes import client, config

    conf = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
        else:
            try:
                config.load_incluster_config(client_configuration=conf)
            except config.ConfigException:
                log.warning(f"no_{what}_kubeconfig",
                            detail=f"no --{what}-kubeconfig and not in a cluster: "
                                   + ("every request is anonymous" if what == "authentication"
                                      else "everything but the always-allowed paths is forbidden"))
                return None
    except Exception as exc:
        raise ServingError(f"--{what}-kubeconfig {kubeconfig}: {' '.join(str(exc).split())}") from None
    return client.ApiClient(conf)


# ---------------------------------------------------------------------------------------------
# The server


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class SecureServer:
    """HTTPS server: TLS, then authentication, then authorization, then the route's handler."""

    options: ServingOptions
    authenticator: TokenAuthenticator
    authorizer: DelegatingAuthorizer
    tls: ssl.SSLContext | None = None
    port: int = 0
    _runner: web.AppRunner | None = field(default=None, repr=False)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = await self.check(request)
        resp: web.StreamResponse = refusal if refusal is not None else await handler(request)
        # WithCacheControl: nothing here may be cached by a proxy.
        resp.headers.setdefault("Cache-Control", "no-cache, private")
        return resp

    async def check(self, request: web.Request) -> web.Response | None:
        """None when the request may go on; the refusal otherwise."""
        authn = await self.authenticator.authenticate(request.headers.get("Authorization"))
        if authn.user is None:
            log.info("serving_unauthorized", path=request.path, error=authn.error)
            return unauthorized_response()
        verb = request.method.lower()
        decision = await self.authorizer.authorize(authn.user, request.path, verb)
        if decision.allowed:
            return None
        if decision.error:
            log.warning("serving_authorization_error", path=request.path, user=authn.user.name, error=decision.error)
            return web.Response(status=500, text=f"Internal Server Error: {request.path_qs!r}: {decision.error}")
        return forbidden_response(authn.user, verb, request.path, decision.reason)

    async def start(self, routes: Mapping[str, Handler]) -> None:
        app = web.Application(middlewares=[self._guard])
        for path, handler in routes.items():
            app.router.add_get(path, handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.options.bind_address, self.options.secure_port, ssl_context=self.tls)
        await site.start()
        self._runner = runner
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.options.secure_port
        log.info("secure_serving", address=self.options.bind_address, port=self.port,
                 authentication="tokenreview" if self.authenticator.review else "anonymous-only",
                 authorization="subjectaccessreview" if self.authorizer.review else "always-allow-paths-only")

    async def stop(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await self._runner.cleanup()
            self._runner = None


def build_server(options: ServingOptions, executor: Executor | None = None) -> SecureServer:
    """Everything that can fail before the cluster is touched: options, key material, review clients."""
    options.validate()
    tls = ssl_context(options.tls_cert_file, options.tls_private_key_file)
    authn_client = review_client(options.authentication_kubeconfig, "authentication")
    authz_client = review_client(options.authorization_kubeconfig, "authorization")
    authn = TokenAuthenticator(
        KubeReviewAPI(authn_client, executor).token_review if authn_client is not None else None,
        options.token_cache_ttl,
    )
    authz = DelegatingAuthorizer(
        KubeReviewAPI(authz_client, executor).subject_access_review if authz_client is not None else None,
        options.always_allow_paths,
        options.always_allow_groups,
        options.authorized_ttl,
        options.unauthorized_ttl,
    )
    return SecureServer(options, authn, authz, tls)


def options_from_args(args: Any) -> ServingOptions:
    """ServingOptions from the ``run`` command line (cli.py defines the flags)."""
    paths = tuple(p.strip() for p in str(args.authorization_always_allow_paths).split(",") if p.strip())
    return ServingOptions(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        tls_cert_file=args.tls_cert_file or None,
        tls_private_key_file=args.tls_private_key_file or None,
        authentication_kubeconfig=args.authentication_kubeconfig or None,
        authorization_kubeconfig=args.authorization_kubeconfig or None,
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        always_allow_paths=paths,
    )
