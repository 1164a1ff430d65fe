"""TaintToleration; cases from upstream plugins/tainttoleration/taint_toleration_test.go."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.tainttoleration import ERR_REASON_UNTOLERATED, TaintToleration
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.framework import new_snapshot


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, op: str, value: str = "", effect: str = "") -> dict[str, str]:
    t = {"key": key, "operator": op, "value": value}
    if effect:
        t["effect"] = effect
    return t


FILTER_CASES: list[tuple[str, list[dict[str, str]] | None, list[dict[str, str]], bool]] = [
    # (upstream TestTaintTolerationFilter case name, tolerations, node taints, want reject)
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        None,
        [taint("dedicated", "user1", "NoSchedule")],
        True,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "Equal", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        False,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [tol("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        True,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints",
        [tol("foo", "Exists", "", "NoSchedule")],
        [taint("foo", "bar", "NoSchedule")],
        False,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
        [tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", "", "NoSchedule")],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        False,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [taint("foo", "bar", "NoSchedule")],
        True,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty",
        [tol("foo", "Equal", "bar")],
        [taint("foo", "bar", "NoSchedule")],
        False,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint "
        "on node is PreferNoSchedule",
        [tol("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        False,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
        None,
        [taint("dedicated", "user1", "PreferNoSchedule")],
        False,
    ),
    # TestTaintTolerationFilterWithFeatureGate, gate off (TaintTolerationComparisonOperators is
    # alpha and off by default in v1.36.3): Gt/Lt tolerations tolerate nothing.
    (
        "Pod with Gt toleration cannot be scheduled when feature gate is disabled",
        [tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
        [taint("node.kubernetes.io/sla", "950", "NoSchedule")],
        True,
    ),
    (
        "Pod with Lt toleration cannot be scheduled when feature gate is disabled",
        [tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule")],
        [taint("node.kubernetes.io/sla", "800", "NoSchedule")],
        True,
    ),
    (
        "Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is honored",
        [tol("dedicated", "Equal", "user1", "NoSchedule"), tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        False,
    ),
    (
        "Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is disabled",
        [tol("dedicated", "Equal", "user1", "NoSchedule"), tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule"), taint("node.kubernetes.io/sla", "950", "NoSchedule")],
        True,
    ),
    # Not upstream cases: NoExecute counts as a hard taint; untolerated NoExecute after a tolerated NoSchedule.
    ("no-execute is hard", None, [taint("k", "v", "NoExecute")], True),
    (
        "second hard taint untolerated",
        [tol("a", "Exists")],
        [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")],
        True,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "want_reject"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(tolerations: list | None, taints: list, want_reject: bool) -> None:
    pod = PodInfo(make_pod("p", tolerations=tolerations))
    node = NodeInfo(make_node("n", taints=taints))
    st = TaintToleration().filter(CycleState(), pod, node)
    if want_reject:
        assert st is not None
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # Current releases print no key/value (older ones: "node(s) had untolerated taint {k: v}").
        assert st.reasons == ("node(s) had untolerated taint(s)",) == (ERR_REASON_UNTOLERATED,)
    else:
        assert st is None


SCORE_CASES: list[tuple[str, list[dict[str, str]] | None, list[list[dict[str, str]]], list[int]]] = [
    # (upstream TestTaintTolerationScore case name, tolerations, taints per node, want normalized scores)
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [[taint("foo", "bar", "PreferNoSchedule")], [taint("foo", "blah", "PreferNoSchedule")]],
        [100, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score",
        [
            tol("cpu-type", "Equal", "arm64", "PreferNoSchedule"),
            tol("disk-type", "Equal", "ssd", "PreferNoSchedule"),
        ],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by prioritizer function",
        [tol("cpu-type", "Equal", "arm64", "NoSchedule"), tol("disk-type", "Equal", "ssd", "NoSchedule")],
        [
            [],
            [taint("cpu-type", "arm64", "NoSchedule")],
            [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 100, 0],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        None,
        [[], [taint("cpu-type", "arm64", "PreferNoSchedule")]],
        [100, 0],
    ),
    # "Numeric Gt operator: pod with Gt toleration prefers nodes with matching SLA taint" with the
    # gate at its v1.36.3 default (off): the Gt toleration tolerates neither taint -> 1 and 1 -> 0, 0.
    (
        "Numeric Gt operator: pod with Gt toleration prefers nodes with matching SLA taint (gate off)",
        [tol("node.kubernetes.io/sla", "Gt", "950", "PreferNoSchedule")],
        [
            [taint("node.kubernetes.io/sla", "800", "PreferNoSchedule")],
            [taint("node.kubernetes.io/sla", "999", "PreferNoSchedule")],
        ],
        [0, 0],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "want"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(tolerations: list | None, node_taints: list, want: list[int]) -> None:
    pl = TaintToleration()
    pod = PodInfo(make_pod("p", tolerations=tolerations))
    nodes = [NodeInfo(make_node(f"n{i}", taints=t or None)) for i, t in enumerate(node_taints)]
    state = CycleState()
    assert pl.pre_score(state, pod, nodes) is None
    scores = np.array([pl.score(state, pod, n) for n in nodes], dtype=np.int64)
    assert pl.normalize_score(state, pod, scores) is None
    assert scores.tolist() == want
    snap = new_snapshot(nodes)
    batch = pl.score_batch(state, pod, snap, np.arange(len(nodes)))
    pl.normalize_score(state, pod, batch)
    assert batch.tolist() == want


def test_score_without_pre_score_is_an_error() -> None:
    with pytest.raises(StatusError) as e:
        TaintToleration().score(CycleState(), PodInfo(make_pod("p")), NodeInfo(make_node("n")))
    assert e.value.status.code == Code.ERROR


_KEYS = ["a", "b", "c"]
_EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]


def _random_taints(rng: random.Random) -> list[dict[str, str]]:
    return [
        taint(rng.choice(_KEYS), rng.choice(["1", "2"]), rng.choice(_EFFECTS))
        for _ in range(rng.randint(0, 3))
    ]


def _random_tolerations(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(0, 3)):
        if rng.random() < 0.3:
            out.append(tol(rng.choice(_KEYS), "Exists", "", rng.choice(["", *_EFFECTS])))
        else:
            out.append(tol(rng.choice(_KEYS), "Equal", rng.choice(["1", "2"]), rng.choice(["", *_EFFECTS])))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_batch_matches_per_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [NodeInfo(make_node(f"n{i}", taints=_random_taints(rng) or None)) for i in range(80)]
    snap = new_snapshot(nodes)
    pl = TaintToleration()
    for _ in range(10):
        pod = PodInfo(make_pod("p", tolerations=_random_tolerations(rng) or None))
        idx = np.array(rng.sample(range(80), rng.randint(1, 80)))
        state = CycleState()
        want_f = [pl.filter(state, pod, nodes[i]) is None for i in idx]
        assert pl.filter_batch(state, pod, snap, idx).tolist() == want_f
        pl.pre_score(state, pod, [nodes[i] for i in idx])
        want_s = [pl.score(state, pod, nodes[i]) for i in idx]
        assert pl.score_batch(state, pod, snap, idx).tolist() == want_s


def test_node_change_hint() -> None:
    # TestIsSchedulableAfterNodeChange: only an untolerated -> tolerated change queues the pod.
    pl = TaintToleration()
    node_ev, pod_ev = pl.events_to_register()
    assert node_ev.hint is not None and pod_ev.hint is not None
    pod = PodInfo(make_pod("p", tolerations=[tol("foo", "Exists", "", "NoSchedule")]))
    bad = NodeInfo(make_node("n", taints=[taint("bar", "x", "NoSchedule")]))
    ok = NodeInfo(make_node("n", taints=[taint("foo", "x", "NoSchedule")]))
    assert node_ev.hint(pod, None, ok) == QueueingHint.QUEUE
    assert node_ev.hint(pod, None, bad) == QueueingHint.QUEUE_SKIP
    assert node_ev.hint(pod, bad, ok) == QueueingHint.QUEUE
    assert node_ev.hint(pod, ok, ok) == QueueingHint.QUEUE_SKIP
    # isSchedulableAfterPodTolerationChange: only the target pod.
    assert pod_ev.hint(pod, pod, pod) == QueueingHint.QUEUE
    other = PodInfo(make_pod("other"))
    assert pod_ev.hint(pod, other, other) == QueueingHint.QUEUE_SKIP


def _tnode(*values: str) -> NodeInfo:
    return NodeInfo(make_node("nodeA", taints=[taint("dedicated", v, "NoSchedule") for v in values]))


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("skip-queue-on-untoleratedtaint-node-added", None, _tnode("user1"), QueueingHint.QUEUE_SKIP),
        ("queue-on-toleratedtaint-node-added", None, _tnode("user2"), QueueingHint.QUEUE),
        ("skip-unrelated-change", _tnode("user1"), _tnode("user1", "user3"), QueueingHint.QUEUE_SKIP),
        ("queue-on-taint-change", _tnode("user1"), _tnode("user2"), QueueingHint.QUEUE),
    ],
)
def test_is_schedulable_after_node_change(name: str, old: NodeInfo | None, new: NodeInfo, want: QueueingHint) -> None:
    """taint_toleration_test.go TestIsSchedulableAfterNodeChange (wrong-object cases are Go type
    assertions with no counterpart here)."""
    node_ev = TaintToleration().events_to_register()[0]
    assert node_ev.hint is not None
    pod = PodInfo(make_pod("pod1", tolerations=[tol("dedicated", "Equal", "user2", "NoSchedule")]))
    assert node_ev.hint(pod, old, new) == want


@pytest.mark.parametrize(
    ("name", "other", "want"),
    [
        ("skip-updates-other-pod", True, QueueingHint.QUEUE_SKIP),
        ("queue-on-toleration-added", False, QueueingHint.QUEUE),
    ],
)
def test_is_schedulable_after_pod_toleration_change(name: str, other: bool, want: QueueingHint) -> None:
    """taint_toleration_test.go Test_isSchedulableAfterPodTolerationChange."""
    pod_ev = TaintToleration().events_to_register()[1]
    assert pod_ev.hint is not None
    pod = PodInfo(make_pod("pod-1", "ns-1", uid="uid0"))
    name2, uid2 = ("pod-2", "uid1") if other else ("pod-1", "uid0")
    old = PodInfo(make_pod(name2, "ns-1", uid=uid2))
    new = PodInfo(make_pod(name2, "ns-1", uid=uid2, tolerations=[{"key": "foo", "effect": "NoSchedule"}]))
    assert pod_ev.hint(pod, old, new) == want
