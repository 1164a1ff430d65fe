"""A plain HTTP/1.1 server on loopback that answers each request it reads with the next canned
bytes, and the write transports (rawhttp, loophttp) driven against it from a test."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, Final, TypeVar

from scheduler.live.kube.loophttp import LoopTransport
from scheduler.live.kube.rawhttp import RawTransport, Response
from scheduler.live.kube.transport import KubeCoreAPI

T = TypeVar("T")

# Answers that are not bytes: close the connection instead of answering; read the request and
# never answer (the connection stays open); answer (the bytes that follow in the list) and
# then close the connection, as a server does with one it keeps idle too long.
CLOSE: Final = None
HANG: Final = "hang"
THEN_CLOSE: Final = "then-close"

Answer = bytes | str | None


class CannedServer:
    """Accepts connections; each request read gets the next answer of ``answers``."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _next(self) -> Answer:
        with self._lock:
            return self.answers.pop(0) if self.answers else CLOSE

    def _handle(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                n = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")), 0)
                while len(buf) < n:
                    buf += conn.recv(65536)
                with self._lock:
                    self.requests.append(head + b"\r\n\r\n" + buf[:n])
                buf = buf[n:]
                answer = self._next()
                if answer is CLOSE:
                    return
                if answer == HANG:
                    while conn.recv(65536):
                        pass
                    return
                if answer == THEN_CLOSE:
                    reply = self._next()
                    assert isinstance(reply, bytes)
                    conn.sendall(reply)
                    return
                assert isinstance(answer, bytes)
                conn.sendall(answer)
                if b"Connection: close" in answer:
                    return

    def close(self) -> None:
        self.sock.close()


def plain_conf(port: int) -> SimpleNamespace:
    """What RawTransport reads of a kubernetes Configuration, for ``http://127.0.0.1:port``."""
    return SimpleNamespace(host=f"http://127.0.0.1:{port}", verify_ssl=False, ssl_ca_cert=None, cert_file=None,
                           key_file=None, tls_server_name=None)


class WriteClient:
    """One write transport to ``port`` as tests drive it, blocking calls either way: ``thread``
    is RawTransport (a lane thread's), ``loop`` is LoopTransport on an event loop of its own."""

    def __init__(self, mode: str, port: int, guard: Callable[[], None] | None = None) -> None:
        self.raw = RawTransport(plain_conf(port), guard) if guard is not None else RawTransport(plain_conf(port))
        self.loop_io = LoopTransport(self.raw) if mode == "loop" else None
        self.loop = asyncio.new_event_loop() if mode == "loop" else None

    def exchange(self, method: str, path: str, headers: dict[str, str], body: bytes | None, timeout: float) -> Response:
        if self.loop_io is None or self.loop is None:
            return self.raw.exchange(method, path, headers, body, timeout)
        return self.loop.run_until_complete(self.loop_io.exchange(method, path, headers, body, timeout))

    def run(self, coro: Awaitable[T]) -> T:
        """``coro`` on the client's loop (``loop`` mode)."""
        assert self.loop is not None
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.raw.close_thread_conn()
        if self.loop_io is not None and self.loop is not None:
            self.loop_io.close()
            self.loop.close()


class _Auth:
    def auth_settings(self) -> dict[str, Any]:
        return {}


def plain_core_api(port: int) -> KubeCoreAPI:
    """A KubeCoreAPI whose writes go to ``http://127.0.0.1:port`` over plain sockets, without a
    kubernetes client (no token, the loop transport not started)."""
    api = KubeCoreAPI.__new__(KubeCoreAPI)
    api.api = SimpleNamespace(user_agent="test", configuration=_Auth())
    api._host = f"http://127.0.0.1:{port}"
    api._raw = RawTransport(plain_conf(port))
    api._loop_io = None
    return api
