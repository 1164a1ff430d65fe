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
from typing import Any

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
        head = [f"{method} {self.prefix}{path} HTTP/1.1".encode("latin-1"), b"Host: " + self.host_header]
        head.extend(f"{k}: {v}".encode("latin-1") for k, v in headers.items())
        head.append(b"Content-Length: %d" % (len(body) if body else 0))
        data = b"\r\n".join(head) + b"\r\n\r\n" + (body or b"")
        sent = len(body) if body else 0
        self.guard()  # the fence, right before the bytes leave (raising, nothing is sent)
        try:
            conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
            conn.sock.sendall(data)
            resp, keep = self._read(conn, method, deadline)
        except BaseException as exc:
            self._discard(conn)
            REST.request(method, self.metric_host, None, time.perf_counter() - started, sent, None)
            if isinstance(exc, TransportError):
                raise
            if isinstance(exc, OSError | ValueError):
                raise TransportError(f"{type(exc).__name__}: {exc}", sent=True) from exc
            raise
        if not keep:
            self._discard(conn)
        length = resp.headers.get("content-length")
        REST.request(method, self.metric_host, resp.status, time.perf_counter() - started, sent,
                     int(length) if length and length.isdigit() else None)
        return resp

    @staticmethod
    def _recv(conn: _Conn, deadline: float) -> bytes:
        conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = conn.sock.recv(_RECV)
        if not chunk:
            raise TransportError("RemoteDisconnected: the server closed the connection", sent=True)
        return chunk

    def _read(self, conn: _Conn, method: str, deadline: float) -> tuple[Response, bool]:
        buf = conn.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            buf += self._recv(conn, deadline)
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
            while len(rest) < n:
                rest += self._recv(conn, deadline)
            body, rest = rest[:n], rest[n:]
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body, rest = self._chunked(conn, rest, deadline)
        else:
            # Delimited by the server closing the connection.
            pieces = [rest]
            while True:
                conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = conn.sock.recv(_RECV)
                if not chunk:
                    break
                pieces.append(chunk)
            body, rest, keep = b"".join(pieces), b"", False
        conn.buf = rest
        return Response(status, reason, headers, body), keep

    def _chunked(self, conn: _Conn, rest: bytes, deadline: float) -> tuple[bytes, bytes]:
        out: list[bytes] = []
        while True:
            while b"\r\n" not in rest:
                rest += self._recv(conn, deadline)
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                # Trailers (none from the API server) end with an empty line.
                while b"\r\n" not in rest:
                    rest += self._recv(conn, deadline)
                while not rest.startswith(b"\r\n"):
                    _, _, rest = rest.partition(b"\r\n")
                    while b"\r\n" not in rest:
                        rest += self._recv(conn, deadline)
                return b"".join(out), rest[2:]
            while len(rest) < size + 2:
                rest += self._recv(conn, deadline)
            out.append(rest[:size])
            rest = rest[size + 2 :]
