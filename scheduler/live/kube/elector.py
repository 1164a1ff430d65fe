"""Leader election on a coordination.k8s.io/v1 Lease (client-go tools/leaderelection), with a fence.

kube-scheduler's defaults: lease 15 s, renew deadline 10 s, retry 2 s. A candidate takes the
lease when it is free or when the holder has not renewed it for a lease duration *as observed
on the candidate's own clock* (never compares clocks across machines). The leader renews every
retry period.

Fencing (stricter than client-go, whose renew loop restarts its deadline after a long pause):
the leader counts from the *start* of its last successful renewal on the monotonic clock. Once
that is a renew deadline old, the fence is closed for good: ``open_for() <= 0`` and the
lease is lost, whatever happens next. The scheduling loop checks the fence before every cycle
and the binder right before every Binding, so a replica paused past its lease (SIGSTOP, a long
GC, a starved process) cannot act on its stale cache when it wakes, while another replica,
which waits a full lease duration, already schedules.

The elector runs in its own thread with its own API client and rate limit: neither a busy
event loop nor a queue of Bindings can delay a renewal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from scheduler.live.kube.transport import ApiError, KubeCoreAPI, TokenBucket, micro_time
from scheduler.live.metrics.client import REST

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2
CALL_TIMEOUT = 10.0  # one Lease request at most; shortened to what the renew deadline leaves
# kube-scheduler's leader-election healthz adaptor tolerance (cmd/kube-scheduler/app/options:
# NewLeaderHealthzAdaptor(20 s)): unhealthy when the leader's last renewal is older than the
# lease duration plus this.
HEALTHZ_TOLERANCE = 20.0


class LeadershipLost(Exception):
    pass


class ElectorConfigError(ValueError):
    """Timings the elector cannot work with, in client-go's words (NewLeaderElector)."""


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's NewLeaderElector checks, in its order. Config validation does not catch a
    renew deadline within the jittered retry period; without this the elector would fail later."""
    if lease_duration <= renew_deadline:
        raise ElectorConfigError("leaseDuration must be greater than renewDeadline")
    # Go truncates JitterFactor*retryPeriod to whole nanoseconds.
    if round(renew_deadline * 1e9) <= int(JITTER_FACTOR * round(retry_period * 1e9)):
        raise ElectorConfigError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if lease_duration < 1e-9:
        raise ElectorConfigError("leaseDuration must be greater than zero")
    if renew_deadline < 1e-9:
        raise ElectorConfigError("renewDeadline must be greater than zero")
    if retry_period < 1e-9:
        raise ElectorConfigError("retryPeriod must be greater than zero")


class LeaseAPI(Protocol):
    """Lease calls as dicts; ``get`` returns None when the Lease does not exist."""

    def get(self, namespace: str, name: str, timeout: float = ...) -> dict[str, Any] | None: ...

    def create(self, namespace: str, body: dict[str, Any], timeout: float = ...) -> dict[str, Any]: ...

    def replace(self, namespace: str, name: str, body: dict[str, Any], timeout: float = ...) -> dict[str, Any]: ...


class KubeLeaseAPI:
    """LeaseAPI over the writes' transport (blocking; called from the elector's thread)."""

    def __init__(self, core: KubeCoreAPI) -> None:
        self.core = core

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return f"{base}/{name}" if name else base

    def _call(self, method: str, path: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        answer = json.loads(self.core.request(method, path, body, timeout=max(0.1, timeout)))
        if not isinstance(answer, dict):
            raise ApiError(0, f"{method} {path}: the answer is not an object")
        return answer

    def get(self, namespace: str, name: str, timeout: float = CALL_TIMEOUT) -> dict[str, Any] | None:
        try:
            return self._call("GET", self._path(namespace, name), None, timeout)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, namespace: str, body: dict[str, Any], timeout: float = CALL_TIMEOUT) -> dict[str, Any]:
        return self._call("POST", self._path(namespace), body, timeout)

    def replace(self, namespace: str, name: str, body: dict[str, Any], timeout: float = CALL_TIMEOUT) -> dict[str, Any]:
        return self._call("PUT", self._path(namespace, name), body, timeout)


def default_identity() -> str:
    # kube-scheduler: hostname + "_" + a fresh UUID, so restarts are new candidates.
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    """Blocking core (``try_acquire_or_renew``, ``acquire_blocking``, ``renew_blocking``,
    ``release_blocking``) driven by its own thread; ``acquire``/``keep``/``release`` are the
    asyncio face the app awaits. ``open_for``/``lease_left`` make it the binder's Fence."""

    def __init__(
        self,
        api: LeaseAPI,
        name: str,
        namespace: str,
        identity: str | None = None,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] | None = None,
        limiter: TokenBucket | None = None,
        rng: random.Random | None = None,
        on_change: Callable[[bool], None] | None = None,
        on_slowpath: Callable[[], None] | None = None,
    ) -> None:
        check_timings(lease_duration, renew_deadline, retry_period)
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.wall = wall
        self._stop = threading.Event()
        self.sleep: Callable[[float], Any] = sleep if sleep is not None else self._stop.wait
        self.limiter = limiter
        self.rng = rng or random.Random()
        self.on_change = on_change
        self.on_slowpath = on_slowpath  # the leader renews through a GET (leader_election_slowpath_total)
        self.observed: dict[str, Any] | None = None  # last seen spec of the lease
        self.observed_lease: dict[str, Any] | None = None  # the whole object, for the fast renew path
        self.observed_rv = ""
        self.observed_time = 0.0
        self.is_leader = False
        # Monotonic time at which the last successful acquire/renew request was *sent*: the
        # server cannot have taken it earlier, so counting from here is never optimistic.
        self.last_renew = -math.inf
        self.lost_reason: str | None = None
        self.fence_closed = False
        self.taken_by: str | None = None  # another holder seen while we led
        self.renew_failures = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._acquired: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[str] | None = None

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _set_leader(self, value: bool) -> None:
        if value != self.is_leader:
            self.is_leader = value
            if self.on_change is not None:
                self.on_change(value)

    def _spec(self, transitions: int, acquire: str | None) -> dict[str, Any]:
        now = micro_time(self.wall())
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": acquire or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _throttle(self) -> None:
        if self.limiter is not None:
            wait = self.limiter.reserve()
            REST.limiter_waited(max(0.0, wait))
            if wait > 0:
                self.sleep(wait)

    # -- the fence ---------------------------------------------------------------------------
    def open_for(self) -> float:
        """Seconds left before the renew deadline passes (<= 0: fence closed)."""
        if not self.is_leader or self.lost_reason is not None or self.fence_closed:
            return 0.0
        left = self.last_renew + self.renew_deadline - self.clock()
        if left <= 0:
            # Sticky: a renewal that was in flight and lands later must not reopen it.
            self.fence_closed = True
        return left

    def lease_left(self) -> float:
        """Seconds until other candidates may take the lease, counted from our last renewal."""
        return self.last_renew + self.lease_duration - self.clock()

    def check(self, tolerance: float = HEALTHZ_TOLERANCE) -> str | None:
        """The healthz check (client-go LeaderElector.Check): an error while we lead but have
        not renewed for longer than the lease duration plus ``tolerance``."""
        if not self.is_leader:
            return None
        if self.clock() - self.last_renew > self.lease_duration + tolerance:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # -- one attempt (client-go tryAcquireOrRenew) -------------------------------------------
    def _observe(self, lease: dict[str, Any], now: float) -> None:
        self.observed = dict(lease.get("spec") or {})
        self.observed_lease = lease
        self.observed_rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        self.observed_time = now

    def _write(self, fn: Callable[..., dict[str, Any]], *args: Any, timeout: float) -> bool:
        self._throttle()
        sent = self.clock()
        try:
            written = fn(*args, timeout=timeout)
        except ApiError as exc:
            # 409: someone else wrote the lease first.
            log.info("lease_update_failed", lease=self.lease, error=exc.message, status=exc.status)
            return False
        self._observe(written, self.clock())
        self.last_renew = sent
        return True

    def try_acquire_or_renew(self, timeout: float = CALL_TIMEOUT) -> bool:
        if self.is_leader and self.observed_lease is not None and self.observed is not None:
            # Fast path (as client-go): the leader updates the record it last wrote, no GET.
            body = dict(self.observed_lease)
            body["spec"] = self._spec(int(self.observed.get("leaseTransitions") or 0), self.observed.get("acquireTime"))
            if self._write(self.api.replace, self.namespace, self.name, body, timeout=timeout):
                return True
        self._throttle()
        try:
            lease = self.api.get(self.namespace, self.name, timeout=timeout)
        except ApiError as exc:
            log.warning("lease_get_failed", lease=self.lease, error=exc.message, status=exc.status)
            return False
        now = self.clock()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, None),
            }
            return self._write(self.api.create, self.namespace, body, timeout=timeout)
        spec = dict(lease.get("spec") or {})
        rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        if self.observed is None or spec != self.observed or rv != self.observed_rv:
            self._observe(lease, now)
        holder = spec.get("holderIdentity") or ""
        if self.is_leader and holder != self.identity:
            self.taken_by = holder or "(released)"
            return False
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self.observed_time + duration > now:
            return False  # held by another candidate and not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        if self.is_leader and self.on_slowpath is not None:
            self.on_slowpath()
        if holder == self.identity:
            new_spec = self._spec(transitions, spec.get("acquireTime"))
        else:
            new_spec = self._spec(transitions + 1, None)
        body = dict(lease)
        body["spec"] = new_spec
        return self._write(self.api.replace, self.namespace, self.name, body, timeout=timeout)

    # -- blocking loops (the elector thread) -------------------------------------------------
    def acquire_blocking(self) -> bool:
        """Until this candidate holds the lease (True) or stop() (False)."""
        log.info("lease_acquiring", lease=self.lease, identity=self.identity)
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                self.fence_closed = False
                self._set_leader(True)
                log.info("lease_acquired", lease=self.lease, identity=self.identity)
                return True
            self.sleep(self.retry_period * (1 + self.rng.random() * JITTER_FACTOR))
        return False

    def renew_blocking(self) -> str | None:
        """Renew every retry period until the fence closes (returns why) or stop() (None)."""
        while not self._stop.is_set():
            left = self.open_for()
            if left <= 0:
                return self._lose(f"no successful renewal for {self.clock() - self.last_renew:.1f}s "
                                  f"(renew deadline {self.renew_deadline:g}s)")
            ok = self.try_acquire_or_renew(timeout=min(CALL_TIMEOUT, left))
            if self.taken_by is not None:
                return self._lose(f"lease now held by {self.taken_by}")
            if ok:
                self.renew_failures = 0
            else:
                self.renew_failures += 1
                log.warning("lease_renew_failed", lease=self.lease, attempt=self.renew_failures,
                            age=round(self.clock() - self.last_renew, 3))
            self.sleep(self.retry_period)
        return None

    def _lose(self, reason: str) -> str:
        self.lost_reason = reason
        self._set_leader(False)
        log.error("lease_lost", lease=self.lease, identity=self.identity, reason=reason)
        return reason

    def release_blocking(self) -> bool:
        """Give the lease up (client-go ReleaseOnCancel): holder cleared, 1 s duration."""
        if not self.is_leader:
            return False
        self._set_leader(False)
        try:
            lease = self.api.get(self.namespace, self.name, timeout=CALL_TIMEOUT)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            spec = dict(lease.get("spec") or {})
            now = micro_time(self.wall())
            spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
            body = dict(lease)
            body["spec"] = spec
            self.api.replace(self.namespace, self.name, body, timeout=CALL_TIMEOUT)
        except ApiError as exc:
            log.warning("lease_release_failed", lease=self.lease, error=exc.message)
            return False
        log.info("lease_released", lease=self.lease)
        return True

    # -- the thread and its asyncio face -----------------------------------------------------
    def _notify(self, fut: asyncio.Future[Any] | None, value: Any) -> None:
        if fut is None or self._loop is None:
            return

        def put() -> None:
            if not fut.done():
                fut.set_result(value)

        with contextlib.suppress(RuntimeError):  # loop closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(put)

    def _main(self) -> None:
        try:
            if not self.acquire_blocking():
                return
            self._notify(self._acquired, None)
            reason = self.renew_blocking()
        except BaseException as exc:  # the thread must never die silently while leading
            reason = self._lose(f"elector thread failed: {exc!r}")
        if reason is not None:
            self._notify(self._lost, reason)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._acquired = self._loop.create_future()
        self._lost = self._loop.create_future()
        self._thread = threading.Thread(target=self._main, name="leader-elector", daemon=True)
        self._thread.start()

    async def acquire(self) -> None:
        """Start the elector thread; return once this candidate holds the lease."""
        self.start()
        assert self._acquired is not None
        await asyncio.shield(self._acquired)

    async def keep(self) -> None:
        """Return (raising LeadershipLost) when the lease is lost."""
        assert self._lost is not None
        reason = await asyncio.shield(self._lost)
        raise LeadershipLost(f"leaderelection lost for {self.lease}: {reason}")

    def stop(self) -> None:
        self._stop.set()

    async def release(self) -> bool:
        """Stop renewing, wait for the thread, then release the lease if we still hold it."""
        self.stop()
        loop = asyncio.get_running_loop()
        if self._thread is not None:
            await loop.run_in_executor(None, self._thread.join, CALL_TIMEOUT + 1)
        if self.lost_reason is not None or self.open_for() <= 0:
            return False
        return await loop.run_in_executor(None, self.release_blocking)
