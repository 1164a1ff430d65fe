"""Secure serving of the health and metrics endpoints, the way kube-scheduler v1.36.3 does it.

kube-scheduler serves /healthz, /livez, /readyz and /metrics on HTTPS port 10259 only, behind
the k8s.io/apiserver delegating filters (cmd/kube-scheduler/app/server.go buildHandlerChain,
options.go NewOptionsWithComponentGlobalsRegistry). This package reproduces that chain: TLS
(tls.py), then authentication (authn.py), then authorization (authz.py), then the route; the
flags and their checks are options.py. This module builds the chain and serves it.

The review calls are blocking kubernetes-client calls; the server runs them in the
executor it is given. The decision logic takes the review calls as plain async callables
so tests can fake the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import web

from scheduler.live.metrics.auth import ERROR, FAILURE, SUCCESS, AuthMetrics
from scheduler.live.serving.authn import (
    FORWARDED_AUTHORIZATION,
    AuthnResult,
    ReviewError,
    TokenAuthenticator,
    UserInfo,
    certificate_user,
)
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.options import ServingError, ServingOptions
from scheduler.live.serving.tls import ssl_context

log = structlog.get_logger(__name__)

REVIEW_TIMEOUT = 10.0
AUTHENTICATION_CONFIGMAP = "extension-apiserver-authentication"


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
    # The authentication kubeconfig's client: where the client CA is looked up at start.
    authn_client: Any = field(default=None, repr=False)
    # authentication_*, authorization_* (k8s.io/apiserver's filters'); set by ``attach_metrics``.
    metrics: AuthMetrics | None = field(default=None, repr=False)
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
        started = time.perf_counter()
        user = certificate_user(request.transport.get_extra_info("peercert") if request.transport else None)
        if user is not None:
            authn = AuthnResult(user)
        else:
            header = request.headers.get("Authorization") or request.headers.get(FORWARDED_AUTHORIZATION)
            authn = await self.authenticator.authenticate(header)
        m = self.metrics
        if m is not None:
            result = SUCCESS if authn.user is not None else ERROR if authn.errored else FAILURE
            m.authenticated(result, authn.user.name if authn.user is not None else None, time.perf_counter() - started)
        if authn.user is None:
            log.info("serving_unauthorized", path=request.path, error=authn.error)
            return unauthorized_response()
        verb = request.method.lower()
        started = time.perf_counter()
        decision = await self.authorizer.authorize(authn.user, request.path, verb)
        if m is not None:
            m.authorized(decision.result, time.perf_counter() - started)
        if decision.allowed:
            return None
        if decision.error:
            log.warning("serving_authorization_error", path=request.path, user=authn.user.name, error=decision.error)
            return web.Response(status=500, text=f"Internal Server Error: {request.path_qs!r}: {decision.error}")
        return forbidden_response(authn.user, verb, request.path, decision.reason)

    async def start(self, routes: Mapping[str, Handler]) -> None:
        app = web.Application(middlewares=[self._guard])
        for path, handler in routes.items():
            # Any method, as Go's mux routes them; the handler decides (PUT /debug/flags/v).
            app.router.add_route("*", path, handler)
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

    def attach_metrics(self, metrics: AuthMetrics) -> None:
        """Report authentication, authorization and the token cache to ``metrics``."""
        self.metrics = metrics
        self.authenticator.stats = metrics

    def trust_client_ca(self, pem: str, source: str) -> bool:
        """Verify client certificates against ``pem`` from now on (a certificate that fails the
        check fails the handshake, as Go's VerifyClientCertIfGiven). False if ``pem`` is no CA."""
        if self.tls is None:
            return False
        try:
            self.tls.load_verify_locations(cadata=pem)
        except (ssl.SSLError, ValueError) as exc:
            log.warning("client_ca_unusable", source=source, error=str(exc))
            return False
        self.tls.verify_mode = ssl.CERT_OPTIONAL
        log.info("client_certificates_accepted", source=source)
        return True

    async def stop(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await self._runner.cleanup()
            self._runner = None


def build_server(options: ServingOptions, executor: Executor | None = None) -> SecureServer:
    """Everything that can fail before the cluster is touched: options, key material, review clients."""
    options.validate()
    tls = ssl_context(options.tls_cert_file, options.tls_private_key_file)
    client_ca = None
    if options.client_ca_file:
        try:
            with open(options.client_ca_file, encoding="utf-8") as f:
                client_ca = f.read()
        except OSError as exc:
            raise ServingError(f"--client-ca-file {options.client_ca_file}: {exc.strerror or exc}") from None
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
    server = SecureServer(options, authn, authz, tls, authn_client=authn_client)
    if client_ca is not None and not server.trust_client_ca(client_ca, options.client_ca_file or ""):
        raise ServingError(f"--client-ca-file {options.client_ca_file}: no PEM certificate in it")
    return server


def fetch_client_ca(api_client: Any) -> str | None:
    """The client-ca-file of ConfigMap kube-system/extension-apiserver-authentication (what
    kube-scheduler's delegated authentication reads when no --client-ca-file is given); None if
    it cannot be read. Blocking."""
    from kubernetes import client

    try:
        cm = client.CoreV1Api(api_client).read_namespaced_config_map(
            AUTHENTICATION_CONFIGMAP, "kube-system", _request_timeout=REVIEW_TIMEOUT)
    except Exception as exc:
        log.warning("client_ca_lookup_failed", configmap=f"kube-system/{AUTHENTICATION_CONFIGMAP}",
                    error=" ".join(str(getattr(exc, "reason", None) or exc).split()),
                    detail="client certificates are not accepted")
        return None
    return (cm.data or {}).get("client-ca-file") or None
