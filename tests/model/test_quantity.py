"""Quantities past int64, as kube-scheduler v1.36.3 holds them (issue 9: poison quantities).

Every expected value below was printed by apimachinery v0.36.3 itself through
tests/oracle/quantity (ParseQuantity, the JSON the API server stores, then Value()/MilliValue()
of that JSON parsed again, which is what the scheduler sees). Cases marked "quantity_test.go"
are inputs of apimachinery's TestQuantityParse / TestQuantityParseZero tables.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import pytest

from scheduler.live.watch.watcher import Watcher
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.quantity import (
    I64_MAX,
    I64_MIN,
    Quantity,
    QuantityError,
    _go_parse,
    api_string,
    int_value,
    milli_value,
    parse,
)
from scheduler.model.resource import Resource
from scheduler.model.schema import ObjectError
from scheduler.testing.builders import MakePod, make_node, make_pod
from scheduler.testing.framework import new_snapshot

# (manifest text, string the API server serves (None: refused), Value(), MilliValue())
PARSE_CASES = [
    ('1E', '1E', 1000000000000000000, 0),
    ('1000E', '1', 1, 1000),
    ('10E', '10E', 0, 0),
    ('12E', '12E', 0, 0),
    ('9E', '9E', 9000000000000000000, 0),
    ('9.2E', '9200P', 9200000000000000000, 0),
    ('9.3E', '9300P', 0, 0),
    ('1E18', '1E18', 1000000000000000000, 0),
    ('1e18', '1e18', 1000000000000000000, 0),
    ('1e19', '10e18', 0, 0),
    ('1e21', '1e21', 0, 0),
    ('1e300', '1e300', 0, 0),
    ('10000000000000000', '10P', 10000000000000000, 0),
    ('1000000000000000000000', '1', 1, 1000),
    ('99999999999999999999', '99999999999999999999', 7766279631452241919, 200376420520688664),
    ('123456789012345678901234567890', '123456789012345678901234567890', -4362896299872285998, 8982045596877734992),
    ('9223372036854775807', '9223372036854775807', 9223372036854775807, -1000),
    ('9223372036854775808', '9223372036854775808', -9223372036854775808, 0),
    ('18446744073709551616', '18446744073709551616', 0, 0),
    ('9223372036854775807m', '9223372036854775807m', 9223372036854776, 9223372036854775807),
    ('9223372036854775808m', '9223372036854775808m', 9223372036854776, -9223372036854775808),
    ('9223372036854775807k', '9223372036854775807k', -1000, -1000000),
    ('9.223372036854775807E', '9223372036854775807', 9223372036854775807, -1000),
    ('1Ei', '1Ei', 1152921504606846976, -9223372036854775808),
    ('7Ei', '7Ei', 8070450532247928832, -9223372036854775808),
    ('8Ei', '9223372036854775807', 9223372036854775807, -1000),
    ('16Ei', '9223372036854775807', 9223372036854775807, -1000),
    ('9223372036854775807Ki', '9223372036854775807', 9223372036854775807, -1000),
    ('100000000000000000000Ki', '9223372036854775807', 9223372036854775807, -1000),
    ('1000P', '1E', 1000000000000000000, 0),
    ('1e2147483647', '10e2147483646', 0, 10),
    ('10e2147483647', '10e2147483647', 0, 10),
    ('0.5', '500m', 1, 500),
    ('1.5m', '1500u', 1, 2),
    ('100m', '100m', 1, 100),
    ('0.1Ki', '102400m', 103, 102400),
    ('.5Ki', '512', 512, 512000),
    ('5.Ki', '5.Ki', 5120, 5120000),
    ('1.5Gi', '1536Mi', 1610612736, 1610612736000),
    ('-0.0000000001', '-1n', -1, -1),
    ('0.0000000000000000000001', '1n', 1, 1),
    ('1e-10', '1e-9', 1, 1),
    ('1.e-10', '1e-9', 1, 1),
    ('1.000000000000000000001', '1000000001n', 2, 1001),
    ('0010', '0010', 10, 10000),
    ('000000000000000000000001', '000000000000000000000001', 1, 1000),
    ('12345678901234567890.5', '12345678901234567890500m', -6101065172474983725, 4807115922877859396),
    ('Gi', '0', 0, 0),
    ('-', '0', 0, 0),
    ('E', '0', 0, 0),
    ('e3', '0', 0, 0),
    ('1e+3', '1e+3', 1000, 1000000),
    ('1k5', None, 0, 0),  # unable to parse quantity's suffix
    ('1x', None, 0, 0),  # quantities must match the regular expression ...
    ('1.5.5', None, 0, 0),  # quantities must match the regular expression ...
    ('--1', None, 0, 0),  # unable to parse quantity's suffix
    ('1e', None, 0, 0),  # unable to parse quantity's suffix
    ('.Ei', None, 0, 0),  # unable to parse numeric part of quantity
]


@pytest.mark.parametrize(("text", "served", "value", "milli"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_quantity_as_the_scheduler_sees_it(text: str, served: str | None, value: int, milli: int) -> None:
    if served is None:
        with pytest.raises(QuantityError):
            parse(text)
        return
    assert api_string(text) == served
    q = parse(text)
    assert (q.int_value(), q.milli()) == (value, milli)
    assert I64_MIN <= q.milli() <= I64_MAX


def test_quantity_test_go_cases() -> None:
    # quantity_test.go TestQuantityParse: {"1E", decQuantity(1, 18)}, {"12E", decQuantity(12, 18)},
    # {"9223372036854775807Ki", maxAllowed}: the storage forms that decide the overflow results.
    q1, _ = _go_parse("1E")
    assert (q1.value, q1.scale, q1.big) == (1, 18, False)
    q12, _ = _go_parse("12E")
    assert (q12.value, q12.scale, q12.big) == (12, 18, False)
    qmax, _ = _go_parse("9223372036854775807Ki")
    assert (qmax.value, qmax.scale, qmax.big) == (I64_MAX, 0, True)


# Quantity.Add, as component-helpers sums container requests: (addends, String(), Value(), MilliValue())
ADD_CASES = [
    (['1E', '1E'], '2E', 2000000000000000000, 0),
    (['5E', '5E'], '10E', 0, 0),
    (['0.5m', '0.5m'], '1m', 1, 1),
    (['0.5', '0.5'], '1', 1, 1000),
    (['9E', '1E'], '10E', 0, 0),
    (['9E', '9E'], '18E', 0, 0),
    (['1', '1E'], '1000000000000000001', 1000000000000000001, 3875820019684213736),
    (['100m', '1E'], '1000000000000000000100m', 1000000000000000001, 3875820019684212836),
    (['8Ei', '1'], '8Ei', -9223372036854775808, 0),
    (['1Ei', '1Ei'], '2Ei', 2305843009213693952, 0),
    (['7Ei', '7Ei'], '14Ei', -2305843009213693952, 0),
    (['5000P', '5000P'], '10E', 0, 0),
    (['9223372036854775807', '1'], '9223372036854775808', -9223372036854775808, 0),
    (['99999999999999999999', '1m'], '99999999999999999999001m', 7766279631452241920, 200376420520688665),
    (['1m', '99999999999999999999'], '99999999999999999999001m', 7766279631452241920, 200376420520688665),
    (['1E', '100m'], '1000000000000000000100m', 1000000000000000001, 3875820019684212836),
    (['4E', '4E', '4E'], '12E', 0, 0),
    (['1e19', '1'], '10000000000000000001', -8446744073709551615, 1864712049423025128),
    (['1k', '1Ki'], '2024', 2024, 2024000),
    (['1Ki', '1k'], '2024', 2024, 2024000),
    (['0', '1Ki'], '1Ki', 1024, 1024000),
]


@pytest.mark.parametrize(("parts", "served", "value", "milli"), ADD_CASES, ids=[" + ".join(c[0]) for c in ADD_CASES])
def test_quantity_add(parts: list[str], served: str, value: int, milli: int) -> None:
    acc = Quantity(0, 0, False, "DecimalSI")
    for p in parts:
        acc = acc.add(_go_parse(p)[0])
    assert (acc.canonical(), acc.int_value(), acc.milli()) == (served, value, milli)


@pytest.mark.parametrize("text", ["1e1000000000000", "99999999999999999999e2147483647"])
def test_giant_exponents_do_not_hang(text: str) -> None:
    # Upstream's decimal path works through numbers with billions of digits here; we answer
    # at once: either a value or a refusal.
    with contextlib.suppress(QuantityError):
        parse(text)


# -- objects: what a 1E node or pod becomes ---------------------------------------------------


def test_one_exa_cpu_node_offers_zero_cpu() -> None:
    ni = NodeInfo(make_node("big", cpu="1E", memory="1E"))
    assert ni.allocatable.milli_cpu == 0  # MilliValue of 1E overflows to 0 upstream
    assert ni.allocatable.memory == 10**18  # Value of 1E fits in int64


def test_one_exa_cpu_pod_requests_zero_cpu() -> None:
    p = PodInfo(make_pod("greedy", cpu="1E"))
    assert p.requests.milli_cpu == 0
    assert p.non0_cpu == 0  # cpu is set, so no 100m default: MilliValue of the set value


@pytest.mark.parametrize(
    ("cpus", "milli"),
    [
        (("5E", "5E"), 0),  # upstream: 10E as int64 mantissa * 10^18, MilliValue overflow gives 0
        (("8Ei", "8Ei"), -2000),  # upstream: the decimal 2*(2^63-1), MilliValue wraps to -2000
        (("100m", "200m"), 300),
    ],
)
def test_pod_requests_sum_like_upstream(cpus: tuple[str, ...], milli: int) -> None:
    # scheduler.model.podrequests sums per-container int64 values; these cases give upstream's answer
    # (ADD_CASES above has the quantity sums: they differ for sub-milli parts and for sums that
    # overflow only once added, which podrequests does not model).
    w = MakePod().containers([])
    for cpu in cpus:
        w.req({"cpu": cpu})
    p = w.info()
    assert p.requests.milli_cpu == milli


def test_node_sums_wrap_like_int64() -> None:
    ni = NodeInfo(make_node("n", memory="8Ei"))
    for i in range(2):
        ni.add_pod(PodInfo(make_pod(f"p{i}", memory="7Ei")))
    # 7Ei = 8070450532247928832 bytes each; Go's int64 += wraps.
    assert ni.requested.memory == 2 * 8070450532247928832 - 2**64
    snap = new_snapshot([ni])
    assert snap.columns.req_mem[0] == ni.requested.memory
    assert snap.columns.poisoned == 0


def test_snapshot_contains_a_node_that_does_not_fit_the_columns() -> None:
    good = NodeInfo(make_node("good", cpu="4"))
    bad = NodeInfo(make_node("bad", cpu="4"))
    bad.allocatable = Resource(milli_cpu=2**70)  # cannot come from objects.py; simulates a bug
    snap = new_snapshot([good, bad])
    cols = snap.columns
    assert cols.poisoned == 1
    assert (cols.alloc_cpu[0], cols.unschedulable[0]) == (4000, False)
    assert (cols.alloc_cpu[1], cols.unschedulable[1]) == (0, True)


# -- containment -----------------------------------------------------------------------------


class _Handlers:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}

    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None:
        PodInfo(raw)

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None:
        self.nodes[raw["metadata"]["name"]] = NodeInfo(raw)

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None:
        pass

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        pass


def test_watcher_contains_a_bad_object() -> None:
    errors: list[str] = []
    h = _Handlers()
    w = Watcher(h, lambda: None, on_error=errors.append)  # type: ignore[arg-type, return-value]
    bad_pod = make_pod("bad", cpu="-1")
    w.dispatch("Pod", "ADDED", bad_pod)
    w.dispatch("Node", "ADDED", make_node("n1"))
    bad_node = make_node("n2")
    bad_node["status"]["allocatable"] = ["cpu"]
    w.dispatch("Node", "ADDED", bad_node)
    assert errors == ["Pod", "Node"]
    assert list(h.nodes) == ["n1"]
    assert w.errors == 2


def test_bad_node_update_keeps_the_old_node() -> None:
    ni = NodeInfo(make_node("n", cpu="4"))
    bad = make_node("n", cpu="lots")
    with pytest.raises(ObjectError) as e:
        ni.set_node(bad)
    assert "status.allocatable[cpu]" in str(e.value)
    assert ni.allocatable.milli_cpu == 4000


async def test_cycle_that_raises_costs_only_its_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.live import loop as sched_mod
    from scheduler.testing.harness import Harness

    real = sched_mod.scheduling_cycle

    def cycle(fw: Any, alg: Any, cache: Any, snap: Any, pod: PodInfo, *batching: Any) -> Any:
        if pod.name == "boom":
            raise RuntimeError("plugin blew up")
        return real(fw, alg, cache, snap, pod, *batching)

    monkeypatch.setattr(sched_mod, "scheduling_cycle", cycle)
    h = Harness()
    h.sched.on_node(None, make_node("n1"))
    for name in ("a", "boom", "b"):
        h.sched.on_pod("ADDED", make_pod(name))
    task = asyncio.create_task(h.sched.run())
    for _ in range(400):
        await asyncio.sleep(0.005)
        if len(h.api.bindings) == 2 and h.events("FailedScheduling"):
            break
    h.sched.stop()
    await asyncio.wait_for(task, 2)
    await h.settle()
    assert sorted(h.bound()) == ["a", "b"]
    ev = h.events("FailedScheduling")
    assert len(ev) == 1 and "plugin blew up" in ev[0]["note"]
    assert "uid-default-boom" in h.queue  # never dropped: back with backoff
    m = h.metrics.registry
    assert m.get_sample_value("pyscheduler_object_errors_total", {"kind": "Pod", "stage": "cycle"}) == 1
    assert m.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": "error", "profile": "default-scheduler"}
    ) == 1


def test_columns_hold_every_quantity() -> None:
    # Any accepted quantity converts to something numpy int64 can hold.
    for text, served, _, _ in PARSE_CASES:
        if served is None:
            continue
        q = parse(text)
        np.array([q.milli(), q.int_value()], dtype=np.int64)


# -- decisions next to kube-scheduler v1.36.3 -------------------------------------------------

# The real binary (--v=10, "Plugin scored node for pod" and "Calculated node's final score")
# on: cmp-n1 (4 cpu, 32Gi) holding pod "huge" (cpu 1E, 1Gi), cmp-n2 (4 cpu, 16Gi), cmp-big
# (cpu 1E, 64Gi); pending in this order: p-cpu (1, 128Mi), p-none, p-1e (1E, 128Mi), p-mem (1Gi).
# Per pod: node -> (TaintToleration, NodeResourcesFit, NodeResourcesBalancedAllocation, total),
# weighted as logged; BalancedAllocation is absent for a pod without requests. cmp-big is
# filtered for p-cpu with "Insufficient cpu". p-cpu tied (455) and the binary took cmp-n1.
BINARY_SCORES: dict[str, dict[str, tuple[int, int, int | None, int]]] = {
    "p-cpu": {"cmp-n1": (300, 85, 70, 455), "cmp-n2": (300, 87, 68, 455)},
    "p-none": {"cmp-n1": (300, 83, None, 383), "cmp-n2": (300, 97, None, 397), "cmp-big": (300, 99, None, 399)},
    "p-1e": {"cmp-n1": (300, 85, 75, 460), "cmp-n2": (300, 99, 74, 473), "cmp-big": (300, 99, 75, 474)},
    "p-mem": {"cmp-n1": (300, 82, 75, 457), "cmp-n2": (300, 95, 73, 468), "cmp-big": (300, 97, 75, 472)},
}
BINARY_PLACEMENTS = {"p-cpu": "cmp-n1", "p-none": "cmp-big", "p-1e": "cmp-big", "p-mem": "cmp-big"}


def test_scores_equal_the_binary_with_one_exa_objects() -> None:
    from scheduler.config import load_config
    from scheduler.simulate.simulator import Cluster, Simulator, attempt_record

    pods = [make_pod("huge", cpu="1E", memory="1Gi", node_name="cmp-n1")]
    for i, (name, cpu, mem) in enumerate(
        [("p-cpu", "1", "128Mi"), ("p-none", None, None), ("p-1e", "1E", "128Mi"), ("p-mem", None, "1Gi")]
    ):
        pods.append(make_pod(name, cpu=cpu, memory=mem, creation=f"2026-01-01T00:00:0{i}Z"))
    nodes = [make_node("cmp-n1", cpu="4", memory="32Gi"), make_node("cmp-n2", cpu="4", memory="16Gi"),
             make_node("cmp-big", cpu="1E", memory="64Gi")]
    cluster = Cluster(nodes=nodes, pods=pods)
    sim = Simulator(cluster, load_config(None), seed=1)  # seed 1 breaks p-cpu's tie as the binary did
    placed = {}
    for out in sim.attempts():
        rec = attempt_record(sim, out)
        name = out.pod.name
        placed[name] = rec["node"]
        got = {}
        for n, s in rec["scores"].items():
            p = s["plugins"]
            bal = p.get("NodeResourcesBalancedAllocation")
            got[n] = (p["TaintToleration"]["final"], p["NodeResourcesFit"]["final"],
                      bal["final"] if bal else None, s["total"])
        assert got == BINARY_SCORES[name], name
        if name == "p-cpu":
            assert rec["filtered"] == {"cmp-big": {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}}
    assert placed == BINARY_PLACEMENTS


def test_api_string_is_stable() -> None:
    # The live watch already hands us the API server's string; a second round trip changes nothing.
    for text, served, _, _ in PARSE_CASES:
        if served is not None:
            assert api_string(served) == served, text


# Exact parsing: apimachinery resource.Quantity's MilliValue/Value round up.
@pytest.mark.parametrize(
    ("text", "milli", "value"),
    [
        ("100m", 100, 1),  # Value() rounds 0.1 up to 1
        ("0.1", 100, 1),
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("1n", 1, 1),  # MilliValue rounds up too
        ("1Ki", 1024000, 1024),
        ("500Mi", 500 * 2**20 * 1000, 500 * 2**20),
        ("1Gi", 2**30 * 1000, 2**30),
        ("1.5Gi", 3 * 2**29 * 1000, 3 * 2**29),
        ("1e3", 10**6, 1000),
        ("1E3", 10**6, 1000),
        ("2k", 2 * 10**6, 2000),
        ("1M", 10**9, 10**6),
        ("32Gi", 32 * 2**30 * 1000, 32 * 2**30),
        ("0", 0, 0),
        (4, 4000, 4),
        ("+1", 1000, 1),
        (".5", 500, 1),
        ("5.", 5000, 5),
        ("1e-3", 1, 1),
    ],
)
def test_quantity(text: str, milli: int, value: int) -> None:
    assert milli_value(text) == milli
    assert int_value(text) == value


# "Gi" alone parses as 0 upstream (empty numerator), so it is not in this list.
@pytest.mark.parametrize("bad", ["", "1.2.3", "1Qi", "1 Gi", "abc", "--1"])
def test_quantity_rejects(bad: str) -> None:
    with pytest.raises(QuantityError):
        milli_value(bad)
