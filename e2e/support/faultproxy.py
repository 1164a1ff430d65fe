"""A fault-injecting HTTP proxy between one scheduler replica and the kube-apiserver, on loopback.

The scheduler speaks plain HTTP/1.1 to the proxy (its kubeconfig's server is
``http://127.0.0.1:<port>`` with the replica's token); the proxy speaks TLS to the API server
and relays bytes both ways, so watch streams pass through as they arrive. Requests are parsed
(method, path, query, body length) so the faults can pick them; responses are relayed as raw
bytes (clients do not pipeline: a response is over before the next request on its connection).

The test drives it from its own thread through ``FaultProxy``'s setters:

* ``throttle``: answer a share of the matching requests 429 with Retry-After (as API Priority
  and Fairness does);
* ``fail``: answer a share with a 5xx, or reset the connection before the request goes on
  (``reset``), or after it went on and before its answer comes back (``reset_after``: the
  write happened, the client cannot know);
* ``latency``: hold every request 1-5 s (a uniform draw in the range) before sending it on;
* ``cut_watches``: close every open watch stream now; ``stall_watches``: keep every open watch
  stream's connection but relay nothing more on it (new streams flow);
* ``partition``: nothing goes through either way: requests and answers are dropped (a
  blackhole, open connections included); when it heals, every connection that lived through it
  is reset, as connections that timed out would be. Nothing sent into the partition arrives late.

Every decision is counted in ``counts`` (by fault and request class) for the case's report.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import http
import json
import random
import socket
import ssl
import struct
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable
from typing import Any

from scheduler.model.kinds import KINDS

PLURALS = frozenset(k.plural for k in KINDS.values()) | {"events", "leases"}
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    @property
    def kind(self) -> str:
        """binding | event | status | lease | watch | list | write | read."""
        parts = [p for p in self.path.split("/") if p]
        if self.watch:
            return "watch"
        if "leases" in parts:
            return "lease"
        if parts and parts[-1] == "binding":
            return "binding"
        if "events" in parts:
            return "event"
        if parts and parts[-1] == "status":
            return "status"
        if self.method in WRITES:
            return "write"
        if self.method == "GET" and parts and parts[-1] in PLURALS:
            return "list"
        return "read"


Match = Callable[[Request], bool]


def kinds(*names: str) -> Match:
    """A matcher for request classes (Request.kind)."""
    wanted = frozenset(names)
    return lambda r: r.kind in wanted


@dataclasses.dataclass
class Fault:
    what: str  # "429" | "5xx" | "reset" | "reset_after"
    match: Match
    share: float
    status: int = 503
    retry_after: int = 1


class _Conn:
    __slots__ = ("current", "drop_response", "stalled", "writer")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.current: Request | None = None
        self.stalled = False
        self.drop_response = False


def _abort(writer: asyncio.StreamWriter | None) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashed middlebox would."""
    if writer is None:
        return
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError):
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _status_body(code: int, reason: str, message: str, retry_after: int | None) -> bytes:
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code}
    if retry_after is not None:
        status["details"] = {"retryAfterSeconds": retry_after}
    return json.dumps(status).encode()


class FaultProxy:
    def __init__(self, upstream: str, ca_file: str | None = None, seed: int = 0) -> None:
        u = urllib.parse.urlsplit(upstream)
        self.host, self.port_up = u.hostname or "127.0.0.1", u.port or 443
        self.ssl = ssl.create_default_context(cafile=ca_file) if ca_file else ssl._create_unverified_context()
        if ca_file:
            self.ssl.check_hostname = False  # the plane's serving cert names its own hosts
        self.rng = random.Random(seed)
        self.faults: list[Fault] = []
        self.delay: tuple[float, float] | None = None
        self.partitioned = threading.Event()
        self.counts: Counter[str] = Counter()
        self._conns: set[_Conn] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    # -- driving it (from the test's thread) ------------------------------------------------------
    def start(self) -> FaultProxy:
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop

            async def serve() -> None:
                self._server = await asyncio.start_server(self._client, "127.0.0.1", 0, limit=1 << 20)
                self.port = self._server.sockets[0].getsockname()[1]
                ready.set()

            loop.run_until_complete(serve())
            loop.run_forever()

        self._thread = threading.Thread(target=main, name="faultproxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for c in list(self._conns):
                _abort(c.writer)
            # Every client's handler and pump ends here, on its own loop: left pending, each
            # would be collected after the loop stopped and warn that it never finished.
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def clear(self) -> None:
        """No faults: every request goes through untouched."""
        self.faults = []
        self.delay = None
        self.partitioned.clear()

    def throttle(self, share: float, match: Match, retry_after: int = 1) -> None:
        self.faults.append(Fault("429", match, share, 429, retry_after))

    def fail(self, what: str, share: float, match: Match, status: int = 503) -> None:
        assert what in ("5xx", "reset", "reset_after")
        self.faults.append(Fault(what, match, share, status))

    def latency(self, low: float, high: float) -> None:
        self.delay = (low, high)

    def partition(self, on: bool = True) -> None:
        if on:
            self.partitioned.set()
            return

        def heal() -> int:
            self.partitioned.clear()
            for c in list(self._conns):
                _abort(c.writer)
            return 0

        self._on_loop(heal)

    def _on_loop(self, fn: Callable[[], int]) -> int:
        assert self._loop is not None

        async def call() -> int:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    def cut_watches(self) -> int:
        """Close every open watch stream now; returns how many."""

        def cut() -> int:
            open_ = [c for c in self._conns if c.current is not None and c.current.watch]
            for c in open_:
                _abort(c.writer)
            self.counts["watch_cut"] += len(open_)
            return len(open_)

        return self._on_loop(cut)

    def stall_watches(self) -> int:
        """Relay nothing more on the watch streams open now (their connections stay open)."""

        def stall() -> int:
            open_ = [c for c in self._conns if c.current is not None and c.current.watch and not c.stalled]
            for c in open_:
                c.stalled = True
            self.counts["watch_stalled"] += len(open_)
            return len(open_)

        return self._on_loop(stall)

    def open_watches(self) -> int:
        return self._on_loop(lambda: sum(1 for c in self._conns if c.current is not None and c.current.watch))

    # -- the relay --------------------------------------------------------------------------------
    @staticmethod
    async def _held(conn: _Conn) -> None:
        """A stalled stream's bytes wait here for good."""
        while conn.stalled:
            await asyncio.sleep(0.1)

    def _decide(self, req: Request) -> Fault | None:
        for f in self.faults:
            if f.match(req) and self.rng.random() < f.share:
                return f
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        self._conns.add(conn)
        up_w: asyncio.StreamWriter | None = None
        pump: asyncio.Task[None] | None = None
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                req, body_len, chunked = self._parse(head)
                body = await self._body(reader, body_len, chunked)
                if self.delay is not None:
                    self.counts[f"delayed:{req.kind}"] += 1
                    await asyncio.sleep(self.rng.uniform(*self.delay))
                if self.partitioned.is_set():
                    self.counts[f"dropped:{req.kind}"] += 1
                    continue  # into the void: the client waits for an answer that never comes
                fault = self._decide(req)
                if fault is not None:
                    self.counts[f"{fault.what}:{req.kind}"] += 1
                if fault is not None and fault.what in ("429", "5xx"):
                    await self._answer(writer, fault, req)
                    continue
                if fault is not None and fault.what == "reset":
                    _abort(writer)
                    return
                if up_w is None:
                    up_r, up_w = await asyncio.open_connection(self.host, self.port_up, ssl=self.ssl, limit=1 << 20)
                    pump = asyncio.create_task(self._pump(up_r, conn))
                conn.current = req
                conn.drop_response = fault is not None and fault.what == "reset_after"
                up_w.write(head + body)
                await up_w.drain()
                self.counts[f"sent:{req.kind}"] += 1
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            return
        finally:
            self._conns.discard(conn)
            if pump is not None:
                pump.cancel()
            _abort(up_w)
            with contextlib.suppress(Exception):
                writer.close()

    async def _pump(self, up_r: asyncio.StreamReader, conn: _Conn) -> None:
        """Upstream's bytes to the client as they come; held while partitioned or stalled."""
        try:
            while True:
                data = await up_r.read(1 << 16)
                if not data:
                    break
                if conn.drop_response:
                    _abort(conn.writer)  # the request was applied; its answer is lost
                    return
                if self.partitioned.is_set():
                    continue
                await self._held(conn)
                conn.writer.write(data)
                await conn.writer.drain()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            # The API server ended the connection (or the watch): end the client's side too.
            with contextlib.suppress(Exception):
                if not conn.stalled:
                    conn.writer.close()

    @staticmethod
    def _parse(head: bytes) -> tuple[Request, int, bool]:
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        u = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(u.query))
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        return Request(method, u.path, query), int(headers.get("content-length") or 0), chunked

    @staticmethod
    async def _body(reader: asyncio.StreamReader, length: int, chunked: bool) -> bytes:
        if not chunked:
            return await reader.readexactly(length) if length else b""
        out = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            out += size_line
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            chunk = await reader.readexactly(size + 2)
            out += chunk
            if size == 0:
                return out

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, fault: Fault, req: Request) -> None:
        if fault.what == "429":
            body = _status_body(429, "TooManyRequests", "Too many requests, please try again later.",
                                fault.retry_after)
            head = (f"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                    f"Retry-After: {fault.retry_after}\r\nContent-Length: {len(body)}\r\n\r\n")
        else:
            phrase = http.HTTPStatus(fault.status).phrase
            body = _status_body(fault.status, phrase.replace(" ", ""), "the server is currently unable to handle "
                                "the request", None)
            head = (f"HTTP/1.1 {fault.status} {phrase}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n")
        writer.write(head.encode() + body)
        await writer.drain()
