"""The HTTP(S) extender client (upstream pkg/scheduler/extender.go HTTPExtender).

Each call is a JSON POST to ``<urlPrefix>/<verb>``; a status other than 200 is an error, and
so is anything the answer's ``Error`` says. The whole call (connect, headers, body) shares one
deadline, ``httpTimeout`` (5 s when unset, none when negative, as Go's http.Client), and the
errors read as Go's client writes them (``Post "<url>": dial tcp ...: connect: connection
refused``), since they end up in FailedScheduling events.

TLS (``tlsConfig``, ``enableHTTPS``) is client-go's rest.TLSConfigFor: a CA (data before file)
replaces the system roots, a client certificate and key (data before file) are offered, and
``insecure`` skips verification; ``enableHTTPS`` without a CA means insecure. The scheme of
``urlPrefix`` decides whether TLS is used at all, as upstream.

Blocking by design: the scheduling cycle is synchronous, and the live binding cycle runs
``bind`` in a worker thread. Idle connections are kept (two per extender, as Go's default).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.types import Extender as ExtenderConfig
from scheduler.config.types import ExtenderTLSConfig
from scheduler.extender import wire
from scheduler.framework.extender import (
    Binding,
    FailedNodesMap,
    HostPriority,
    NodeInfoLister,
    Victims,
    managed_resource_requested,
)
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

# Upstream DefaultExtenderTimeout.
DEFAULT_EXTENDER_TIMEOUT = 5.0
MAX_IDLE_CONNECTIONS = 2


class ExtenderError(Exception):
    """A failed extender call; ``str()`` is upstream's error text."""


class TLSSetupError(ValueError):
    """The TLS options cannot be used (client-go's words)."""


def _pem(data: bytes, file: str) -> bytes:
    """client-go dataFromSliceOrFile: the data if given, else the file's content."""
    if data:
        return data
    if file:
        try:
            with open(file, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise TLSSetupError(f"open {file}: {(exc.strerror or str(exc)).lower()}") from None
    return b""


def tls_context(cfg: ExtenderTLSConfig | None, enable_https: bool) -> ssl.SSLContext | None:
    """The client TLS settings, or None for the defaults (system roots, verification on).
    TLSSetupError as client-go reports a problem."""
    tls = cfg or ExtenderTLSConfig()
    has_ca = bool(tls.ca_data or tls.ca_file)
    insecure = tls.insecure or (enable_https and not has_ca)
    has_cert = bool(tls.cert_data or tls.cert_file) and bool(tls.key_data or tls.key_file)
    if not (has_ca or has_cert or insecure or tls.server_name):
        return None
    if has_ca and insecure:
        raise TLSSetupError("specifying a root certificates file with the insecure flag is not allowed")
    ca = _pem(tls.ca_data, tls.ca_file)
    cert = _pem(tls.cert_data, tls.cert_file)
    key = _pem(tls.key_data, tls.key_file)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca:
        try:
            ctx.load_verify_locations(cadata=ca.decode("ascii", "replace"))
        except (ssl.SSLError, ValueError):
            raise TLSSetupError("unable to load root certificates: unable to parse bytes as PEM block") from None
    else:
        ctx.load_default_certs()
    if has_cert:
        _load_client_cert(ctx, cert, key)
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl reads a certificate chain from files only: the PEM goes through a private temporary
    file that is removed at once."""
    if b"-----BEGIN" not in cert:
        raise TLSSetupError("tls: failed to find any PEM data in certificate input")
    if b"-----BEGIN" not in key:
        raise TLSSetupError("tls: failed to find any PEM data in key input")
    fd, path = tempfile.mkstemp(prefix="extender-cert-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(cert.rstrip(b"\n") + b"\n" + key)
        ctx.load_cert_chain(path)
    except ssl.SSLError as exc:
        raise TLSSetupError(f"tls: {exc.reason or exc}".lower()) from None
    finally:
        os.unlink(path)


class _Deadline:
    __slots__ = ("end",)

    def __init__(self, timeout: float | None) -> None:
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        if self.end is None:
            return None
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with the SNI and verification name set apart from the host (Go's ServerName)."""

    def __init__(self, host: str, port: int | None, *, timeout: float | None, context: ssl.SSLContext,
                 server_name: str) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name or host
        self._tls = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


def _go_addr(sockaddr: Any, port: int) -> str:
    host = sockaddr[0] if sockaddr else ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class HTTPExtender:
    """One configured extender, speaking JSON over HTTP(S) (implements framework Extender)."""

    def __init__(self, cfg: ExtenderConfig) -> None:
        """TLSSetupError for TLS options client-go would refuse."""
        self.url_prefix = cfg.url_prefix
        self.filter_verb = cfg.filter_verb
        self.prioritize_verb = cfg.prioritize_verb
        self.preempt_verb = cfg.preempt_verb
        self.bind_verb = cfg.bind_verb
        self.weight = cfg.weight
        self.node_cache_capable = cfg.node_cache_capable
        self.ignorable = cfg.ignorable
        self.managed_resources = frozenset(r.name for r in cfg.managed_resources)
        timeout = cfg.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        self.timeout: float | None = timeout if timeout > 0 else None
        self._tls = tls_context(cfg.tls_config, cfg.enable_https)
        self._server_name = cfg.tls_config.server_name if cfg.tls_config is not None else ""
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    # -- the Extender interface --------------------------------------------------------------
    def name(self) -> str:
        return self.url_prefix

    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        return not self.managed_resources or managed_resource_requested(pod, self.managed_resources)

    def filter(
        self, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], FailedNodesMap, FailedNodesMap]:
        if not self.filter_verb:
            return list(nodes), {}, {}
        body = self._send(self.filter_verb, wire.extender_args(pod, nodes, self.node_cache_capable))
        result = self._decode(wire.filter_result, body)
        if result.error:
            raise ExtenderError(result.error)
        kept: list[NodeInfo] = []
        if self.node_cache_capable and result.node_names is not None:
            by_name = {n.name: n for n in nodes}
            for name in result.node_names:
                ni = by_name.get(name)
                if ni is None:
                    raise ExtenderError(
                        f"extender {_go_quote(self.url_prefix)} claims a filtered node {_go_quote(name)} "
                        "which is not found in the input node list"
                    )
                kept.append(ni)
        elif result.nodes is not None:
            # Upstream wraps each returned Node in a new NodeInfo: no pods, no image states.
            for item in result.nodes:
                try:
                    ni = NodeInfo(item)
                except Exception as exc:
                    raise ExtenderError(str(exc)) from None
                ni.image_states = {}
                kept.append(ni)
        return kept, result.failed, result.failed_and_unresolvable

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        if not self.prioritize_verb:
            return [HostPriority(n.name, 0) for n in nodes], 0
        body = self._send(self.prioritize_verb, wire.extender_args(pod, nodes, self.node_cache_capable))
        return self._decode(wire.host_priorities, body), self.weight

    def bind(self, binding: Binding) -> None:
        if not self.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = wire.binding_args(binding.namespace, binding.name, binding.uid, binding.node)
        err = self._decode(wire.binding_error, self._send(self.bind_verb, args))
        if err:
            raise ExtenderError(err)

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], nodes: NodeInfoLister
    ) -> dict[str, Victims]:
        if not self.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.url_prefix} but run into ProcessPreemption"
            )
        body = self._send(self.preempt_verb, wire.preemption_args(pod, victims, self.node_cache_capable))
        answer = self._decode(wire.preemption_result, body)
        out: dict[str, Victims] = {}
        for node, meta in answer.items():
            ni = nodes.get(node)
            if ni is None:
                raise ExtenderError(f"nodeinfo not found for node name {_go_quote(node)}")
            if meta is None:
                # A null entry has no victims; the caller says so (upstream reads it as nil).
                out[node] = Victims([], 0)
                continue
            pods = []
            for uid in meta.uids:
                p = next((p for p in ni.pods if p.uid == uid), None)
                if p is None:
                    raise ExtenderError(
                        f"extender: {self.url_prefix} claims to preempt pod (UID: &{{{uid}}}) on node: {ni.name}, "
                        "but the pod is not found on that node"
                    )
                pods.append(p)
            out[node] = Victims(pods, meta.num_pdb_violations)
        return out

    # -- HTTP --------------------------------------------------------------------------------
    def _decode(self, decode: Any, body: bytes) -> Any:
        try:
            return decode(body)
        except wire.WireError as exc:
            raise ExtenderError(str(exc)) from None

    def _send(self, verb: str, args: Any) -> bytes:
        """POST ``args`` to ``<urlPrefix>/<verb>``; the 200 answer's body, else ExtenderError."""
        url = self.url_prefix.rstrip("/") + "/" + verb
        payload = json.dumps(args, separators=(",", ":")).encode()
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ExtenderError(f"Post {_go_quote(url)}: unsupported protocol scheme {_go_quote(scheme)}")
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        deadline = _Deadline(self.timeout)
        key = (scheme, host, port)
        conn = self._take(key)
        fresh = conn is None
        try:
            if conn is None:
                conn = self._connect(scheme, host, port, deadline, url)
            try:
                resp = self._exchange(conn, path, payload, deadline)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if fresh:
                    raise
                # A kept connection the server had closed: one retry on a new one (Go does too).
                conn.close()
                conn = self._connect(scheme, host, port, deadline, url)
                resp = self._exchange(conn, path, payload, deadline)
        except TimeoutError:
            if conn is not None:
                conn.close()
            raise ExtenderError(
                f"Post {_go_quote(url)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
            ) from None
        except ExtenderError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            if conn is not None:
                conn.close()
            raise ExtenderError(f"Post {_go_quote(url)}: {_go_net_error(exc)}") from None
        if resp.status != 200:
            conn.close()
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
        try:
            if conn.sock is not None:
                conn.sock.settimeout(deadline.left())
            body = resp.read()
        except (TimeoutError, OSError, http.client.HTTPException):
            conn.close()
            raise ExtenderError(
                "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
            ) from None
        if resp.will_close:
            conn.close()
        else:
            self._give_back(key, conn)
        return body

    def _connect(self, scheme: str, host: str, port: int, deadline: _Deadline, url: str) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if scheme == "https":
            ctx = self._tls or ssl.create_default_context()
            conn = _HTTPSConnection(host, port, timeout=deadline.left(), context=ctx, server_name=self._server_name)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=deadline.left())
        try:
            conn.connect()
        except ConnectionRefusedError:
            addr = _resolved(host, port)
            raise ExtenderError(f"Post {_go_quote(url)}: dial tcp {addr}: connect: connection refused") from None
        except socket.gaierror:
            raise ExtenderError(f"Post {_go_quote(url)}: dial tcp: lookup {host}: no such host") from None
        except ssl.SSLCertVerificationError as exc:
            raise ExtenderError(f"Post {_go_quote(url)}: tls: failed to verify certificate: {_x509(exc)}") from None
        return conn

    @staticmethod
    def _exchange(
        conn: http.client.HTTPConnection, path: str, payload: bytes, deadline: _Deadline
    ) -> http.client.HTTPResponse:
        if conn.sock is not None:
            conn.sock.settimeout(deadline.left())
        conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
        if conn.sock is not None:
            conn.sock.settimeout(deadline.left())
        return conn.getresponse()

    def _take(self, key: tuple[str, str, int]) -> http.client.HTTPConnection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _give_back(self, key: tuple[str, str, int], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < MAX_IDLE_CONNECTIONS:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for c in conns:
            c.close()

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"


def _go_quote(s: str) -> str:
    """strconv.Quote for the printable strings URLs and node names are."""
    return json.dumps(s, ensure_ascii=False)


def _resolved(host: str, port: int) -> str:
    """The address Go names in a dial error: the host's address (the last one tried)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return f"{host}:{port}"
    return _go_addr(infos[-1][4], port) if infos else f"{host}:{port}"


def _go_net_error(exc: BaseException) -> str:
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "EOF"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"tls: failed to verify certificate: {_x509(exc)}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def _x509(exc: ssl.SSLCertVerificationError) -> str:
    msg = exc.verify_message or str(exc)
    if "self-signed" in msg or "unable to get local issuer" in msg or "self signed" in msg:
        return "x509: certificate signed by unknown authority"
    if "expired" in msg:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {msg}"
