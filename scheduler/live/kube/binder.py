"""API writes of the live scheduler: the Binding POST, Events, the PodScheduled condition.

Everything goes through a small API protocol (``CoreAPI``) so tests inject a fake; the real
one (``KubeCoreAPI``) sends through the kubernetes client's connection pool, whose calls block,
in a thread pool.
Bindings and events/status writes are two lanes, each with its own API client, token bucket
(clientConnection qps/burst, like client-go's per-clientset rate limiter) and threads, as
kube-scheduler has a scheduler client and a separate events client.

A Binding is sent only while the lease fence is open (the last successful renewal is younger
than the renew deadline): the check runs in the sending thread right before the request, and
the request may not outlive the lease as this replica last renewed it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog
import urllib3
from urllib3.exceptions import NewConnectionError

from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

# events/v1 isomorphic events within this window become a series (client-go events library).
EVENT_SERIES_WINDOW = 30 * 60.0
REQUEST_TIMEOUT = 30.0  # seconds per API call; a hung call must not hold a binding forever
RESOLVE_BACKOFF = (0.5, 5.0)  # first and longest wait between reads of a pod whose Binding may have landed


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


class BindConflict(ApiError):
    """409: the pod is already bound (or being deleted, or was replaced): not ours to bind."""


class PodGone(ApiError):
    """404: the pod does not exist any more."""


class Fenced(ApiError):
    """Not sent: the lease fence is closed (this replica may no longer be the leader)."""

    def __init__(self, message: str = "lease fence closed") -> None:
        super().__init__(0, message)


# The fence check the connection runs right before each write of a Binding request's bytes
# (clients.py installs connections that call ``check_send_guard``): a thread checked the fence,
# then the process was paused (SIGSTOP) before the bytes left; on waking it must not send them.
_send_guard = threading.local()


def check_send_guard() -> None:
    check = getattr(_send_guard, "check", None)
    if check is not None:
        check()


class Fence(Protocol):
    """What the leader elector tells writers (``LeaderElector`` implements it)."""

    def open_for(self) -> float:
        """Seconds left before the renew deadline passes; <= 0: no new cycle or Binding."""
        ...

    def lease_left(self) -> float:
        """Seconds until other candidates may take the lease, counted from the last renewal."""
        ...


class CoreAPI(Protocol):
    """The API calls the scheduler makes; dict bodies in and out."""

    def create_binding(self, namespace: str, name: str, body: dict[str, Any], timeout: float = ...) -> None: ...

    def create_event(self, namespace: str, body: dict[str, Any]) -> None: ...

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...


def micro_time(ts: float) -> str:
    """metav1.MicroTime as JSON (RFC 3339 with microseconds)."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


def _message_of(body: bytes) -> str:
    """The ``message`` of a Status reply, if the body is one."""
    try:
        doc = json.loads(body)
    except (ValueError, TypeError):
        return ""
    return str(doc.get("message") or "") if isinstance(doc, dict) else ""


JSON = "application/json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class KubeCoreAPI:
    """CoreAPI over the kubernetes client's REST layer. Blocking; the Binder calls it in an
    executor.

    Requests go straight to the ApiClient's urllib3 pool with the ApiClient's credentials
    (its auth settings and refresh hook), TLS and retries: the generated per-endpoint methods
    (argument checks, body sanitizing, a second URL parse in the pool manager) cost about a
    third of each write's CPU, and a pod takes two writes (Binding, Event)."""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        conf = api_client.configuration
        self._host = str(conf.host).rstrip("/")
        manager = api_client.rest_client.pool_manager
        # Through a proxy the pool manager needs the full URL; otherwise the host's own pool.
        self._pool = None if conf.proxy else manager.connection_from_url(self._host)
        self._manager = manager

    def _request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON, timeout: float = REQUEST_TIMEOUT
    ) -> bytes:
        headers = {"Accept": JSON, "User-Agent": self.api.user_agent}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        self.api.update_params_for_auth(headers, None, ["BearerToken"])
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
        if not 200 <= resp.status <= 299:
            raise ApiError(resp.status, _message_of(raw) or str(resp.reason or ""))
        return bytes(raw)

    def create_binding(self, namespace: str, name: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> None:
        self._request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body, timeout=timeout)

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self._request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self._request(
            "PATCH", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}", body, STRATEGIC_MERGE_PATCH
        )

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # Strategic merge: conditions merge by type, so the kubelet's conditions stay.
        self._request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", body, STRATEGIC_MERGE_PATCH)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(json.loads(self._request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", timeout=10.0)))

    def delete_pod(self, namespace: str, name: str) -> None:
        # Preemption's victims (upstream util.DeletePod: default DeleteOptions).
        self._request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")


@dataclass(slots=True)
class _Series:
    name: str
    count: int
    first: float


class Lane:
    """One API client's writes: its own token bucket and its own threads, so the event loop
    only awaits and one kind of write never queues behind another."""

    def __init__(
        self, limiter: TokenBucket, executor: Executor | None = None, workers: int = 16, name: str = "api"
    ) -> None:
        self.limiter = limiter
        self._executor = executor
        self._workers = workers
        self._name = name
        self.writes = 0

    def _pool(self) -> Executor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix=self._name)
        return self._executor

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        await self.limiter.take()
        self.writes += 1
        return await asyncio.get_running_loop().run_in_executor(self._pool(), fn, *args)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


class Binder:
    """The ``client`` of the framework Handle (DefaultBinder calls ``bind``) plus the other
    writes the scheduler makes. One instance is shared by all profiles.

    ``api``/``limiter`` carry Bindings; ``events_api``/``events_limiter`` carry Events and pod
    status patches (default: the same API object, a bucket of its own)."""

    def __init__(
        self,
        api: CoreAPI,
        limiter: TokenBucket | None = None,
        *,
        executor: Executor | None = None,
        events_api: CoreAPI | None = None,
        events_limiter: TokenBucket | None = None,
        events_executor: Executor | None = None,
        fence: Fence | None = None,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.events_api = events_api if events_api is not None else api
        self.binds = Lane(limiter or TokenBucket(50, 100), executor, name="bind")
        self.others = Lane(events_limiter or TokenBucket(50, 100), events_executor, workers=4, name="events")
        self.fence = fence
        self.hostname = hostname or socket.gethostname()
        self.clock = clock
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        # uid -> the BindConflict/PodGone of its last bind: the scheduler reads it after Bind
        # failed (the framework only passes on a Status).
        self.bind_errors: dict[str, ApiError] = {}

    @property
    def limiter(self) -> TokenBucket:
        return self.binds.limiter

    @property
    def writes(self) -> int:
        """API writes issued (metrics, tests)."""
        return self.binds.writes + self.others.writes

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.others.run(fn, *args)

    def fence_open(self) -> bool:
        return self.fence is None or self.fence.open_for() > 0

    def _send_binding(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # Runs in a bind thread: the last check before the request leaves.
        fence = self.fence
        if fence is None:
            self.api.create_binding(namespace, name, body, timeout=REQUEST_TIMEOUT)
            return

        def check() -> None:
            if fence.open_for() <= 0:
                raise Fenced()

        check()
        # The request must not outlive our claim to the lease.
        timeout = max(0.1, min(REQUEST_TIMEOUT, fence.lease_left()))
        _send_guard.check = check  # and again right before its bytes are written
        try:
            self.api.create_binding(namespace, name, body, timeout=timeout)
        finally:
            _send_guard.check = None

    def shutdown(self) -> None:
        self.binds.shutdown()
        self.others.shutdown()

    # -- Binding -----------------------------------------------------------------------------
    async def bind(self, pod: PodInfo, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            # The UID precondition makes a same-name replacement pod fail with 409, not get bound.
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            if not self.fence_open():
                raise Fenced()
            await self.binds.run(self._send_binding, pod.namespace, pod.name, body)
        except Fenced as exc:
            self.bind_errors[pod.uid] = exc
            raise
        except ApiError as exc:
            if exc.status in (404, 409):
                err: ApiError = BindConflict(409, exc.message) if exc.status == 409 else PodGone(404, exc.message)
                self.bind_errors[pod.uid] = err
                raise err from exc
            if never_stored(exc):
                raise  # refused before storage: a plain failure, the pod is retried
            # Ambiguous (a reset connection, a timeout, a 5xx while the API server went down):
            # the Binding may have been stored. Forgetting the assumption now would free the
            # slot while the pod holds it, and the next pod placed there overcommits the node.
            outcome = await self._resolve(pod, node, exc)
            if outcome == "bound":
                return
            if outcome in ("elsewhere", "gone"):
                err = BindConflict(409, exc.message) if outcome == "elsewhere" else PodGone(404, exc.message)
                self.bind_errors[pod.uid] = err
                raise err from exc
            raise

    async def _resolve(self, pod: PodInfo, node: str, cause: ApiError) -> str:
        """Read the pod until its fate is known: "bound" (to ``node``), "elsewhere", "gone" or
        "unbound". The assumption keeps holding the slot meanwhile; cancelling this (lease lost,
        shutdown) is the only other way out."""
        delay = RESOLVE_BACKOFF[0]
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = await self.binds.run(self.api.get_pod, pod.namespace, pod.name)
            except ApiError as exc:
                if exc.status == 404:
                    return "gone"
                log.warning(
                    "bind_outcome_unknown",
                    pod=pod.key,
                    node=node,
                    attempt=attempt,
                    bind_error=cause.message,
                    error=exc.message,
                )
                await asyncio.sleep(delay)
                delay = min(RESOLVE_BACKOFF[1], delay * 2)
                continue
            meta, spec = raw.get("metadata") or {}, raw.get("spec") or {}
            if str(meta.get("uid", "")) != pod.uid:
                return "gone"  # replaced by a same-name pod
            bound_to = str(spec.get("nodeName") or "")
            outcome = "unbound" if not bound_to else ("bound" if bound_to == node else "elsewhere")
            if outcome != "unbound":
                log.info("bind_outcome_resolved", pod=pod.key, node=node, outcome=outcome, bind_error=cause.message)
            return outcome

    # -- Events (events.k8s.io/v1) -----------------------------------------------------------
    def _event_body(
        self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str, now: float
    ) -> dict[str, Any]:
        # Event names follow the events library: <object>.<hex nanoseconds>.
        name = f"{pod.name}.{int(now * 1e9):x}"
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.hostname}",
            "action": action,
            "reason": reason,
            "type": etype,
            "note": note[:1024],
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
                "resourceVersion": pod.resource_version,
            },
        }

    async def event(self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str) -> None:
        """Record an Event; an isomorphic repeat within the window bumps the series instead."""
        now = self.clock()
        key = (pod.uid, reason, action, note)
        s = self._series.get(key)
        try:
            if s is not None and now - s.first < EVENT_SERIES_WINDOW:
                s.count += 1
                patch = {"series": {"count": s.count, "lastObservedTime": micro_time(now)}}
                await self._run(self.events_api.patch_event, pod.namespace, s.name, patch)
                return
            body = self._event_body(pod, controller, etype, reason, action, note, now)
            await self._run(self.events_api.create_event, pod.namespace, body)
            self._series[key] = _Series(body["metadata"]["name"], 1, now)
            if len(self._series) > 10000:
                self._prune(now)
        except ApiError as exc:
            # Events are best effort, as in client-go.
            if s is not None and exc.status == 404:
                self._series.pop(key, None)
            log.warning("event_write_failed", pod=pod.key, reason=reason, status=exc.status, error=exc.message)

    def _prune(self, now: float) -> None:
        for k, s in list(self._series.items()):
            if now - s.first >= EVENT_SERIES_WINDOW:
                del self._series[k]

    def forget_pod(self, uid: str) -> None:
        for k in [k for k in self._series if k[0] == uid]:
            del self._series[k]

    # -- PodScheduled condition --------------------------------------------------------------
    async def set_unschedulable(self, pod: PodInfo, reason: str, message: str, nominated: str | None = None) -> bool:
        """PodScheduled=False with reason and message; skipped when the pod already says so
        (upstream updatePod via podutil.UpdatePodCondition). ``nominated`` (not None) sets
        status.nominatedNodeName, "" clearing it, in the same patch. Returns whether it patched."""
        status = (pod.raw.get("status") or {}) if isinstance(pod.raw, dict) else {}
        nnn_change = nominated is not None and nominated != str(status.get("nominatedNodeName") or "")
        for c in status.get("conditions") or []:
            if (
                c.get("type") == "PodScheduled"
                and c.get("status") == "False"
                and c.get("reason") == reason
                and c.get("message") == message
                and not nnn_change
            ):
                return False
        now = self.clock()
        cond: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(now),
        }
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("lastTransitionTime"):
                cond["lastTransitionTime"] = c["lastTransitionTime"]  # status unchanged: keep it
        body: dict[str, Any] = {"status": {"conditions": [cond]}}
        if nnn_change:
            body["status"]["nominatedNodeName"] = nominated or None
        try:
            await self._run(self.events_api.patch_pod_status, pod.namespace, pod.name, body)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("pod_condition_update_failed", pod=pod.key, status=exc.status, error=exc.message)
            return False
        return True
