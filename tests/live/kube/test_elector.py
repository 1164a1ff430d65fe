"""Lease elector against a fake Lease API, in virtual time. Expected behaviour from client-go
tools/leaderelection/leaderelection_test.go (TestTryAcquireOrRenew, TestReleaseLease) and
kube-scheduler's defaults (15 s / 10 s / 2 s)."""

from __future__ import annotations

import pytest

from scheduler.live.kube.elector import HEALTHZ_TOLERANCE, LeaderElector, LeadershipLost
from scheduler.testing.fakes import FakeClock, FakeLeaseAPI


def elector(api, clock, ident, **kw):
    return LeaderElector(api, "pyscheduler", "pyscheduler", ident, clock=clock, wall=lambda: 1.7e9 + clock.t,
                         sleep=clock.sleep, **kw)


def test_acquire_free_lease_creates_it():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew()
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
def test_held_lease_respected_until_expired(elapsed, acquired):
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes the record now
    clock.t += elapsed
    assert b.try_acquire_or_renew() == acquired
    if acquired:
        assert api.lease["spec"]["holderIdentity"] == "b"
        assert api.lease["spec"]["leaseTransitions"] == 1


def test_renew_keeps_acquire_time_and_transitions():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    a.try_acquire_or_renew()
    first = dict(api.lease["spec"])
    clock.t += 2
    assert a.try_acquire_or_renew()
    spec = api.lease["spec"]
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["renewTime"] != first["renewTime"]
    assert spec["leaseTransitions"] == 0


def test_renewals_by_holder_keep_others_out():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.acquire_blocking()
    for _ in range(20):  # 40 s of renewals every 2 s
        clock.t += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()


def test_lost_after_renew_deadline():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()
    assert a.is_leader
    api.fail = True
    start = clock.t
    assert a.renew_blocking() is not None
    assert not a.is_leader and a.open_for() == 0
    # Gave up within the renew deadline (10 s) plus one retry period at most.
    assert clock.t - start <= 10 + 2


def test_lost_when_someone_else_took_it():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()
    api.lease["spec"]["holderIdentity"] = "intruder"
    api.rv += 1
    api.lease["metadata"]["resourceVersion"] = str(api.rv)
    reason = a.renew_blocking()
    assert reason is not None and "intruder" in reason
    assert not a.is_leader


def test_release_clears_holder_for_fast_failover():
    # TestReleaseLease: holder emptied, duration 1 s, so a standby takes over at once.
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.acquire_blocking()
    assert not b.try_acquire_or_renew()
    assert a.release_blocking()
    assert api.lease["spec"]["holderIdentity"] == ""
    assert api.lease["spec"]["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()


def test_release_when_not_leader_is_noop():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert not a.release_blocking()
    assert api.writes == 0


def test_invalid_timings():
    with pytest.raises(ValueError):
        LeaderElector(FakeLeaseAPI(), "x", "y", "a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElector(FakeLeaseAPI(), "x", "y", "a", renew_deadline=2, retry_period=2)


# ---------------------------------------------------------------------------------------------
# Fencing: counted from the start of the last successful renewal on the monotonic clock.


def test_fence_open_only_within_renew_deadline_of_last_renewal():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.open_for() == 0  # not leader yet
    assert a.acquire_blocking()
    assert a.open_for() == pytest.approx(10)
    assert a.lease_left() == pytest.approx(15)
    clock.t += 9.9
    assert a.open_for() > 0
    clock.t += 0.2
    assert a.open_for() <= 0


def test_paused_past_the_lease_never_renews_again():
    # The SIGSTOP case: client-go's renew loop restarts its 10 s deadline after waking
    # and keeps leading; here the fence is already closed on wake, so the loop loses at once
    # and does not even try to renew (another replica may hold the lease by now).
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()
    writes = api.writes
    clock.t += 20  # stopped for longer than the lease
    reason = a.renew_blocking()
    assert reason is not None and "renew deadline" in reason
    assert api.writes == writes and not a.is_leader and a.open_for() == 0


def test_renewal_counts_from_when_it_was_sent():
    # A renewal that takes 3 s to come back is dated from the moment it left: the fence closes
    # 10 s after the send, not after the reply.
    clock = FakeClock(0.0)
    api = FakeLeaseAPI(clock, latency=3.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()  # GET (3 s) then create, sent at t=3, back at t=6
    assert clock.t == 6 and a.last_renew == 3
    assert a.open_for() == pytest.approx(7)


def test_late_renewal_does_not_reopen_a_closed_fence():
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()
    clock.t += 10.5
    assert a.open_for() <= 0  # a binder saw it closed
    # A renewal sent before the deadline lands now: the fence stays closed.
    a.last_renew = 9.0
    assert a.open_for() == 0
    assert a.renew_blocking() is not None


def test_renew_fast_path_is_one_request():
    # client-go's leader updates its last observed record optimistically: no GET per renewal.
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    assert a.acquire_blocking()
    gets = api.gets
    for _ in range(5):
        clock.t += 2
        assert a.try_acquire_or_renew()
    assert api.gets == gets and api.writes == 6


def test_own_rate_limit_is_used():
    from scheduler.live.kube.transport import TokenBucket

    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    slept: list[float] = []

    def sleep(d: float) -> None:
        slept.append(d)
        clock.t += d

    a = LeaderElector(api, "pyscheduler", "pyscheduler", "a", clock=clock, sleep=sleep,
                      limiter=TokenBucket(qps=1, burst=1, clock=clock))
    assert a.acquire_blocking()  # GET takes the token, create waits a second for the next
    assert slept == [pytest.approx(1.0)]


@pytest.mark.parametrize(
    ("since_renewal", "leader", "healthy"),
    [
        # client-go LeaderElector.Check with kube-scheduler's NewLeaderHealthzAdaptor(20 s):
        # unhealthy only when leading and the last renewal is older than lease + 20 s.
        (34.9, True, True),
        (35.1, True, False),
        (100.0, False, True),  # a standby is never unhealthy for the lease
    ],
)
def test_healthz_check(since_renewal, leader, healthy):
    assert HEALTHZ_TOLERANCE == 20.0
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    a = elector(api, clock, "a")
    if leader:
        assert a.acquire_blocking()
    clock.t += since_renewal
    assert (a.check() is None) == healthy


async def test_thread_renews_while_the_event_loop_is_blocked():
    # The renewal runs in the elector's own thread: a cycle that hogs the event loop for longer
    # than the renew deadline must not cost the lease.
    import asyncio
    import time

    api = FakeLeaseAPI()
    a = LeaderElector(api, "pyscheduler", "pyscheduler", "a", lease_duration=3.0, renew_deadline=1.0,
                      retry_period=0.05)
    await a.acquire()
    keep = asyncio.ensure_future(a.keep())
    writes = api.writes
    time.sleep(2.5)  # the event loop is stuck: no await for 2.5 renew deadlines
    assert api.writes > writes + 3
    assert a.open_for() > 0 and not keep.done()
    assert await a.release()
    assert api.lease["spec"]["holderIdentity"] == ""
    keep.cancel()


async def test_keep_raises_when_the_thread_loses():
    import asyncio

    api = FakeLeaseAPI()
    a = LeaderElector(api, "pyscheduler", "pyscheduler", "a", lease_duration=0.6, renew_deadline=0.4,
                      retry_period=0.05)
    await a.acquire()
    api.fail = True
    with pytest.raises(LeadershipLost):
        await asyncio.wait_for(a.keep(), timeout=10)
    assert a.open_for() == 0
    assert not await a.release()  # nothing to release: it is not ours any more
