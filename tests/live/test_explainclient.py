"""`pyscheduler explain`'s client side: which scheduler it asks, how, and the what-if when none
has a record. The scheduler side is the real page over real HTTPS on loopback; the API server
is a fake that answers GETs from a table."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.config import load_run_config
from scheduler.core.decision import SOURCE_SCHEDULER, SOURCE_WHAT_IF, UNSCHEDULABLE
from scheduler.live import explainclient as ec
from scheduler.live.explainpage import ExplainPage
from scheduler.live.kube.clients import Credentials
from scheduler.live.presence import Presence, certificate_fingerprint
from scheduler.live.serving.authn import FORWARDED_AUTHORIZATION, TokenAuthenticator
from scheduler.live.serving.authz import DelegatingAuthorizer
from scheduler.live.serving.options import ServingOptions
from scheduler.live.serving.server import SecureServer
from scheduler.live.serving.tls import ssl_context
from scheduler.simulate.whatif import what_if
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness
from scheduler.testing.serving import NOT_AUTHENTICATED, authenticated, no_sleep

API = "https://127.0.0.1:6443"


class FakeCreds:
    host = API

    def __init__(self, token: str | None = "Bearer t") -> None:
        self.token = token

    def header(self) -> str | None:
        return self.token

    def credentials(self) -> Credentials:
        scheme, _, tok = (self.token or "").partition(" ")
        return Credentials(server=API, token=tok or None, scheme=scheme or None)


class FakeCluster:
    """GETs from a table (path -> object); ``objects`` is the cluster for a what-if."""

    def __init__(self, objects: dict[str, Any], docs: list[dict[str, Any]], token: str | None = "Bearer t") -> None:
        self.creds = FakeCreds(token)
        self.table = objects
        self.docs = docs
        self.gets: list[tuple[str, dict[str, str] | None]] = []

    def get(self, path: str, extra: dict[str, str] | None = None) -> tuple[int, bytes]:
        self.gets.append((path, extra))
        obj = self.table.get(path.split("?")[0])
        return (200, json.dumps(obj).encode()) if obj is not None else (404, b'{"message":"not found"}')

    def get_json(self, path: str) -> dict[str, Any] | None:
        status, body = self.get(path)
        return json.loads(body) if status == 200 else None

    def objects(self, notes: list[str]) -> list[dict[str, Any]]:
        return self.docs


def _args(pod: str = "p", **kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = {"pod": pod, "namespace": "default", "kubeconfig": None, "output": "text", "server": None,
                            "certificate_authority": None, "insecure_skip_tls_verify": False, "what_if": False,
                            "config": None, "config_map": ec.DEFAULT_CONFIG_MAP, "no_hints": False}
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.parametrize(("a", "b", "same"), [
    ("https://127.0.0.1:6443", "https://localhost:6443", True),
    ("https://127.0.0.1:6443", "https://127.0.0.1:6444", False),
    ("https://k.example:443", "https://k.example", True),
    ("http://k.example", "https://k.example", False),
])
def test_same_server(a: str, b: str, same: bool) -> None:
    assert ec.same_server(a, b) is same


def _pres(pid: int, **kw: Any) -> Presence:
    base: dict[str, Any] = {"pid": pid, "identity": f"h_{pid}", "host": "127.0.0.1", "port": 10000 + pid,
                            "fingerprint": "f", "server": API, "profiles": ["pyscheduler"]}
    base.update(kw)
    return Presence(**base)


@pytest.mark.parametrize(("published", "holders", "scheduler_name", "pids"), [
    # Without leader election: the profile decides.
    ([_pres(1), _pres(2, profiles=["other"])], {}, "pyscheduler", [1]),
    ([_pres(1), _pres(2, profiles=["other"])], {}, None, [1, 2]),
    # Another API server's scheduler is never asked.
    ([_pres(1, server="https://10.0.0.1:6443")], {}, "pyscheduler", []),
    # With leader election: only the holder of its Lease.
    ([_pres(1, lease="ns/l"), _pres(2, lease="ns/l")], {"ns/l": "h_2"}, "pyscheduler", [2]),
    ([_pres(1, lease="ns/l")], {"ns/l": None}, "pyscheduler", []),
])
def test_local_targets(published: list[Presence], holders: dict[str, str | None], scheduler_name: str | None,
                       pids: list[int]) -> None:
    got = ec.local_targets(FakeCreds(), scheduler_name, published, holders.get)  # type: ignore[arg-type]
    assert [t.where for t in got] == [f"local scheduler pid {p} at https://127.0.0.1:{10000 + p}" for p in pids]


def test_ask_takes_the_first_with_a_record_and_notes_the_others() -> None:
    def fails(_: str) -> tuple[int, bytes]:
        raise ec.ExplainError("connection refused")

    targets = [ec.Target("one", fails), ec.Target("two", lambda _: (404, b"{}")),
               ec.Target("three via proxy", lambda _: (403, b'{"message":"forbidden: no"}')),
               ec.Target("four", lambda path: (200, json.dumps({"path": path}).encode()))]
    notes: list[str] = []
    t, body = ec.ask(targets, "ns/p", notes) or (None, None)
    assert t is not None and t.where == "four" and body == {"path": "/debug/explain/api/pods/ns/p"}
    assert notes == ["one did not answer: connection refused", "two has no record of ns/p",
                     "three via proxy refused: 403 forbidden: no (through the proxy only a bearer token is passed "
                     "on: a client certificate is not)"]


def test_leader_pod_is_asked_through_the_proxy_with_the_token_forwarded() -> None:
    pod = {"metadata": {"name": "pyscheduler-abc"},
           "spec": {"containers": [{"ports": [{"name": "https", "containerPort": 10300}]}]}}
    cluster = FakeCluster({"/api/v1/namespaces/pyscheduler/pods/pyscheduler-abc": pod}, [])
    t = ec.holder_pod_target(cluster, "pyscheduler", "pyscheduler-abc_0b8c")  # type: ignore[arg-type]
    assert t is not None and t.where == "leader pod pyscheduler/pyscheduler-abc through the API server's proxy"
    t.fetch("/debug/explain/api/pods/ns/p")
    assert cluster.gets[-1] == ("/api/v1/namespaces/pyscheduler/pods/https:pyscheduler-abc:10300/proxy"
                                "/debug/explain/api/pods/ns/p", {FORWARDED_AUTHORIZATION: "Bearer t"})
    assert ec.holder_pod_target(cluster, "pyscheduler", "laptop_0b8c") is None  # type: ignore[arg-type]


def _docs() -> list[dict[str, Any]]:
    return [make_node("small", cpu="1"), make_pod("p", cpu="2", scheduler_name="pyscheduler")]


def test_what_if_when_no_scheduler_answers() -> None:
    docs = _docs()
    cluster = FakeCluster({"/api/v1/namespaces/default/pods/p": docs[1]}, docs)
    ans = ec.explain_pod(_args(), what_if, cluster, [])  # type: ignore[arg-type]
    assert ans.source == SOURCE_WHAT_IF
    (d,) = ans.decisions
    assert d.outcome == UNSCHEDULABLE and d.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert [m.node for m in d.near_misses] == ["small"]
    assert ans.notes[-1] == "no scheduler answered with a record: recomputed now from the cluster"
    assert "recomputed now (what-if, nothing written)" in ec.answer_text(ans)
    with pytest.raises(ec.ExplainError, match="pod default/q not found"):
        ec.explain_pod(_args("q"), what_if, cluster, [])  # type: ignore[arg-type]


def test_config_from_the_configmap() -> None:
    cm = {"data": {"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                                  "profiles: [{schedulerName: custom}]\n"}}
    cluster = FakeCluster({"/api/v1/namespaces/pyscheduler/configmaps/pyscheduler-config": cm}, [])
    notes: list[str] = []
    cfg = ec.scheduler_config(cluster, None, ec.DEFAULT_CONFIG_MAP, notes)  # type: ignore[arg-type]
    assert [p.scheduler_name for p in cfg.profiles] == ["custom"]
    # No ConfigMap: run's defaults, silently.
    cfg = ec.scheduler_config(FakeCluster({}, []), None, ec.DEFAULT_CONFIG_MAP, notes)  # type: ignore[arg-type]
    assert cfg == load_run_config(None) and notes == []


# The Harness schedules with the default profile: so does the ConfigMap the client reads.
DEFAULT_PROFILE_CM = {"/api/v1/namespaces/pyscheduler/configmaps/pyscheduler-config": {"data": {
    "config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"}}}


@pytest.fixture
async def scheduler() -> AsyncIterator[tuple[SecureServer, str]]:
    h = Harness()
    h.sched.on_node(None, make_node("small", cpu="1"))
    h.sched.on_pod("ADDED", make_pod("p", cpu="2"))
    await h.step()

    async def tokens(body: dict[str, Any]) -> dict[str, Any]:
        return authenticated("me") if body["spec"]["token"] == "t" else NOT_AUTHENTICATED

    async def sar(body: dict[str, Any]) -> dict[str, Any]:
        return {"status": {"allowed": body["spec"]["nonResourceAttributes"]["path"].startswith("/debug/explain/")}}

    srv = SecureServer(ServingOptions(bind_address="127.0.0.1", secure_port=0),
                       TokenAuthenticator(tokens, sleep=no_sleep), DelegatingAuthorizer(sar, sleep=no_sleep),
                       ssl_context(None, None))
    await srv.start(ExplainPage(h.sched.decisions, h.queue, h.cache.nodes.values, identity="me_1").routes())
    fingerprint = await certificate_fingerprint("127.0.0.1", srv.port)
    yield srv, fingerprint
    await srv.stop()


async def test_asks_the_local_scheduler_with_its_pinned_certificate(scheduler: tuple[SecureServer, str]) -> None:
    srv, fingerprint = scheduler
    docs = [make_node("small", cpu="1"), make_pod("p", cpu="2")]
    cluster = FakeCluster({"/api/v1/namespaces/default/pods/p": docs[1], **DEFAULT_PROFILE_CM}, docs)
    local = [_pres(1, port=srv.port, fingerprint=fingerprint, profiles=["default-scheduler"])]
    ans = await asyncio.to_thread(ec.explain_pod, _args(), what_if, cluster, local)
    assert (ans.source, ans.where) == (SOURCE_SCHEDULER, f"local scheduler pid 1 at https://127.0.0.1:{srv.port}")
    (d,) = ans.decisions
    assert d.outcome == UNSCHEDULABLE and d.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert ans.queue is not None and ans.queue["queue"] == "unschedulable"
    # Hints for the pending pod come from a what-if of the same pod.
    assert [m.node for m in d.near_misses] == ["small"]
    assert ec.answer_json(ans)["attempts"][0]["nearMisses"][0]["plugin"] == "NodeResourcesFit"
    # A certificate that is not the published one: not asked, what-if instead.
    forged = [_pres(1, port=srv.port, fingerprint="0" * 64, profiles=["default-scheduler"])]
    ans = await asyncio.to_thread(ec.explain_pod, _args(), what_if, cluster, forged)
    assert ans.source == SOURCE_WHAT_IF
    assert "its certificate is not the one it published" in ans.notes[0]
    # A token the scheduler does not accept: refused, noted, what-if.
    bad = FakeCluster(cluster.table, docs, token="Bearer nope")
    ans = await asyncio.to_thread(ec.explain_pod, _args(), what_if, bad, local)
    assert ans.source == SOURCE_WHAT_IF and "refused: 401" in ans.notes[0]


async def test_server_flag_needs_a_checked_or_waived_certificate(scheduler: tuple[SecureServer, str]) -> None:
    srv, _ = scheduler
    docs = [make_node("small", cpu="1"), make_pod("p", cpu="2")]
    cluster = FakeCluster({"/api/v1/namespaces/default/pods/p": docs[1], **DEFAULT_PROFILE_CM}, docs)
    url = f"https://127.0.0.1:{srv.port}"
    ans = await asyncio.to_thread(ec.explain_pod, _args(server=url), what_if, cluster, [])
    assert ans.source == SOURCE_WHAT_IF and "CERTIFICATE_VERIFY_FAILED" in ans.notes[0]
    ans = await asyncio.to_thread(ec.explain_pod, _args(server=url, insecure_skip_tls_verify=True), what_if,
                                  cluster, [])
    assert (ans.source, ans.where) == (SOURCE_SCHEDULER, f"scheduler at {url}")
