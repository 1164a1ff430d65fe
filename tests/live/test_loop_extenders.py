"""The live loop with scheduler extenders (upstream schedule_one.go: findNodesThatPassExtenders
in the scheduling cycle, extendersBinding before the Bind plugins; schedule_one_test.go
TestSchedulerBinding, v1.36.3)."""

from __future__ import annotations

from scheduler.backend.queue import BACKOFF, UNSCHEDULABLE
from scheduler.framework.extender import EXTENDER_NAME
from scheduler.live.kube.transport import TokenBucket
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import ExtenderFailure, FakeExtender, favour_node, only_node
from scheduler.testing.fakes import FakeFence
from scheduler.testing.harness import Harness


def _fail() -> None:
    raise ExtenderFailure("extender could not bind")


async def test_binder_extender_binds_instead_of_the_bind_plugins() -> None:
    ext = FakeExtender("binder", binder=lambda: None)
    h = Harness(extenders=[ext])
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert [(b.namespace, b.name, b.uid, b.node) for b in ext.bound] == [("default", "a", "uid-default-a", "n1")]
    assert h.api.bindings == []  # DefaultBinder did not run
    assert [e["note"] for e in h.events("Scheduled")] == ["Successfully assigned default/a to n1"]


async def test_extender_bind_failure_fails_the_binding_cycle() -> None:
    h = Harness(extenders=[FakeExtender("binder", binder=_fail)])
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert [e["note"] for e in h.events("FailedScheduling")] == ["extender could not bind"]
    assert not h.cache.is_assumed("uid-default-a")
    assert h.queue.where("uid-default-a") == BACKOFF
    assert h.api.bindings == []


async def test_ignorable_binder_failure_falls_back_to_the_bind_plugins() -> None:
    h = Harness(extenders=[FakeExtender("binder", binder=_fail, ignorable=True)])
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert h.bound() == {"a": "n1"}


async def test_no_extender_bind_once_the_fence_is_closed() -> None:
    fence = FakeFence(100.0)
    ext = FakeExtender("binder", binder=lambda: None)
    h = Harness(fence=fence, limiter=TokenBucket(0, 1), extenders=[ext])
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    q = h.queue.pop_nowait()
    assert q is not None
    fence.open = 0.0  # the lease runs out between the cycle and the binding
    h.sched.schedule_one(q)
    await h.settle()
    assert ext.bound == [] and h.sched.fenced


async def test_extender_rejection_moves_the_pod_on_any_event() -> None:
    # Extenders register no events: EXTENDER_NAME among the rejectors requeues on every one.
    ext = FakeExtender("only-n2", [only_node("n2")])
    h = Harness(extenders=[ext])
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("a"))
    await h.step()
    assert [e["note"] for e in h.events("FailedScheduling")] == [
        '0/1 nodes are available: 1 FakeExtender: node "n1" failed. '
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for "
        "incoming pod."
    ]
    q = h.queue.get("uid-default-a")
    assert q is not None and EXTENDER_NAME in q.unschedulable_plugins
    assert h.queue.where("uid-default-a") == UNSCHEDULABLE
    h.clock.step(20)
    h.sched.on_node(None, make_node("n2"))
    await h.step()
    assert [b.node for b in ext.bound] == ["n2"]  # the fake is a binder too


async def test_extender_scores_logged_at_v10_after_the_plugins() -> None:
    # prioritizeNodes: "Plugin scored node for pod" lines, then "Extender scored node for pod"
    # with the extender's own score (before weight and scaling), then the totals including it.
    from structlog.testing import capture_logs

    from scheduler.live import log as logconf

    ext = FakeExtender("http://ext", prioritizers=[(favour_node("n1"), 1)], weight=3)
    h = Harness(extenders=[ext])
    for n in ("n0", "n1"):
        h.sched.on_node(None, make_node(n))
    h.sched.on_pod("ADDED", make_pod("a"))
    logconf.set_verbosity(10)
    try:
        with capture_logs() as logs:
            assert await h.step()
    finally:
        logconf.set_verbosity(0)
    events = [e["event"] for e in logs if e.get("v") == 10]
    first_ext = events.index("Extender scored node for pod")
    assert "Plugin scored node for pod" not in events[first_ext:]
    ext_lines = [(e["extender"], e["node"], e["score"]) for e in logs if e["event"] == "Extender scored node for pod"]
    assert ext_lines == [("http://ext", "n0", 1), ("http://ext", "n1", 10)]
    plugin = {n: sum(e["score"] for e in logs if e["event"] == "Plugin scored node for pod" and e["node"] == n)
              for n in ("n0", "n1")}
    final = {e["node"]: e["score"] for e in logs if e["event"] == "Calculated node's final score for pod"}
    assert final == {"n0": plugin["n0"] + 30, "n1": plugin["n1"] + 300}
