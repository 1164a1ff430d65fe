"""The families of the delegated authentication and authorization in front of the secure port,
as kube-scheduler v1.36.3 exports them from k8s.io/apiserver v0.36.3:

* pkg/endpoints/filters/metrics.go: ``authenticated_user_requests``, ``authentication_attempts``
  (counters without ``_total``, as written there), ``authentication_duration_seconds``,
  ``authorization_attempts_total``, ``authorization_duration_seconds``;
* pkg/authentication/token/cache/stats.go: the TokenReview cache's
  ``authentication_token_cache_*`` (no help text; request latency counted in whole
  milliseconds, default buckets).

Their ``apiserver_delegated_*`` siblings belong to the left-out ``apiserver_*`` families
(docs/operations.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import Metric

from scheduler.live.metrics.kit import ALPHA, BulkHistogram, Schema, exponential_buckets, helptext

# The Prometheus client's default buckets (stats.go names none).
DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]

# Registered through component-base upstream: counted in registered_metrics_total.
STABILITY: dict[str, str] = {
    "authenticated_user_requests": ALPHA,
    "authentication_attempts": ALPHA,
    "authentication_duration_seconds": ALPHA,
    "authorization_attempts_total": ALPHA,
    "authorization_duration_seconds": ALPHA,
    "authentication_token_cache_request_duration_seconds": ALPHA,
    "authentication_token_cache_request_total": ALPHA,
    "authentication_token_cache_fetch_total": ALPHA,
    "authentication_token_cache_active_fetch_count": ALPHA,
}

# authentication_attempts / authorization_attempts_total results.
SUCCESS, FAILURE, ERROR = "success", "failure", "error"
ALLOWED, DENIED, NO_OPINION = "allowed", "denied", "no-opinion"


def compress_username(name: str) -> str:
    """authenticated_user_requests' username label: a few well-known names as they are, any
    e-mail address as one value, everything else as "other" (upstream compressUsername)."""
    if name in ("admin", "client", "kube_proxy", "kubelet", "system:serviceaccount:kube-system:default"):
        return name
    return "email_id" if "@" in name else "other"


class BareCounter:
    """A labelled counter exposed under its name as is: its samples carry no ``_total``
    suffix, as a Go counter named without one (``kit.exposition`` writes its HELP and TYPE
    lines under the bare name too)."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def inc(self, *values: str) -> None:
        with self._lock:
            self._values[values] = self._values.get(values, 0.0) + 1.0

    def schema(self) -> list[Schema]:
        return [Schema(self.name + "_total", "counter", self.documentation, self.labelnames)]

    def describe(self) -> Iterator[Metric]:
        yield Metric(self.name, self.documentation, "counter")

    def collect(self) -> Iterator[Metric]:
        fam = Metric(self.name, self.documentation, "counter")
        fam.bare = True  # type: ignore[attr-defined]
        with self._lock:
            items = list(self._values.items())
        for values, v in items:
            fam.add_sample(self.name, dict(zip(self.labelnames, values)), v)
        yield fam


class AuthMetrics:
    """What the secure port's authentication, authorization and token cache report."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.user_requests = BareCounter(
            "authenticated_user_requests",
            helptext(ALPHA, "Counter of authenticated requests broken out by username."), ("username",))
        self.attempts = BareCounter(
            "authentication_attempts", helptext(ALPHA, "Counter of authenticated attempts."), ("result",))
        registry.register(self.user_requests)
        registry.register(self.attempts)
        self.duration = BulkHistogram(
            "authentication_duration_seconds",
            helptext(ALPHA, "Authentication duration in seconds broken out by result."),
            ["result"], exponential_buckets(0.001, 2, 15), threads=True)
        registry.register(self.duration)
        self.authz_attempts = Counter(
            "authorization_attempts",
            helptext(ALPHA, "Counter of authorization attempts broken down by result. It can be either 'allowed', "
                     "'denied', 'no-opinion' or 'error'."),
            ["result"], registry=registry)
        self.authz_duration = BulkHistogram(
            "authorization_duration_seconds",
            helptext(ALPHA, "Authorization duration in seconds broken out by result."),
            ["result"], exponential_buckets(0.001, 2, 15), threads=True)
        registry.register(self.authz_duration)
        empty = helptext(ALPHA, "")
        self.cache_latency = BulkHistogram(
            "authentication_token_cache_request_duration_seconds", empty, ["status"], DEFAULT_BUCKETS, threads=True)
        registry.register(self.cache_latency)
        self.cache_requests = Counter("authentication_token_cache_request", empty, ["status"], registry=registry)
        self.cache_fetches = Counter("authentication_token_cache_fetch", empty, ["status"], registry=registry)
        self.cache_active = Gauge("authentication_token_cache_active_fetch_count", empty, ["status"],
                                  registry=registry)

    # -- the request filters (WithAuthentication, WithAuthorization) --------------------------
    def authenticated(self, result: str, username: str | None, seconds: float) -> None:
        """One request through authentication: ``result`` success, failure or error; the
        user's name on success."""
        if result == SUCCESS and username is not None:
            self.user_requests.inc(compress_username(username))
        self.attempts.inc(result)
        self.duration.labels(result).observe(seconds)

    def authorized(self, result: str, seconds: float) -> None:
        """One request through authorization: allowed, denied, no-opinion or error."""
        self.authz_attempts.labels(result).inc()
        self.authz_duration.labels(result).observe(seconds)

    # -- the TokenReview cache -----------------------------------------------------------------
    def cache_request(self, hit: bool, seconds: float) -> None:
        """A token looked up in the cache; its latency counted in whole milliseconds, as upstream."""
        status = "hit" if hit else "miss"
        self.cache_requests.labels(status).inc()
        self.cache_latency.labels(status).observe(int(seconds * 1000) / 1000)

    def cache_blocking(self) -> Callable[[], None]:
        """A miss waits for the review; call the result when it has its answer."""
        g = self.cache_active.labels("blocked")
        g.inc()
        return g.dec

    def cache_fetching(self) -> Callable[[bool], None]:
        """A review is sent; call the result with whether it came back without error."""
        g = self.cache_active.labels("in_flight")
        g.inc()

        def done(ok: bool) -> None:
            self.cache_fetches.labels("ok" if ok else "error").inc()
            g.dec()

        return done
