"""The write lanes' HTTP exchanges with the API server, on plain keep-alive sockets.

Each Binding and Event through urllib3 and http.client cost more Python than the rest of its
binding cycle: a pool checkout, Timeout and Retry objects, a response wrapper and, above all,
the standard library's e-mail parser for the response headers. The API server's answers to
writes are small, HTTP/1.1 and well-formed, so this module writes the request in one send and
reads the answer with a parser of a dozen lines. Everything around the exchange stays as it is
for urllib3's connections: the fence is checked right before the bytes leave
(the ``guard``), each exchange is one ``rest_client_*`` observation, a connection that
could not be opened is retried as urllib3's default Retry does and reported as never sent.

One connection per thread (the lanes' threads each send one request at a time); a connection
the server closed while idle is noticed before reuse and replaced.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, NoReturn

from scheduler.live.metrics.client import REST

# urllib3's default Retry: a connection that cannot be opened is tried this many more times.
CONNECT_RETRIES = 3
_RECV = 65536


# The fence check of the request this thread is sending, if it is fenced (fence.send_fenced
# sets it; every connection that writes to the API server runs it right before writing).
send_guard = threading.local()


def check_send_guard() -> None:
    check = getattr(send_guard, "check", None)
    if check is not None:
        check()


class TransportError(Exception):
    """The exchange failed below HTTP; ``sent``: whether request bytes may have left."""

    def __init__(self, message: str, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class Response:
    __slots__ = ("body", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers  # names in lower case
        self.body = body


def ssl_context(conf: Any) -> ssl.SSLContext:
    """The TLS settings the kubernetes client gives urllib3 for ``conf`` (a Configuration)."""
    if conf.verify_ssl:
        cafile = conf.ssl_ca_cert
        if not cafile:
            import certifi

            cafile = certifi.where()
        ctx = ssl.create_default_context(cafile=cafile)
        if getattr(conf, "assert_hostname", None) is False:
            ctx.check_hostname = False
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, conf.key_file)
    return ctx


class _Conn:
    __slots__ = ("buf", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def dropped(self) -> bool:
        # Readable while idle: the server closed it (or sent something unasked); not reusable.
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class RawTransport:
    """Requests to one API server (``conf.host``) with ``conf``'s TLS settings; ``guard`` runs
    right before each request's bytes are written (the lease fence's, by default)."""

    def __init__(self, conf: Any, guard: Callable[[], None] = check_send_guard) -> None:
        self.guard = guard
        url = urllib.parse.urlsplit(str(conf.host))
        self.tls = url.scheme == "https"
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if self.tls else 80)
        self.prefix = url.path.rstrip("/")
        # What rest_client_* calls the host (Go's url.URL.Host: the port only when named).
        self.metric_host = url.netloc.rpartition("@")[2]
        self.host_header = self.metric_host.encode("latin-1")
        self._ctx = ssl_context(conf) if self.tls else None
        self._server_name = getattr(conf, "tls_server_name", None) or self.host
        self._local = threading.local()

    # -- connections ---------------------------------------------------------------------------
    def _connect(self, timeout: float) -> _Conn:
        last: BaseException | None = None
        for _ in range(CONNECT_RETRIES + 1):
            try:
                sock = socket.create_connection((self.host, self.port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._ctx is not None:
                    sock = self._ctx.wrap_socket(sock, server_hostname=self._server_name)
                return _Conn(sock)
            except (OSError, ssl.SSLError) as exc:
                last = exc
        raise TransportError(f"NewConnectionError: {type(last).__name__}: {last}", sent=False)

    def _conn(self, timeout: float) -> _Conn:
        conn: _Conn | None = getattr(self._local, "conn", None)
        if conn is not None and conn.dropped():
            conn.close()
            conn = None
        if conn is None:
            conn = self._local.conn = self._connect(timeout)
        return conn

    def close_thread_conn(self) -> None:
        """Close the calling thread's connection, if it has one."""
        conn: _Conn | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._discard(conn)

    def _discard(self, conn: _Conn) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None

    # -- one exchange --------------------------------------------------------------------------
    def exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None, timeout: float
    ) -> Response:
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        self.guard()  # a fenced request opens no connection either
        conn = self._conn(timeout)
        data = request_bytes(method, self.prefix + path, self.host_header, headers, body)
        sent = len(body) if body else 0
        self.guard()  # the fence, right before the bytes leave (raising, nothing is sent)
        try:
            conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
            conn.sock.sendall(data)
            resp, keep = self._read(conn, method, deadline)
        except BaseException as exc:
            self._discard(conn)
            exchange_failed(exc, method, self.metric_host, started, sent)
        if not keep:
            self._discard(conn)
        exchange_answered(resp, method, self.metric_host, started, sent)
        return resp

    @staticmethod
    def _recv(conn: _Conn, deadline: float) -> bytes:
        conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
        return bytes(conn.sock.recv(_RECV))

    def _read(self, conn: _Conn, method: str, deadline: float) -> tuple[Response, bool]:
        buf = conn.buf
        while True:
            parsed = parse_response(buf, method)
            if parsed is not None:
                break
            chunk = self._recv(conn, deadline)
            if not chunk:
                parsed = parse_response(buf, method, eof=True)
                if parsed is None:
                    raise TransportError("RemoteDisconnected: the server closed the connection", sent=True)
                break
            buf += chunk
        resp, keep, conn.buf = parsed
        return resp, keep


def exchange_failed(exc: BaseException, method: str, host: str, started: float, sent: int) -> NoReturn:
    """Count an exchange that got no answer (one ``rest_client_*`` observation) and raise: a
    socket's error as a TransportError that may have been sent, anything else as it is."""
    REST.request(method, host, None, time.perf_counter() - started, sent, None)
    if isinstance(exc, OSError | ValueError) and not isinstance(exc, TransportError):
        raise TransportError(f"{type(exc).__name__}: {exc}", sent=True) from exc
    raise exc


def exchange_answered(resp: Response, method: str, host: str, started: float, sent: int) -> None:
    """Count an answered exchange (one ``rest_client_*`` observation)."""
    length = resp.headers.get("content-length")
    REST.request(method, host, resp.status, time.perf_counter() - started, sent,
                 int(length) if length and length.isdigit() else None)


def request_bytes(method: str, target: str, host_header: bytes, headers: dict[str, str], body: bytes | None) -> bytes:
    """One HTTP/1.1 request, head and body, as it goes on the wire."""
    head = [f"{method} {target} HTTP/1.1".encode("latin-1"), b"Host: " + host_header]
    head.extend(f"{k}: {v}".encode("latin-1") for k, v in headers.items())
    head.append(b"Content-Length: %d" % (len(body) if body else 0))
    return b"\r\n".join(head) + b"\r\n\r\n" + (body or b"")


def parse_response(buf: bytes, method: str, eof: bool = False) -> tuple[Response, bool, bytes] | None:
    """The response at the start of ``buf``, whether the connection stays usable and the bytes
    after it; None while it is incomplete (``eof``: no more bytes will come, which completes a
    body delimited by the connection's end). Raises TransportError on a malformed status line."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].split(b"\r\n")
    rest = buf[end + 4 :]
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise TransportError(f"BadStatusLine: {lines[0][:80]!r}", sent=True)
    status = int(parts[1])
    reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    keep = headers.get("connection", "").lower() != "close" and parts[0] == b"HTTP/1.1"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        body = b""
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if len(rest) < n:
            return None
        body, rest = rest[:n], rest[n:]
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        chunked = _dechunk(rest)
        if chunked is None:
            return None
        body, rest = chunked
    else:
        # Delimited by the server closing the connection.
        if not eof:
            return None
        body, rest, keep = rest, b"", False
    return Response(status, reason, headers, body), keep, rest


def _dechunk(data: bytes) -> tuple[bytes, bytes] | None:
    """A chunked body at the start of ``data`` and the bytes after it; None while incomplete."""
    out: list[bytes] = []
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(data[pos:eol].split(b";", 1)[0].strip() or b"0", 16)
        pos = eol + 2
        if size == 0:
            # Trailers (none from the API server), then the empty line that ends the body.
            while True:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    return None
                if eol == pos:
                    return b"".join(out), data[pos + 2 :]
                pos = eol + 2
        if len(data) < pos + size + 2:
            return None
        out.append(data[pos : pos + size])
        pos += size + 2
