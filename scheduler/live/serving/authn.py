"""Delegated authentication of the serving endpoints (k8s.io/apiserver's
DelegatingAuthenticationOptions defaults, as kube-scheduler v1.36.3 configures them).

A request without a bearer token is ``system:anonymous`` (anonymous auth is on). A bearer token
goes to the API server as a TokenReview; not authenticated, or the review failing, answers 401
whatever the path, health paths included. Answers are cached 10 s by token; errors are not
cached. Authenticated users get the ``system:authenticated`` group. Without a kubeconfig for
reviews (--authentication-kubeconfig, else in-cluster), every request is anonymous.

Client certificates, checked before tokens as the apiserver's union does: one that the client CA
(--client-ca-file, else the client-ca-file of ConfigMap kube-system/extension-apiserver-
authentication, read once at start) verifies authenticates as its CommonName with its
Organizations as groups. A bearer token may also come in ``X-Pyscheduler-Authorization``: the
API server drops ``Authorization`` when it proxies a request to a pod, so ``pyscheduler
explain`` repeats its token there; it is reviewed exactly as the other. Front-proxy headers are
not supported.

The review plumbing that authorization shares lives here too: the review call's shape and
error, the webhook retry backoff, and the expiring cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from scheduler.live.metrics.auth import AuthMetrics
from scheduler.live.serving.options import DEFAULT_CACHE_TTL

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
# The webhook retry backoff of DefaultAuthWebhookRetryBackoff: 0.5 s, x1.5, 20 % jitter, 5 tries.
RETRY_FIRST, RETRY_FACTOR, RETRY_JITTER, RETRY_STEPS = 0.5, 1.5, 0.2, 5
CACHE_MAX_ENTRIES = 4096


class ReviewError(Exception):
    """A TokenReview/SubjectAccessReview call failed. ``status`` 0: no HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# A review call: request body in, the API server's answer (a dict) out; raises ReviewError.
ReviewCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS_USER = UserInfo(ANONYMOUS, "", (UNAUTHENTICATED,))

# Where a token can come when the API server's proxy has dropped Authorization (see above).
FORWARDED_AUTHORIZATION = "X-Pyscheduler-Authorization"


def certificate_user(peercert: Any) -> UserInfo | None:
    """The user of a verified client certificate (``SSLSocket.getpeercert()``'s dict): CommonName
    as the name, Organizations as groups (the apiserver's CommonNameUserConversion); None when
    there is none or it has no CommonName."""
    if not isinstance(peercert, dict) or not peercert:
        return None
    cn = ""
    orgs: list[str] = []
    for rdn in peercert.get("subject") or ():
        for attr, value in rdn:
            if attr == "commonName" and not cn:
                cn = str(value)
            elif attr == "organizationName":
                orgs.append(str(value))
    if not cn:
        return None
    return UserInfo(cn, "", (*orgs, AUTHENTICATED))


@dataclass(frozen=True, slots=True)
class AuthnResult:
    """``user`` None: the request failed authentication (401); ``error`` says why, for the log."""

    user: UserInfo | None
    error: str = ""
    # The failure was an error (the review failed, or answered with an error), not a plain
    # "not authenticated": authentication_attempts{result="error"} rather than "failure".
    errored: bool = False


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
        # The token cache's metrics (authentication_token_cache_*); set by the app.
        self.stats: AuthMetrics | None = None

    async def authenticate(self, authorization: str | None) -> AuthnResult:
        token = bearer_token(authorization)
        if self.review is None or token is None:
            # No TokenReview client: the anonymous authenticator is the only one, token or not.
            return AuthnResult(ANONYMOUS_USER)
        key = hashlib.sha256(token.encode()).hexdigest()
        started = time.perf_counter()
        hit, cached = self.cache.get(key)
        stats = self.stats
        if hit:
            if stats is not None:
                stats.cache_request(True, time.perf_counter() - started)
            return cached  # type: ignore[no-any-return]
        unblock = stats.cache_blocking() if stats is not None else None
        try:
            return await self._shared_review(key, token)
        finally:
            if stats is not None and unblock is not None:
                stats.cache_request(False, time.perf_counter() - started)
                unblock()

    async def _shared_review(self, key: str, token: str) -> AuthnResult:
        pending = self._inflight.get(key)
        if pending is not None:
            # Concurrent requests with one token share one review.
            return await asyncio.shield(pending)
        fut: asyncio.Future[AuthnResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        fetched = self.stats.cache_fetching() if self.stats is not None else None
        ok = False
        try:
            result, cacheable = await self._review(token)
            ok = cacheable  # only an error is not cached
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
            if fetched is not None:
                fetched(ok)

    async def _review(self, token: str) -> tuple[AuthnResult, bool]:
        assert self.review is not None
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await call_with_backoff(self.review, body, self._sleep)
        except ReviewError as exc:
            return AuthnResult(None, f"token review failed: {exc}", errored=True), False
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            err = str(status.get("error") or "")
            # An error in the status is an error (not cached); a plain "no" is cached.
            return AuthnResult(None, err or "invalid bearer token", errored=bool(err)), not err
        u = status.get("user") or {}
        groups = tuple(str(g) for g in u.get("groups") or ())
        name = str(u.get("username") or "")
        if name != ANONYMOUS and AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups = (*groups, AUTHENTICATED)
        extra = tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in (u.get("extra") or {}).items()))
        return AuthnResult(UserInfo(name, str(u.get("uid") or ""), groups, extra)), True
