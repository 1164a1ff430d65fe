"""The API transport of the live scheduler's writes: the errors, the client-side rate limit,
the write lanes, and the API protocol (``CoreAPI``) with its real implementation.

Everything goes through ``CoreAPI`` so tests inject a fake; the real one (``KubeCoreAPI``)
sends over plain keep-alive sockets (rawhttp.py; through a proxy, the kubernetes client's
urllib3 pool). Its calls block and run in a lane's threads, except the two writes every pod
takes, Bindings and Events, which the event loop sends itself (``*_async``, loophttp.py).
Each kind of write has a lane: its own API client, token bucket (clientConnection qps/burst,
like client-go's per-clientset rate limiter), connections and threads, as kube-scheduler has a
scheduler client and a separate events client.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import orjson
import structlog
import urllib3
from urllib3.exceptions import NewConnectionError

from scheduler.live.kube import wire
from scheduler.live.kube.lanethreads import LaneThreads
from scheduler.live.kube.loophttp import LoopTransport
from scheduler.live.kube.rawhttp import RawTransport, TransportError
from scheduler.live.metrics.client import REST

log = structlog.get_logger(__name__)

T = TypeVar("T")

REQUEST_TIMEOUT = 30.0  # seconds per API call; a hung call must not hold a binding forever
MAX_RETRIES = 10  # client-go rest.Request's default: answers with Retry-After are retried this often


class ApiError(Exception):
    """An API call failed; ``status`` is the HTTP status (0 for a transport error).
    ``sent`` is False when the request certainly never left (no connection was made)."""

    def __init__(self, status: int, message: str = "", sent: bool = True) -> None:
        super().__init__(message or f"HTTP {status}")
        self.status = status
        self.message = message or f"HTTP {status}"
        self.sent = sent


def never_stored(exc: ApiError) -> bool:
    """The write certainly did not happen: the API server answered a 4xx (forbidden, throttled,
    invalid; 404 and 409 have their own meaning), or the connection was never made."""
    return 400 <= exc.status < 500 or not exc.sent


def _never_connected(exc: BaseException) -> bool:
    """urllib3 could not open the connection (MaxRetryError wraps that as its reason)."""
    return isinstance(exc, NewConnectionError) or isinstance(getattr(exc, "reason", None), NewConnectionError)


class Fenced(ApiError):
    """Not sent: the lease fence is closed (this replica may no longer be the leader)."""

    def __init__(self, message: str = "lease fence closed") -> None:
        super().__init__(0, message)


class CoreAPI(Protocol):
    """The API calls the scheduler makes; dict bodies in and out."""

    def create_binding(self, namespace: str, name: str, body: dict[str, Any], timeout: float = ...) -> None: ...

    def create_event(self, namespace: str, body: dict[str, Any]) -> None: ...

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def patch_pod_group_status(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...


# The formatted second of the last micro_time: a pod's Event and its condition share it.
_second: tuple[int, str] = (-1, "")


def micro_time(ts: float) -> str:
    """metav1.MicroTime as JSON (RFC 3339 with microseconds)."""
    global _second
    sec = math.floor(ts)
    us = round((ts - sec) * 1e6)
    if us >= 1_000_000:
        sec, us = sec + 1, us - 1_000_000
    cached = _second
    if cached[0] != sec:
        cached = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{cached[1]}.{us:06d}Z"


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TokenBucket:
    """qps tokens per second, at most ``burst`` saved (client-go flowcontrol.NewTokenBucketRateLimiter)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self.tokens = float(self.burst)
        self.clock = clock
        self.sleep = sleep
        self.last = clock()

    def _refill(self) -> None:
        now = self.clock()
        if self.qps > 0:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now

    def try_take(self) -> bool:
        if self.qps <= 0:
            return True  # qps <= 0 disables rate limiting
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take a token now (may go negative); the seconds to wait for it (FIFO like client-go's Wait)."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self.tokens -= 1.0
        return -self.tokens / self.qps if self.tokens < 0 else 0.0

    async def take(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await self.sleep(wait)


def retry_after(status: int, header: str | None) -> int | None:
    """Seconds to wait before retrying an answer (client-go checkWait): only a 429 or a 5xx
    with an integer Retry-After header is retried."""
    if status != 429 and status < 500:
        return None
    try:
        return max(0, int(header)) if header is not None else None
    except ValueError:
        return None


def message_of(body: bytes) -> str:
    """The ``message`` of a Status reply (JSON or protobuf), if the body is one."""
    message = wire.status_message(body)
    if message is not None:
        return message
    try:
        doc = json.loads(body)
    except (ValueError, TypeError):
        return ""
    return str(doc.get("message") or "") if isinstance(doc, dict) else ""


def request_headers(conn: Any) -> dict[str, str]:
    """Accept, User-Agent and the token of ``conn`` (a clients.Connection or an ApiClient) as the
    client would add it: its refresh hook runs here. Read through auth_settings():
    update_params_for_auth's signature differs between client releases."""
    headers = {"Accept": JSON, "User-Agent": conn.user_agent}
    auth = conn.configuration.auth_settings().get("BearerToken")
    if auth and auth.get("value"):
        headers[auth["key"]] = auth["value"]
    return headers


def encode_body(body: Any) -> bytes:
    """A request body as JSON: orjson (several times the standard encoder's speed, and an Event
    goes with every pod), the standard encoder for what orjson refuses (non-string keys)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body).encode()


JSON = "application/json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"


class KubeCoreAPI:
    """CoreAPI over the kubernetes client's REST layer. Blocking; a Lane calls it in its
    threads.

    Requests go straight to the ApiClient's urllib3 pool with the ApiClient's credentials
    (its auth settings and refresh hook), TLS and retries: the generated per-endpoint methods
    (argument checks, body sanitizing, a second URL parse in the pool manager) cost about a
    third of each write's CPU, and a pod takes two writes (Binding, Event)."""

    # How a retry waits for the server's Retry-After (in the lane's thread); tests replace it.
    sleep: Callable[[float], None] = staticmethod(time.sleep)
    # Plain keep-alive sockets (rawhttp.py); None: through the client's urllib3 pool.
    _raw: RawTransport | None = None
    # Set once the server answered a protobuf body with 415: every create goes as JSON.
    _json_only: bool = False

    def __init__(self, conn: Any, protobuf: bool = True) -> None:
        self.api = conn  # clients.Connection, or an ApiClient (the same attributes)
        # clientConnection.contentType: protobuf (upstream's default) for what wire.py encodes.
        self._json_only = not protobuf
        conf = conn.configuration
        self._host = str(conf.host).rstrip("/")
        manager = conn.rest_client.pool_manager
        # Through a proxy the pool manager needs the full URL; otherwise the host's own pool.
        self._pool = None if conf.proxy else manager.connection_from_url(self._host)
        self._manager = manager
        if not conf.proxy:
            self._raw = RawTransport(conf)
        self._loop_io: LoopTransport | None = None

    def loop_ready(self) -> bool:
        """Send the ``*_async`` writes on the event loop (through ``Lane.run_async``, which
        bounds them). False where they go through urllib3 (a proxy): they stay on lane
        threads then."""
        if self._raw is None:
            return False
        if self._loop_io is None:
            self._loop_io = LoopTransport(self._raw)
        return True

    def close_loop_io(self) -> None:
        if self._loop_io is not None:
            self._loop_io.close()

    def _send(
        self, method: str, path: str, headers: dict[str, str], data: bytes | None, timeout: float
    ) -> tuple[int, str, str | None, bytes]:
        """One exchange: status, reason, Retry-After and body; ApiError when none completed."""
        if self._raw is not None:
            try:
                r = self._raw.exchange(method, path, headers, data, timeout)
            except TransportError as exc:
                raise ApiError(0, str(exc), sent=exc.sent) from exc
            return r.status, r.reason, r.headers.get("retry-after"), r.body
        try:
            kw: dict[str, Any] = {
                "body": data,
                "headers": headers,
                "preload_content": False,
                "timeout": urllib3.Timeout(total=timeout),
                "redirect": False,
            }
            if self._pool is not None:
                resp = self._pool.urlopen(method, path, assert_same_host=False, **kw)
            else:
                resp = self._manager.urlopen(method, self._host + path, **kw)
            # Drain and release, or the pooled connection fails the next call.
            raw = resp.read()
            resp.release_conn()
        except Fenced:
            raise
        except Exception as exc:
            raise ApiError(0, f"{type(exc).__name__}: {exc}", sent=not _never_connected(exc)) from exc
        return resp.status, str(resp.reason or ""), resp.headers.get("Retry-After"), bytes(raw)

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON, timeout: float = REQUEST_TIMEOUT
    ) -> bytes:
        headers = request_headers(self.api)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = encode_body(body)
        return self._exchange(method, path, headers, data, timeout)

    def _protobuf_create(self, body: dict[str, Any]) -> tuple[dict[str, str], bytes] | None:
        """The headers and protobuf bytes of a create, or None to send it as JSON."""
        data = None if self._json_only else wire.encode(body)
        if data is None:
            return None
        headers = request_headers(self.api)
        headers["Content-Type"], headers["Accept"] = wire.PROTOBUF, wire.ACCEPT
        return headers, data

    def _protobuf_refused(self, exc: ApiError, path: str) -> bool:
        """Whether ``exc`` is the server refusing protobuf (415): JSON from then on."""
        if exc.status != 415:
            return False
        log.warning("api_protobuf_refused", path=path, error=exc.message)
        self._json_only = True
        return True

    def create(self, path: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> bytes:
        """POST a new object, in protobuf where ``wire`` can encode it (as kube-scheduler's
        clients do: the API server decodes it for less CPU than JSON), else in JSON, as it is
        with a JSON ``contentType``. A server that refuses protobuf (415) gets JSON from then on."""
        req = self._protobuf_create(body)
        if req is not None:
            try:
                return self._exchange("POST", path, req[0], req[1], timeout)
            except ApiError as exc:
                if not self._protobuf_refused(exc, path):
                    raise
        return self.request("POST", path, body, timeout=timeout)

    async def create_async(
        self, path: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT, guard: Callable[[], None] | None = None
    ) -> bytes:
        """``create`` on the event loop (``loop_ready`` first), ``guard`` run right before the
        bytes leave."""
        req = self._protobuf_create(body)
        if req is not None:
            try:
                return await self._exchange_async("POST", path, req[0], req[1], timeout, guard)
            except ApiError as exc:
                if not self._protobuf_refused(exc, path):
                    raise
        headers = request_headers(self.api)
        headers["Content-Type"] = JSON
        return await self._exchange_async("POST", path, headers, encode_body(body), timeout, guard)

    def _exchange(
        self, method: str, path: str, headers: dict[str, str], data: bytes | None, timeout: float
    ) -> bytes:
        deadline = time.monotonic() + timeout
        for attempt in range(MAX_RETRIES + 1):
            answer = self._send(method, path, headers, data, max(0.1, deadline - time.monotonic()))
            wait = _retry_wait(answer, attempt, deadline, method, path)
            if wait is None:
                return answer[3]
            self.sleep(wait)  # the fence is checked again before the resend
        raise AssertionError("unreachable")

    async def _exchange_async(
        self, method: str, path: str, headers: dict[str, str], data: bytes | None, timeout: float,
        guard: Callable[[], None] | None,
    ) -> bytes:
        if self._loop_io is None:
            raise RuntimeError("loop_ready() was not called, or said no")
        deadline = time.monotonic() + timeout
        for attempt in range(MAX_RETRIES + 1):
            try:
                r = await self._loop_io.exchange(method, path, headers, data,
                                                 max(0.1, deadline - time.monotonic()), guard)
            except TransportError as exc:
                raise ApiError(0, str(exc), sent=exc.sent) from exc
            answer = (r.status, r.reason, r.headers.get("retry-after"), r.body)
            wait = _retry_wait(answer, attempt, deadline, method, path)
            if wait is None:
                return r.body
            await asyncio.sleep(wait)  # the guard runs again before the resend
        raise AssertionError("unreachable")

    def create_binding(self, namespace: str, name: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> None:
        self.create(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body, timeout=timeout)

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self.create(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)

    async def create_binding_async(
        self, namespace: str, name: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT,
        guard: Callable[[], None] | None = None,
    ) -> None:
        await self.create_async(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body, timeout, guard)

    async def create_event_async(self, namespace: str, body: dict[str, Any]) -> None:
        await self.create_async(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.request(
            "PATCH", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}", body, STRATEGIC_MERGE_PATCH
        )

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # Strategic merge: conditions merge by type, so the kubelet's conditions stay.
        self.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", body, STRATEGIC_MERGE_PATCH)

    def patch_pod(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # The result annotations (JSON merge patch of metadata; its uid is a precondition).
        self.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", body, MERGE_PATCH)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(json.loads(self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", timeout=10.0)))

    def delete_pod(self, namespace: str, name: str) -> None:
        # Preemption's victims (upstream util.DeletePod: default DeleteOptions).
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")

    def patch_pod_group_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # Upstream util.PatchPodGroupStatus: a strategic merge (conditions merge by type).
        self.request(
            "PATCH",
            f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{name}/status",
            body,
            STRATEGIC_MERGE_PATCH,
        )


def _retry_wait(
    answer: tuple[int, str, str | None, bytes], attempt: int, deadline: float, method: str, path: str
) -> float | None:
    """After one exchange's ``answer`` (status, reason, Retry-After, body): None when it
    succeeded, else the seconds to wait before trying again, or ApiError when it is not tried
    again. client-go's withRetry: a 429 or 5xx that says when to come back is retried then
    (API Priority and Fairness answers 429 with Retry-After), within the call's time."""
    status, reason, after, raw = answer
    if 200 <= status <= 299:
        return None
    wait = retry_after(status, after)
    if wait is None or attempt == MAX_RETRIES or time.monotonic() + wait >= deadline:
        raise ApiError(status, message_of(raw) or reason)
    log.info("api_retry_after", method=method, path=path, status=status, retry_after=wait, attempt=attempt + 1)
    return float(wait)


def _after_wait(waited: float, fn: Callable[..., Any], *args: Any) -> Any:
    REST.limiter_waited(waited)
    return fn(*args)


class Lane:
    """One API client's writes: its own token bucket and its own threads, so the event loop
    only awaits and one kind of write never queues behind another.

    ``executor``: a concurrent Executor (tests) or None for the lane's own ``LaneThreads``."""

    def __init__(
        self, limiter: TokenBucket, executor: Executor | None = None, workers: int = 16, name: str = "api"
    ) -> None:
        self.limiter = limiter
        self._executor = executor
        self._threads: LaneThreads | None = None
        self._workers = workers
        self._name = name
        self.writes = 0
        self._blocking_lock = threading.Lock()
        # Whether the API object's ``*_async`` writes go out from the event loop (run_async).
        self.loop_io = False
        self._turns: asyncio.Semaphore | None = None

    @property
    def workers(self) -> int:
        """Writes this lane runs at once (its threads)."""
        return self._workers

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        started = time.perf_counter()
        await self.limiter.take()
        self.writes += 1
        # The wait is the rate limiter's latency of the request the thread sends next.
        waited = time.perf_counter() - started
        if self._executor is not None:
            return await asyncio.get_running_loop().run_in_executor(self._executor, _after_wait, waited, fn, *args)
        if self._threads is None:
            self._threads = LaneThreads(self._workers, self._name)
        return await self._threads.submit(_after_wait, waited, fn, *args)

    async def run_async(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``run`` for a write the event loop sends itself (``fn`` a coroutine function): the
        same token bucket and counts, and at most ``workers`` at once, as many as the lane has
        threads. A write waits for its turn before ``fn`` starts, as it would for a thread, so
        the fence's check and the request's timeout count from the turn, not from the queue
        (a Binding whose timeout ran out in the queue would leave with no time to be answered,
        and its outcome would be unknown)."""
        started = time.perf_counter()
        await self.limiter.take()
        self.writes += 1
        REST.limiter_waited(time.perf_counter() - started)
        if self._turns is None:
            self._turns = asyncio.Semaphore(self._workers)
        async with self._turns:
            return await fn(*args)

    def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``run`` for a caller that blocks the event loop until the call is done (synchronous
        preemption), from any thread: the same token bucket (the loop, blocked, takes no token
        meanwhile; the lock keeps the caller's threads apart)."""
        with self._blocking_lock:
            wait = self.limiter.reserve()
            self.writes += 1
        if wait > 0:
            time.sleep(wait)
        return _after_wait(wait, fn, *args)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self._threads is not None:
            self._threads.shutdown()
