"""/debug/explain: the queue with reasons, the recent decisions, one pod's scores, verdicts and
tiles, and the JSON explain reads; through aiohttp's test client on the live loop's parts."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler.core.decision import from_json
from scheduler.live.explainpage import ExplainPage, queue_entries
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness


async def _scheduled() -> Harness:
    h = Harness()
    h.sched.on_node(None, make_node("roomy", cpu="8"))
    h.sched.on_node(None, make_node("spare", cpu="4", memory="8Gi"))
    h.sched.on_node(None, make_node("full", cpu="2"))
    h.sched.on_pod("ADDED", make_pod("filler", cpu="2", node_name="full"))
    h.sched.on_pod("ADDED", make_pod("web", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("huge", cpu="64"))
    h.sched.on_pod("ADDED", make_pod("held", gates=["example.com/wait"]))
    await h.step()
    await h.step()
    return h


@pytest.fixture
async def client() -> AsyncIterator[tuple[TestClient, Harness]]:
    h = await _scheduled()
    page = ExplainPage(h.sched.decisions, h.queue, h.cache.nodes.values, identity="test_1")
    app = web.Application()
    for path, handler in page.routes().items():
        app.router.add_get(path, handler)
    c = TestClient(TestServer(app))
    await c.start_server()
    yield c, h
    await c.close()


def _text(body: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


async def test_queue_entries_say_where_and_why() -> None:
    h = await _scheduled()
    entries = {e.pod: e for e in queue_entries(h.queue, h.sched.decisions, h.clock())}
    assert entries["default/huge"].queue == "unschedulable"
    assert entries["default/huge"].reason == (
        "rejected by NodeResourcesFit: waits for a cluster event one of them cares about")
    assert (entries["default/held"].queue, entries["default/held"].reason) == (
        "gated", "gated by SchedulingGates (schedulingGates: example.com/wait)")
    assert "default/web" not in entries  # bound


async def test_api_pod_is_the_record_as_explain_reads_it(client: tuple[TestClient, Harness]) -> None:
    c, h = client
    r = await c.get("/debug/explain/api/pods/default/web")
    assert r.status == 200
    body = await r.json()
    (d,) = [from_json(x) for x in body["attempts"]]
    assert (body["pod"], body["scheduler"], d.node, d.outcome) == ("default/web", "test_1", "roomy", "scheduled")
    assert [row.node for row in d.scores] == ["roomy", "spare"]
    assert d.filtered["full"].plugin == "NodeResourcesFit"
    r = await c.get("/debug/explain/api/pods/default/huge")
    body = await r.json()
    assert body["queue"]["queue"] == "unschedulable"
    assert body["attempts"][0]["message"] == h.events("FailedScheduling")[0]["note"]
    r = await c.get("/debug/explain/api/pods/default/nobody")
    assert r.status == 404
    assert (await r.json())["message"].startswith("no attempt of pod default/nobody recorded by this scheduler")


async def test_index_shows_queue_decisions_and_nodes(client: tuple[TestClient, Harness]) -> None:
    c, _ = client
    r = await c.get("/debug/explain")
    assert r.status == 200 and r.content_type == "text/html"
    body = await r.text()
    text = _text(body)
    assert "unschedulable 1" in " ".join(text.split())
    assert "gated by SchedulingGates" in text
    assert "0/3 nodes are available" in text  # huge's message among the recent decisions
    # Tiles: the most free room first, with what is free.
    tiles = re.findall(r"<div class=tn>([^<]+)</div>", body)
    assert tiles == ["spare", "roomy", "full"]
    assert "cpu 7 free" in text and "cpu 0m free" in text
    # Relative links: the page also works behind the API server's proxy.
    assert "href='explain/pods/default/huge'" in body
    assert "http://" not in body and "https://" not in body


async def test_pod_page_has_scores_verdicts_and_tiles(client: tuple[TestClient, Harness]) -> None:
    c, _ = client
    body = await (await c.get("/debug/explain/pods/default/web")).text()
    text = " ".join(_text(body).split())
    assert "scheduled → roomy" in text
    assert "<table id=scores>" in body and "data-raw=" in body
    assert "✗ Insufficient cpu" in text  # the full node's verdict
    assert "tile chosen" in body and "tile rejected" in body
    assert "requests: cpu 1, memory 0Mi" in text
    assert "class='need" not in body  # placed: its requests are in the bars already
    body = await (await c.get("/debug/explain/pods/default/huge")).text()
    text = " ".join(_text(body).split())
    assert "now: unschedulable" in text
    assert "NodeResourcesFit 3 Insufficient cpu (3)" in text
    assert "need over" in body  # no room anywhere for 64 cpus
    r = await c.get("/debug/explain/pods/default/nobody")
    assert r.status == 404


async def test_page_escapes_what_it_shows() -> None:
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("x", cpu="2", labels={"a": "<script>"}))
    await h.step()
    page = ExplainPage(h.sched.decisions, h.queue, h.cache.nodes.values, identity="<b>me</b>")
    app = web.Application()
    for path, handler in page.routes().items():
        app.router.add_get(path, handler)
    async with TestClient(TestServer(app)) as c:
        body = await (await c.get("/debug/explain")).text()
    assert "<b>me</b>" not in body and "&lt;b&gt;me&lt;/b&gt;" in body
