"""API connections of the live scheduler: one credential source, several clients.

kube-scheduler builds separate clientsets from one rest config (the scheduler's own client,
the events client, the leader-election client), each with its own rate limiter and its own
connections, so a flood of one kind of request never starves another. This module does the
same with the kubernetes Python client: every ``Connection`` gets a ``Configuration`` of its
own (own urllib3 pool) whose credentials are read from one shared ``CredentialSource``.

A ``Connection`` is the client's REST layer without its ``ApiClient``: the scheduler sends JSON
it builds itself (transport.KubeCoreAPI), and the ApiClient class imports pydantic for the
generated models, about 9 MB of resident memory that nothing on these paths uses. A real
``ApiClient`` is built where a caller wants the generated APIs (the Handle's ``client_set``,
delegated authentication).

Credentials refresh as client-go's do: a projected ServiceAccount token (in-cluster, or a
kubeconfig ``tokenFile``) is re-read every minute; an exec credential plugin is re-run when the
credential it returned expires (the kubernetes client's loader does that on its refresh hook).
The watcher gets the same source as a ``credentials()`` callable.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
import urllib3
import yaml

from scheduler.live.kube.fence import check_send_guard
from scheduler.live.kube.transport import ApiError, message_of, request_headers
from scheduler.live.metrics.client import REST, InstrumentedConnection

log = structlog.get_logger(__name__)

_C = TypeVar("_C")

# urllib3 logs each of its own connection retries ("Retrying (Retry(total=2...") as a warning;
# every caller here logs its failed attempt once, with context, so those lines are only noise.
logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)

TOKEN_REREAD_PERIOD = 60.0  # client-go's cached token file source re-reads once a minute
USER_AGENT = "pyscheduler/0.1.0"


class _FencedHTTPConnection(InstrumentedConnection, urllib3.connection.HTTPConnection):
    """Runs the binder's fence check before every write of request bytes (headers, body); each
    exchange is counted in rest_client_* (InstrumentedConnection)."""

    def send(self, data: Any) -> None:
        check_send_guard()
        super().send(data)


class _FencedHTTPSConnection(InstrumentedConnection, urllib3.connection.HTTPSConnection):
    def send(self, data: Any) -> None:
        check_send_guard()
        super().send(data)


class _FencedHTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _FencedHTTPConnection


class _FencedHTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _FencedHTTPSConnection


def install_send_guard(conn: Any) -> None:
    """Make the connections of ``conn`` (a Connection or an ApiClient) run the fence check
    right before sending."""
    pm = conn.rest_client.pool_manager
    pm.pool_classes_by_scheme = {"http": _FencedHTTPConnectionPool, "https": _FencedHTTPSConnectionPool}


@dataclass(slots=True)
class Credentials:
    """One snapshot of the connection settings, in the shape the watch's kopf vault takes them."""

    server: str
    ca_path: str | None = None
    insecure: bool = False
    token: str | None = None
    scheme: str | None = None
    username: str | None = None
    password: str | None = None
    certificate_path: str | None = None
    private_key_path: str | None = None


class CredentialError(Exception):
    """The kubeconfig or in-cluster configuration cannot be loaded (one line)."""


def _split_header(header: str | None) -> tuple[str | None, str | None]:
    parts = header.split(" ", 1) if header else []
    if not parts:
        return None, None
    if len(parts) == 1:
        return None, parts[0]
    return parts[0], parts[1]


def _kubeconfig_token_file(path: str) -> str | None:
    """The current context user's ``tokenFile`` of a kubeconfig (resolved), if any."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        return None
    ctx_name = doc.get("current-context")
    ctx = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == ctx_name), {})
    user = next((u.get("user") or {} for u in doc.get("users") or [] if u.get("name") == ctx.get("user")), {})
    tf = user.get("tokenFile")
    if not tf or user.get("token"):
        return None
    return tf if os.path.isabs(tf) else os.path.join(os.path.dirname(os.path.abspath(path)), tf)


class CredentialSource:
    """Loads the cluster address and credentials once and keeps the credentials fresh.

    ``header()`` is cheap and thread-safe; it refreshes at most once per ``min_check`` seconds.
    """

    def __init__(self, kubeconfig: str | None, *, clock: Callable[[], float] = time.monotonic,
                 min_check: float = 1.0) -> None:
        from kubernetes import client, config

        self.clock = clock
        self.min_check = min_check
        self._lock = threading.Lock()
        conf = client.Configuration()
        self.token_file: str | None = None
        try:
            if kubeconfig:
                config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
                self.token_file = _kubeconfig_token_file(kubeconfig)
            else:
                try:
                    config.load_incluster_config(client_configuration=conf)
                except config.ConfigException:
                    config.load_kube_config(client_configuration=conf)
        except Exception as exc:
            where = kubeconfig or "in-cluster/default kubeconfig"
            first = " ".join(str(exc).split())
            raise CredentialError(f"{where}: cannot load credentials: {first}") from None
        self._base = conf
        self._header: str | None = None
        self._checked = -1e18
        self._file_read = -1e18
        self._refresh()

    def _refresh(self) -> None:
        # The loader's own hook (set for in-cluster and exec/expiring tokens) runs inside this.
        header = self._base.get_api_key_with_prefix("authorization") or self._base.get_api_key_with_prefix(
            "BearerToken"
        )
        now = self.clock()
        if self.token_file and now - self._file_read >= TOKEN_REREAD_PERIOD:
            try:
                with open(self.token_file) as f:
                    token = f.read().strip()
                if token:
                    header = f"Bearer {token}"
                    self._base.api_key["authorization"] = header
                self._file_read = now
            except OSError as exc:
                log.warning("token_file_unreadable", path=self.token_file, error=str(exc))
        elif self.token_file and self._header:
            header = self._header
        self._header = header or None
        self._checked = now

    def header(self) -> str | None:
        with self._lock:
            if self.clock() - self._checked >= self.min_check:
                try:
                    self._refresh()
                except Exception as exc:  # an exec plugin failing: keep the last credential
                    log.warning("credential_refresh_failed", error=" ".join(str(exc).split()))
                    self._checked = self.clock()
            return self._header

    def credentials(self) -> Credentials:
        """The current credentials as the watcher takes them (called again on re-login)."""
        scheme, token = _split_header(self.header())
        c = self._base
        return Credentials(
            server=c.host,
            ca_path=c.ssl_ca_cert,
            insecure=not c.verify_ssl,
            token=token,
            scheme=scheme,
            username=c.username or None,
            password=c.password or None,
            certificate_path=c.cert_file,
            private_key_path=c.key_file,
        )

    @property
    def host(self) -> str:
        return str(self._base.host)

    def _apply(self, conf: Any) -> None:
        h = self.header()
        if h:
            conf.api_key["authorization"] = h

    def _configuration(self, pool_size: int, retries: bool) -> Any:
        from kubernetes.client.configuration import Configuration

        b = self._base
        conf: Any = Configuration()  # typed hook attribute says None; ours is a callable
        conf.host = b.host
        conf.ssl_ca_cert = b.ssl_ca_cert
        conf.cert_file = b.cert_file
        conf.key_file = b.key_file
        conf.verify_ssl = b.verify_ssl
        conf.username = b.username
        conf.password = b.password
        if getattr(b, "tls_server_name", None):
            conf.tls_server_name = b.tls_server_name
        conf.proxy = b.proxy
        conf.connection_pool_maxsize = pool_size
        if not retries:
            conf.retries = False  # one attempt is one request (the start-up probe counts them)
        conf.refresh_api_key_hook = self._apply
        self._apply(conf)
        return conf

    def connection(self, purpose: str, pool_size: int, retries: bool = True) -> Connection:
        """A new Connection with its own pool; credentials read from this source on every
        request. ``purpose`` ends the User-Agent as in kube-scheduler ("scheduler",
        "leader-election", "events")."""
        from kubernetes.client.rest import RESTClientObject

        conf = self._configuration(pool_size, retries)
        return _instrumented(Connection(conf, RESTClientObject(conf), f"{USER_AGENT} {purpose}"))

    def api_client(self, purpose: str, pool_size: int, retries: bool = True) -> Any:
        """A kubernetes ApiClient with a pool of its own, for the generated APIs."""
        from kubernetes import client

        api = client.ApiClient(self._configuration(pool_size, retries))
        api.user_agent = f"{USER_AGENT} {purpose}"
        return _instrumented(api)


def _instrumented(conn: _C) -> _C:
    install_send_guard(conn)  # a no-op unless a Binding is being sent from this thread
    REST.transport_created()
    return conn


class Connection:
    """What the scheduler's requests need of the kubernetes client (the attributes an
    ApiClient has by the same names): the ``configuration`` (TLS, credentials and their refresh
    hook), the urllib3 pool manager under ``rest_client`` and the ``user_agent``."""

    __slots__ = ("configuration", "rest_client", "user_agent")

    def __init__(self, configuration: Any, rest_client: Any, user_agent: str) -> None:
        self.configuration = configuration
        self.rest_client = rest_client
        self.user_agent = user_agent

    def get_json(self, path: str, timeout: float) -> Any:
        """One GET through the pool (its retries as configured); ApiError unless 2xx."""
        host = str(self.configuration.host).rstrip("/")
        resp = self.rest_client.pool_manager.request("GET", host + path, headers=request_headers(self),
                                                     timeout=urllib3.Timeout(total=timeout), preload_content=False)
        try:
            data = resp.read()
        finally:
            resp.release_conn()
        if not 200 <= resp.status <= 299:
            raise ApiError(resp.status, message_of(data) or str(resp.reason or ""))
        return json.loads(data)


def describe_error(exc: BaseException) -> str:
    """One short line for a transport or API error (urllib3 nests the cause)."""
    reason = getattr(exc, "reason", None)
    if reason is not None and isinstance(reason, BaseException):
        exc = reason
    status = getattr(exc, "status", None)
    text = " ".join(str(exc).split())
    if isinstance(status, int) and status:
        text = f"HTTP {status}: {getattr(exc, 'reason', '') or text}"
    return f"{type(exc).__name__}: {text}"[:300]


def probe_api(conn: Connection, timeout: float = 5.0) -> None:
    """GET /version (readable by any authenticated client); raises when the API does not answer."""
    conn.get_json("/version", timeout)


async def wait_for_api(
    probe: Callable[[], None],
    *,
    executor: Any = None,
    initial_delay: float = 0.5,
    max_delay: float = 5.0,
    sleep: Callable[[float], Any] | None = None,
) -> int:
    """Until ``probe`` succeeds; one log line per failed attempt, no traceback. Returns the
    number of attempts. Cancel it to give up (SIGTERM)."""
    import asyncio

    loop = asyncio.get_running_loop()
    do_sleep = sleep or asyncio.sleep
    delay = initial_delay
    attempt = 0
    while True:
        attempt += 1
        try:
            await loop.run_in_executor(executor, probe)
        except Exception as exc:
            log.warning("api_unreachable", attempt=attempt, error=describe_error(exc), retry_in=delay)
            await do_sleep(delay)
            delay = min(max_delay, delay * 2)
            continue
        if attempt > 1:
            log.info("api_reachable", attempts=attempt)
        return attempt
