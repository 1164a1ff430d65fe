"""Leader election on a coordination.k8s.io/v1 Lease (client-go tools/leaderelection).

kube-scheduler's defaults: lease 15 s, renew deadline 10 s, retry 2 s. A candidate takes the
lease when it is free or when the holder has not renewed it for a lease duration *as observed
on the candidate's own clock* (never compares clocks across machines). The leader renews every
retry period; if it cannot renew within the renew deadline it has lost the lease.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol

import structlog

from scheduler.binder import ApiError, micro_time

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2


class LeadershipLost(Exception):
    pass


class LeaseAPI(Protocol):
    """Lease calls as dicts; ``get`` returns None when the Lease does not exist."""

    def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...


class KubeLeaseAPI:
    """LeaseAPI over the kubernetes client (blocking; the elector runs it in an executor)."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self.api = client.CoordinationV1Api(api_client)

    @staticmethod
    def _decode(resp: Any) -> dict[str, Any]:
        data = resp.read()
        resp.release_conn()
        return json.loads(data)

    def _call(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        try:
            # The renew deadline bounds each attempt; a call must not outlive it by much.
            return self._decode(fn(*args, _preload_content=False, _request_timeout=10))
        except Exception as exc:
            status = getattr(exc, "status", None)
            raise ApiError(int(status) if isinstance(status, int) else 0, str(getattr(exc, "reason", exc))) from exc

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call(self.api.read_namespaced_lease, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call(self.api.create_namespaced_lease, namespace, body)

    def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call(self.api.replace_namespaced_lease, name, namespace, body)


def default_identity() -> str:
    # kube-scheduler: hostname + "_" + a fresh UUID, so restarts are new candidates.
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
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
        sleep: Callable[[float], Any] = asyncio.sleep,
        executor: Executor | None = None,
        rng: random.Random | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.executor = executor
        self.rng = rng or random.Random()
        self.on_change = on_change
        self.observed: dict[str, Any] | None = None  # last seen spec of the lease
        self.observed_rv = ""
        self.observed_time = 0.0
        self.is_leader = False

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

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

    async def try_acquire_or_renew(self) -> bool:
        """One attempt (client-go tryAcquireOrRenew)."""
        try:
            lease = await self._call(self.api.get, self.namespace, self.name)
        except ApiError as exc:
            log.warning("lease_get_failed", lease=f"{self.namespace}/{self.name}", error=exc.message)
            return False
        now = self.clock()
        if lease is None:
            spec = self._spec(0, None)
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            try:
                created = await self._call(self.api.create, self.namespace, body)
            except ApiError as exc:
                log.info("lease_create_failed", error=exc.message, status=exc.status)
                return False
            self._observe(created, self.clock())
            return True
        spec = dict(lease.get("spec") or {})
        rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        if self.observed is None or spec != self.observed or rv != self.observed_rv:
            self._observe(lease, now)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self.observed_time + duration > now:
            return False  # held by another candidate and not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            new_spec = self._spec(transitions, spec.get("acquireTime"))
        else:
            new_spec = self._spec(transitions + 1, None)
        body = dict(lease)
        body["spec"] = new_spec
        try:
            updated = await self._call(self.api.replace, self.namespace, self.name, body)
        except ApiError as exc:
            # 409: someone else wrote the lease first.
            log.info("lease_update_failed", error=exc.message, status=exc.status)
            return False
        self._observe(updated, self.clock())
        return True

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        self.observed = dict(lease.get("spec") or {})
        self.observed_rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        self.observed_time = now

    async def acquire(self) -> None:
        """Block until this candidate holds the lease."""
        log.info("lease_acquiring", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        while True:
            if await self.try_acquire_or_renew():
                log.info("lease_acquired", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                self._set_leader(True)
                return
            await self.sleep(self.retry_period * (1 + self.rng.random() * JITTER_FACTOR))

    async def keep(self) -> None:
        """Renew until it fails for a renew deadline; then raise LeadershipLost."""
        while True:
            deadline = self.clock() + self.renew_deadline
            renewed = False
            while self.clock() < deadline:
                try:
                    ok = await asyncio.wait_for(
                        self.try_acquire_or_renew(), timeout=max(0.001, deadline - self.clock())
                    )
                except TimeoutError:
                    ok = False
                if ok:
                    renewed = True
                    break
                if self.clock() + self.retry_period >= deadline:
                    break
                await self.sleep(self.retry_period)
            if not renewed:
                self._set_leader(False)
                log.error("lease_lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                raise LeadershipLost(f"leaderelection lost for {self.namespace}/{self.name}")
            await self.sleep(self.retry_period)

    async def release(self) -> bool:
        """Give the lease up (client-go ReleaseOnCancel): holder cleared, 1 s duration."""
        if not self.is_leader:
            return False
        self._set_leader(False)
        try:
            lease = await self._call(self.api.get, self.namespace, self.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            spec = dict(lease.get("spec") or {})
            now = micro_time(self.wall())
            spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
            body = dict(lease)
            body["spec"] = spec
            await self._call(self.api.replace, self.namespace, self.name, body)
        except ApiError as exc:
            log.warning("lease_release_failed", error=exc.message)
            return False
        log.info("lease_released", lease=f"{self.namespace}/{self.name}")
        return True
