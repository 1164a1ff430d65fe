"""Lease elector against a fake Lease API, in virtual time. Expected behaviour from client-go
tools/leaderelection/leaderelection_test.go (TestTryAcquireOrRenew, TestReleaseLease) and
kube-scheduler's defaults (15 s / 10 s / 2 s)."""

from __future__ import annotations

import copy

import pytest

from scheduler.binder import ApiError
from scheduler.elector import LeaderElector, LeadershipLost


class FakeLeaseAPI:
    def __init__(self) -> None:
        self.lease: dict | None = None
        self.rv = 0
        self.fail = False  # simulate an unreachable API server
        self.writes = 0

    def get(self, namespace, name):
        if self.fail:
            raise ApiError(0, "connection refused")
        return copy.deepcopy(self.lease)

    def create(self, namespace, body):
        if self.fail:
            raise ApiError(0, "connection refused")
        if self.lease is not None:
            raise ApiError(409, "exists")
        self.rv += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        self.writes += 1
        return copy.deepcopy(self.lease)

    def replace(self, namespace, name, body):
        if self.fail:
            raise ApiError(0, "connection refused")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "conflict")
        self.rv += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        self.writes += 1
        return copy.deepcopy(self.lease)


class VClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    async def sleep(self, d: float) -> None:
        self.t += d


class InlineExecutor:
    """run_in_executor(None-like) replacement: calls inline (tests only)."""

    def submit(self, fn, *args):
        import concurrent.futures

        f = concurrent.futures.Future()
        try:
            f.set_result(fn(*args))
        except BaseException as exc:
            f.set_exception(exc)
        return f


def elector(api, clock, ident):
    return LeaderElector(api, "pyscheduler", "pyscheduler", ident, clock=clock, wall=lambda: 1.7e9 + clock.t,
                         sleep=clock.sleep, executor=InlineExecutor())


async def test_acquire_free_lease_creates_it():
    api, clock = FakeLeaseAPI(), VClock()
    a = elector(api, clock, "a")
    assert await a.try_acquire_or_renew()
    spec = api.lease["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0


@pytest.mark.parametrize(
    ("elapsed", "acquired"),
    [
        # TestTryAcquireOrRenew: a held lease is taken only after leaseDuration on the candidate's clock.
        (0.0, False),
        (14.9, False),
        (15.1, True),
    ],
)
async def test_held_lease_respected_until_expired(elapsed, acquired):
    api, clock = FakeLeaseAPI(), VClock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # b observes the record now
    clock.t += elapsed
    assert await b.try_acquire_or_renew() == acquired
    if acquired:
        assert api.lease["spec"]["holderIdentity"] == "b"
        assert api.lease["spec"]["leaseTransitions"] == 1


async def test_renew_keeps_acquire_time_and_transitions():
    api, clock = FakeLeaseAPI(), VClock()
    a = elector(api, clock, "a")
    await a.try_acquire_or_renew()
    first = dict(api.lease["spec"])
    clock.t += 2
    assert await a.try_acquire_or_renew()
    spec = api.lease["spec"]
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["renewTime"] != first["renewTime"]
    assert spec["leaseTransitions"] == 0


async def test_renewals_by_holder_keep_others_out():
    api, clock = FakeLeaseAPI(), VClock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    await a.acquire()
    for _ in range(20):  # 40 s of renewals every 2 s
        clock.t += 2
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()


async def test_lost_after_renew_deadline():
    api, clock = FakeLeaseAPI(), VClock()
    a = elector(api, clock, "a")
    await a.acquire()
    assert a.is_leader
    api.fail = True
    start = clock.t
    with pytest.raises(LeadershipLost):
        await a.keep()
    assert not a.is_leader
    # Gave up within the renew deadline (10 s) plus one retry period at most.
    assert clock.t - start <= 10 + 2


async def test_lost_when_someone_else_took_it():
    api, clock = FakeLeaseAPI(), VClock()
    a = elector(api, clock, "a")
    await a.acquire()
    api.lease["spec"]["holderIdentity"] = "intruder"
    api.rv += 1
    api.lease["metadata"]["resourceVersion"] = str(api.rv)
    with pytest.raises(LeadershipLost):
        await a.keep()


async def test_release_clears_holder_for_fast_failover():
    # TestReleaseLease: holder emptied, duration 1 s, so a standby takes over at once.
    api, clock = FakeLeaseAPI(), VClock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    await a.acquire()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    assert api.lease["spec"]["holderIdentity"] == ""
    assert api.lease["spec"]["leaseDurationSeconds"] == 1
    assert await b.try_acquire_or_renew()


async def test_release_when_not_leader_is_noop():
    api, clock = FakeLeaseAPI(), VClock()
    a = elector(api, clock, "a")
    assert not await a.release()
    assert api.writes == 0


def test_invalid_timings():
    with pytest.raises(ValueError):
        LeaderElector(FakeLeaseAPI(), "x", "y", "a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElector(FakeLeaseAPI(), "x", "y", "a", renew_deadline=2, retry_period=2)
