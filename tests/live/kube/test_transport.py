"""The transport: the token bucket, and transport errors that say whether a request left."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scheduler.live.kube.transport import ApiError, KubeCoreAPI, TokenBucket, encode_body, micro_time


async def test_token_bucket_burst_then_qps():
    t = [0.0]
    slept: list[float] = []

    async def sleep(d: float) -> None:
        slept.append(d)
        t[0] += d

    tb = TokenBucket(qps=10, burst=3, clock=lambda: t[0], sleep=sleep)
    for _ in range(3):
        await tb.take()
    assert slept == []  # the burst is free
    await tb.take()
    assert slept == [pytest.approx(0.1)]
    t[0] += 1.0  # refills, capped at burst
    tb._refill()
    assert tb.tokens == 3


class _Configuration:
    def auth_settings(self):
        return {}


class _Client:
    user_agent = "test"
    configuration = _Configuration()


def bare_core_api() -> KubeCoreAPI:
    """A KubeCoreAPI without a kubernetes client: the test sets its ``_pool``."""
    api = KubeCoreAPI.__new__(KubeCoreAPI)
    api.api, api._host = _Client(), "https://x"
    return api


def test_transport_errors_say_whether_the_request_left() -> None:
    # A refused connection never carried the Binding; a reset after connecting may have.
    from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError

    class RaisingPool:
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        def urlopen(self, *args, **kwargs):
            raise self.exc

    api = bare_core_api()
    api._pool = RaisingPool(MaxRetryError(None, "/x", NewConnectionError(None, "Connection refused")))
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", {})
    assert (info.value.status, info.value.sent) == (0, False)
    api._pool = RaisingPool(MaxRetryError(None, "/x", ProtocolError("Connection aborted")))
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", {})
    assert (info.value.status, info.value.sent) == (0, True)


@pytest.mark.parametrize(
    ("status", "header", "want"),
    [
        # client-go with_retry.go checkWait: 429 and every 5xx wait when Retry-After is an integer.
        (429, "2", 2), (500, "1", 1), (503, "0", 0), (504, "3", 3),
        (429, None, None), (503, "soon", None), (409, "1", None), (404, "1", None), (200, "1", None),
    ],
)
def test_retry_after(status: int, header: str | None, want: int | None) -> None:
    from scheduler.live.kube.transport import retry_after

    assert retry_after(status, header) == want


def test_throttled_write_is_retried_after_the_servers_wait() -> None:
    # APF's 429 with Retry-After: the Binding is sent again after the wait, up to client-go's 10
    # retries; without the header it fails at once (the binder's own retry path takes over).
    class Resp:
        def __init__(self, status: int, header: str | None) -> None:
            self.status, self.reason = status, "x"
            self.headers = {"Retry-After": header} if header is not None else {}

        def read(self) -> bytes:
            return b'{"kind":"Status","message":"throttled"}'

        def release_conn(self) -> None:
            pass

    class Pool:
        def __init__(self, answers: list[Resp]) -> None:
            self.answers, self.calls = answers, 0

        def urlopen(self, *args, **kwargs):
            self.calls += 1
            return self.answers.pop(0)

    slept: list[float] = []
    api = bare_core_api()
    api.sleep = slept.append
    api._pool = Pool([Resp(429, "1"), Resp(503, "2"), Resp(201, None)])
    api.create_binding("ns", "p", {})
    assert (api._pool.calls, slept) == (3, [1, 2])
    api._pool = Pool([Resp(429, None)])
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", {})
    assert info.value.status == 429 and api._pool.calls == 1
    slept.clear()
    api._pool = Pool([Resp(429, "0")] * 11 + [Resp(429, "0")])
    with pytest.raises(ApiError):
        api.create_binding("ns", "p", {})
    assert api._pool.calls == 11 and len(slept) == 10


@pytest.mark.parametrize(
    ("ts", "want"),
    [
        (0.0, "1970-01-01T00:00:00.000000Z"),
        (1795761435.266135, "2026-11-27T06:37:15.266135Z"),
        (1795761435.9999996, "2026-11-27T06:37:16.000000Z"),  # rounds into the next second
        (1795761435.0000004, "2026-11-27T06:37:15.000000Z"),
    ],
)
def test_micro_time_is_rfc3339_with_microseconds(ts: float, want: str) -> None:
    # metav1.MicroTime's JSON form; the same instant as the datetime rendering of it.
    assert micro_time(ts) == want
    assert micro_time(ts) == datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ({"a": [1, "x"], "b": None}, {"a": [1, "x"], "b": None}),
        ({1: "numeric keys go through the standard encoder"}, {"1": "numeric keys go through the standard encoder"}),
    ],
)
def test_request_bodies_are_json(body: dict, want: dict) -> None:
    assert json.loads(encode_body(body)) == want
