"""The Binding POST (upstream DefaultBinder's client call) and, when its answer is lost,
reading the pod until the Binding's fate is known.

The Binder also holds the scheduler's two API lanes: Bindings (and preemption's writes) on
one, Events and pod status patches (the Recorder's writes) on the other, each with its own
client and rate limit. A Binding leaves only while the lease fence is open (see fence.py).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from typing import Any

import structlog

from scheduler.live.kube.fence import Fence, fence_guard, send_fenced
from scheduler.live.kube.transport import REQUEST_TIMEOUT, ApiError, CoreAPI, Fenced, Lane, TokenBucket, never_stored
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

RESOLVE_BACKOFF = (0.5, 5.0)  # first and longest wait between reads of a pod whose Binding may have landed


def binding_body(pod: PodInfo, node: str) -> dict[str, Any]:
    """The Binding of ``pod`` to ``node`` (upstream DefaultBinder's)."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        # The UID precondition makes a same-name replacement pod fail with 409, not get bound.
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def _loop_ready(api: Any) -> bool:
    ready = getattr(api, "loop_ready", None)
    return bool(ready is not None and ready())


class BindConflict(ApiError):
    """409: the pod is already bound (or being deleted, or was replaced): not ours to bind."""


class PodGone(ApiError):
    """404: the pod does not exist any more."""


class Binder:
    """The ``client`` of the framework Handle (DefaultBinder calls ``bind``). One instance is
    shared by all profiles.

    ``api``/``limiter`` carry Bindings; ``events_api``/``events_limiter`` carry Events and pod
    status patches (default: the same API object, a bucket of its own)."""

    def __init__(
        self,
        api: CoreAPI,
        limiter: TokenBucket | None = None,
        *,
        executor: Executor | None = None,
        workers: int = 16,
        events_api: CoreAPI | None = None,
        events_limiter: TokenBucket | None = None,
        events_executor: Executor | None = None,
        events_workers: int = 4,
        fence: Fence | None = None,
    ) -> None:
        self.api = api
        self.events_api = events_api if events_api is not None else api
        self.binds = Lane(limiter or TokenBucket(50, 100), executor, workers=workers, name="bind")
        self.events = Lane(events_limiter or TokenBucket(50, 100), events_executor, workers=events_workers,
                           name="events")
        self.fence = fence
        # Bindings and Events sent by the event loop itself where the API objects can (see
        # loophttp.py); injected executors (tests) keep the threads.
        self.binds.loop_io = executor is None and _loop_ready(api)
        self.events.loop_io = events_executor is None and _loop_ready(self.events_api)

    @property
    def limiter(self) -> TokenBucket:
        return self.binds.limiter

    @property
    def writes(self) -> int:
        """API writes issued (metrics, tests)."""
        return self.binds.writes + self.events.writes

    def fence_open(self) -> bool:
        return self.fence is None or self.fence.open_for() > 0

    def _send_binding(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # Runs in a bind thread: the last check before the request leaves.
        if self.fence is None:
            self.api.create_binding(namespace, name, body, timeout=REQUEST_TIMEOUT)
        else:
            send_fenced(self.fence, self.api.create_binding, namespace, name, body)

    async def _send_binding_async(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        # On the event loop: the fence is checked now and again right before the bytes leave.
        api: Any = self.api
        if self.fence is None:
            await api.create_binding_async(namespace, name, body, REQUEST_TIMEOUT)
        else:
            check, timeout = fence_guard(self.fence)
            await api.create_binding_async(namespace, name, body, timeout, check)

    def shutdown(self) -> None:
        self.binds.shutdown()
        self.events.shutdown()
        for api in (self.api, self.events_api):
            close = getattr(api, "close_loop_io", None)
            if close is not None:
                close()

    async def bind(self, pod: PodInfo, node: str) -> None:
        """Raises ``Fenced`` (not sent), ``BindConflict`` or ``PodGone`` (not ours to bind any
        more), or another ``ApiError`` (not bound; the pod is retried)."""
        body = binding_body(pod, node)
        try:
            if not self.fence_open():
                raise Fenced()
            if self.binds.loop_io:
                await self.binds.run_async(self._send_binding_async, pod.namespace, pod.name, body)
            else:
                await self.binds.run(self._send_binding, pod.namespace, pod.name, body)
        except Fenced:
            raise
        except ApiError as exc:
            if exc.status == 409:
                raise BindConflict(409, exc.message) from exc
            if exc.status == 404:
                raise PodGone(404, exc.message) from exc
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
