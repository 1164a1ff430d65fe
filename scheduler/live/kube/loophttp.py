"""The per-pod writes (Bindings and Events) on the event loop's own thread: non-blocking
keep-alive sockets that the loop's selector watches, no thread per request.

Sent from lane threads (rawhttp.py, lanethreads.py), each write cost about 170 µs of CPU
outside the event loop on a saturated 2-core machine (bench/live.py, the one-node gated
workload: 1.39 CPU-s of lane threads for 4,000 pods, six context switches per request): a
thread handoff, and the GIL taken back after the queue, the send and the receive, each time
from a busy loop. On the loop, a write is one non-blocking ``send`` and one ``recv`` when the
answer arrives; the TLS work is the same OpenSSL calls, without asyncio's Python TLS layer.

The exchange is the one RawTransport makes (same request bytes, same parser, same metrics,
the guard checked right before the bytes leave); only the waiting differs. Connections are
opened in a thread (connect and TLS handshake block) as writes in flight need them, each
carrying one request at a time; the selector watches every connection, so one the server
closes while idle is dropped as soon as the loop sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable

from scheduler.live.kube.rawhttp import (
    RawTransport,
    Response,
    TransportError,
    _Conn,
    exchange_answered,
    exchange_failed,
    parse_response,
    request_bytes,
)

_RECV = 65536
# What a non-blocking socket raises when it has nothing to give or take right now.
_WOULD_BLOCK = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError)


class _LoopConn:
    __slots__ = ("buf", "conn", "eof", "error", "fd", "method", "waiter")

    def __init__(self, conn: _Conn) -> None:
        self.conn = conn
        self.fd = conn.sock.fileno()
        self.buf = conn.buf
        self.method = ""
        self.eof = False
        self.error: BaseException | None = None
        # The exchange waiting for its answer on this connection, if any.
        self.waiter: asyncio.Future[tuple[Response, bool]] | None = None


class LoopTransport:
    """RawTransport's exchanges (``raw``: its host, TLS settings and guard) awaited on the
    running event loop, one connection per exchange in flight (``Lane.run_async`` bounds
    those, as a lane's threads bound its blocking calls)."""

    def __init__(self, raw: RawTransport) -> None:
        self.raw = raw
        self._idle: list[_LoopConn] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- connections ---------------------------------------------------------------------------
    async def _acquire(self, deadline: float) -> _LoopConn:
        """An idle connection, or a new one: the lane's turns bound how many are in use."""
        while self._idle:
            lc = self._idle.pop()
            # Closed by the server since the selector last looked: not reusable either.
            if not lc.eof and lc.error is None and not lc.conn.dropped():
                return lc
            self._discard(lc)
        loop = asyncio.get_running_loop()
        conn = await asyncio.to_thread(self.raw._connect, max(0.01, deadline - time.monotonic()))
        conn.sock.setblocking(False)
        lc = _LoopConn(conn)
        self._loop = loop
        loop.add_reader(lc.fd, self._readable, lc)
        return lc

    def _release(self, lc: _LoopConn) -> None:
        lc.waiter = None
        self._idle.append(lc)

    def _discard(self, lc: _LoopConn) -> None:
        if lc.fd < 0:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(lc.fd)
        lc.fd = -1
        lc.conn.close()

    def close(self) -> None:
        """Close every idle connection (those in use close when their exchange ends)."""
        while self._idle:
            self._discard(self._idle.pop())

    # -- the selector's callback -----------------------------------------------------------------
    def _readable(self, lc: _LoopConn) -> None:
        sock = lc.conn.sock
        while True:
            try:
                chunk = sock.recv(_RECV)
            except _WOULD_BLOCK:
                break
            except OSError as exc:
                lc.error = exc
                break
            if not chunk:
                lc.eof = True
                break
            lc.buf += chunk
        waiter = lc.waiter
        if waiter is None:
            # Idle: the server closed it, or sent what nobody asked for; it is not reusable.
            if lc.eof or lc.error is not None or lc.buf:
                with contextlib.suppress(ValueError):
                    self._idle.remove(lc)
                self._discard(lc)
            return
        if waiter.done():
            return
        try:
            parsed = parse_response(lc.buf, lc.method, eof=lc.eof or lc.error is not None)
        except TransportError as exc:
            waiter.set_exception(exc)
            return
        if parsed is not None:
            resp, keep, lc.buf = parsed
            waiter.set_result((resp, keep))
        elif lc.error is not None:
            waiter.set_exception(TransportError(f"{type(lc.error).__name__}: {lc.error}", sent=True))
        elif lc.eof:
            waiter.set_exception(TransportError("RemoteDisconnected: the server closed the connection", sent=True))

    # -- one exchange ----------------------------------------------------------------------------
    async def _send(self, lc: _LoopConn, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        sock = lc.conn.sock
        while view:
            try:
                n = sock.send(view)
            except _WOULD_BLOCK:
                # The socket's buffer is full (never for a Binding's few hundred bytes): retry
                # the same bytes shortly, as TLS requires.
                if time.monotonic() >= deadline:
                    raise TransportError("WriteTimeout: the request could not be sent in time", sent=True) from None
                await asyncio.sleep(0.001)
                continue
            view = view[n:]

    async def exchange(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float,
        guard: Callable[[], None] | None = None,
    ) -> Response:
        """What RawTransport.exchange returns, awaited; ``guard`` (default: the transport's)
        runs before a connection is taken and right before the bytes leave."""
        check = guard if guard is not None else self.raw.guard
        raw = self.raw
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        check()
        lc = await self._acquire(deadline)
        data = request_bytes(method, raw.prefix + path, raw.host_header, headers, body)
        sent = len(body) if body else 0
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[tuple[Response, bool]] = loop.create_future()
        lc.waiter, lc.method = waiter, method
        try:
            check()  # raising, nothing is sent (and the connection goes back unused)
        except BaseException:
            self._release(lc)
            raise
        timer = loop.call_at(loop.time() + max(0.01, deadline - time.monotonic()), _expire, waiter)
        try:
            await self._send(lc, data, deadline)
            resp, keep = await waiter
        except BaseException as exc:
            self._discard(lc)
            exchange_failed(exc, method, raw.metric_host, started, sent)
        finally:
            timer.cancel()
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # an expiry the send outran is not worth a warning
        if keep and not lc.eof and lc.error is None:
            self._release(lc)
        else:
            self._discard(lc)
        exchange_answered(resp, method, raw.metric_host, started, sent)
        return resp


def _expire(waiter: asyncio.Future[tuple[Response, bool]]) -> None:
    if not waiter.done():
        waiter.set_exception(TransportError("ReadTimeout: no answer in time", sent=True))
