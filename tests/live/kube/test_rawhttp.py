"""The write lanes' plain HTTP/1.1 exchange (scheduler/live/kube/rawhttp.py) against a socket
server that answers with canned bytes: each case runs on both transports that make it, a lane
thread's (RawTransport) and the event loop's (loophttp.LoopTransport)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from scheduler.live.kube.rawhttp import TransportError, parse_response
from scheduler.testing.canned_http import CLOSE, THEN_CLOSE, CannedServer, WriteClient

MODES = ["thread", "loop"]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[CannedServer]:
    s = CannedServer(request.param)
    yield s
    s.close()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


_open: list[WriteClient] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def client(mode: str, port: int, guard=None) -> WriteClient:
    c = WriteClient(mode, port, guard)
    _open.append(c)
    return c


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
def test_answers_are_read_whole(server: CannedServer, mode: str, want: tuple[int, str, bytes]) -> None:
    r = client(mode, server.port).exchange("POST", "/api/v1/x", {"Accept": "application/json"}, b'{"a":1}', 5.0)
    assert (r.status, r.reason, r.body) == want
    if r.status == 429:
        assert r.headers["retry-after"] == "3"
    req = server.requests[0]
    assert req.startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 7\r\n" in req and req.endswith(b'{"a":1}')


@pytest.mark.parametrize("server", [[OK, OK, OK]], indirect=True)
def test_one_kept_alive_connection_per_thread(server: CannedServer, mode: str) -> None:
    t = client(mode, server.port)
    for _ in range(3):
        assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    assert server.connections == 1


@pytest.mark.parametrize("server", [[OK, CLOSE, OK]], indirect=True)
def test_a_connection_closed_without_an_answer_fails_as_sent_then_is_replaced(server: CannedServer, mode: str) -> None:
    t = client(mode, server.port)
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    with pytest.raises(TransportError) as info:
        t.exchange("POST", "/b", {}, b"{}", 5.0)
    assert info.value.sent  # the Binding may have been stored: the caller must not assume otherwise
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    assert server.connections == 2


def test_a_refused_connection_was_never_sent(mode: str) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    with pytest.raises(TransportError) as info:
        client(mode, port).exchange("POST", "/b", {}, b"{}", 2.0)
    assert not info.value.sent


@pytest.mark.parametrize("server", [[OK]], indirect=True)
def test_a_closed_fence_opens_no_connection(server: CannedServer, mode: str) -> None:
    class Fenced(Exception):
        pass

    def guard() -> None:
        raise Fenced

    with pytest.raises(Fenced):
        client(mode, server.port, guard).exchange("POST", "/b", {}, b"{}", 5.0)
    assert server.connections == 0 and server.requests == []


@pytest.mark.parametrize("server", [[THEN_CLOSE, OK, OK]], indirect=True)
def test_a_connection_the_server_closed_while_idle_is_replaced_before_use(server: CannedServer, mode: str) -> None:
    # The server answers, then closes the kept-alive connection; the next request must not be
    # sent on it (its answer would be lost, and a Binding's outcome unknown).
    t = client(mode, server.port)
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    time.sleep(0.1)  # the FIN arrives
    assert t.exchange("POST", "/b", {}, b"{}", 5.0).status == 201
    assert server.connections == 2


HEAD = b"HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\n"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    ("buf", "eof", "want"),
    [
        (b"HTTP/1.1 201 Cre", False, None),  # the head is incomplete
        (HEAD + b"ab", False, None),  # so is the body
        (HEAD + b"abcdHTTP/1.1", False, (201, b"abcd", True, b"HTTP/1.1")),  # what follows stays
        (CHUNKED_HEAD + b"3\r\nabc\r\n", False, None),
        (CHUNKED_HEAD + b"3\r\nabc\r\n0\r\n\r\n", False, (200, b"abc", True, b"")),
        (b"HTTP/1.1 500 x\r\n\r\npartial", False, None),  # ends with the connection
        (b"HTTP/1.1 500 x\r\n\r\npartial", True, (500, b"partial", False, b"")),
        (b"HTTP/1.0 204 No Content\r\n\r\n", False, (204, b"", False, b"")),  # 1.0: not kept alive
    ],
)
def test_parse_response_waits_for_a_whole_answer(buf: bytes, eof: bool, want: tuple | None) -> None:
    got = parse_response(buf, "POST", eof)
    assert (None if got is None else (got[0].status, got[0].body, got[1], got[2])) == want


def test_a_malformed_status_line_is_a_transport_error_after_sending() -> None:
    with pytest.raises(TransportError) as info:
        parse_response(b"SSH-2.0-OpenSSH\r\n\r\n", "POST")
    assert info.value.sent
