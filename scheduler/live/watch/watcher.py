"""The cluster watch: one list-then-watch loop (a reflector) per kind, on kopf's client layer
(the only module that imports kopf).

kopf's operator machinery (per-object workers, handler kwargs, progress storage) cost more CPU
than the scheduling itself at a few thousand nodes, so the watcher uses kopf only below it: the
credentials vault and its authenticated, retrying ``api.request`` on kopf's aiohttp session.
The loop is kopf's ``continuous_watch`` shape (paged LIST, then WATCH from the list's
resourceVersion, re-list on 410 Gone) with three differences that matter here:

* every (re-)list ends with client-go's Replace: objects the list lacks are deleted from the
  cache with the events that implies (informer.Store), so a watch gap cannot leave deleted pods
  holding capacity or deleted nodes in the snapshot; a periodic re-list is the backstop;
* bodies are decoded with orjson (lists and watch lines), a list's items while the rest of the
  body is still arriving, Pods and Nodes without the bytes of their managedFields (listdecode),
  and no-op updates are dropped before any parsing (informer.Store);
* pods are filtered server-side as kube-scheduler does (no Succeeded/Failed pods).

Kinds a plugin names (its informers, or cluster events it registers on ``<plural>.<version>.<group>``)
are watched the same way, keyed by that name, and handed whole to the handlers' ``on_resource``.

The first completed LIST of every kind is the informer "synced" barrier (``synced``).

Before the first LIST the watcher asks the API server which of its kinds it serves
(discovery.py) and stops with one line (``NotServed``) if any is missing. A LIST or WATCH the
API server forbids (403) or does not serve (404) is reported once per kind and verb, in one
line naming the kind and the permission, then retried quietly: RBAC granted later is picked up,
as kube-scheduler's reflectors pick it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import kopf
import structlog
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import auth as kopf_auth
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.structs import credentials as kopf_credentials

from scheduler.framework.informers import GroupVersionResource
from scheduler.live.metrics.client import REST, host_of
from scheduler.live.watch.discovery import (
    Served,
    Target,
    discovery_path,
    group_versions,
    rbac_resource,
    resources_of,
    unserved,
    unserved_message,
)
from scheduler.live.watch.informer import DELETED, Store, store_for
from scheduler.live.watch.listdecode import SPEC_AFTER_METADATA, ListDecoder, iter_lines, loads
from scheduler.model.kinds import DRA_KINDS, KINDS, STORAGE_KINDS, WATCHED_KINDS, why_watched
from scheduler.model.schema import ObjectError

if TYPE_CHECKING:
    from scheduler.live.kube.clients import Credentials

log = structlog.get_logger(__name__)
_kopf_logger = logging.getLogger("kopf.pyscheduler")
# kopf logs each attempt of a request it retries; the reflector reports the request's final
# failure itself (once per kind for a 403 or 404), so kopf's lines would only repeat it.
_kopf_logger.setLevel(logging.CRITICAL)


class Handlers(Protocol):
    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_storage(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_pdb(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_pod_group(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_resource(self, resource: str, etype: str | None, raw: dict[str, Any]) -> None: ...


# kube-scheduler's pod informer skips finished pods (scheduler.go, NewInformerFactory): they hold
# nothing and are never scheduled; a pod that finishes arrives as a DELETED event.
FIELD_SELECTORS: dict[str, str] = {"Pod": "status.phase!=Succeeded,status.phase!=Failed"}


@dataclass(slots=True)
class WatchSettings:
    page_size: int = 500  # items per LIST page (client-go's pager default)
    initial_from_cache: bool = True  # first LIST with resourceVersion=0 (the watch cache)
    server_timeout: int = 300  # the API server ends each WATCH after this; we resume from the last RV
    connect_timeout: float = 10.0
    request_timeout: float = 60.0  # one LIST page
    resync_period: float = 600.0  # re-list this often even without a watch error (backstop)
    backoff: float = 0.5  # first retry delay after a failed list/watch; doubles up to max_backoff
    max_backoff: float = 5.0  # kopf's request already retried for ~8 s before the reflector backs off
    # A watch stream that sends no byte for this long is given up and resumed from the last
    # resourceVersion seen, so one held open and silent (a broken proxy, a half-dead connection)
    # costs at most this long instead of the request's total timeout (server_timeout + 30 s).
    # A healthy stream of a quiet kind can be this quiet too (the watch cache's minutely
    # bookmarks carry no newer resourceVersion for a kind without events, and are not sent):
    # its resume is one cheap request. The fault tests (e2e/test_faults.py) shorten it through
    # PYSCHED_WATCH_IDLE_TIMEOUT.
    idle_timeout: float = field(default_factory=lambda: _env_seconds("PYSCHED_WATCH_IDLE_TIMEOUT", 90.0))


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


class NotServed(Exception):
    """The API server does not serve kinds the scheduler watches; ``str()`` is the one line."""


class _Relist(Exception):
    """The watch cannot resume (410 Gone, another kind's gap, or the resync is due): list again.
    ``gap``: events were lost, so every kind re-lists before scheduling goes on."""

    def __init__(self, reason: str, gap: bool = False) -> None:
        super().__init__(reason)
        self.gap = gap


def make_kopf_settings(ws: WatchSettings) -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.networking.connect_timeout = ws.connect_timeout
    s.networking.request_timeout = ws.request_timeout
    # kopf's request retries transient errors (5xx, 429, connection refused) with these delays
    # before escalating; the reflector then backs off and re-lists.
    s.networking.error_backoffs = [0.5, 1, 2, 4]
    return s


def _connection_info(c: Credentials) -> kopf.ConnectionInfo:
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


class Watcher:
    def __init__(
        self,
        handlers: Handlers,
        credentials: Callable[[], Credentials],
        settings: WatchSettings | None = None,
        kinds: Iterable[str] = WATCHED_KINDS,
        scheduler_names: Iterable[str] | None = None,
        on_error: Callable[[str], None] | None = None,
        resources: Mapping[str, str] | None = None,
        informer_users: Collection[str] = (),
    ) -> None:
        """``resources``: kinds plugins named, ``<plural>.<version>.<group>`` -> collection path,
        watched like ours and delivered whole (no fingerprint) to ``handlers.on_resource``."""
        self.handlers = handlers
        # The enabled plugins that asked for informers (what the lines about a kind name).
        self.informer_users = frozenset(informer_users)
        self.on_error = on_error  # called with the kind of an object that could not be handled
        self.credentials = credentials
        self._server_host: str | None = None  # host:port of the API server, for rest_client_*
        self.settings = settings or WatchSettings()
        self.kopf_settings = make_kopf_settings(self.settings)
        self.resources: dict[str, str] = dict(resources or {})
        self.kinds = tuple(kinds) + tuple(r for r in self.resources if r not in kinds)
        self.stores: dict[str, Store] = {
            kind: Store(kind) if kind in self.resources else store_for(kind) for kind in self.kinds
        }
        # Unbound pods of other schedulers are dropped before parsing (None: deliver all).
        self.scheduler_names = frozenset(scheduler_names) if scheduler_names is not None else None
        self.events = 0  # events delivered to the handlers
        self.received = 0  # events read from the API (delivered or not)
        self.errors = 0
        self.relists: dict[str, int] = {kind: 0 for kind in self.kinds}
        self.synced = asyncio.Event()
        self._synced_kinds: set[str] = set()
        # Kinds whose view may miss events (start-up, or after a gap) until their next list is in;
        # ``fresh`` is set when there are none. The scheduling loop waits on it, so no cycle sees
        # one kind re-listed and another not yet (pods freed but a deleted node still there).
        self._stale: set[str] = set(self.kinds)
        self.fresh = asyncio.Event()
        self._watching: set[str] = set()
        self._interrupt: dict[str, asyncio.Event] = {kind: asyncio.Event() for kind in self.kinds}
        self._stop = asyncio.Event()
        self.vault: kopf_credentials.Vault | None = None
        # (kind, verb, status) already reported; cleared for a kind once its LIST succeeds.
        self._reported: set[tuple[str, str, int]] = set()

    # -- delivery ------------------------------------------------------------------------------
    def dispatch(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        """Feed one event through the store (no-op filter, Replace bookkeeping) to the handlers.
        A body the store cannot even key is refused like one the handlers refuse."""
        self.received += 1
        try:
            self._filter(kind, etype, raw)
        except Exception as exc:
            self._refused(kind, etype, raw, exc, None)

    def _filter(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        if not isinstance(raw, dict):
            raise ObjectError(kind, "", "", f"expected an object, got {type(raw).__name__}")
        meta = raw.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            # As kube-scheduler's informer transform: nothing reads managedFields, and the store,
            # PodInfo and NodeInfo keep their raw body for the object's lifetime. (Pods and
            # Nodes mostly arrive without them already: drop_managed_fields.)
            raw["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        store = self.stores.get(kind)
        if store is not None:
            delivered = store.apply(etype, raw)
            if delivered is None:
                return
            etype = delivered
        if kind == "Pod" and self.scheduler_names is not None and etype != DELETED:
            spec = raw.get("spec") or {}
            name = spec.get("schedulerName") or "default-scheduler"
            if not spec.get("nodeName") and name not in self.scheduler_names:
                return
        self._deliver(kind, etype, raw)

    def _deliver(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        self.events += 1
        try:
            if kind == "Pod":
                self.handlers.on_pod(etype, raw)
            elif kind == "Node":
                self.handlers.on_node(etype, raw)
            elif kind == "Namespace":
                self.handlers.on_namespace(etype, raw)
            elif kind in STORAGE_KINDS or kind in DRA_KINDS:
                self.handlers.on_storage(kind, etype, raw)
            elif kind == "PodDisruptionBudget":
                self.handlers.on_pdb(etype, raw)
            elif kind == "PodGroup":
                self.handlers.on_pod_group(etype, raw)
            elif kind in self.resources:
                self.handlers.on_resource(kind, etype, raw)
            else:
                if "kind" not in raw:
                    raw["kind"] = kind
                self.handlers.on_owner(kind, etype, raw)
        except Exception as exc:
            self._refused(kind, etype, raw, exc, self.stores.get(kind))

    def _refused(self, kind: str, etype: str | None, raw: Any, exc: Exception, store: Store | None) -> None:
        """One bad object must not stop the watch of all others: its last good version stays in
        the cache, and the next re-list offers it again (``store`` forgets this version)."""
        self.errors += 1
        if store is not None and etype != DELETED:
            store.forget(raw)
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        fields: dict[str, Any] = {"kind": kind, "watch_event": etype, "name": meta.get("name"),
                                  "namespace": meta.get("namespace")}
        if kind in ("Pod", "Node"):
            fields[kind.lower()] = (f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                                    if kind == "Pod" else meta.get("name"))
        if isinstance(exc, ObjectError):
            log.error("object_rejected", field=exc.path, error=str(exc), **fields)
        else:
            log.exception("watch_event_failed", **fields)
        if self.on_error is not None:
            self.on_error(kind)

    def begin_list(self, kind: str) -> None:
        self.stores[kind].begin_list()

    def end_list(self, kind: str) -> int:
        """Replace: deliver deletes for what the completed list lacked; mark the kind synced."""
        gone = self.stores[kind].end_list()
        for etype, raw in gone:
            self._deliver(kind, etype, dict(raw))
        if gone:
            log.warning("relist_deleted", kind=kind, count=len(gone))
        if kind not in self._synced_kinds:
            self._synced_kinds.add(kind)
            if self._synced_kinds.issuperset(self.kinds):
                self.synced.set()
        self._stale.discard(kind)
        if not self._stale:
            self.fresh.set()
        return len(gone)

    def gap(self, origin: str) -> None:
        """``origin``'s watch lost events (410 Gone): the others may have too (an API server
        restart, a frozen process). Every kind re-lists; scheduling waits for all of them."""
        if self.fresh.is_set():  # once per gap, not once per kind that notices it
            log.warning("watch_gap", kind=origin, relisting=sorted(self.kinds))
        self._stale.update(self.kinds)
        self.fresh.clear()
        for kind in self._watching:
            if kind != origin:
                self._interrupt[kind].set()

    # -- API -----------------------------------------------------------------------------------
    def _url(self, kind: str, params: dict[str, str]) -> str:
        sel = FIELD_SELECTORS.get(kind)
        if sel:
            params = {**params, "fieldSelector": sel}
        path = self.resources.get(kind) or KINDS[kind].path
        return f"{path}?{urllib.parse.urlencode(params)}"

    async def _get(self, url: str, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        # One rest_client_* observation per request, until the response headers (as client-go
        # times a watch); kopf's own retries of a transient failure are inside it.
        started = time.perf_counter()
        try:
            resp: aiohttp.ClientResponse = await kopf_api.request(
                "get", url, settings=self.kopf_settings, timeout=timeout, logger=_kopf_logger
            )
        except kopf_errors.APIError as exc:
            REST.request("GET", self._host(), exc.status, time.perf_counter() - started, 0, None)
            raise
        except Exception:
            REST.request("GET", self._host(), None, time.perf_counter() - started, 0, None)
            raise
        REST.request("GET", self._host(), resp.status, time.perf_counter() - started, 0, resp.content_length)
        return resp

    def target(self, kind: str) -> Target:
        """(group/version, plural) of a watched kind: ours, or a resource a plugin named."""
        k = KINDS.get(kind)
        if k is not None:
            return k.api_version, k.plural
        gvr = GroupVersionResource.parse(kind)
        return gvr.api_version, gvr.resource

    def _why(self, kind: str) -> str:
        if kind in KINDS:
            return why_watched(kind, self.informer_users)
        return "a plugin (an informer it asked for, or a cluster event it registered)"

    async def discover(self) -> Served:
        """Which of the watched kinds' group/versions and resources the API server serves;
        raises NotServed with one line if any kind is missing. A discovery the API server
        forbids is reported and skipped: the LISTs then say what is wrong."""
        ws = self.settings
        timeout = aiohttp.ClientTimeout(total=ws.request_timeout, sock_connect=ws.connect_timeout)
        served: dict[str, frozenset[str] | None] = {}
        backoff = ws.backoff
        targets = {kind: self.target(kind) for kind in self.kinds}
        pending = list(group_versions(targets.values()))
        while pending and not self._stop.is_set():
            gv = pending[0]
            path = discovery_path(gv)
            try:
                resp = await self._get(path, timeout)
                async with resp:
                    served[gv] = resources_of(loads(await resp.read()))
            except kopf_errors.APINotFoundError:
                served[gv] = None
            except kopf_errors.APIForbiddenError as exc:
                log.warning("discovery_forbidden", group_version=gv, permission=f"get {path}",
                            reason=exc.message or str(exc))
            except (kopf_errors.APIError, aiohttp.ClientError, TimeoutError) as exc:
                log.warning("discovery_failed", group_version=gv, error=repr(exc), retry_in=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, ws.max_backoff)
                continue
            pending.pop(0)
        missing = unserved(targets, served)
        if missing:
            raise NotServed(unserved_message(missing, targets, served, self._why))
        log.info("api_discovered", group_versions=sorted(served), kinds=list(self.kinds))
        return served

    def _report(self, kind: str, verb: str, exc: kopf_errors.APIClientError) -> bool:
        """One line per kind, verb and status (403, 404) until the kind lists again; False when
        this failure was already reported."""
        key = (kind, verb, exc.status)
        if key in self._reported:
            return False
        self._reported.add(key)
        target = self.target(kind)
        reason = exc.message or str(exc)
        if exc.status == 403:
            log.error("watch_forbidden", kind=kind, permission=f"{verb} {rbac_resource(target)} (all namespaces)",
                      reason=reason, retrying=True)
        else:
            log.error("watch_not_served", kind=kind, resource=f"{target[0]} {target[1]}", verb=verb,
                      reason=reason, retrying=True)
        return True
    def _host(self) -> str:
        if self._server_host is None:
            self._server_host = host_of(self.credentials().server)
        return self._server_host

    async def list_kind(self, kind: str, initial: bool = False) -> str:
        """One LIST, delivered item by item, closed by Replace. Returns the list's RV.

        The first list asks for resourceVersion=0, as client-go's reflector does: the API server
        answers from its watch cache in one response, several times faster than a consistent
        paged read at thousands of objects. Re-lists (the watch fell behind, or the resync) are
        consistent reads (no resourceVersion) in pages, which never go back in time."""
        ws = self.settings
        timeout = aiohttp.ClientTimeout(total=ws.request_timeout, sock_connect=ws.connect_timeout)
        params = {"resourceVersion": "0"} if initial and ws.initial_from_cache else {"limit": str(ws.page_size)}
        self.begin_list(kind)
        start, pages = time.monotonic(), 0
        try:
            rv = ""
            while True:
                pages += 1
                resp = await self._get(self._url(kind, params), timeout)
                decoder = ListDecoder(trim=kind in SPEC_AFTER_METADATA)
                async with resp:
                    n = 0
                    async for item in decoder.items(resp.content):
                        self.dispatch(kind, None, item)
                        n += 1
                        if n % 500 == 0:
                            await asyncio.sleep(0)  # a big list must not freeze the loop (health, lease)
                meta = decoder.meta
                rv = str(meta.get("resourceVersion") or rv)
                cont = meta.get("continue")
                if not cont:
                    break
                params["continue"] = cont
                await asyncio.sleep(0)
        except BaseException:
            self.stores[kind].abort_list()
            raise
        gone = self.end_list(kind)
        log.info("listed", kind=kind, objects=len(self.stores[kind]), pages=pages, deleted=gone,
                 seconds=round(time.monotonic() - start, 3))
        return rv

    async def watch_kind(self, kind: str, rv: str, deadline: float) -> str:
        """WATCH from ``rv`` until the server ends the request; returns the last RV seen.
        Raises _Relist on 410 Gone or when the resync deadline passes."""
        ws = self.settings
        left = int(deadline - time.monotonic())
        if left <= 0:
            raise _Relist("resync")
        server_timeout = max(1, min(ws.server_timeout, left))
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": rv,
            "timeoutSeconds": str(server_timeout),
        }
        timeout = aiohttp.ClientTimeout(total=server_timeout + 30, sock_connect=ws.connect_timeout,
                                        sock_read=ws.idle_timeout)
        try:
            resp = await self._get(self._url(kind, params), timeout)
        except kopf_errors.APIClientError as exc:
            if exc.status == 410:
                raise _Relist("410 on watch", gap=True) from None
            raise
        trim = kind in SPEC_AFTER_METADATA
        async with resp:
            async for lines in iter_lines(resp.content):
                for line in lines:
                    ev = loads(line, trim)
                    etype = ev.get("type")
                    obj = ev.get("object") or {}
                    if etype == "ERROR":
                        if obj.get("code") == 410:
                            raise _Relist("410 in watch", gap=True)
                        raise RuntimeError(f"watch error: {obj.get('message') or obj}")
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        self.dispatch(kind, etype, obj)
                await asyncio.sleep(0)  # let cycles and the other watches run between batches
        return rv

    async def reflect(self, kind: str) -> None:
        """List, then watch, forever; re-list on 410, on the resync deadline and after errors."""
        ws = self.settings
        backoff = ws.backoff
        first = True
        while not self._stop.is_set():
            verb = "list"
            try:
                if not first:
                    self.relists[kind] += 1
                rv = await self.list_kind(kind, initial=first)
                first = False
                backoff = ws.backoff
                self._reported = {r for r in self._reported if r[0] != kind}
                deadline = time.monotonic() + ws.resync_period * random.uniform(0.9, 1.1)
                verb = "watch"
                await self._watch_phase(kind, rv, deadline)
            except _Relist as why:
                log.info("relist", kind=kind, reason=str(why))
                if why.gap:
                    self.gap(kind)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.errors += 1
                if isinstance(exc, kopf_errors.APIForbiddenError | kopf_errors.APINotFoundError):
                    # Reported once; kube-scheduler's reflector retries such a LIST forever too.
                    if not self._report(kind, verb, exc):
                        log.debug("watch_failed", kind=kind, error=repr(exc), retry_in=backoff)
                else:
                    log.warning("watch_failed", kind=kind, error=repr(exc), retry_in=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, ws.max_backoff)

    async def _watch_phase(self, kind: str, rv: str, deadline: float) -> None:
        """Watch (resuming after drops) until a re-list is due; another kind's gap interrupts."""
        interrupt = self._interrupt[kind]
        interrupt.clear()
        self._watching.add(kind)
        try:
            while True:
                wt = asyncio.create_task(self.watch_kind(kind, rv, deadline))
                it = asyncio.create_task(interrupt.wait())
                try:
                    await asyncio.wait({wt, it}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for t in (wt, it):
                        if not t.done():
                            t.cancel()
                            with contextlib.suppress(asyncio.CancelledError, Exception):
                                await t
                if wt.done() and not wt.cancelled():
                    exc = wt.exception()
                    if exc is None:
                        rv = wt.result()
                    elif isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | TimeoutError):
                        # Dropped or silent stream: resume from the last RV (410 then says re-list).
                        if isinstance(exc, aiohttp.ServerTimeoutError):
                            log.info("watch_idle", kind=kind, idle_seconds=self.settings.idle_timeout)
                        else:
                            log.info("watch_reconnect", kind=kind, error=repr(exc))
                        await asyncio.sleep(self.settings.backoff)
                    else:
                        raise exc
                if interrupt.is_set():
                    raise _Relist("gap in another kind")
        finally:
            self._watching.discard(kind)
            interrupt.clear()

    # -- lifecycle -----------------------------------------------------------------------------
    async def _reauthenticate(self, vault: kopf_credentials.Vault) -> None:
        # kopf's vault drops credentials on a 401 (an API server still starting answers 401 too)
        # and refuses to take back an equal item under the same key: offer them under a new key,
        # re-read (a rotated token file), after a pause so that bad credentials cannot spin.
        n = 0
        while True:
            await vault.wait_for_emptiness()
            n += 1
            log.warning("watch_reauthenticating", attempt=n)
            await asyncio.sleep(min(self.settings.max_backoff, self.settings.backoff * n))
            await vault.populate({f"pyscheduler-{n}": _connection_info(self.credentials())})

    async def run(self) -> None:
        vault = kopf_credentials.Vault()
        await vault.populate({"pyscheduler": _connection_info(self.credentials())})
        self.vault = vault
        kopf_auth.vault_var.set(vault)  # the tasks below inherit it
        reauth = asyncio.create_task(self._reauthenticate(vault), name="watch re-auth")
        try:
            await self.discover()
        except BaseException:
            reauth.cancel()
            await asyncio.gather(reauth, return_exceptions=True)
            with contextlib.suppress(Exception):
                await vault.close()
            raise
        tasks = [asyncio.create_task(self.reflect(kind), name=f"watch {kind}") for kind in self.kinds]
        tasks.append(reauth)
        stop = asyncio.create_task(self._stop.wait())
        try:
            done, _ = await asyncio.wait({*tasks, stop}, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                if t is not stop and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            for t in (*tasks, stop):
                t.cancel()
            await asyncio.gather(*tasks, stop, return_exceptions=True)
            with contextlib.suppress(Exception):
                await vault.close()

    def stop(self) -> None:
        self._stop.set()
