"""The cluster watch, through kopf embedded as one task (the only module that imports kopf).

Only ``@kopf.on.event`` handlers: they observe and write nothing back (no finalizers, no
progress annotations on pods). Scanning and posting are off; the operator is standalone (no
peering). Credentials come from the caller (the kubernetes client's config loading, done in
app.py), handed to kopf through a custom login handler.

Each raw body is converted once (objects.py, via the handlers) and fed to the cache and queue.
The watcher also records which objects it has seen, so the app can wait until the cache holds
everything a LIST returned (the informer "synced" barrier) before scheduling.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import kopf
import structlog

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Credentials:
    server: str
    ca_path: str | None = None
    insecure: bool = False
    token: str | None = None
    scheme: str | None = None
    username: str | None = None
    password: str | None = None
    certificate_path: str | None = None
    private_key_path: str | None = None


class Handlers(Protocol):
    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None: ...


# kind -> kopf resource selector args
RESOURCES: dict[str, tuple[str, ...]] = {
    "Pod": ("v1", "pods"),
    "Node": ("v1", "nodes"),
    "Namespace": ("v1", "namespaces"),
    "Service": ("v1", "services"),
    "ReplicationController": ("v1", "replicationcontrollers"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
}


def make_settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.scanning.disabled = True  # fixed resources, no CRD/namespace observation
    s.posting.enabled = False  # never write k8s Events about our handlers
    s.peering.standalone = True
    s.peering.mandatory = False
    # Watch requests end server-side after ~5 min and reconnect; a silent stream is cut at 10 min.
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    s.watching.connect_timeout = 10
    s.watching.reconnect_backoff = 0.5
    s.networking.connect_timeout = 10
    s.networking.request_timeout = 60
    s.process.ultimate_exiting_timeout = None  # we stop kopf through its stop flag
    s.queueing.exit_timeout = 1.0
    return s


class Watcher:
    def __init__(self, handlers: Handlers, credentials: Callable[[], Credentials]) -> None:
        self.handlers = handlers
        self.credentials = credentials
        self.registry = kopf.OperatorRegistry()
        self.settings = make_settings()
        self.seen: dict[str, set[str]] = {kind: set() for kind in RESOURCES}
        self.events = 0
        self.errors = 0
        self.stop_flag = asyncio.Event()
        self.ready_flag = asyncio.Event()
        self._register()

    def _register(self) -> None:
        reg = self.registry

        @kopf.on.login(registry=reg)
        def login(**_: Any) -> kopf.ConnectionInfo:
            c = self.credentials()
            return kopf.ConnectionInfo(
                server=c.server,
                ca_path=c.ca_path,
                insecure=c.insecure,
                username=c.username or None,
                password=c.password or None,
                scheme=c.scheme,
                token=c.token,
                certificate_path=c.certificate_path,
                private_key_path=c.private_key_path,
            )

        for kind, sel in RESOURCES.items():
            kopf.on.event(*sel, registry=reg, id=f"watch-{kind.lower()}")(self._make_handler(kind))

    def _make_handler(self, kind: str) -> Callable[..., Any]:
        # async: kopf runs sync handlers in a thread pool; the cache and queue are single-threaded.
        async def handler(event: dict[str, Any], **_: Any) -> None:
            etype = event.get("type")
            raw = event.get("object") or {}
            self.dispatch(kind, etype, raw)

        return handler

    def dispatch(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        """Feed one watch event to the handlers (separate from kopf so tests can call it)."""
        self.events += 1
        uid = str((raw.get("metadata") or {}).get("uid", ""))
        if uid:
            self.seen[kind].add(uid)
        raw = dict(raw)
        raw.setdefault("kind", kind)
        meta = raw.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            # As kube-scheduler's pod informer transform (scheduler.go newPodInformer): nothing
            # reads managedFields, and PodInfo/NodeInfo keep their raw body for their lifetime.
            raw["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        try:
            if kind == "Pod":
                self.handlers.on_pod(etype, raw)
            elif kind == "Node":
                self.handlers.on_node(etype, raw)
            elif kind == "Namespace":
                self.handlers.on_namespace(etype, raw)
            else:
                self.handlers.on_owner(kind, etype, raw)
        except Exception:
            # One bad object must not stop the watch of all others.
            self.errors += 1
            meta = raw.get("metadata") or {}
            log.exception("watch_event_failed", kind=kind, event=etype, name=meta.get("name"),
                          namespace=meta.get("namespace"))

    def has_seen(self, kind: str, uids: set[str]) -> set[str]:
        """The uids of ``uids`` this watcher has not delivered yet."""
        return uids - self.seen[kind]

    async def run(self) -> None:
        await kopf.operator(
            registry=self.registry,
            settings=self.settings,
            standalone=True,
            clusterwide=True,
            stop_flag=self.stop_flag,
            ready_flag=self.ready_flag,
        )

    def stop(self) -> None:
        self.stop_flag.set()
