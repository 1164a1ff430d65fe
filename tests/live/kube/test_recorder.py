"""Recorder: the Event body and its series, the PodScheduled condition patch (the queue in
front of them is exercised through the loop in tests/live/test_loop.py)."""

from __future__ import annotations

import pytest

from scheduler.live.kube.recorder import Recorder, truncate_message
from scheduler.live.kube.transport import ApiError, Lane, TokenBucket
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod
from scheduler.testing.fakes import FakeCoreAPI

POD = PodInfo(make_pod("web", "prod", uid="u-1"))


def lane() -> Lane:
    return Lane(TokenBucket(0, 1))


async def test_event_body_and_series():
    api = FakeCoreAPI()
    t = [1_700_000_000.0]
    r = Recorder(api, lane(), hostname="host-1", clock=lambda: t[0])
    await r.write_event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.")
    ns, ev = api.events[0]
    assert ns == "prod"
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["reportingController"] == "pyscheduler"
    assert ev["reportingInstance"] == "pyscheduler-host-1"
    assert (ev["type"], ev["reason"], ev["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert ev["note"] == "0/1 nodes are available: x."
    assert ev["regarding"]["uid"] == "u-1" and ev["regarding"]["kind"] == "Pod"
    assert ev["metadata"]["name"].startswith("web.")
    # client-go tools/events recordToSink: an isomorphic Event (the note does not count) is not
    # created again; the first repeat patches the cached Event's series, later ones only count.
    t[0] += 5
    await r.write_event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "another note")
    assert len(api.events) == 1
    assert api.event_patches[0][1] == ev["metadata"]["name"]
    assert api.event_patches[0][2]["series"]["count"] == 2
    t[0] += 5
    await r.write_event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.")
    assert len(api.events) == 1 and len(api.event_patches) == 1
    # The pod at another resourceVersion is another regarding object: a new Event.
    raw = make_pod("web", "prod", uid="u-1")
    raw["metadata"]["resourceVersion"] = "42"
    await r.write_event(PodInfo(raw), "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "x")
    assert len(api.events) == 2
    # refreshExistingEventSeries: every series written again with its count.
    await r.refresh_series()
    assert api.event_patches[-1][1:] == (ev["metadata"]["name"], {"series": {
        "count": 3, "lastObservedTime": api.event_patches[-1][2]["series"]["lastObservedTime"]}})
    # finishSeries, 6 minutes on: the series written a last time and dropped, the single Event
    # dropped; the same Event afterwards is created anew.
    t[0] += 6 * 60 + 1
    patches = len(api.event_patches)
    await r.finish_series()
    assert len(api.event_patches) == patches + 1 and api.event_patches[-1][2]["series"]["count"] == 3
    await r.write_event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.")
    assert len(api.events) == 3


@pytest.mark.parametrize(
    ("status", "want_events"),
    [
        # recordEvent: the series patch answered 404 (the Event expired): created again, series set.
        (404, 2),
        # A series patch refused with a 500 (e2e/test_faults.py's burst): logged, never raised into
        # the events worker (it once was: the log call's keywords clashed with structlog's own).
        (500, 1),
    ],
)
async def test_series_patch_refused(status: int, want_events: int):
    class Refusing(FakeCoreAPI):
        def patch_event(self, namespace, name, body):
            raise ApiError(status, "refused")

    api = Refusing()
    r = Recorder(api, lane(), hostname="h", clock=lambda: 1_700_000_000.0)
    await r.write_event(POD, "p", "Warning", "FailedScheduling", "Scheduling", "m")
    await r.write_event(POD, "p", "Warning", "FailedScheduling", "Scheduling", "m")  # no exception
    assert len(api.events) == want_events
    if status == 404:
        assert api.events[1][1]["series"]["count"] == 2


async def test_event_failure_is_not_fatal():
    class Failing(FakeCoreAPI):
        def create_event(self, namespace, body):
            raise ApiError(403, "forbidden")

    r = Recorder(Failing(), lane())
    await r.write_event(POD, "p", "Normal", "Scheduled", "Binding", "x")  # no exception


async def test_unschedulable_condition_patch_and_skip():
    api = FakeCoreAPI()
    r = Recorder(api, lane(), clock=lambda: 0.0)
    assert await r.write_unschedulable(POD, "Unschedulable", "0/1 nodes are available")
    ns, name, body = api.status_patches[0]
    cond = body["status"]["conditions"][0]
    assert (ns, name) == ("prod", "web")
    assert cond["type"] == "PodScheduled" and cond["status"] == "False"
    assert cond["reason"] == "Unschedulable" and cond["message"] == "0/1 nodes are available"
    # The pod already carries the same condition: no write (upstream UpdatePodCondition).
    raw = make_pod("web", "prod", uid="u-1")
    raw["status"] = {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}
        ]
    }
    assert not await r.write_unschedulable(PodInfo(raw), "Unschedulable", "0/1 nodes are available")
    assert len(api.status_patches) == 1


async def test_queued_note_is_cut_to_the_api_limit():
    # Upstream truncateMessage: a FailedScheduling note over 1024 characters ends in " ...".
    api = FakeCoreAPI()
    r = Recorder(api, lane())
    r.event(POD, "p", "Warning", "FailedScheduling", "Scheduling", "y" * 2000)
    await r.flush()
    note = api.events[0][1]["note"]
    assert len(note) == 1024 and note.endswith(" ...")


def test_truncate_message():
    assert truncate_message("x" * 10) == "x" * 10
    t = truncate_message("y" * 2000)
    assert len(t) == 1024 and t.endswith(" ...")


async def test_forget_pod_drops_its_condition():
    api = FakeCoreAPI()
    r = Recorder(api, lane(), clock=lambda: 1_700_000_000.0)
    r.unschedulable(POD, "Unschedulable", "m")
    r.forget_pod(POD.uid)
    assert r.pending() == 0
    await r.flush()
    assert api.status_patches == []


async def test_condition_lost_to_a_passing_error_is_written_again():
    # A 5xx or a reset on the PodScheduled patch (e2e/test_faults.py's 5xx case) left the pod
    # without its Unschedulable condition until its next attempt, minutes later: the patch is
    # queued again. A refusal (4xx) is not retried, and a lost lease cancels the retries.
    import asyncio

    class Flaky(FakeCoreAPI):
        def __init__(self, errors: list[ApiError]) -> None:
            super().__init__()
            self.errors = errors

        def patch_pod_status(self, namespace, name, body):
            if self.errors:
                raise self.errors.pop(0)
            super().patch_pod_status(namespace, name, body)

    for errors, want in (([ApiError(503), ApiError(0, "reset")], 1), ([ApiError(422, "invalid")], 0)):
        api = Flaky(list(errors))
        r = Recorder(api, lane())
        r.retry_delay = 0.0
        r.unschedulable(POD, "Unschedulable", "m")
        for _ in range(4):
            await r.flush()
            await asyncio.sleep(0.01)
        assert len(api.status_patches) == want, errors
    api = Flaky([ApiError(503)])
    r = Recorder(api, lane())
    r.retry_delay = 0.0
    r.unschedulable(POD, "Unschedulable", "m")
    await r.flush()
    r.clear()
    await asyncio.sleep(0.01)
    await r.flush()
    assert api.status_patches == []
    # A retry never overwrites a newer condition (e2e/test_faults.py's 5xx case: a bind error's
    # SchedulerError, retried after the pod's Unschedulable was written, left it SchedulerError).
    api = Flaky([ApiError(503)])
    r = Recorder(api, lane())
    r.retry_delay = 0.0
    r.unschedulable(POD, "SchedulerError", "bind failed")
    await r.flush()
    r.unschedulable(POD, "Unschedulable", "0/1 nodes are available")
    for _ in range(3):
        await r.flush()
        await asyncio.sleep(0.01)
    assert [b["status"]["conditions"][0]["reason"] for _, _, b in api.status_patches] == ["Unschedulable"]


@pytest.mark.parametrize(
    ("error", "want_reasons"),
    [
        # A reset or a 5xx: the SchedulerError patch may have landed, so the Unschedulable one is
        # written though the cycle's (stale) pod already shows Unschedulable (e2e/test_faults.py
        # test_5xx_and_resets_on_writes: a pod left SchedulerError for good).
        (ApiError(0, "reset"), ["Unschedulable", "Unschedulable"]),
        (ApiError(500, "boom"), ["Unschedulable", "Unschedulable"]),
        # A refusal changed nothing: the pod still says Unschedulable, nothing to write.
        (ApiError(422, "invalid"), ["Unschedulable"]),
    ],
)
async def test_a_condition_write_of_unknown_outcome_is_not_trusted(error: ApiError, want_reasons: list[str]):
    class SecondFails(FakeCoreAPI):
        calls = 0

        def patch_pod_status(self, namespace, name, body):
            self.calls += 1
            if self.calls == 2:
                raise error
            super().patch_pod_status(namespace, name, body)

    api = SecondFails()
    r = Recorder(api, lane(), clock=lambda: 0.0)
    assert await r.write_unschedulable(POD, "Unschedulable", "0/1 nodes are available")
    assert not await r.write_unschedulable(POD, "SchedulerError", "binding failed")
    stale = make_pod("web", "prod", uid="u-1")
    stale["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": "0/1 nodes are available"}]}
    await r.write_unschedulable(PodInfo(stale), "Unschedulable", "0/1 nodes are available")
    assert [b["status"]["conditions"][0]["reason"] for _, _, b in api.status_patches] == want_reasons


async def test_settle_writes_a_queued_condition_now_and_waits_for_one_in_flight():
    import asyncio

    api = FakeCoreAPI()
    r = Recorder(api, lane(), clock=lambda: 0.0)
    assert not r.has_condition(POD.uid)
    r.unschedulable(POD, "Unschedulable", "m", nominated="n1")
    assert r.has_condition(POD.uid)
    await r.settle(POD.uid)  # queued: written at once, ahead of the workers
    assert [n for _, n, _ in api.status_patches] == ["web"]
    assert api.status_patches[0][2]["status"]["nominatedNodeName"] == "n1"
    assert not r.has_condition(POD.uid) and r.pending() == 0
    # A write already in flight (a worker took it): settle returns only once it is done.
    r.unschedulable(POD, "Unschedulable", "m2")
    writer = asyncio.create_task(r._one())
    await asyncio.sleep(0)
    assert r.has_condition(POD.uid)
    await r.settle(POD.uid)
    assert len(api.status_patches) == 2 and not r.has_condition(POD.uid)
    await writer


async def test_next_attempt_writes_over_a_retried_condition_the_watch_has_not_shown():
    # e2e/test_faults.py's 5xx case (CI at 94a9786): attempt 6 failed to bind, its SchedulerError
    # patch met a 500 and was retried a second later, just before attempt 7 found the pod
    # Unschedulable. The watched pod still showed attempt 5's Unschedulable condition, so
    # attempt 7 skipped its write as "already so", and the pod kept SchedulerError for minutes.
    api = FakeCoreAPI()
    r = Recorder(api, lane(), clock=lambda: 0.0)
    raw = make_pod("web", "prod", uid="u-1")
    raw["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": "0/1 nodes are available"}]}  # fmt: skip
    watched = PodInfo(raw)  # attempt 5's condition, as the watch last showed it
    assert await r.write_unschedulable(watched, "SchedulerError", "bind failed")  # the retried write
    assert await r.write_unschedulable(watched, "Unschedulable", "0/1 nodes are available")
    assert [b["status"]["conditions"][0]["reason"] for _, _, b in api.status_patches] == [
        "SchedulerError", "Unschedulable"
    ]
    # Once the recorder's last write is what the pod shows, the same condition is not written again.
    assert not await r.write_unschedulable(watched, "Unschedulable", "0/1 nodes are available")
    assert len(api.status_patches) == 2


async def test_a_pods_newer_condition_waits_for_its_write_in_flight():
    # With 16 writers, e2e/test_faults.py's 5xx case left a pod SchedulerError: its older
    # condition's write was still in flight when a second writer sent the newer one, and the
    # older landed last. One pod's conditions are written one at a time, in order.
    import asyncio
    import threading

    class Slow(FakeCoreAPI):
        def __init__(self) -> None:
            super().__init__()
            self.release = threading.Event()
            self.calls = 0

        def patch_pod_status(self, namespace, name, body):
            self.calls += 1
            if self.calls == 1:
                self.release.wait(5)  # the first write is slow
            super().patch_pod_status(namespace, name, body)

    other = PodInfo(make_pod("db", "prod", uid="u-2"))
    api = Slow()
    r = Recorder(api, Lane(TokenBucket(0, 1), workers=4), workers=4)
    r.unschedulable(POD, "SchedulerError", "bind failed")
    first = asyncio.create_task(r._one())
    for _ in range(100):
        if r._busy:
            break
        await asyncio.sleep(0.01)
    r.unschedulable(POD, "Unschedulable", "0/1 nodes are available")
    r.unschedulable(other, "Unschedulable", "0/1 nodes are available")
    assert await r._one()  # the other pod's condition is not held up
    assert not await r._one()  # this pod's newer one waits for the write in flight
    api.release.set()
    await first
    await r.flush()
    assert [(n, b["status"]["conditions"][0]["reason"]) for _, n, b in api.status_patches] == [
        ("db", "Unschedulable"), ("web", "SchedulerError"), ("web", "Unschedulable"),
    ]
