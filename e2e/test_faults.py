"""End-to-end: the API server misbehaving the way busy production API servers do (issue 26).

Every replica talks to the kube-apiserver through a fault proxy of its own
(e2e/support/faultproxy.py: plain HTTP from the scheduler, TLS to the API server, watch streams
relayed as they come), which the test drives. Each case loads ``PYSCHED_E2E_FAULT_PODS`` pods
(default 240) onto ``PYSCHED_E2E_FAULT_SLOTS`` slots (default 200: nodes of 10 slots, kwok),
so every case ends with bound and Unschedulable pods, and then checks from the API
(e2e/support/safety.py, shared with the safety module): no node over allocatable, no pod bound
twice, every pod bound or reported Unschedulable (none lost), no Binding after its replica's
lease had expired, and the scheduler alive, or exited for a stated reason and healed by a restart.

Each case prints one ``RESULT faults_<case>`` line (run with ``-s``): pods, bound,
unschedulable, lost, overcommitted nodes, recovery seconds (from the end of the fault to every
pod settled, or to the new leader), and what the proxy injected.

The module runs its own control plane with the audit log on (as test_safety_leader.py).
"""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from e2e.support import safety
from e2e.support.faultproxy import FaultProxy, kinds
from e2e.support.waits import wait_for
from scheduler.testing.process import SchedulerProcess

RUN_PREFIX = "pyscheduler-faults-"
PODS = int(os.environ.get("PYSCHED_E2E_FAULT_PODS", "240"))
SLOTS = int(os.environ.get("PYSCHED_E2E_FAULT_SLOTS", "200"))
# How long the latency case holds every call 1-5 s.
LATENCY_SECONDS = float(os.environ.get("PYSCHED_E2E_FAULT_LATENCY_SECONDS", "60"))
# The scheduler's read-idle limit on watch streams in the stall case (default 90 s).
IDLE_SECONDS = 8


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[safety.Plane]:
    assert SLOTS % 10 == 0 and PODS > SLOTS
    with safety.start_plane(RUN_PREFIX, tmp_path_factory) as p:
        yield p


@pytest.fixture
def namespace(plane: safety.Plane) -> Iterator[str]:
    with safety.fresh_namespace(plane, "faults") as name:
        yield name


@pytest.fixture
def replicas(plane: safety.Plane, tmp_path: pathlib.Path) -> Iterator[Callable[..., SchedulerProcess]]:
    with safety.replica_starter(plane, tmp_path) as start:
        yield start


@pytest.fixture
def proxy(plane: safety.Plane, tmp_path: pathlib.Path) -> Iterator[Callable[[str], tuple[FaultProxy, str]]]:
    """``proxy(replica)``: a started FaultProxy and a kubeconfig for ``replica`` through it."""
    made: list[FaultProxy] = []
    admin = yaml.safe_load(pathlib.Path(plane.kubeconfig).read_text())
    upstream = admin["clusters"][0]["cluster"]["server"]

    def make(replica: str) -> tuple[FaultProxy, str]:
        p = FaultProxy(upstream, seed=len(made)).start()
        made.append(p)
        doc = yaml.safe_load(pathlib.Path(plane.kubeconfigs[replica]).read_text())
        for c in doc["clusters"]:
            c["cluster"] = {"server": p.url}
        path = tmp_path / f"{replica}-via-proxy-{p.port}.kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        return p, str(path)

    yield make
    for p in made:
        p.stop()


def load(plane: safety.Plane, namespace: str) -> tuple[list[str], dict[str, str]]:
    """The case's nodes (SLOTS // 10 of them, labelled for the case's pods only)."""
    group = {"faults": namespace}
    nodes = safety.make_nodes(plane.core, namespace, SLOTS // 10, group)
    return nodes, group


def settle(plane: safety.Plane, namespace: str, nodes: list[str], procs: dict[str, SchedulerProcess],
           stall: float = 90, cap: float = 420) -> safety.Tally:
    """Every pod bound or Unschedulable, waited for as long as binding goes on."""
    def report() -> str:
        unsettled = [
            f"{p.metadata.name}: conditions={[(c.type, c.status, c.reason) for c in p.status.conditions or []]} "
            f"nominated={p.status.nominated_node_name!r}"
            for p in plane.core.list_namespaced_pod(namespace).items
            if not p.spec.node_name and not any(c.type == "PodScheduled" and c.reason == "Unschedulable"
                                                for c in p.status.conditions or [])
        ]
        return safety.replica_report(procs) + "\nunsettled: " + "; ".join(unsettled[:10])

    return safety.wait_progressing(
        lambda: safety.settled(plane.core, namespace, nodes), lambda: safety.bound_count(plane.core, namespace),
        stall=stall, cap=cap, desc="every pod bound or Unschedulable", report=report,
    )


def check(case: str, plane: safety.Plane, namespace: str, t: safety.Tally, proxies: list[FaultProxy],
          **extra: Any) -> None:
    """The invariants, and the case's RESULT line."""
    binds, after_loss, bad = safety.binds_without_lease(plane, namespace)
    twice = {pod: n for pod, n in safety.binds_per_pod(plane, namespace).items() if n > 1}
    injected: dict[str, int] = {}
    for p in proxies:
        for k, v in p.counts.items():
            if not k.startswith("sent:"):
                injected[k] = injected.get(k, 0) + v
    lost = t.pods - t.bound - t.unschedulable
    safety.result(f"faults_{case}", t, binds, after_loss, lost=lost, bound_twice=len(twice),
           **extra, injected=",".join(f"{k}={v}" for k, v in sorted(injected.items())))
    assert t.overcommitted == []
    assert twice == {}
    assert after_loss == 0, bad
    assert (t.pods, t.bound, t.unschedulable, lost) == (PODS, SLOTS, PODS - SLOTS, 0), t


def alive_or_stated(p: SchedulerProcess) -> str:
    """'alive', or the exit code and the stated reason (the last error event); fails otherwise."""
    code = p.proc.poll()
    if code is None:
        return "alive"
    reasons = [e.get("event") for e in p.log_events() if e.get("level") in ("error", "critical")
               or e.get("log_level") in ("error", "critical")]
    assert reasons, f"exited {code} without saying why:\n{p.logs()}"
    return f"exit{code}:{reasons[-1]}"


def test_throttled_writes_and_lists(plane, namespace, replicas, proxy):
    """429 with Retry-After on 30% of the writes (Bindings, Events, status) and lists, as API
    Priority and Fairness answers an overloaded flow: the scheduler waits as told and loses
    nothing."""
    px, kc = proxy("a")
    px.throttle(0.3, kinds("binding", "event", "status", "write", "list"), retry_after=1)
    nodes, group = load(plane, namespace)
    a = replicas("a", kubeconfig=kc)
    wait_for(lambda: safety.identity(a), timeout=60, desc="a leads")
    start = time.monotonic()
    safety.make_pods(plane.core, namespace, PODS, group)
    t = settle(plane, namespace, nodes, {"a": a})
    took = time.monotonic() - start
    retried = sum(1 for e in a.log_events() if e.get("event") == "api_retry_after")
    check("throttling", plane, namespace, t, [px], seconds=round(took, 1), retried=retried,
          scheduler=alive_or_stated(a))
    assert px.counts["429:binding"] > 0 and px.counts["429:list"] > 0, px.counts
    assert retried > 0
    assert a.proc.poll() is None, a.logs()


def test_5xx_and_resets_on_writes(plane, namespace, replicas, proxy):
    """A burst of 500s and connection resets on Bindings, Events and status patches, some
    resets after the API server took the write (the answer lost): nothing bound twice, nothing
    lost, and once the burst ends every pod settles. (Before the Recorder queued a failed
    PodScheduled write again, excess pods whose last write failed showed no condition for
    minutes: "lost" here.)"""
    px, kc = proxy("a")
    writes = kinds("binding", "event", "status")
    nodes, group = load(plane, namespace)
    a = replicas("a", kubeconfig=kc)
    wait_for(lambda: safety.identity(a), timeout=60, desc="a leads")
    px.fail("5xx", 0.15, writes, status=500)
    px.fail("reset", 0.1, writes)
    px.fail("reset_after", 0.1, writes)
    safety.make_pods(plane.core, namespace, PODS, group)
    # The burst lasts until every slot is bound: the excess pods' last PodScheduled=False writes
    # (after the last Binding, no event retries them for minutes) meet it too.
    wait_for(lambda: safety.bound_count(plane.core, namespace) >= SLOTS, timeout=240, desc="every slot bound")
    time.sleep(3)
    px.clear()
    healed = time.monotonic()
    t = settle(plane, namespace, nodes, {"a": a})
    check("5xx_resets", plane, namespace, t, [px], recovery_s=round(time.monotonic() - healed, 1),
          scheduler=alive_or_stated(a))
    assert px.counts["5xx:binding"] > 0 and px.counts["reset_after:binding"] > 0, px.counts
    assert a.proc.poll() is None, a.logs()


def test_slow_api_server(plane, namespace, replicas, proxy):
    """1-5 s added to every call (the lease's too) for a minute: the lease holds, or the
    replica fences and exits saying so and a restart heals it; nothing else is lost."""
    px, kc = proxy("a")
    nodes, group = load(plane, namespace)
    a = replicas("a", kubeconfig=kc)
    wait_for(lambda: safety.identity(a), timeout=60, desc="a leads")
    px.latency(1.0, 5.0)
    slow = time.monotonic()
    safety.make_pods(plane.core, namespace, PODS, group)
    while time.monotonic() - slow < LATENCY_SECONDS and a.proc.poll() is None:
        time.sleep(1)
    px.clear()
    healed = time.monotonic()
    state = alive_or_stated(a)
    procs = {"a": a}
    if a.proc.poll() is not None:
        # Fenced cleanly: it said so, bound nothing after (checked below); a restart heals.
        assert a.proc.returncode == 1 and "leader_election_lost" in state, state
        procs["a2"] = replicas("a", kubeconfig=kc)
    t = settle(plane, namespace, nodes, procs)
    check("latency", plane, namespace, t, [px], slow_s=round(healed - slow),
          recovery_s=round(time.monotonic() - healed, 1), scheduler=state)


def test_watch_cut_and_stalled(plane, namespace, replicas, proxy, monkeypatch):
    """Watch streams cut mid-stream (resumed from the last resourceVersion), then every open
    stream stalled without closing: the scheduler notices the silence, watches again and
    schedules the pods created meanwhile."""
    monkeypatch.setenv("PYSCHED_WATCH_IDLE_TIMEOUT", str(IDLE_SECONDS))
    px, kc = proxy("a")
    nodes, group = load(plane, namespace)
    a = replicas("a", kubeconfig=kc)
    wait_for(lambda: safety.identity(a), timeout=60, desc="a leads")
    first = PODS // 2
    safety.make_pods(plane.core, namespace, first, group, prefix="cut")
    cuts = 0
    for _ in range(5):
        cuts += px.cut_watches()
        time.sleep(1)
    wait_for(lambda: safety.bound_count(plane.core, namespace) >= first, timeout=120, desc="the first half bound")
    stalled = px.stall_watches()
    stall_start = time.monotonic()
    safety.make_pods(plane.core, namespace, PODS - first, group, prefix="stall")
    t = settle(plane, namespace, nodes, {"a": a})
    recovery = time.monotonic() - stall_start
    noticed = [e for e in a.log_events() if e.get("event") == "watch_idle"]
    check("watch_cut_stall", plane, namespace, t, [px], cut=cuts, stalled=stalled, noticed=len(noticed),
          recovery_s=round(recovery, 1), scheduler=alive_or_stated(a))
    assert cuts > 0 and stalled > 0
    assert noticed, a.logs()
    assert a.proc.poll() is None, a.logs()


def test_partitioned_leader_is_replaced(plane, namespace, replicas, proxy):
    """The leader cut off from the API server for longer than its lease: the standby takes
    over and finishes, the old leader fences (no Binding after its lease) and exits saying so,
    and restarted after the partition heals it stands by."""
    pa, kca = proxy("a")
    pb, kcb = proxy("b")
    nodes, group = load(plane, namespace)
    a = replicas("a", kubeconfig=kca, qps=20)
    wait_for(lambda: safety.identity(a), timeout=60, desc="a leads")
    b = replicas("b", kubeconfig=kcb, qps=20)
    safety.make_pods(plane.core, namespace, PODS, group)
    wait_for(lambda: safety.bound_count(plane.core, namespace) >= 20, timeout=120, desc="a binding")
    pa.partition(True)
    cut = time.monotonic()
    b_id = wait_for(lambda: safety.identity(b), timeout=60, desc="b ready")
    wait_for(lambda: safety.lease_holder(plane.api) == b_id, timeout=90, desc="b takes the lease")
    takeover = time.monotonic() - cut
    wait_for(lambda: a.proc.poll() is not None, timeout=60, desc="a gives up")
    state = alive_or_stated(a)
    while time.monotonic() - cut < 20:  # longer than the lease (15 s)
        time.sleep(1)
    pa.partition(False)
    a2 = replicas("a", kubeconfig=kca, qps=20)
    t = settle(plane, namespace, nodes, {"a": a, "b": b, "a2": a2})
    a2_leads = safety.lease_holder(plane.api) == safety.identity(a2)
    check("partition", plane, namespace, t, [pa, pb], recovery_s=round(takeover, 1), a=state,
          a_restarted=alive_or_stated(a2), b=alive_or_stated(b))
    assert a.proc.returncode == 1 and "leader_election_lost" in state, state
    assert b.proc.poll() is None and a2.proc.poll() is None
    assert not a2_leads
