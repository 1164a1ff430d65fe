"""The per-pod writes sent by the event loop (scheduler/live/kube/loophttp.py): what only that
transport has (connections as many as the lane's turns, timers, cancellation), and the Binding and Event writes
that go through it. The exchange itself is tested on both transports in test_rawhttp.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from scheduler.live.kube.binder import Binder
from scheduler.live.kube.loophttp import LoopTransport
from scheduler.live.kube.rawhttp import RawTransport, TransportError
from scheduler.live.kube.transport import ApiError, Fenced, Lane, TokenBucket
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod
from scheduler.testing.canned_http import HANG, CannedServer, plain_conf, plain_core_api

OK = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"
THROTTLED = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n"
NO_PROTOBUF = b'HTTP/1.1 415 Unsupported Media Type\r\nContent-Length: 0\r\n\r\n'
EVENT = {
    "apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "p.1", "namespace": "ns"},
    "eventTime": "2026-11-28T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "x",
    "action": "Binding", "reason": "Scheduled", "type": "Normal", "note": "n",
    "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p"},
}


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[CannedServer]:
    s = CannedServer(request.param)
    yield s
    s.close()


def loop_transport(port: int) -> LoopTransport:
    return LoopTransport(RawTransport(plain_conf(port)))


@pytest.mark.parametrize("server", [[OK] * 6], indirect=True)
async def test_writes_at_once_share_as_many_connections_as_the_lane_has_workers(server: CannedServer) -> None:
    t = loop_transport(server.port)
    lane = Lane(TokenBucket(100, 100), workers=2)
    answers = await asyncio.gather(*(lane.run_async(t.exchange, "POST", "/b", {}, b"{}", 5.0) for _ in range(6)))
    assert [r.status for r in answers] == [201] * 6
    assert server.connections == 2
    t.close()


@pytest.mark.parametrize("server", [[HANG, OK]], indirect=True)
async def test_an_answer_that_does_not_come_in_time_fails_as_sent_and_drops_the_connection(
    server: CannedServer,
) -> None:
    t = loop_transport(server.port)
    with pytest.raises(TransportError) as info:
        await t.exchange("POST", "/b", {}, b"{}", 0.3)
    assert info.value.sent and "ReadTimeout" in str(info.value)
    assert (await t.exchange("POST", "/b", {}, b"{}", 5.0)).status == 201
    assert server.connections == 2  # the late answer could never be taken for the next one's
    t.close()


@pytest.mark.parametrize("server", [[HANG, OK]], indirect=True)
async def test_a_cancelled_write_drops_its_connection(server: CannedServer) -> None:
    t = loop_transport(server.port)
    task = asyncio.ensure_future(t.exchange("POST", "/b", {}, b"{}", 5.0))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await t.exchange("POST", "/b", {}, b"{}", 5.0)).status == 201
    assert server.connections == 2
    t.close()


@pytest.mark.parametrize(
    ("server", "sent_types"),
    [
        # APF's 429 with Retry-After: sent again (client-go withRetry), in protobuf both times.
        ([THROTTLED, OK], ["application/vnd.kubernetes.protobuf"] * 2),
        # 415: the same Event again as JSON.
        ([NO_PROTOBUF, OK], ["application/vnd.kubernetes.protobuf", "application/json"]),
    ],
    indirect=["server"],
)
async def test_an_event_from_the_loop_is_retried_as_the_threads_would(
    server: CannedServer, sent_types: list[str]
) -> None:
    api = plain_core_api(server.port)
    assert api.loop_ready()
    await api.create_event_async("ns", EVENT)
    got = [next(line.split(b": ", 1)[1].decode() for line in req.split(b"\r\n") if line.startswith(b"Content-Type"))
           for req in server.requests]
    assert got == sent_types
    api.close_loop_io()


@pytest.mark.parametrize("server", [[]], indirect=True)
async def test_an_unanswered_write_is_an_api_error_that_may_have_been_stored(server: CannedServer) -> None:
    api = plain_core_api(server.port)
    api.loop_ready()
    with pytest.raises(ApiError) as info:
        await api.create_event_async("ns", EVENT)
    assert (info.value.status, info.value.sent) == (0, True)
    api.close_loop_io()


class _Fence:
    def __init__(self, open_s: float) -> None:
        self.open_s = open_s

    def open_for(self) -> float:
        return self.open_s

    def lease_left(self) -> float:
        return 15.0


@pytest.mark.parametrize(("server", "fence_open", "want_requests"), [([OK], 5.0, 1), ([OK], 0.0, 0)],
                         indirect=["server"])
async def test_the_binder_sends_bindings_from_the_loop_behind_the_fence(
    server: CannedServer, fence_open: float, want_requests: int
) -> None:
    binder = Binder(plain_core_api(server.port), TokenBucket(100, 100), fence=_Fence(fence_open))
    assert binder.binds.loop_io and binder.events.loop_io
    pod = PodInfo(make_pod("p", namespace="ns", uid="u1"))
    if want_requests:
        await binder.bind(pod, "n1")
    else:
        with pytest.raises(Fenced):
            await binder.bind(pod, "n1")
    assert len(server.requests) == want_requests
    if want_requests:
        assert server.requests[0].startswith(b"POST /api/v1/namespaces/ns/pods/p/binding HTTP/1.1")
    binder.shutdown()
