"""The informer store and the watcher's list/watch loop.

Replace semantics from client-go tools/cache/delta_fifo_test.go (TestDeltaFIFO_ReplaceMakesDeletions,
TestDeltaFIFO_ReplaceMakesDeletionsReplaced): after a re-list, every known object the list lacks is
deleted (DeletedFinalStateUnknown), listed objects are added or updated. The reflector's
re-list on "410 Gone" is client-go tools/cache/reflector_test.go (TestReflectorListAndWatch,
TestReflectorExpiredResourceVersion*). The no-op filter is ours (kube-scheduler has no such filter
in the informer, but its handlers ignore the same status-only updates: isPodUpdated in
eventhandlers.go, nodeSchedulingPropertiesChange).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from scheduler.backend.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.live.kube.clients import Credentials
from scheduler.live.watch.informer import ADDED, DELETED, MODIFIED, Store, store_for
from scheduler.live.watch.watcher import Watcher, WatchSettings
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.builders import with_resource_version as rv
from scheduler.testing.fakes import serve_loopback
from scheduler.testing.harness import Harness


def bound(name: str, node: str, version: int, cpu: str = "1", **kw: Any) -> dict[str, Any]:
    return rv(make_pod(name, cpu=cpu, node_name=node, **kw), version)


def with_status(raw: dict[str, Any], version: int, **status: Any) -> dict[str, Any]:
    out = rv(raw, version)
    out.setdefault("status", {}).update(status)
    return out


def ident(ev: tuple[str, Any]) -> tuple[str, str]:
    meta = ev[1]["metadata"]
    return ev[0], str(meta.get("uid") or meta.get("name"))


# Each case: the store's kind, the steps (("list", [objects]) is one complete list, a
# (type, object) pair is one watch event), and every event the store lets through, in order.
N1, N2 = rv(make_node("n1"), 1), rv(make_node("n2"), 2)
P1, P2 = bound("p1", "n1", 3), bound("p2", "n1", 4)
PENDING = rv(make_pod("q", cpu="1"), 5)

STORE_CASES = [
    pytest.param(
        "Node", [("list", [N1, N2]), ("list", [N1])],
        [(ADDED, "n1"), (ADDED, "n2"), (DELETED, "n2")],
        id="ReplaceMakesDeletions: a node missing from the re-list is deleted",
    ),
    pytest.param(
        "Pod", [("list", [P1, P2]), ("list", [P2])],
        [(ADDED, "uid-default-p1"), (ADDED, "uid-default-p2"), (DELETED, "uid-default-p1")],
        id="ReplaceMakesDeletions: a pod missing from the re-list is deleted",
    ),
    pytest.param(
        "Pod", [("list", [P1]), ("list", [bound("p1", "n1", 9, cpu="2")])],
        [(ADDED, "uid-default-p1"), (MODIFIED, "uid-default-p1")],
        id="re-list: a changed object is an update",
    ),
    pytest.param(
        "Node", [("list", [N1]), ("list", [N1, N2])],
        [(ADDED, "n1"), (ADDED, "n2")],
        id="re-list: a new object is an add, an unchanged one (same resourceVersion) is nothing",
    ),
    pytest.param(
        "Pod", [("list", [P1]), (DELETED, P1), ("list", [])],
        [(ADDED, "uid-default-p1"), (DELETED, "uid-default-p1")],
        id="a watched delete is not repeated by the next re-list",
    ),
    pytest.param(
        "Pod",
        [("list", [P1]), ("list", [bound("p1", "other", 7, uid="uid-new")])],
        [(ADDED, "uid-default-p1"), (ADDED, "uid-new"), (DELETED, "uid-default-p1")],
        id="a pod re-created under the same name in the gap: delete of the old uid, add of the new",
    ),
    pytest.param(
        "Pod", [("list", []), (ADDED, P1), ("list", [])],
        [(ADDED, "uid-default-p1"), (DELETED, "uid-default-p1")],
        id="an object added by the watch and absent from the re-list is deleted",
    ),
    pytest.param(
        "Pod",
        [("list", [P1]), (MODIFIED, with_status(P1, 8, phase="Running", podIP="10.0.0.1"))],
        [(ADDED, "uid-default-p1"), (MODIFIED, "uid-default-p1")],
        id="bound pod: a phase change is delivered",
    ),
    pytest.param(
        "Pod",
        [("list", [with_status(P1, 3, phase="Running")]),
         (MODIFIED, with_status(P1, 8, phase="Running", conditions=[{"type": "Ready", "status": "True"}]))],
        [(ADDED, "uid-default-p1")],
        id="bound pod: a status-only change (conditions, IPs) is dropped",
    ),
    pytest.param(
        "Pod",
        [("list", [P1]), (MODIFIED, bound("p1", "n1", 8, labels={"a": "b"}))],
        [(ADDED, "uid-default-p1"), (MODIFIED, "uid-default-p1")],
        id="bound pod: a label change is delivered",
    ),
    pytest.param(
        "Pod",
        [("list", [PENDING]), (MODIFIED, with_status(PENDING, 6, conditions=[{"type": "PodScheduled"}]))],
        [(ADDED, "uid-default-q"), (MODIFIED, "uid-default-q")],
        id="pending pod: every new version is delivered (the queue and binder read its status)",
    ),
    pytest.param(
        "Node",
        [("list", [N1]),
         (MODIFIED, with_status(N1, 8, conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}])),
         (MODIFIED, with_status(N1, 9, conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": "t2"}]))],
        [(ADDED, "n1"), (MODIFIED, "n1")],
        id="node: a heartbeat-only change is dropped, a condition status change is not",
    ),
    pytest.param(
        "Pod",
        [("list", [with_status(P1, 3, phase="Running")]),
         (MODIFIED, with_status(P1, 8, phase="Running", containerStatuses=[
             {"name": "c0", "resources": {"requests": {"cpu": "3"}}}]))],
        [(ADDED, "uid-default-p1"), (MODIFIED, "uid-default-p1")],
        id="bound pod: a resize in containerStatuses[].resources is delivered (requests count it)",
    ),
    pytest.param(
        "Node",
        [("list", [N1]), (MODIFIED, with_status(N1, 8, declaredFeatures=["F"]))],
        [(ADDED, "n1"), (MODIFIED, "n1")],
        id="node: a status.declaredFeatures change is delivered (NodeDeclaredFeatures reads it)",
    ),
    pytest.param(
        "Namespace",
        [("list", [rv({"metadata": {"name": "a", "labels": {"x": "1"}}}, 1),
                   rv({"metadata": {"name": "b"}}, 2)]),
         ("list", [rv({"metadata": {"name": "a", "labels": {"x": "2"}}}, 3)])],
        [(ADDED, "a"), (ADDED, "b"), (MODIFIED, "a"), (DELETED, "b")],
        id="namespaces: Replace and label updates",
    ),
    pytest.param(
        "Service",
        [("list", [rv({"metadata": {"name": "s", "namespace": "x", "uid": "s1"}, "spec": {"selector": {}}}, 1)]),
         ("list", [])],
        [(ADDED, "s1"), (DELETED, "s1")],
        id="services: Replace",
    ),
]


@pytest.mark.parametrize(("kind", "steps", "want"), STORE_CASES)
def test_store(kind: str, steps: list[tuple[Any, Any]], want: list[tuple[str, str]]) -> None:
    store = store_for(kind)
    got: list[tuple[str, str]] = []
    for op, arg in steps:
        if op == "list":
            store.begin_list()
            for obj in arg:
                t = store.apply(None, obj)
                if t is not None:
                    got.append(ident((t, obj)))
            got.extend(ident(e) for e in store.end_list())
        else:
            t = store.apply(op, arg)
            if t is not None:
                got.append(ident((t, arg)))
    assert got == want


def test_aborted_list_deletes_nothing() -> None:
    # A list that failed half-way (410 on a continue token, a dropped connection) proves nothing.
    store = store_for("Node")
    store.begin_list()
    store.apply(None, N1)
    store.apply(None, N2)
    assert store.end_list() == []
    store.begin_list()
    store.apply(None, N1)
    store.abort_list()
    assert store.end_list() == []
    assert set(store.entries) == {"n1", "n2"}


def test_tombstone_carries_identity_only() -> None:
    store = Store("Pod")
    store.begin_list()
    store.apply(None, P1)
    store.begin_list()
    (etype, tomb), = store.end_list()
    assert etype == DELETED
    assert tomb["metadata"]["uid"] == "uid-default-p1"
    assert tomb["spec"] == {"nodeName": "n1", "schedulerName": ""}
    assert "containers" not in tomb["spec"]


# ------------------------------------------------------------------------------------------------
# Replace through the real handlers: capacity comes back, the node leaves the snapshot.


def relist(w: Watcher, kind: str, objs: list[dict[str, Any]]) -> None:
    w.begin_list(kind)
    for o in objs:
        w.dispatch(kind, None, copy.deepcopy(o))
    w.end_list(kind)


async def test_relist_frees_capacity_and_drops_node() -> None:
    h = Harness()
    w = Watcher(h.sched, lambda: Credentials(server="https://unused"), kinds=("Pod", "Node"))
    n1, n2 = rv(make_node("n1", cpu="2"), 1), rv(make_node("n2", cpu="2"), 2)
    hog1 = bound("hog1", "n1", 3, cpu="2")
    hog2 = bound("hog2", "n2", 4, cpu="2")
    relist(w, "Node", [n1, n2])
    relist(w, "Pod", [hog1, hog2])
    assert w.synced.is_set()
    w.dispatch("Pod", "ADDED", rv(make_pod("new", cpu="1"), 5))
    assert await h.step()
    assert h.queue.counts()[UNSCHEDULABLE] == 1  # Insufficient cpu everywhere
    assert h.bound() == {}

    # The watch gap: hog1 and node n2 (with hog2 on it) were deleted; the re-list lacks them.
    relist(w, "Node", [n1])
    assert "n2" not in h.cache.nodes or not h.cache.nodes["n2"].node_present
    relist(w, "Pod", [rv(make_pod("new", cpu="1"), 5)])
    assert h.cache.get_pod("uid-default-hog1") is None
    assert h.cache.get_pod("uid-default-hog2") is None
    assert "n2" not in h.cache.nodes
    assert h.queue.counts()[UNSCHEDULABLE] == 0  # the pod delete woke it
    assert h.queue.counts()[ACTIVE] + h.queue.counts()[BACKOFF] == 1

    # The freed room is used, and never the deleted node.
    h.clock.step(60)
    h.queue.flush_backoff_completed()
    assert await h.step()
    assert h.bound() == {"new": "n1"}
    assert [n.name for n in h.sched.snapshot.list()] == ["n1"]


async def test_unbound_pods_of_other_schedulers_are_not_parsed() -> None:
    h = Harness()
    w = Watcher(h.sched, lambda: Credentials(server="https://unused"), kinds=("Pod",),
                scheduler_names=set(h.sched.frameworks))
    w.dispatch("Pod", "ADDED", rv(make_pod("theirs", scheduler_name="other"), 1))
    w.dispatch("Pod", "ADDED", rv(make_pod("ours", cpu="1"), 2))
    assert w.events == 1
    assert "uid-default-ours" in h.queue
    assert "uid-default-theirs" not in h.queue


# ------------------------------------------------------------------------------------------------
# The list/watch loop against a small fake API server (aiohttp on loopback): paging, resume from
# the last resourceVersion, 410 Gone -> re-list with Replace, a dropped stream -> resume.


class FakeAPI:
    def __init__(self) -> None:
        self.rv = 10
        self.nodes: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[int, str, dict[str, Any]]] = []  # (rv, type, object)
        self.compacted = 0  # a watch from an older RV gets 410
        self.lists: list[dict[str, str]] = []
        self.watches: list[dict[str, str]] = []
        self.cut_watches = False  # end every watch stream after the first batch
        self.unauthorized = 0  # answer this many requests with 401 (an API server still starting)
        self.stalled: set[int] = set()  # watch streams (by number) that go silent without closing
        self.changed = asyncio.Event()

    def put(self, name: str, etype: str = "ADDED") -> None:
        self.rv += 1
        obj = rv(make_node(name), self.rv)
        self.nodes[name] = obj
        self.log.append((self.rv, etype, obj))
        self.changed.set()

    def delete(self, name: str) -> None:
        self.rv += 1
        obj = rv(self.nodes.pop(name), self.rv)
        self.log.append((self.rv, "DELETED", obj))
        self.changed.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        q = dict(request.query)
        if self.unauthorized > 0:
            self.unauthorized -= 1
            return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
        if q.get("watch") != "true":
            self.lists.append(q)
            if not q.get("continue"):
                self.rv += 1  # a list is a read at a revision past any compaction
            names = sorted(self.nodes)
            start = int(q.get("continue") or 0)
            limit = int(q.get("limit") or len(names) or 1)
            page = names[start:start + limit]
            cont = str(start + limit) if start + limit < len(names) else ""
            body = {"kind": "NodeList", "metadata": {"resourceVersion": str(self.rv), "continue": cont},
                    "items": [self.nodes[n] for n in page]}
            return web.Response(body=orjson.dumps(body), content_type="application/json")
        self.watches.append(q)
        n = len(self.watches)
        since = int(q["resourceVersion"])
        resp = web.StreamResponse()
        await resp.prepare(request)
        if since < self.compacted:
            err = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
            await resp.write(orjson.dumps(err) + b"\n")
            return resp
        while True:
            while n in self.stalled:
                await asyncio.sleep(0.02)
            batch = [(r, t, o) for r, t, o in self.log if r > since]
            for r, t, o in batch:
                await resp.write(orjson.dumps({"type": t, "object": o}) + b"\n")
                since = r
            if batch and self.cut_watches:
                return resp
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=float(q.get("timeoutSeconds", 5)))
            except TimeoutError:
                return resp


class Recorder:
    def __init__(self) -> None:
        self.nodes: set[str] = set()
        self.namespaces: set[str] = set()
        self.events: list[tuple[str | None, str]] = []

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None:
        name = raw["metadata"]["name"]
        self.events.append((etype, name))
        if etype == DELETED:
            self.nodes.discard(name)
        else:
            self.nodes.add(name)

    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None: ...

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None:
        name = raw["metadata"]["name"]
        if etype == DELETED:
            self.namespaces.discard(name)
        else:
            self.namespaces.add(name)

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None: ...


async def core_v1_resources(_: web.Request) -> web.Response:
    """The discovery document of the fake's group/version (what the watcher asks first)."""
    return web.json_response({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "nodes", "kind": "Node"}, {"name": "nodes/status", "kind": "Node"},
        {"name": "namespaces", "kind": "Namespace"}]})


@pytest.fixture
async def fake_api() -> AsyncIterator[tuple[FakeAPI, str]]:
    api = FakeAPI()
    api.namespaces = FakeAPI()  # type: ignore[attr-defined]
    app = web.Application()
    app.router.add_get("/api/v1", core_v1_resources)
    app.router.add_get("/api/v1/nodes", api.handle)
    app.router.add_get("/api/v1/namespaces", api.namespaces.handle)  # type: ignore[attr-defined]
    async with serve_loopback(app) as url:
        yield api, url


@contextlib.asynccontextmanager
async def watching(handlers: Any, url: str, **settings: Any) -> AsyncIterator[Watcher]:
    """A Watcher of nodes at ``url`` running (synced) for the block, stopped after it."""
    w = Watcher(handlers, lambda: Credentials(server=url), kinds=("Node",), settings=WatchSettings(**settings))
    task = asyncio.create_task(w.run())
    try:
        await asyncio.wait_for(w.synced.wait(), 5)
        yield w
    finally:
        w.stop()
        await asyncio.wait_for(task, 5)


async def until(cond: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.01)


async def test_reflector_pages_resumes_and_relists(fake_api: tuple[FakeAPI, str]) -> None:
    api, url = fake_api
    for i in range(5):
        api.put(f"n{i}")
    rec = Recorder()
    w = Watcher(rec, lambda: Credentials(server=url), kinds=("Node",),
                settings=WatchSettings(page_size=2, server_timeout=5, backoff=0.01))
    task = asyncio.create_task(w.run())
    try:
        await asyncio.wait_for(w.synced.wait(), 5)
        # The first list is served from the watch cache in one response (client-go's RV=0).
        assert api.lists == [{"resourceVersion": "0"}]
        assert rec.nodes == {f"n{i}" for i in range(5)}
        await until(lambda: len(api.watches) == 1)
        assert api.watches[0]["resourceVersion"] == str(api.rv)
        assert api.watches[0]["allowWatchBookmarks"] == "true"

        api.put("n5")
        await until(lambda: "n5" in rec.nodes)

        # A dropped stream resumes from the last RV seen, without a re-list.
        api.cut_watches = True
        api.put("n6")
        await until(lambda: "n6" in rec.nodes)
        await until(lambda: len(api.watches) == 2)
        assert int(api.watches[-1]["resourceVersion"]) == api.rv
        assert len(api.lists) == 1
        api.cut_watches = False

        # The gap: n0 and n1 deleted and the history compacted; the resumed watch gets 410 and the
        # re-list's Replace delivers both deletes.
        api.nodes.pop("n0")
        api.nodes.pop("n1")
        api.cut_watches = True
        api.compacted = api.rv + 2  # below n7's RV: the resume after n7 is refused
        api.put("n7")  # delivered by the open watch, which then ends
        await until(lambda: "n0" not in rec.nodes and "n1" not in rec.nodes and "n7" in rec.nodes)
        assert (DELETED, "n0") in rec.events and (DELETED, "n1") in rec.events
        assert w.relists["Node"] >= 1
        assert rec.nodes == {"n2", "n3", "n4", "n5", "n6", "n7"}
        # The re-list is a consistent read in pages: 6 items at 2 per page, then the continue tokens.
        relist = api.lists[1:4]
        assert [q.get("continue") for q in relist] == [None, "2", "4"]
        assert all("resourceVersion" not in q and q["limit"] == "2" for q in relist)
    finally:
        w.stop()
        await asyncio.wait_for(task, 5)


async def test_a_stalled_watch_is_detected_and_resumed(fake_api: tuple[FakeAPI, str]) -> None:
    # A stream that stays open but sends nothing (a broken proxy; e2e/test_faults.py injects it):
    # without a read-idle limit it held the kind's view until the request's total timeout
    # (server_timeout + 30 s), missing every change meanwhile. Now it is given up after
    # idle_timeout and resumed from the last resourceVersion seen: nothing is lost.
    api, url = fake_api
    api.put("n0")
    rec = Recorder()
    async with watching(rec, url, server_timeout=300, backoff=0.01, idle_timeout=0.3):
        await until(lambda: len(api.watches) == 1)
        api.stalled.add(1)
        api.put("n1")  # held in the silent stream
        await until(lambda: "n1" in rec.nodes, timeout=3)
        assert len(api.watches) == 2 and int(api.watches[1]["resourceVersion"]) < api.rv
        assert len(api.lists) == 1  # resumed, not re-listed: the RV was still served


async def test_a_version_the_handlers_failed_on_is_delivered_again_by_the_next_list() -> None:
    class Flaky(Recorder):
        fail = True

        def on_node(self, etype: str | None, raw: dict[str, Any]) -> None:
            if self.fail:
                raise ValueError("bad node")
            super().on_node(etype, raw)

    rec = Flaky()
    w = Watcher(rec, lambda: Credentials(server="https://unused"), kinds=("Node",))
    relist(w, "Node", [N1])
    assert w.errors == 1 and rec.nodes == set()
    rec.fail = False
    relist(w, "Node", [N1])  # same resourceVersion: it would be skipped had the store kept it
    assert rec.nodes == {"n1"}


async def test_periodic_resync_relists_without_a_watch_error(fake_api: tuple[FakeAPI, str]) -> None:
    # The backstop: an object that vanished without any event (a lost DELETED) goes at the next resync.
    api, url = fake_api
    api.put("n0")
    api.put("n1")
    rec = Recorder()
    async with watching(rec, url, resync_period=1.0, server_timeout=5, backoff=0.01) as w:
        assert rec.nodes == {"n0", "n1"}
        api.nodes.pop("n1")  # gone, and the watch never says so
        await until(lambda: rec.nodes == {"n0"})
        assert (DELETED, "n1") in rec.events
        assert len(api.lists) >= 2 and w.errors == 0


async def test_401_then_the_same_credentials_work_again(fake_api: tuple[FakeAPI, str]) -> None:
    # kopf's vault would keep equal credentials invalid forever after one 401; the watch must not.
    api, url = fake_api
    api.put("n0")
    api.unauthorized = 2
    rec = Recorder()
    w = Watcher(rec, lambda: Credentials(server=url), kinds=("Node",),
                settings=WatchSettings(server_timeout=5, backoff=0.01))
    task = asyncio.create_task(w.run())
    try:
        await asyncio.wait_for(w.synced.wait(), 10)
        assert rec.nodes == {"n0"}
        api.unauthorized = 1
        api.cut_watches = True
        api.put("n1")  # ends the open watch; the resume is refused once with 401
        await until(lambda: "n1" in rec.nodes)
        api.put("n2")
        await until(lambda: "n2" in rec.nodes)
    finally:
        w.stop()
        await asyncio.wait_for(task, 5)


async def test_a_gap_in_one_kind_relists_every_kind_and_holds_scheduling(fake_api: tuple[FakeAPI, str]) -> None:
    # Nodes hit 410; the namespace watch is fine but may have missed events too (same outage):
    # it re-lists as well, and ``fresh`` (the scheduling hold) is clear until both lists are in.
    api, url = fake_api
    ns_api: FakeAPI = api.namespaces  # type: ignore[attr-defined]
    api.put("n0")
    ns_api.put("a")
    ns_api.put("b")
    rec = Recorder()
    w = Watcher(rec, lambda: Credentials(server=url), kinds=("Node", "Namespace"),
                settings=WatchSettings(server_timeout=5, backoff=0.01))
    task = asyncio.create_task(w.run())
    try:
        await asyncio.wait_for(w.fresh.wait(), 5)
        await until(lambda: len(api.watches) == 1 and len(ns_api.watches) == 1)
        ns_api.nodes.pop("b")  # lost without an event
        seen_stale = []
        orig_gap = w.gap

        def gap(origin: str) -> None:
            orig_gap(origin)
            seen_stale.append((origin, w.fresh.is_set()))

        w.gap = gap  # type: ignore[method-assign]
        api.cut_watches = True
        api.compacted = api.rv + 2
        api.put("n1")
        await until(lambda: rec.namespaces == {"a"} and "n1" in rec.nodes)
        assert seen_stale == [("Node", False)]
        await asyncio.wait_for(w.fresh.wait(), 5)
        assert w.relists == {"Node": 1, "Namespace": 1}
        assert len(ns_api.lists) == 2
    finally:
        w.stop()
        await asyncio.wait_for(task, 5)


async def test_the_loop_holds_cycles_while_the_view_is_stale() -> None:
    h = Harness()
    gate = asyncio.Event()
    h.sched.hold = gate.wait
    h.sched.on_node(None, make_node("n1", cpu="4"))
    h.sched.on_pod("ADDED", make_pod("a", cpu="1"))
    loop = asyncio.create_task(h.sched.run())
    try:
        for _ in range(20):
            await asyncio.sleep(0)
        assert h.sched.cycles == 0
        gate.set()
        await until(lambda: h.sched.cycles == 1)
    finally:
        h.sched.stop()
        await asyncio.wait_for(loop, 5)
