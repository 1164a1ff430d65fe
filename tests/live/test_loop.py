"""The live loop with a fake API behind the real Binder: scheduling, failure handling, requeue
on cluster events, binding errors, deletes mid-flight. Expected behaviour from upstream
pkg/scheduler/schedule_one_test.go (TestSchedulerScheduleOne, TestSchedulerNoPhantomPodAfterExpire,
TestSchedulerNoPhantomPodAfterDelete, TestSchedulerFailedSchedulingReasons) and eventhandlers_test.go."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from scheduler.backend.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.live.kube.transport import ApiError, Fenced, TokenBucket
from scheduler.live.metrics import Metrics
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.fakes import FakeCoreAPI, FakeFence
from scheduler.testing.harness import Harness


def attempts(m: Metrics, result: str) -> float:
    return m.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": result, "profile": "default-scheduler"}
    ) or 0.0


async def test_schedules_and_reports():
    # TestSchedulerScheduleOne "bind assumed pod scheduled"
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    assert await h.step()
    assert h.bound() == {"a": "n1"}
    ev = h.events("Scheduled")
    assert len(ev) == 1
    assert ev[0]["note"] == "Successfully assigned default/a to n1"
    assert (ev[0]["type"], ev[0]["action"], ev[0]["reportingController"]) == ("Normal", "Binding", "default-scheduler")
    assert h.cache.is_assumed("uid-default-a")
    assert attempts(h.metrics, "scheduled") == 1
    # The watch shows the binding: confirmed, no longer in any queue.
    h.sched.on_pod("MODIFIED", make_pod("a", cpu="1", node_name="n1"))
    assert not h.cache.is_assumed("uid-default-a")
    assert "uid-default-a" not in h.queue


async def test_unschedulable_reports_then_places_when_node_added():
    # TestSchedulerFailedSchedulingReasons (message) + requeue on NodeAdd.
    h = Harness()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("big", cpu="2"))
    await h.step()
    assert h.bound() == {}
    msg = (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    fs = h.events("FailedScheduling")
    assert [e["note"] for e in fs] == [msg]
    assert (fs[0]["type"], fs[0]["action"]) == ("Warning", "Scheduling")
    cond = h.api.status_patches[0][2]["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("Unschedulable", msg)
    assert h.queue.where("uid-default-big") == UNSCHEDULABLE
    assert h.queue.get("uid-default-big").unschedulable_plugins == {"NodeResourcesFit"}
    assert attempts(h.metrics, "unschedulable") == 1
    # A node that does not help leaves it there; one that does moves it.
    h.sched.on_node(None, make_node("small2", cpu="1"))
    assert h.queue.where("uid-default-big") == UNSCHEDULABLE
    h.clock.step(2)
    h.sched.on_node(None, make_node("large", cpu="8"))
    assert h.queue.where("uid-default-big") == ACTIVE
    await h.step()
    assert h.bound() == {"big": "large"}


async def test_bind_error_unreserves_forgets_and_backs_off():
    # TestSchedulerScheduleOne "bind failed": forget the assumed pod, requeue with backoff.
    api = FakeCoreAPI(ApiError(500, "etcd timeout"))
    h = Harness(api)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    assert h.cache.get_pod("uid-default-a") is None
    assert h.cache.nodes["n1"].requested.milli_cpu == 0
    assert h.queue.where("uid-default-a") == BACKOFF
    cond = api.status_patches[0][2]["status"]["conditions"][0]
    assert cond["reason"] == "SchedulerError"
    # Upstream: running Bind plugin "DefaultBinder": <err> (the runtime's quoting is the lead's).
    assert cond["message"].startswith("running Bind plugin") and "DefaultBinder" in cond["message"]
    assert cond["message"].endswith("etcd timeout")
    assert attempts(h.metrics, "error") == 1
    api.bind_error = None
    # An error backs off in podErrorBackoffQ (never popped early): 1 s, truncated to its
    # 1-second window, over when the next window starts.
    h.clock.step(1.99)
    assert not await h.step()
    h.clock.step(0.01)
    await h.step()
    assert h.bound() == {"a": "n1"}


@pytest.mark.parametrize("status", [409, 404])
async def test_bind_conflict_or_gone_is_not_requeued(status):
    api = FakeCoreAPI(ApiError(status, "already assigned"))
    h = Harness(api)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert h.cache.get_pod("uid-default-a") is None
    assert "uid-default-a" not in h.queue
    assert h.events("FailedScheduling") == [] and api.status_patches == []
    h.clock.step(400)
    h.queue.flush_unschedulable_leftover()
    assert not await h.step()


async def test_pod_deleted_while_binding_is_not_requeued():
    # TestSchedulerNoPhantomPodAfterDelete
    # The binding then fails with a generic error: the deleted pod must still not come back.
    h = Harness(FakeCoreAPI(ApiError(500, "boom")))
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    q = h.queue.pop_nowait()
    h.sched.schedule_one(q)
    h.sched.on_pod("DELETED", make_pod("a"))
    await h.settle()
    assert "uid-default-a" not in h.queue
    assert h.cache.nodes.get("n1").requested.milli_cpu == 0
    assert h.api.status_patches == []


async def test_binding_pod_is_done_before_its_bind_call():
    # schedule_one.go bindingCycle: SchedulingQueue.Done right after WaitOnPermit, so watch
    # events during a burst of bindings are not recorded once per binding pod.
    h = Harness()
    seen: list[list[str]] = []
    real = h.api.create_binding

    def create_binding(namespace, name, body, timeout=None):
        seen.append([qi.pod.name for qi in h.queue.in_flight()])
        real(namespace, name, body, timeout)

    h.api.create_binding = create_binding
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    assert await h.step()
    assert h.bound() == {"a": "n1"}
    assert seen == [[]]


async def test_failed_binding_frees_room_for_waiting_pods():
    # handleBindingCycleError: forgetting the assumed pod is an AssignedPodDelete for the
    # others; the failed pod itself goes to backoff (no in-flight events after Done).
    h = Harness(FakeCoreAPI(ApiError(500, "boom")))
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1", priority=10))
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    qa = h.queue.pop_nowait()
    assert qa is not None and qa.pod.name == "a"
    h.sched.schedule_one(qa)  # assumed; its Bind runs when the loop yields
    qb = h.queue.pop_nowait()
    assert qb is not None and qb.pod.name == "b"
    h.sched.schedule_one(qb)  # no room while a is assumed
    assert h.queue.where("uid-default-b") == UNSCHEDULABLE
    await h.settle()
    assert h.bound() == {}
    assert h.queue.where("uid-default-a") == BACKOFF
    assert h.queue.where("uid-default-b") in (ACTIVE, BACKOFF)


async def test_priority_order():
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("low", cpu="1", priority=1))
    h.sched.on_pod("ADDED", make_pod("high", cpu="1", priority=100))
    await h.step()
    await h.step()
    assert h.bound() == {"high": "n1"}
    assert h.queue.where("uid-default-low") == UNSCHEDULABLE


async def test_deleting_pod_is_skipped():
    h = Harness()
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a", deleting=True))
    await h.step()
    assert h.bound() == {}


async def test_no_nodes_message():
    h = Harness()
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert h.events("FailedScheduling")[0]["note"] == "no nodes available to schedule pods"


async def test_run_loop_and_stop():
    h = Harness()
    h.sched.on_node(None, make_node("n1"))
    for i in range(5):
        h.sched.on_pod("ADDED", make_pod(f"p{i}"))
    task = asyncio.create_task(h.sched.run())
    for _ in range(200):
        await asyncio.sleep(0.005)
        if len(h.api.bindings) == 5:
            break
    h.sched.stop()
    await asyncio.wait_for(task, 2)
    assert await h.sched.drain(2)
    assert sorted(h.bound()) == [f"p{i}" for i in range(5)]


async def test_assumed_pod_never_expires_while_the_watch_lags():
    # Issue 9 (10,000 pods onto 8,000 slots bound 8,008): an assumed pod whose Binding
    # succeeded must hold its resources until the watch shows it, however long that takes
    # (kube-scheduler: durationToExpireAssumedPod = 0; inverse of upstream
    # TestSchedulerNoPhantomPodAfterExpire, which only applies with a TTL).
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    await h.step()
    assert h.bound() == {"a": "n1"}
    h.clock.step(3600)  # an hour of watch lag
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    await h.step()
    assert h.bound() == {"a": "n1"}
    assert h.queue.where("uid-default-b") == UNSCHEDULABLE
    assert h.cache.is_assumed("uid-default-a")


async def test_binding_stored_but_reply_lost_keeps_the_slot():
    # Seen with the API server killed mid-burst: the Binding was stored, the reply lost.
    # Forgetting the assumption would let the next pod take the same slot (overcommit).
    api = FakeCoreAPI()
    api.lose_response = True
    h = Harness(api)
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("b", cpu="1"))
    await h.step()
    await h.step()
    assert h.bound() == {"a": "n1"}
    assert h.cache.is_assumed("uid-default-a") and h.queue.where("uid-default-b") == UNSCHEDULABLE
    assert h.api.status_patches[0][1] == "b"  # only b is reported unschedulable


async def test_no_cycle_starts_when_the_fence_is_closed():
    fence = FakeFence(0.0)
    h = Harness(fence=fence)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    with pytest.raises(Fenced):
        await asyncio.wait_for(h.sched.run(), 2)
    assert h.sched.cycles == 0 and h.api.bindings == [] and h.cache.pod_count() == 0


async def test_fence_closing_before_the_binding_forgets_and_stops():
    # The cycle ran while the fence was open; it closed before the Binding left.
    fence = FakeFence(5.0)
    h = Harness(fence=fence)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    q = h.queue.pop_nowait()
    h.sched.schedule_one(q)
    assert h.cache.is_assumed("uid-default-a")
    fence.open = 0.0
    await h.settle()
    assert h.api.bindings == [] and h.cache.get_pod("uid-default-a") is None
    assert h.cache.nodes["n1"].requested.milli_cpu == 0
    # Not ours to report any more: no FailedScheduling, no condition.
    assert h.api.events == [] and h.api.status_patches == []
    assert h.sched.fenced and h.sched._stopping
    assert h.metrics.registry.get_sample_value("pyscheduler_binding_errors_total", {"kind": "fenced"}) == 1


async def test_abort_cancels_bindings_in_flight():
    # Lease lost: bindings waiting for a token are cancelled before they are sent, their
    # assumptions forgotten, queued events dropped.
    h = Harness(limiter=TokenBucket(qps=0.01, burst=1))
    h.sched.on_node(None, make_node("n1", cpu="4"))
    for name in ("a", "b", "c"):
        h.sched.on_pod("ADDED", make_pod(name, cpu="1"))
    for _ in range(3):
        h.sched.schedule_one(h.queue.pop_nowait())
    # The first Binding's answer comes back from a lane thread, in real time.
    for _ in range(1000):
        if sum(not t.done() for t in h.sched.binding_tasks) <= 2:
            break
        await asyncio.sleep(0.001)
    assert len(h.api.bindings) == 1  # the other two wait ~100 s for a token
    assert await h.sched.abort() == 2
    assert h.cache.forget_all_assumed() == 1  # the one that was sent (not yet confirmed)
    assert h.cache.nodes["n1"].requested.milli_cpu == 0
    assert h.sched.recorder.pending() == 0
    await asyncio.sleep(0)
    assert len(h.api.bindings) == 1


async def test_events_queue_is_bounded_drops_and_counts():
    h = Harness()
    h.sched.recorder.max_queued = 2
    h.sched.on_node(None, make_node("n1", cpu="1"))
    for i in range(5):
        h.sched.on_pod("ADDED", make_pod(f"p{i}", cpu="2"))
    for _ in range(5):
        h.sched.schedule_one(h.queue.pop_nowait())  # never waits on an API write
    assert h.api.events == [] and h.api.status_patches == []
    dropped = h.metrics.registry.get_sample_value(
        "pyscheduler_events_dropped_total", {"reason": "FailedScheduling"}
    )
    assert dropped == 3
    await h.sched.recorder.flush()
    # Events are best effort; the PodScheduled condition of every pod is written.
    assert len(h.api.events) == 2 and len(h.api.status_patches) == 5


# ---------------------------------------------------------------------------------------------
# schedule_one.go's V(10) lines: each plugin's weighted score per node, then each node's total


async def _step_logged(h: Harness, v: int) -> list[MutableMapping[str, Any]]:
    """One cycle and its binding at verbosity ``v``, with the log events it wrote."""
    from structlog.testing import capture_logs

    from scheduler.live import log as logconf

    logconf.set_verbosity(v)
    try:
        with capture_logs() as logs:
            assert await h.step()
    finally:
        logconf.set_verbosity(0)
    return logs


@pytest.mark.parametrize(("v", "nodes", "expect"), [(10, 2, True), (9, 2, False), (10, 1, False)])
async def test_scores_logged_at_v10_only(v: int, nodes: int, expect: bool) -> None:
    h = Harness()
    for i in range(nodes):
        h.sched.on_node(None, make_node(f"n{i}", cpu=str(4 * (i + 1))))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    logs = await _step_logged(h, v)
    scored = [e for e in logs if e["event"] == "Plugin scored node for pod"]
    final = [e for e in logs if e["event"] == "Calculated node's final score for pod"]
    if not expect:
        # Below V(10), or one feasible node (upstream scores nothing then).
        assert scored == [] and final == []
        return
    plugins = [e["plugin"] for e in scored if e["node"] == "n0"]
    assert "NodeResourcesFit" in plugins and "TaintToleration" in plugins
    assert {e["node"] for e in scored} == {"n0", "n1"}
    assert all(set(e) >= {"pod", "plugin", "node", "score", "v"} and e["pod"] == "default/a" for e in scored)
    # Each total is the sum of the node's weighted plugin scores (prioritizeNodes).
    for f in final:
        assert f["score"] == sum(e["score"] for e in scored if e["node"] == f["node"])
    assert [f["node"] for f in final] == ["n0", "n1"]


# schedule_one.go's per-pod lines are V(2): "Successfully bound pod to node" and "Unable to
# schedule pod; no fit; waiting"; an error is logged at every verbosity (HandleError).


@pytest.mark.parametrize(
    ("v", "node_cpu", "event", "logged"),
    [
        (2, "4", "pod_scheduled", True),
        (1, "4", "pod_scheduled", False),
        (2, "1", "pod_unschedulable", True),
        (1, "1", "pod_unschedulable", False),
        (0, None, "scheduling_error", True),  # no nodes at all: an error, not a rejection
    ],
)
async def test_per_pod_lines_follow_upstream_verbosity(v: int, node_cpu: str | None, event: str, logged: bool) -> None:
    h = Harness()
    if node_cpu is not None:
        h.sched.on_node(None, make_node("n1", cpu=node_cpu))
    h.sched.on_pod("ADDED", make_pod("a", cpu="2"))
    logs = await _step_logged(h, v)
    lines = [e for e in logs if e["event"] in ("pod_scheduled", "pod_unschedulable", "scheduling_error")]
    if not logged:
        assert lines == []
        return
    assert [e["event"] for e in lines] == [event]
    assert lines[0]["pod"] == "default/a" and lines[0].get("v") == (None if event == "scheduling_error" else 2)
    if event == "pod_scheduled":
        assert lines[0]["node"] == "n1"


class _Ordered(FakeCoreAPI):
    """Records the order of status patches and Bindings across both lanes."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[str, str]] = []

    def patch_pod_status(self, namespace: str, name: str, body: dict) -> None:
        self.order.append(("status", name))
        super().patch_pod_status(namespace, name, body)

    def create_binding(self, namespace: str, name: str, body: dict, timeout: float | None = None) -> None:
        self.order.append(("bind", name))
        super().create_binding(namespace, name, body, timeout)


async def test_failed_attempts_condition_is_written_before_the_pods_binding() -> None:
    # schedule_one.go handleSchedulingFailure patches PodScheduled=False (and the nomination)
    # before the next cycle can start; ours queues it for the events lane. A retry bound
    # before that lane got to it must not have the patch land on the bound pod.
    api = _Ordered()
    h = Harness(api=api)
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("p", cpu="2"))
    q = h.queue.pop_nowait()
    assert q is not None
    h.sched.schedule_one(q)  # unschedulable; its condition queued, not written (no settle)
    assert h.sched.recorder.has_condition(q.pod.uid) and api.order == []
    h.sched.on_node(make_node("n1", cpu="1"), make_node("n1", cpu="4"))  # room appears
    h.clock.step(20)
    h.queue.flush_backoff_completed()
    h.queue.flush_unschedulable_leftover()
    assert await h.step()
    assert h.bound() == {"p": "n1"}
    assert api.order == [("status", "p"), ("bind", "p")]
    assert not h.sched.recorder.has_condition(q.pod.uid)
