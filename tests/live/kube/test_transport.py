"""The transport: the token bucket, and transport errors that say whether a request left."""

from __future__ import annotations

import pytest

from scheduler.live.kube.transport import ApiError, KubeCoreAPI, TokenBucket


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


def test_transport_errors_say_whether_the_request_left() -> None:
    # A refused connection never carried the Binding; a reset after connecting may have.
    from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError

    class RaisingPool:
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        def urlopen(self, *args, **kwargs):
            raise self.exc

    class Configuration:
        def auth_settings(self):
            return {}

    class Client:
        user_agent = "test"
        configuration = Configuration()

    api = KubeCoreAPI.__new__(KubeCoreAPI)
    api.api, api._host = Client(), "https://x"
    api._pool = RaisingPool(MaxRetryError(None, "/x", NewConnectionError(None, "Connection refused")))
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", {})
    assert (info.value.status, info.value.sent) == (0, False)
    api._pool = RaisingPool(MaxRetryError(None, "/x", ProtocolError("Connection aborted")))
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", {})
    assert (info.value.status, info.value.sent) == (0, True)
