"""Binder: the Binding POST and its error paths, Events, the PodScheduled condition, the token
bucket. A fake API object is injected (no monkeypatching)."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.live.kube.binder import ApiError, BindConflict, Binder, Fenced, KubeCoreAPI, PodGone, TokenBucket
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod


class FakeAPI:
    def __init__(self, bind_error: ApiError | Exception | None = None) -> None:
        self.bind_error = bind_error
        self.bindings: list[tuple[str, str, dict]] = []
        self.events: list[tuple[str, dict]] = []
        self.event_patches: list[tuple[str, str, dict]] = []
        self.status_patches: list[tuple[str, str, dict]] = []
        self.timeouts: list[float | None] = []
        self.uids: dict[tuple[str, str], str] = {}
        self.lose_response = False  # the Binding is stored but the reply never arrives
        self.get_errors: list[ApiError] = []  # raised by get_pod, one per call, first
        self.gets = 0
        self.deleted: list[tuple[str, str]] = []

    def create_binding(self, namespace, name, body, timeout=None):
        self.uids[(namespace, name)] = body["metadata"]["uid"]
        if self.bind_error is not None:
            raise self.bind_error
        self.timeouts.append(timeout)
        self.bindings.append((namespace, name, body))
        if self.lose_response:
            raise ApiError(0, "ProtocolError: Connection aborted")

    def get_pod(self, namespace, name):
        self.gets += 1
        if self.get_errors:
            raise self.get_errors.pop(0)
        node = next((b["target"]["name"] for ns, n, b in self.bindings if (ns, n) == (namespace, name)), "")
        return {"metadata": {"uid": self.uids.get((namespace, name), "")}, "spec": {"nodeName": node}}

    def create_event(self, namespace, body):
        self.events.append((namespace, body))

    def patch_event(self, namespace, name, body):
        self.event_patches.append((namespace, name, body))

    def patch_pod_status(self, namespace, name, body):
        self.status_patches.append((namespace, name, body))

    def delete_pod(self, namespace, name):
        self.deleted.append((namespace, name))


def unlimited() -> TokenBucket:
    return TokenBucket(0, 1)


POD = PodInfo(make_pod("web", "prod", uid="u-1"))


async def test_bind_posts_binding_with_uid_precondition():
    api = FakeAPI()
    b = Binder(api, unlimited(), hostname="h")
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
    ("status", "exc_type", "recorded"),
    [
        (409, BindConflict, True),  # already bound / being deleted / replaced
        (404, PodGone, True),  # pod deleted
        (500, ApiError, False),  # anything else: the scheduler unreserves, forgets, requeues
        (0, ApiError, False),  # transport error
    ],
)
async def test_bind_errors(status, exc_type, recorded):
    api = FakeAPI(ApiError(status, "boom"))
    b = Binder(api, unlimited())
    with pytest.raises(exc_type) as ei:
        await b.bind(POD, "n1")
    assert type(ei.value) is exc_type
    assert ("u-1" in b.bind_errors) == recorded


async def test_event_body_and_series():
    api = FakeAPI()
    t = [1_700_000_000.0]
    b = Binder(api, unlimited(), hostname="host-1", clock=lambda: t[0])
    await b.event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.")
    ns, ev = api.events[0]
    assert ns == "prod"
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["reportingController"] == "pyscheduler"
    assert ev["reportingInstance"] == "pyscheduler-host-1"
    assert (ev["type"], ev["reason"], ev["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert ev["note"] == "0/1 nodes are available: x."
    assert ev["regarding"]["uid"] == "u-1" and ev["regarding"]["kind"] == "Pod"
    assert ev["metadata"]["name"].startswith("web.")
    # The same event again within the window becomes a series update, not a new Event.
    t[0] += 5
    await b.event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.")
    assert len(api.events) == 1
    assert api.event_patches[0][1] == ev["metadata"]["name"]
    assert api.event_patches[0][2]["series"]["count"] == 2
    # A different message is a new Event.
    await b.event(POD, "pyscheduler", "Warning", "FailedScheduling", "Scheduling", "other")
    assert len(api.events) == 2


async def test_event_failure_is_not_fatal():
    class Failing(FakeAPI):
        def create_event(self, namespace, body):
            raise ApiError(403, "forbidden")

    b = Binder(Failing(), unlimited())
    await b.event(POD, "p", "Normal", "Scheduled", "Binding", "x")  # no exception


async def test_unschedulable_condition_patch_and_skip():
    api = FakeAPI()
    b = Binder(api, unlimited(), clock=lambda: 0.0)
    assert await b.set_unschedulable(POD, "Unschedulable", "0/1 nodes are available")
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
    assert not await b.set_unschedulable(PodInfo(raw), "Unschedulable", "0/1 nodes are available")
    assert len(api.status_patches) == 1


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


async def test_bindings_and_events_have_separate_buckets():
    # kube-scheduler's events go through their own clientset (own rate limiter): a flood of
    # events never delays a Binding, and the reverse.
    t = [0.0]
    waits: list[str] = []

    def sleeper(lane: str):
        async def sleep(d: float) -> None:
            waits.append(lane)

        return sleep

    api, events = FakeAPI(), FakeAPI()
    b = Binder(
        api,
        TokenBucket(qps=1, burst=1, clock=lambda: t[0], sleep=sleeper("bind")),
        events_api=events,
        events_limiter=TokenBucket(qps=1, burst=1, clock=lambda: t[0], sleep=sleeper("events")),
    )
    await b.event(POD, "p", "Normal", "Scheduled", "Binding", "x")
    await b.set_unschedulable(POD, "Unschedulable", "m")
    assert waits == ["events"]
    await b.bind(POD, "n1")  # its bucket is still full
    assert waits == ["events"] and b.writes == 3
    assert len(api.bindings) == 1 and api.events == [] and len(events.events) == 1 and events.status_patches


async def test_ambiguous_bind_error_resolved_by_reading_the_pod(monkeypatch):
    # The API server stored the Binding and died before answering: the pod is bound, so the
    # bind succeeded. Reads that fail meanwhile are retried (the assumption keeps the slot).
    monkeypatch.setattr("scheduler.live.kube.binder.RESOLVE_BACKOFF", (0.0, 0.0))
    api = FakeAPI()
    api.lose_response = True
    api.get_errors = [ApiError(0, "connection refused"), ApiError(503, "starting")]
    b = Binder(api, unlimited())
    await b.bind(POD, "n1")  # no exception: bound
    assert api.gets == 3 and POD.uid not in b.bind_errors


@pytest.mark.parametrize(
    ("bound_to", "uid", "want"),
    [
        ("", "u-1", ApiError),  # not stored: a real failure, the pod is retried
        ("n2", "u-1", BindConflict),  # someone else bound it
        ("", "other", PodGone),  # replaced by a same-name pod
    ],
)
async def test_ambiguous_bind_error_outcomes(bound_to, uid, want):
    class API(FakeAPI):
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
    api = FakeAPI(error)
    b = Binder(api, unlimited())
    with pytest.raises(ApiError) as info:
        await b.bind(POD, "n1")
    assert type(info.value) is ApiError and api.gets == 0


def test_transport_errors_say_whether_the_request_left() -> None:
    # A refused connection never carried the Binding; a reset after connecting may have.
    from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError

    class RaisingPool:
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        def urlopen(self, *args, **kwargs):
            raise self.exc

    class Client:
        user_agent = "test"

        def update_params_for_auth(self, headers, queries, settings):
            pass

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


class FakeFence:
    def __init__(self, open_for: float, lease_left: float = 100.0) -> None:
        self.open = open_for
        self.left = lease_left
        self.calls = 0

    def open_for(self) -> float:
        self.calls += 1
        return self.open

    def lease_left(self) -> float:
        return self.left


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
    api = FakeAPI()
    b = Binder(api, unlimited(), fence=FakeFence(open_for, lease_left))
    if sent:
        await b.bind(POD, "n1")
        assert api.timeouts == [timeout]
    else:
        with pytest.raises(Fenced):
            await b.bind(POD, "n1")
        assert api.bindings == [] and isinstance(b.bind_errors.pop(POD.uid), Fenced)


async def test_fence_checked_again_in_the_sending_thread():
    # The fence closes while the Binding waits for a rate-limit token: it is not sent.
    fence = FakeFence(5.0)

    async def sleep(d: float) -> None:
        fence.open = 0.0  # the lease went stale during the wait

    api = FakeAPI()
    b = Binder(api, TokenBucket(qps=1, burst=1, sleep=sleep), fence=fence)
    await b.bind(POD, "n1")
    with pytest.raises(Fenced):
        await b.bind(PodInfo(make_pod("web2", "prod", uid="u-2")), "n1")
    assert [n for _, n, _ in api.bindings] == ["web"]


def test_run_in_executor_is_used():
    # The kubernetes client blocks: calls must run off the event loop thread.
    import threading

    seen: list[str] = []

    class ThreadAPI(FakeAPI):
        def create_binding(self, namespace, name, body, timeout=None):
            seen.append(threading.current_thread().name)

    asyncio.run(Binder(ThreadAPI(), unlimited()).bind(POD, "n"))
    assert seen and seen[0] != threading.main_thread().name
