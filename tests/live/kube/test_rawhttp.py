"""The lanes' plain HTTP/1.1 client (scheduler/live/kube/rawhttp.py) against a socket server
that answers with canned bytes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from scheduler.live.kube.rawhttp import RawTransport, TransportError


class CannedServer:
    """Accepts connections; for each request read, sends the next canned answer. An answer of
    None closes the connection instead of answering."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self.answers = list(answers)
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

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
                self.requests.append(head + b"\r\n\r\n" + buf[:n])
                buf = buf[n:]
                answer = self.answers.pop(0) if self.answers else None
                if answer is None:
                    return
                conn.sendall(answer)
                if b"Connection: close" in answer:
                    return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[CannedServer]:
    s = CannedServer(request.param)
    yield s
    s.close()


def transport(port: int, guard=lambda: None) -> RawTransport:
    conf = SimpleNamespace(host=f"http://127.0.0.1:{port}", verify_ssl=False, ssl_ca_cert=None, cert_file=None,
                           key_file=None, tls_server_name=None)
    return RawTransport(conf, guard)


OK = b'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'
CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\n\r\n"
CLOSE_DELIMITED = b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nbroken"
THROTTLED = b'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n'


@pytest.mark.parametrize(
    ("server", "want"),
    [
        ([OK], (201, "Created", b"{}")),
        ([CHUNKED], (200, "OK", b"abcdefg")),
        ([CLOSE_DELIMITED], (500, "Internal Server Error", b"broken")),
        ([THROTTLED], (429, "Too Many Requests", b"")),
    ],
    indirect=["server"],
)
def test_answers_are_read_whole(server: CannedServer, want: tuple[int, str, bytes]) -> None:
    r = transport(server.port).exchange("POST", "/api/v1/x", {"Accept": "application/json"}, b'{"a":1}', 5.0)
    assert (r.status, r.reason, r.body) == want
    if r.status == 429:
        assert r.headers["retry-after"] == "3"
    req = server.requests[0]
    assert req.startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 7\r\n" in req and req.endswith(b'{"a":1}')


@pytest.mark.parametrize("server", [[OK, OK, OK]], indirect=True)
def test_one_kept_alive_connection_per_thread(server: CannedServer) -> None:
    t = transport(server.port)
    for _ in range(3):
        assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    assert server.connections == 1


@pytest.mark.parametrize("server", [[OK, None, OK]], indirect=True)
def test_a_connection_closed_without_an_answer_fails_as_sent_then_is_replaced(server: CannedServer) -> None:
    t = transport(server.port)
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    with pytest.raises(TransportError) as info:
        t.exchange("POST", "/b", {}, b"{}", 5.0)
    assert info.value.sent  # the Binding may have been stored: the caller must not assume otherwise
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    assert server.connections == 2


def test_a_refused_connection_was_never_sent() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    with pytest.raises(TransportError) as info:
        transport(port).exchange("POST", "/b", {}, b"{}", 2.0)
    assert not info.value.sent


@pytest.mark.parametrize("server", [[OK]], indirect=True)
def test_a_closed_fence_opens_no_connection(server: CannedServer) -> None:
    class Fenced(Exception):
        pass

    def guard() -> None:
        raise Fenced

    with pytest.raises(Fenced):
        transport(server.port, guard).exchange("POST", "/b", {}, b"{}", 5.0)
    assert server.connections == 0 and server.requests == []
