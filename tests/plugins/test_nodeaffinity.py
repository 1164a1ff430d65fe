"""NodeAffinity; cases from upstream plugins/nodeaffinity/node_affinity_test.go
(TestNodeAffinity, TestNodeAffinityPriority, Test_isSchedulableAfterNodeChange) and
apis/config/validation TestValidateNodeAffinityArgs."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import PreFilterResult
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)
from scheduler.testing.builders import MakeNode, make_node, make_pod
from scheduler.testing.framework import new_snapshot


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def term(exprs: list | None = None, fields: list | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def pod(
    *,
    required: list | None = None,
    preferred: list | None = None,
    node_selector: dict | None = None,
    **kw: Any,
) -> PodInfo:
    na: dict[str, Any] = {}
    if required is not None:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return PodInfo(
        make_pod("p", affinity={"nodeAffinity": na} if na else None, node_selector=node_selector, **kw)
    )


UU_POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
UU_ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
ADDED_NODE2 = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term(fields=[name_in("node2")])]
        }
    }
}

# (TestNodeAffinity case name, pod, node name, node labels, args, run PreFilter,
#  want PreFilter status, want PreFilterResult names, want Filter status)
FILTER_CASES: list[
    tuple[str, PodInfo, str, dict, dict | None, bool, Status | None, set | None, Status | None]
] = [
    ("missing labels", pod(node_selector={"foo": "bar"}), "n", {}, None, True, None, None, UU_POD),
    ("same labels", pod(node_selector={"foo": "bar"}), "n", {"foo": "bar"}, None, True, None, None, None),
    (
        "node labels are superset",
        pod(node_selector={"foo": "bar"}),
        "n",
        {"foo": "bar", "baz": "blah"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "node labels are subset",
        pod(node_selector={"foo": "bar", "baz": "blah"}),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        pod(required=[term([expr("foo", "In", "bar", "value2")])]),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        pod(required=[term([expr("kernel-version", "Gt", "0204")])]),
        "n",
        {"kernel-version": "0206"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        pod(required=[term([expr("mem-type", "NotIn", "DDR", "DDR2")])]),
        "n",
        {"mem-type": "DDR3"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        pod(required=[term([expr("GPU", "Exists")])]),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        pod(required=[term([expr("foo", "In", "value1", "value2")])]),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects",
        pod(required=[term([])]),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with no Affinity will schedule onto a node",
        pod(),
        "n",
        {"foo": "bar"},
        None,
        True,
        SKIP,
        None,
        None,
    ),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        PodInfo(make_pod("p", affinity={"nodeAffinity": {}})),
        "n",
        {"foo": "bar"},
        None,
        True,
        SKIP,
        None,
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        pod(required=[term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])]),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        pod(required=[term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")])]),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
        pod(
            required=[
                term([expr("foo", "In", "bar", "value2")]),
                term([expr("diffkey", "In", "wrong", "value2")]),
            ]
        ),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied",
        pod(node_selector={"foo": "bar"}, required=[term([expr("foo", "Exists")])]),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
        pod(node_selector={"foo": "bar"}, required=[term([expr("foo", "Exists")])]),
        "n",
        {"foo": "barrrrrr"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        pod(required=[term([expr("foo", "NotIn", "invalid value: ___@#$%^")])]),
        "n",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        pod(required=[term(fields=[name_in("node1")])]),
        "node1",
        {},
        None,
        True,
        None,
        {"node1"},
        None,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        pod(required=[term(fields=[name_in("node1")])]),
        "node2",
        {},
        None,
        True,
        None,
        {"node1"},
        UU_POD,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        pod(required=[term(fields=[name_in("node1"), name_in("node2")]), term([expr("foo", "In", "bar")])]),
        "node2",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        None,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        pod(required=[term([expr("foo", "In", "bar")], [name_in("node1")])]),
        "node2",
        {"foo": "bar"},
        None,
        True,
        None,
        {"node1"},
        UU_POD,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        pod(required=[term([expr("foo", "In", "bar")], [name_in("node1")])]),
        "node1",
        {"foo": "bar"},
        None,
        True,
        None,
        {"node1"},
        None,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        pod(required=[term(fields=[name_in("node1")]), term([expr("foo", "In", "not-match-to-bar")])]),
        "node2",
        {"foo": "bar"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Pod with two terms of node.Name affinity",
        pod(required=[term(fields=[name_in("node1")]), term(fields=[name_in("node2")])]),
        "node2",
        {},
        None,
        True,
        None,
        {"node1", "node2"},
        None,
    ),
    (
        "Pod with two conflicting mach field requirements",
        pod(required=[term(fields=[name_in("node1"), name_in("node2")])]),
        "node2",
        {"foo": "bar"},
        None,
        True,
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT),
        None,
        UU_POD,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        pod(required=[term([expr("zone", "In", "foo")])]),
        "node2",
        {"zone": "foo"},
        ADDED_NODE2,
        True,
        None,
        None,
        None,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        pod(required=[term([expr("zone", "In", "bar")])]),
        "node2",
        {"zone": "foo"},
        ADDED_NODE2,
        True,
        None,
        None,
        UU_POD,
    ),
    (
        "Doesn't match added affinity",
        pod(),
        "node2",
        {"zone": "foo"},
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term([expr("zone", "In", "bar")])]
                }
            }
        },
        True,
        None,
        None,
        UU_ENFORCED,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        pod(node_selector={"foo": "bar"}),
        "n",
        {"foo": "bar", "baz": "blah"},
        None,
        False,
        None,
        None,
        None,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        pod(required=[term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])]),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        False,
        None,
        None,
        None,
    ),
    # Not upstream: Gt compares like strconv.ParseInt, so "1_0" is not a number.
    (
        "Gt with underscore label",
        pod(required=[term([expr("v", "Gt", "5")])]),
        "n",
        {"v": "1_0"},
        None,
        True,
        None,
        None,
        UU_POD,
    ),
]


@pytest.mark.parametrize(
    ("p", "node_name", "labels", "args", "run_pre_filter", "want_pf_status", "want_pf_names", "want_status"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    p: PodInfo,
    node_name: str,
    labels: dict,
    args: dict | None,
    run_pre_filter: bool,
    want_pf_status: Status | None,
    want_pf_names: set | None,
    want_status: Status | None,
) -> None:
    pl = NodeAffinity.new(args, None)  # type: ignore[arg-type]
    ni = NodeInfo(make_node(node_name, labels=labels))
    ni.labels.pop("kubernetes.io/hostname", None)  # upstream test nodes carry only the case's labels
    state = CycleState()
    if run_pre_filter:
        got = pl.pre_filter(state, p, [ni])
        if want_pf_status is not None:
            assert got == want_pf_status
        elif want_pf_names is not None:
            assert isinstance(got, PreFilterResult)
            assert got.node_names == want_pf_names
        else:
            assert got is None
    assert pl.filter(state, p, ni) == want_status


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = [{"weight": 2, "preference": term([expr("foo", "In", "bar")])}]
AFFINITY2 = [
    {"weight": 2, "preference": term([expr("foo", "In", "bar")])},
    {"weight": 4, "preference": term([expr("key", "In", "value")])},
    {
        "weight": 5,
        "preference": term([expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
    },
]

# (TestNodeAffinityPriority case name, pod preferred terms, node labels, args, run PreScore, want scores)
SCORE_CASES: list[tuple[str, list | None, list[dict], dict | None, bool, list[int]]] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        None,
        [LABEL1, LABEL2, LABEL3],
        None,
        False,
        [0, 0, 0],
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        AFFINITY1,
        [LABEL4, LABEL2, LABEL3],
        None,
        True,
        [0, 0, 0],
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        [LABEL1, LABEL2, LABEL3],
        None,
        True,
        [100, 0, 0],
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities",
        AFFINITY2,
        [LABEL1, LABEL5, LABEL2],
        None,
        True,
        [18, 100, 36],
    ),
    (
        "added affinity",
        None,
        [LABEL1, LABEL2],
        {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": AFFINITY1}},
        True,
        [100, 0],
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [LABEL1, LABEL2, LABEL5],
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 3, "preference": term([expr("key", "In", "value")])}
                ]
            }
        },
        True,
        [40, 60, 100],
    ),
    (
        "calculate the priorities correctly even if PreScore is not called",
        AFFINITY2,
        [LABEL1, LABEL5, LABEL2],
        None,
        False,
        [18, 100, 36],
    ),
]


@pytest.mark.parametrize(
    ("preferred", "labels", "args", "run_pre_score", "want"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    preferred: list | None, labels: list[dict], args: dict | None, run_pre_score: bool, want: list[int]
) -> None:
    pl = NodeAffinity.new(args, None)  # type: ignore[arg-type]
    p = pod(preferred=preferred)
    nodes = [MakeNode().name(f"node{i}").labels(lbl).info() for i, lbl in enumerate(labels)]
    state = CycleState()
    if run_pre_score:
        assert pl.pre_score(state, p, nodes) is None
    scores = np.array([pl.score(state, p, n) for n in nodes], dtype=np.int64)
    pl.normalize_score(state, p, scores)
    assert scores.tolist() == want
    snap = new_snapshot(nodes)
    batch = pl.score_batch(state, p, snap, np.arange(len(nodes)))
    pl.normalize_score(state, p, batch)
    assert batch.tolist() == want


def test_pre_score_skip_when_nothing_preferred() -> None:
    # "Skip is returned in PreScore when NodeAffinity is nil"
    assert NodeAffinity().pre_score(CycleState(), pod(), [MakeNode().info()]) == SKIP


def test_pre_score_error_on_broken_affinity() -> None:
    # "PreScore returns error when an incoming Pod has a broken affinity"
    p = pod(preferred=[{"weight": 2, "preference": term([expr("invalid key", "In", "bar")])}])
    st = NodeAffinity().pre_score(CycleState(), p, [MakeNode().info()])
    assert st is not None and st.code == Code.ERROR
    assert st.message == (
        '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )


# ---------------------------------------------------------------------------------------------
# Args validation (TestValidateNodeAffinityArgs)


REQ0 = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"


def test_args_valid_added_affinity() -> None:
    args = NodeAffinityArgs.parse(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term([expr("label-1", "In", "label-1-val")])]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(fields=[name_in("node-1")])}
                ],
            }
        }
    )
    assert args.added_required is not None and args.added_preferred is not None
    assert NodeAffinityArgs.parse(None) == NodeAffinityArgs() == NodeAffinityArgs.parse({})


def test_args_invalid_added_affinity() -> None:
    # "invalid added affinity": an invalid key in the required terms and two values for a field selector.
    with pytest.raises(ValueError) as e:
        NodeAffinityArgs.parse(
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [term([expr("invalid/label/key", "In", "label-1-val")])]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": term(fields=[name_in("node-1", "node-2")])}
                    ],
                }
            }
        )
    msg = str(e.value)
    assert msg.startswith(
        f'[{REQ0}.key: Invalid value: "invalid/label/key": a valid label key must consist of'
    )
    assert msg.endswith(
        ", addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: "
        'Invalid value: []string{"node-1", "node-2"}: must have one element]'
    )


@pytest.mark.parametrize(
    ("e", "want"),
    [
        (
            expr("k", "Foo", "v"),
            f"{REQ0}.operator: "
            'Unsupported value: "Foo": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
        (
            expr("k", "In"),
            f"{REQ0}.values: "
            "Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            expr("k", "Gt", "x"),
            f"{REQ0}.values[0]: "
            "Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
    ids=["unsupported-operator", "in-without-values", "gt-not-integer"],
)
def test_args_single_errors(e: dict, want: str) -> None:
    with pytest.raises(ValueError) as err:
        NodeAffinityArgs.parse(
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term([e])]}
                }
            }
        )
    assert str(err.value) == want


# ---------------------------------------------------------------------------------------------
# Batch == per node on random clusters


def _random_pod(rng: random.Random) -> PodInfo:
    keys, vals = ["a", "b", "c"], ["1", "2", "3"]
    kw: dict[str, Any] = {}
    if rng.random() < 0.5:
        kw["node_selector"] = {rng.choice(keys): rng.choice(vals)}
    if rng.random() < 0.6:
        terms = []
        for _ in range(rng.randint(1, 2)):
            op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
            if op in ("Exists", "DoesNotExist"):
                e = expr(rng.choice(keys), op)
            elif op in ("Gt", "Lt"):
                e = expr(rng.choice(keys), op, rng.choice(vals))
            else:
                e = expr(rng.choice(keys), op, *rng.sample(vals, 2))
            fields = [name_in(f"n{rng.randint(0, 40)}")] if rng.random() < 0.2 else None
            terms.append(term([e], fields))
        kw["required"] = terms
    if rng.random() < 0.6:
        kw["preferred"] = [
            {
                "weight": rng.randint(1, 100),
                "preference": term([expr(rng.choice(keys), "In", rng.choice(vals))]),
            }
            for _ in range(rng.randint(1, 3))
        ]
    return pod(**kw)


@pytest.mark.parametrize("seed", range(8))
def test_batch_matches_per_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [
        MakeNode().name(f"n{i}").labels({k: rng.choice(["1", "2", "3"]) for k in ("a", "b", "c") if rng.random() < 0.7})
        .info()
        for i in range(40)
    ]
    snap = new_snapshot(nodes)
    added = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term([expr("a", "NotIn", "3")])]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "preference": term([expr("b", "Exists")])}
            ],
        }
    }
    for args in (None, added):
        pl = NodeAffinity.new(args, None)  # type: ignore[arg-type]
        for _ in range(15):
            p = _random_pod(rng)
            idx = np.array(rng.sample(range(40), rng.randint(1, 40)))
            state = CycleState()
            pl.pre_filter(state, p, nodes)
            want_f = [pl.filter(state, p, nodes[i]) is None for i in idx]
            assert pl.filter_batch(state, p, snap, idx).tolist() == want_f
            pl.pre_score(state, p, nodes)
            want_s = [pl.score(state, p, nodes[i]) for i in idx]
            assert pl.score_batch(state, p, snap, idx).tolist() == want_s


# ---------------------------------------------------------------------------------------------
# Queueing hint (Test_isSchedulableAfterNodeChange)

_POD_FOO_BAR = pod(required=[term([expr("foo", "In", "bar")])])
_ENFORCED = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term([expr("foo", "In", "bar")])]
        }
    }
}


@pytest.mark.parametrize(
    ("args", "old", "new", "want"),
    [
        (None, None, {}, QueueingHint.QUEUE_SKIP),  # skip-queue-on-add
        (None, None, {"foo": "bar"}, QueueingHint.QUEUE),  # queue-on-add
        (None, {}, {}, QueueingHint.QUEUE_SKIP),  # skip-unrelated-changes
        (None, {}, {"k": "v"}, QueueingHint.QUEUE_SKIP),  # skip-unrelated-changes-on-labels
        (
            None,
            {"foo": "bar"},
            {"k": "v"},
            QueueingHint.QUEUE_SKIP,
        ),  # skip-labels-changes-on-node-from-suitable-to-unsuitable
        (None, {}, {"foo": "bar"}, QueueingHint.QUEUE),  # queue-on-labels-change-makes-pod-schedulable
        (None, {"foo": "bar"}, {"foo": "bar"}, QueueingHint.QUEUE_SKIP),  # skip-unrelated-change-that-keeps-...
        (_ENFORCED, None, {}, QueueingHint.QUEUE_SKIP),  # skip-queue-on-add-scheduler-enforced-node-affinity
        (
            _ENFORCED,
            None,
            {"foo": "bar"},
            QueueingHint.QUEUE,
        ),  # queue-on-add-scheduler-enforced-node-affinity
    ],
    ids=[
        "skip-queue-on-add",
        "queue-on-add",
        "skip-unrelated-changes",
        "skip-unrelated-changes-on-labels",
        "skip-suitable-to-unsuitable",
        "queue-on-labels-change-makes-pod-schedulable",
        "skip-unrelated-change-that-keeps-pod-schedulable",
        "skip-queue-on-add-enforced",
        "queue-on-add-enforced",
    ],
)
def test_node_change_hint(args: dict | None, old: dict | None, new: dict, want: QueueingHint) -> None:
    pl = NodeAffinity.new(args, None)  # type: ignore[arg-type]
    (ev,) = pl.events_to_register()
    assert ev.hint is not None
    old_ni = MakeNode().labels(old).info() if old is not None else None
    assert ev.hint(_POD_FOO_BAR, old_ni, MakeNode().labels(new).info()) == want
