"""Binder: the Binding POST and its error paths, its two lanes, the lease fence. A fake API
object is injected (no monkeypatching)."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.live.kube.binder import BindConflict, Binder, PodGone
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import ApiError, Fenced, TokenBucket
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod
from scheduler.testing.fakes import FakeCoreAPI, FakeFence


def unlimited() -> TokenBucket:
    return TokenBucket(0, 1)


POD = PodInfo(make_pod("web", "prod", uid="u-1"))


async def test_bind_posts_binding_with_uid_precondition():
    api = FakeCoreAPI()
    b = Binder(api, unlimited())
    await b.bind(POD, "n1")
    assert api.bindings == [
        (
            "prod",
            "web",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "web", "namespace": "prod", "uid": "u-1"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
            },
        )
    ]


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (409, BindConflict),  # already bound / being deleted / replaced
        (404, PodGone),  # pod deleted
        (500, ApiError),  # anything else: the scheduler unreserves, forgets, requeues
        (0, ApiError),  # transport error
    ],
)
async def test_bind_errors(status, exc_type):
    api = FakeCoreAPI(ApiError(status, "boom"))
    b = Binder(api, unlimited())
    with pytest.raises(exc_type) as ei:
        await b.bind(POD, "n1")
    assert type(ei.value) is exc_type


async def test_bindings_and_events_have_separate_buckets():
    # kube-scheduler's events go through their own clientset (own rate limiter): a flood of
    # events never delays a Binding, and the reverse.
    t = [0.0]
    waits: list[str] = []

    def sleeper(lane: str):
        async def sleep(d: float) -> None:
            waits.append(lane)

        return sleep

    api, events = FakeCoreAPI(), FakeCoreAPI()
    b = Binder(
        api,
        TokenBucket(qps=1, burst=1, clock=lambda: t[0], sleep=sleeper("bind")),
        events_api=events,
        events_limiter=TokenBucket(qps=1, burst=1, clock=lambda: t[0], sleep=sleeper("events")),
    )
    r = Recorder(b.events_api, b.events)
    await r.write_event(POD, "p", "Normal", "Scheduled", "Binding", "x")
    await r.write_unschedulable(POD, "Unschedulable", "m")
    assert waits == ["events"]
    await b.bind(POD, "n1")  # its bucket is still full
    assert waits == ["events"] and b.writes == 3
    assert len(api.bindings) == 1 and api.events == [] and len(events.events) == 1 and events.status_patches


async def test_ambiguous_bind_error_resolved_by_reading_the_pod(monkeypatch):
    # The API server stored the Binding and died before answering: the pod is bound, so the
    # bind succeeded. Reads that fail meanwhile are retried (the assumption keeps the slot).
    monkeypatch.setattr("scheduler.live.kube.binder.RESOLVE_BACKOFF", (0.0, 0.0))
    api = FakeCoreAPI()
    api.lose_response = True
    api.get_errors = [ApiError(0, "connection refused"), ApiError(503, "starting")]
    b = Binder(api, unlimited())
    await b.bind(POD, "n1")  # no exception: bound
    assert api.gets == 3


@pytest.mark.parametrize(
    ("bound_to", "uid", "want"),
    [
        ("", "u-1", ApiError),  # not stored: a real failure, the pod is retried
        ("n2", "u-1", BindConflict),  # someone else bound it
        ("", "other", PodGone),  # replaced by a same-name pod
    ],
)
async def test_ambiguous_bind_error_outcomes(bound_to, uid, want):
    class API(FakeCoreAPI):
        def get_pod(self, namespace, name):
            self.gets += 1
            return {"metadata": {"uid": uid}, "spec": {"nodeName": bound_to}}

    api = API(ApiError(500, "etcdserver: request timed out"))
    b = Binder(api, unlimited())
    with pytest.raises(want) as info:
        await b.bind(POD, "n1")
    assert type(info.value) is want and api.gets == 1


@pytest.mark.parametrize(
    "error",
    [
        ApiError(403, 'pods "p" is forbidden: User "x" cannot create resource "pods/binding"'),
        ApiError(429, "Too many requests, please try again later."),
        ApiError(0, "MaxRetryError: ... (Caused by NewConnectionError(...Connection refused))", sent=False),
    ],
)
async def test_refused_binding_is_a_plain_failure(error):
    # Refused before storage: no pod read (the assumption is forgotten and the pod retried).
    api = FakeCoreAPI(error)
    b = Binder(api, unlimited())
    with pytest.raises(ApiError) as info:
        await b.bind(POD, "n1")
    assert type(info.value) is ApiError and api.gets == 0


@pytest.mark.parametrize(
    ("open_for", "lease_left", "sent", "timeout"),
    [
        (5.0, 12.0, True, 12.0),  # the request may not outlive the lease as last renewed
        (5.0, 100.0, True, 30.0),  # capped at the usual request timeout
        (0.0, 5.0, False, None),  # renew deadline passed: nothing leaves
        (-3.0, 2.0, False, None),
    ],
)
async def test_binding_only_while_fence_open(open_for, lease_left, sent, timeout):
    api = FakeCoreAPI()
    b = Binder(api, unlimited(), fence=FakeFence(open_for, lease_left))
    if sent:
        await b.bind(POD, "n1")
        assert api.timeouts == [timeout]
    else:
        with pytest.raises(Fenced):
            await b.bind(POD, "n1")
        assert api.bindings == []


async def test_fence_checked_again_in_the_sending_thread():
    # The fence closes while the Binding waits for a rate-limit token: it is not sent.
    fence = FakeFence(5.0)

    async def sleep(d: float) -> None:
        fence.open = 0.0  # the lease went stale during the wait

    api = FakeCoreAPI()
    b = Binder(api, TokenBucket(qps=1, burst=1, sleep=sleep), fence=fence)
    await b.bind(POD, "n1")
    with pytest.raises(Fenced):
        await b.bind(PodInfo(make_pod("web2", "prod", uid="u-2")), "n1")
    assert [n for _, n, _ in api.bindings] == ["web"]


def test_run_in_executor_is_used():
    # The kubernetes client blocks: calls must run off the event loop thread.
    import threading

    seen: list[str] = []

    class ThreadAPI(FakeCoreAPI):
        def create_binding(self, namespace, name, body, timeout=None):
            seen.append(threading.current_thread().name)

    asyncio.run(Binder(ThreadAPI(), unlimited()).bind(POD, "n"))
    assert seen and seen[0] != threading.main_thread().name
