"""The API client's families (client-go's, through component-base's restclient adapter):
``rest_client_*`` for every request this process sends to the API server.

Process-wide, as client-go's are: ``REST`` is registered in every Metrics registry. Requests are
seen at the connection (``InstrumentedConnection``, mixed into the urllib3 connections of the
API clients) and around the watcher's requests; the wait in a client-side rate limiter reaches
the next request of the same thread through ``limiter_waited``.

Counted as client-go counts: one request per HTTP exchange, ``code`` the status or ``<error>``
when no response came; ``verb`` and ``method`` the HTTP method; ``host`` the server's host:port.
The response size is the Content-Length when the server sends one. This process keeps no
transport cache: each API client is created "uncacheable" and the cache has no entries. No
exec-plugin client certificate is ever rotated here (the TTL is +Inf, as upstream says for that
case), and requests are not retried on Retry-After, so ``rest_client_request_retries_total``
stays empty.
"""

from __future__ import annotations

import math
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from prometheus_client import Counter
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry

from scheduler.live.metrics.kit import ALPHA, BulkHistogram, Schema, ScrapeFamily, collector_schema, helptext

_LATENCY = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
_SIZES = [64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
_ROTATION = [600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000]

STABILITY = {name: ALPHA for name in (
    "rest_client_request_duration_seconds", "rest_client_request_size_bytes", "rest_client_response_size_bytes",
    "rest_client_rate_limiter_duration_seconds", "rest_client_requests_total", "rest_client_request_retries_total",
    "rest_client_exec_plugin_ttl_seconds", "rest_client_exec_plugin_certificate_rotation_age",
    "rest_client_transport_cache_entries", "rest_client_transport_create_calls_total",
    "rest_client_transport_cert_rotation_gc_calls_total",
)}


class RestClientMetrics:
    """The rest_client_* families; a collector that can sit in several registries."""

    def __init__(self) -> None:
        own = CollectorRegistry()  # the children live here; collect() hands out its families
        self._registry = own
        self.duration = BulkHistogram(
            "rest_client_request_duration_seconds",
            helptext(ALPHA, "Request latency in seconds. Broken down by verb, and host."),
            ("verb", "host"), _LATENCY, threads=True)
        self.request_size = BulkHistogram(
            "rest_client_request_size_bytes", helptext(ALPHA, "Request size in bytes. Broken down by verb and host."),
            ("verb", "host"), _SIZES, threads=True)
        self.response_size = BulkHistogram(
            "rest_client_response_size_bytes",
            helptext(ALPHA, "Response size in bytes. Broken down by verb and host."), ("verb", "host"), _SIZES,
            threads=True)
        self.rate_limiter = BulkHistogram(
            "rest_client_rate_limiter_duration_seconds",
            helptext(ALPHA, "Client side rate limiter latency in seconds. Broken down by verb, and host."),
            ("verb", "host"), _LATENCY, threads=True)
        self.rotation_age = BulkHistogram(
            "rest_client_exec_plugin_certificate_rotation_age",
            helptext(ALPHA, "Histogram of the number of seconds the last auth exec plugin client certificate lived "
                     "before being rotated. If auth exec plugin client certificates are unused, histogram will "
                     "contain no data."), (), _ROTATION, threads=True)
        for h in (self.duration, self.request_size, self.response_size, self.rate_limiter, self.rotation_age):
            own.register(h)
        self.requests = Counter(
            "rest_client_requests_total",
            helptext(ALPHA, "Number of HTTP requests, partitioned by status code, method, and host."),
            ["code", "method", "host"], registry=own)
        self.retries = Counter(
            "rest_client_request_retries_total",
            helptext(ALPHA, "Number of request retries, partitioned by status code, verb, and host."),
            ["code", "verb", "host"], registry=own)
        self.transports = Counter(
            "rest_client_transport_create_calls_total",
            helptext(ALPHA, "Number of calls to get a new transport, partitioned by the result of the operation "
                     "hit: obtained from the cache, miss: created and added to the cache, miss-gc: recreated and "
                     "added back to the cache after being garbage collected, uncacheable: created and not cached"),
            ["result"], registry=own)
        Counter(
            "rest_client_transport_cert_rotation_gc_calls_total",
            helptext(ALPHA, "Number of times a cert rotation goroutine cancel func is called via GC cleanup of the "
                     "associated transport"), registry=own)
        own.register(ScrapeFamily(
            "gauge", "rest_client_exec_plugin_ttl_seconds",
            helptext(ALPHA, "Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the "
                     "auth exec plugin. The value is in seconds until certificate expiry (negative if already "
                     "expired). If auth exec plugins are unused or manage no TLS certificates, the value will be "
                     "+INF."), [], lambda: [((), math.inf)]))
        own.register(ScrapeFamily(
            "gauge", "rest_client_transport_cache_entries",
            helptext(ALPHA, "Number of transport entries in the internal cache."), [], lambda: [((), 0)]))
        self._waits = threading.local()
        self._requests = self.requests.labels  # the Python client caches children itself

    def describe(self) -> Iterator[Metric]:
        # Names only (the registry checks for duplicates): every family, samples or not.
        yield from self._registry.collect()

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()

    def schema(self) -> list[Schema]:
        return [s for c in list(self._registry._collector_to_names) for s in collector_schema(c)]

    # -- hooks -------------------------------------------------------------------------------
    def transport_created(self) -> None:
        self.transports.labels("uncacheable").inc()

    def limiter_waited(self, seconds: float) -> None:
        """The calling thread waited ``seconds`` in a client-side rate limiter before its next request."""
        self._waits.seconds = seconds

    def request(self, method: str, host: str, status: int | None, seconds: float, sent: int,
                received: int | None) -> None:
        """One HTTP exchange ended: ``status`` None when no response came."""
        waited = getattr(self._waits, "seconds", None)
        if waited is not None:
            self._waits.seconds = None
            self.rate_limiter.labels(method, host).observe(waited)
        self.duration.labels(method, host).observe(seconds)
        self.request_size.labels(method, host).observe(sent)
        if received is not None:
            self.response_size.labels(method, host).observe(received)
        self._requests("<error>" if status is None else str(status), method, host).inc()


REST = RestClientMetrics()


def host_of(url: str) -> str:
    """host:port of a URL as Go's url.URL.Host has it (the port only when the URL names one)."""
    return urllib.parse.urlsplit(url).netloc.rpartition("@")[2]


class InstrumentedConnection:
    """Mixed into a urllib3 HTTP(S)Connection: each request and its response (or failure) is
    one rest_client observation."""

    _m_started: float
    _m_method: str
    _m_sent: int

    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **kw: Any) -> Any:
        self._m_started = time.perf_counter()
        self._m_method = method
        self._m_sent = len(body) if isinstance(body, bytes | bytearray | str) else 0
        try:
            return super().request(method, url, body, headers, **kw)  # type: ignore[misc]
        except Exception:
            self._m_done(None, None)
            raise

    def getresponse(self) -> Any:
        try:
            resp = super().getresponse()  # type: ignore[misc]
        except Exception:
            self._m_done(None, None)
            raise
        length = resp.headers.get("Content-Length") if resp.headers is not None else None
        self._m_done(resp.status, int(length) if length and length.isdigit() else None)
        return resp

    def _m_done(self, status: int | None, received: int | None) -> None:
        started = getattr(self, "_m_started", None)
        if started is None:
            return
        self._m_started = None  # type: ignore[assignment]
        port = getattr(self, "port", None)
        host = f"{getattr(self, 'host', '')}:{port}" if port else str(getattr(self, "host", ""))
        REST.request(self._m_method, host, status, time.perf_counter() - started, self._m_sent, received)
