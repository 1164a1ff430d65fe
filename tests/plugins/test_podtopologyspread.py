"""PodTopologySpread: cases from upstream podtopologyspread/filtering_test.go, scoring_test.go
and validation_pluginargs_test.go (case names in the ids), plus batch/per-node forms against a
literal reference of upstream's algorithm on random clusters."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.taints import find_untolerated_taint
from scheduler.plugins.podtopologyspread import MAX_INT32, CriticalPaths, PodTopologySpread
from scheduler.plugins.podtopologyspread.common import pod_constraints
from scheduler.plugins.topologyindex import node_matches_required_affinity
from scheduler.testing.builders import MakeNode, MakePod, make_node, make_pod
from scheduler.testing.framework import add_pod_to_snapshot, build_handle
from scheduler.testing.topology import rand_cluster, rand_incoming

ZONE = "zone"
NODE = "node"
SKEW = Status(Code.UNSCHEDULABLE, "node(s) didn't match pod topology spread constraints")
LABEL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match pod topology spread constraints (missing required label)"
)
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def spread(
    max_skew: int, key: str, when: str = "DoNotSchedule", sel: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": sel or FOO, **kw}


def znode(name: str, zone: str | None, **kw: Any) -> dict[str, Any]:
    labels = {NODE: name}
    if zone is not None:
        labels[ZONE] = zone
    return make_node(name, labels=labels, **kw)


def fpod(name: str, node: str, labels: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    return make_pod(name, labels={"foo": ""} if labels is None else labels, node_name=node, **kw)


def run_filter(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, Status | None]:
    h = build_handle(nodes, pods)
    pl = PodTopologySpread.new({"defaultingType": "List"}, h)
    st = CycleState()
    pi = PodInfo(pod)
    infos = h.snapshot.node_infos
    r = pl.pre_filter(st, pi, infos)
    if isinstance(r, Status):
        assert r.code == Code.SKIP
        return {ni.name: None for ni in infos}
    out = {ni.name: pl.filter(st, pi, ni) for ni in infos}
    mask = pl.filter_batch(st, pi, h.snapshot, np.arange(len(infos)))
    assert mask is not None and mask.tolist() == [out[ni.name] is None for ni in infos]
    return out


FOUR = [znode("node-a", "zone1"), znode("node-b", "zone1"), znode("node-x", "zone2"), znode("node-y", "zone2")]

# --- filtering_test.go TestSingleConstraint -----------------------------------------------
SINGLE = [
    pytest.param(
        make_pod(
            "p",
            labels={"foo": ""},
            spread=[spread(1, ZONE, sel={"matchExpressions": [{"key": "foo", "operator": "DoesNotExist"}]})],
        ),
        FOUR,
        [],
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"]),
        id="no existing pods, incoming pod doesn't match itself",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE)]),
        FOUR,
        [fpod("p-a1", "node-a", {"foo": ""}), fpod("p-b1", "node-b", {"foo": ""})],
        {"node-a": SKEW, "node-b": SKEW, "node-x": None, "node-y": None},
        id="pods spread across zones as 2/0, only the empty zone fits",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE)]),
        [znode("node-a", "zone1"), znode("node-b", None), znode("node-x", "zone2"), znode("node-y", "zone2")],
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x"), fpod("p-y1", "node-y")],
        {"node-a": None, "node-b": LABEL, "node-x": SKEW, "node-y": SKEW},
        id="pods spread across zones as 1/2 (nodes without the label are UnschedulableAndUnresolvable)",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, NODE)]),
        FOUR,
        [
            fpod("p-a1", "node-a"),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b"),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y"),
            fpod("p-y3", "node-y"),
        ],
        {"node-a": SKEW, "node-b": SKEW, "node-x": None, "node-y": SKEW},
        id="pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(2, NODE)]),
        FOUR,
        [
            fpod("p-a1", "node-a"),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b"),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y"),
            fpod("p-y3", "node-y"),
        ],
        {"node-a": SKEW, "node-b": None, "node-x": None, "node-y": SKEW},
        id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        make_pod("p", labels={"bar": ""}, spread=[spread(1, NODE)]),
        FOUR,
        [
            fpod("p-a1", "node-a"),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b"),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y"),
            fpod("p-y3", "node-y"),
        ],
        {"node-a": SKEW, "node-b": None, "node-x": None, "node-y": SKEW},
        id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE)], node_selector={ZONE: "zone1"}),
        FOUR,
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x"), fpod("p-x2", "node-x")],
        {"node-a": None, "node-b": None, "node-x": None, "node-y": None},
        id="(derived) nodeSelector + nodeAffinityPolicy Honor: only zone1 counts, zone2 reads as 0",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE, minDomains=3)]),
        FOUR,
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x")],
        {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW},
        id="pods spread across zone as 1/1, minDomains 3 > 2 domains: global minimum treated as 0",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(2, ZONE, minDomains=3)]),
        FOUR,
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x")],
        {"node-a": None, "node-b": None, "node-x": None, "node-y": None},
        id="pods spread across zone as 1/1, minDomains 3 and maxSkew 2: everything fits",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, NODE, nodeTaintsPolicy="Honor")]),
        [
            znode("node-a", "zone1"),
            znode("node-b", "zone1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            znode("node-x", "zone2"),
        ],
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x")],
        {"node-a": None, "node-b": None, "node-x": None},
        id="NodeTaintsPolicy honored, tainted node-b excluded from the domains so the minimum is 1",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, NODE, nodeTaintsPolicy="Ignore")]),
        [
            znode("node-a", "zone1"),
            znode("node-b", "zone1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            znode("node-x", "zone2"),
        ],
        [fpod("p-a1", "node-a"), fpod("p-x1", "node-x")],
        {"node-a": SKEW, "node-b": None, "node-x": SKEW},
        id="NodeTaintsPolicy ignored, tainted node-b counts as an empty domain",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "want"), SINGLE)
def test_single_constraint(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: dict[str, Any]
) -> None:
    assert run_filter(pod, nodes, pods) == want


def test_other_namespace_and_terminating_pods_not_counted() -> None:
    """countPodsMatchSelector: pods in other namespaces or terminating are skipped (#87621)."""
    pods = [
        fpod("p-a1", "node-a"),
        make_pod("o", "other", labels={"foo": ""}, node_name="node-x"),
        make_pod("d", labels={"foo": ""}, node_name="node-x", deleting=True),
    ]
    got = run_filter(make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE)]), FOUR, pods)
    assert got == {"node-a": SKEW, "node-b": SKEW, "node-x": None, "node-y": None}


def test_multiple_constraints() -> None:
    """filtering_test.go TestMultipleConstraints 'two Constraints on zone and node, spreads =
    [3/3, 2/1/0/3]': only node-x fits (zone constraint holds everywhere, node constraint only at 0)."""
    pods = [
        fpod("p-a1", "node-a"),
        fpod("p-a2", "node-a"),
        fpod("p-b1", "node-b"),
        fpod("p-y1", "node-y"),
        fpod("p-y2", "node-y"),
        fpod("p-y3", "node-y"),
    ]
    pod = make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE), spread(1, NODE)])
    assert run_filter(pod, FOUR, pods) == {"node-a": SKEW, "node-b": SKEW, "node-x": None, "node-y": SKEW}


def test_prefilter_skip_without_hard_constraints() -> None:
    h = build_handle(FOUR)
    pl = PodTopologySpread.new(None, h)
    for pod in (make_pod("p"), make_pod("q", labels={"foo": ""}, spread=[spread(1, ZONE, "ScheduleAnyway")])):
        r = pl.pre_filter(CycleState(), PodInfo(pod), h.snapshot.node_infos)
        assert isinstance(r, Status) and r.code == Code.SKIP


# --- scoring_test.go TestPodTopologySpreadScore -------------------------------------------
def run_score(
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    filtered: list[str],
    args: dict[str, Any] | None = None,
    owners: list[dict[str, Any]] = (),
) -> list[int] | None:  # type: ignore[assignment]
    h = build_handle(nodes, pods, owners=list(owners))
    pl = PodTopologySpread.new(args if args is not None else {"defaultingType": "List"}, h)
    st = CycleState()
    pi = PodInfo(pod)
    cand = [h.snapshot.node_map[n] for n in filtered]
    r = pl.pre_score(st, pi, cand)
    if isinstance(r, Status):
        assert r.code == Code.SKIP
        return None
    raw = np.array([pl.score(st, pi, ni) for ni in cand], dtype=np.int64)
    batch = pl.score_batch(st, pi, h.snapshot, np.array([ni.index for ni in cand], dtype=np.int64))
    assert batch is not None and batch.tolist() == raw.tolist()
    pl.normalize_score(st, pi, raw)
    return raw.tolist()


HN = "kubernetes.io/hostname"
SOFT_NODE = spread(1, HN, "ScheduleAnyway")
ABCD = [make_node(n) for n in ("node-a", "node-b", "node-c", "node-d")]
P2103 = [
    fpod("p-a1", "node-a"),
    fpod("p-a2", "node-a"),
    fpod("p-b1", "node-b"),
    fpod("p-d1", "node-d"),
    fpod("p-d2", "node-d"),
    fpod("p-d3", "node-d"),
]
P4321 = [fpod(f"p-{n}{i}", f"node-{n}") for n, k in (("a", 4), ("b", 3), ("c", 2), ("d", 1)) for i in range(k)]
NULL_SEL = {"maxSkew": 1, "topologyKey": HN, "whenUnsatisfiable": "ScheduleAnyway"}
# scoring_test.go TestPodTopologySpreadScore (nodes + failedNodes = the snapshot; candidates = nodes)
SCORE = [
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        ABCD[:2],
        [],
        ["node-a", "node-b"],
        [100, 100],
        id="one constraint on node, no existing pods",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        ABCD[:2],
        [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b")],
        ["node-a"],
        [100],
        id="one constraint on node, only one node is candidate",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        ABCD[:2],
        [fpod("p-a1", "node-a"), fpod("p-b1", "node-b")],
        ["node-a", "node-b"],
        [100, 100],
        id="one constraint on node, all nodes have the same number of matching pods",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        ABCD,
        P2103,
        ["node-a", "node-b", "node-c", "node-d"],
        [20, 60, 100, 0],
        id="one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[NULL_SEL]),
        ABCD,
        P2103,
        ["node-a", "node-b", "node-c", "node-d"],
        [100, 100, 100, 100],
        id="one constraint on node, null selector",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(2, HN, "ScheduleAnyway")]),
        ABCD,
        P2103,
        ["node-a", "node-b", "node-c", "node-d"],
        [33, 66, 100, 16],
        id="one constraint on node, all 4 nodes are candidates, maxSkew=2",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(3, HN, "ScheduleAnyway")]),
        ABCD,
        P4321,
        ["node-a", "node-b", "node-c", "node-d"],
        [44, 66, 77, 100],
        id="one constraint on node, all 4 nodes are candidates, maxSkew=3",
    ),
]


BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def hnode(name: str, **labels: str) -> dict[str, Any]:
    """st.MakeNode().Name(name).Label(...): only the given labels."""
    return MakeNode().name(name).no_hostname_label().labels(labels).obj()


def hzn(name: str, zone: str) -> dict[str, Any]:
    return hnode(name, **{"zone": zone, HN: name})


P4_2_1_3 = [
    *[fpod(f"p-a{i}", "node-a") for i in range(1, 5)],
    fpod("p-b1", "node-b"),
    fpod("p-b2", "node-b"),
    fpod("p-x1", "node-x"),
    *[fpod(f"p-y{i}", "node-y") for i in range(1, 4)],
]
# TestPodTopologySpreadScore's "X/Y/Z" spreads on nodes labelled "node"
NODE_ABC = [
    hnode("node-a", node="node-a", foo=""),
    hnode("node-b", node="node-b", foo=""),
    hnode("node-c", node="node-c"),
]
P2_1_1 = [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b"), fpod("p-c1", "node-c")]
IGNORE_AFFINITY = spread(1, NODE, "ScheduleAnyway", nodeAffinityPolicy="Ignore")
FOO_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}]
        }
    }
}
TAINTED_ABC = [
    hnode("node-a", node="node-a"),
    hnode("node-b", node="node-b"),
    {
        **hnode("node-c", node="node-c"),
        "spec": {"taints": [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]},
    },
]
ZONE_NODE_4 = [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-c", "zone2"), hzn("node-d", "zone2")]

# More of scoring_test.go TestPodTopologySpreadScore (v1.36.3), gates at their defaults.
SCORE += [
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        [hnode(n, **{HN: n}) for n in ("node-a", "node-b", "node-x", "node-y")],
        P4_2_1_3,
        ["node-a", "node-b", "node-x"],
        [33, 83, 100],
        id="one constraint on node, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        [hnode("node-a", **{HN: "node-a"}), hnode("node-b", n="node-b"), hnode("node-x", **{HN: "node-x"}),
         hnode("node-y", **{HN: "node-y"})],
        P4_2_1_3,
        ["node-a", "node-b", "node-x"],
        [16, 0, 100],
        id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE, "ScheduleAnyway")]),
        [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-x", "zone2"), hzn("node-y", "zone2")],
        P4_2_1_3,
        ["node-a", "node-b", "node-x"],
        [75, 75, 100],
        id="one constraint on zone, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, ZONE, "ScheduleAnyway"), SOFT_NODE]),
        [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-x", "zone2"), hzn("node-y", "zone2")],
        [
            fpod("p-a1", "node-a"),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b"),
            fpod("p-x1", "node-x"),
            fpod("p-x2", "node-x"),
            *[fpod(f"p-y{i}", "node-y") for i in range(1, 5)],
        ],
        ["node-a", "node-x"],
        [100, 63],
        id="two Constraints on zone and node, 2 out of 4 nodes are candidates",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[spread(1, ZONE, "ScheduleAnyway"), spread(1, ZONE, "ScheduleAnyway", sel=BAR)],
        ),
        [hnode("node-a", zone="zone1"), hnode("node-b", zone="zone1"), hnode("node-x", zone="zone2"),
         hnode("node-y", zone="zone2")],
        [
            fpod("p-a1", "node-a", {"foo": "", "bar": ""}),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b", {"foo": "", "bar": ""}),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y", {"foo": "", "bar": ""}),
            fpod("p-y3", "node-y"),
        ],
        ["node-a", "node-x"],
        [85, 100],
        id="two Constraints on zone, 2 out of 4 nodes are candidates",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[spread(1, ZONE, "ScheduleAnyway"), spread(1, HN, "ScheduleAnyway", sel=BAR)],
        ),
        [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-x", "zone2"), hzn("node-y", "zone2")],
        [
            fpod("p-a1", "node-a"),
            fpod("p-b1", "node-b", {"foo": "", "bar": ""}),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y", {"bar": ""}),
        ],
        ["node-a", "node-b", "node-x", "node-y"],
        [60, 20, 100, 60],
        id="two Constraints on zone and node, with different labelSelectors",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[spread(1, ZONE, "ScheduleAnyway"), spread(1, HN, "ScheduleAnyway", sel=BAR)],
        ),
        [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-x", "zone2"), hzn("node-y", "zone2")],
        [fpod("p-b1", "node-b", {"bar": ""}), fpod("p-x1", "node-x"), fpod("p-y1", "node-y", {"foo": "", "bar": ""})],
        ["node-a", "node-b", "node-x", "node-y"],
        [100, 60, 40, 0],
        id="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[spread(1, ZONE, "ScheduleAnyway"), spread(1, HN, "ScheduleAnyway", sel=BAR)],
        ),
        [hzn("node-a", "zone1"), hzn("node-b", "zone1"), hzn("node-x", "zone2"), hzn("node-y", "zone2")],
        [
            fpod("p-a1", "node-a"),
            fpod("p-b1", "node-b", {"foo": "", "bar": ""}),
            fpod("p-y1", "node-y"),
            fpod("p-y2", "node-y", {"bar": ""}),
        ],
        ["node-a", "node-b", "node-x"],
        [50, 25, 100],
        id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        [hnode("node-a", **{HN: "node-a"}), hnode("node-b", **{HN: "node-b"})],
        [
            fpod("p-a1", "node-a", namespace="ns1"),
            fpod("p-a2", "node-a"),
            fpod("p-b1", "node-b"),
            fpod("p-b2", "node-b"),
        ],
        ["node-a", "node-b"],
        [100, 33],
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[SOFT_NODE]),
        [hnode("node-a", **{HN: "node-a"}), hnode("node-b", **{HN: "node-b"})],
        [fpod("p-a", "node-a", deleting=True), fpod("p-b", "node-b")],
        ["node-a", "node-b"],
        [100, 0],
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(2, NODE, "ScheduleAnyway", minDomains=10)]),
        [hnode("node-a", node="node-a"), hnode("node-b", node="node-b"), hnode("node-c", node="node-c")],
        [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b"), fpod("p-b2", "node-b"),
         fpod("p-c1", "node-c")],
        ["node-a", "node-b", "node-c"],
        [75, 75, 100],
        id="minDomains has no effect when ScheduleAnyway",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, node_selector={"foo": ""}, spread=[spread(1, NODE, "ScheduleAnyway")]),
        NODE_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [0, 33, 100],
        id="NodeAffinityPolicy honoed with labelSelectors",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, node_selector={"foo": ""}, spread=[IGNORE_AFFINITY]),
        NODE_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [66, 100, 100],
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, affinity=FOO_AFFINITY, spread=[spread(1, NODE, "ScheduleAnyway")]),
        NODE_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [0, 33, 100],
        id="NodeAffinityPolicy honoed with nodeAffinity",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, affinity=FOO_AFFINITY, spread=[IGNORE_AFFINITY]),
        NODE_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [66, 100, 100],
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, NODE, "ScheduleAnyway", nodeTaintsPolicy="Honor")]),
        TAINTED_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [0, 33, 100],
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}, spread=[spread(1, NODE, "ScheduleAnyway")]),
        TAINTED_ABC,
        P2_1_1,
        ["node-a", "node-b", "node-c"],
        [66, 100, 100],
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[
                {**spread(1, ZONE, "ScheduleAnyway", matchLabelKeys=["foo"]), "labelSelector": {}},
                {**spread(1, HN, "ScheduleAnyway", matchLabelKeys=["bar"]), "labelSelector": {}},
            ],
        ),
        ZONE_NODE_4,
        [
            fpod("p-a1", "node-a"),
            fpod("p-b1", "node-b", {"foo": "", "bar": ""}),
            fpod("p-y1", "node-c"),
            fpod("p-y2", "node-c", {"bar": ""}),
        ],
        ["node-a", "node-b", "node-c", "node-d"],
        [60, 20, 60, 100],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "", "bar": "", "baz": ""},
            spread=[
                spread(1, ZONE, "ScheduleAnyway"),
                spread(1, HN, "ScheduleAnyway", sel=BAR, matchLabelKeys=["baz"]),
            ],
        ),
        ZONE_NODE_4,
        [
            fpod("p-a1", "node-a"),
            fpod("p-b1", "node-b", {"foo": "", "bar": "", "baz": ""}),
            fpod("p-c1", "node-c"),
            fpod("p-c2", "node-c", {"bar": ""}),
            fpod("p-d3", "node-c", {"bar": "", "baz": ""}),
        ],
        ["node-a", "node-b", "node-c", "node-d"],
        [60, 20, 60, 100],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "filtered", "want"), SCORE)
def test_score(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], filtered: list[str], want: list[int]
) -> None:
    assert run_score(pod, nodes, pods, filtered) == want


def test_score_system_defaulting_service() -> None:
    """TestPodTopologySpreadScore "system defaulting, nodes don't have zone, pods match service":
    the same scores as one hostname constraint (the zone default finds no zone labels)."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    got = run_score(make_pod("p", labels={"foo": ""}), ABCD, P4321, ["node-a", "node-b", "node-c", "node-d"], {}, [svc])
    assert got == [44, 66, 77, 100]


def test_score_hand_computed() -> None:
    """Score = round(sum(cnt * ln(size + 2) + maxSkew - 1)); normalize = 100 * (max + min - s) / max."""
    nodes = [znode("node-a", "zone1"), znode("node-b", "zone1"), znode("node-x", "zone2")]
    pods = [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-x1", "node-x")]
    pod = make_pod("p", labels={"foo": ""}, spread=[spread(2, ZONE, "ScheduleAnyway")])
    w = math.log(2 + 2)
    raw = [math.floor(2 * w + 1 + 0.5), math.floor(2 * w + 1 + 0.5), math.floor(1 * w + 1 + 0.5)]
    hi, lo = max(raw), min(raw)
    assert run_score(pod, nodes, pods, ["node-a", "node-b", "node-x"]) == [100 * (hi + lo - s) // hi for s in raw]


def test_system_default_constraints_use_service_selector() -> None:
    """helper.DefaultSelector: a Service selecting the pod gives the default constraints a
    selector; without owners the plugin Skips PreScore (scoring_test.go 'Skip...')."""
    nodes = [znode("node-a", "zone1"), znode("node-b", "zone2")]
    pods = [
        make_pod("e1", labels={"app": "web"}, node_name="node-a"),
        make_pod("e2", labels={"app": "web"}, node_name="node-a"),
    ]
    pod = make_pod("p", labels={"app": "web"})
    assert run_score(pod, nodes, pods, ["node-a", "node-b"], args={}) is None
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    got = run_score(pod, nodes, pods, ["node-a", "node-b"], args={}, owners=[svc])
    assert got is not None and got[0] < got[1] == 100


def test_default_selector_replicaset_and_rc() -> None:
    h = build_handle(
        [znode("node-a", "zone1")],
        owners=[
            {
                "kind": "ReplicaSet",
                "metadata": {"name": "rs", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"tier": "x"}}},
            },
            {
                "kind": "ReplicationController",
                "metadata": {"name": "rc", "namespace": "default"},
                "spec": {"selector": {"k": "v"}},
            },
        ],
    )
    pl = PodTopologySpread.new(None, h)
    p_rs = PodInfo(make_pod("p", labels={"tier": "x"}, owner=("ReplicaSet", "rs")))
    cons = pl.constraints(p_rs, "ScheduleAnyway")
    assert [c.topology_key for c in cons] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    assert [c.max_skew for c in cons] == [3, 5]
    assert cons[0].selector.matches({"tier": "x"}) and not cons[0].selector.matches({"tier": "y"})
    p_rc = PodInfo(make_pod("q", labels={"k": "v"}, owner=("ReplicationController", "rc")))
    assert pl.constraints(p_rc, "ScheduleAnyway")[0].selector.matches({"k": "v"})
    assert pl.constraints(PodInfo(make_pod("r", owner=("ReplicaSet", "missing"))), "ScheduleAnyway") == []


# --- validation_pluginargs_test.go TestValidatePodTopologySpreadArgs -----------------------
@pytest.mark.parametrize(
    ("args", "err"),
    [
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}],
                "defaultingType": "List",
            },
            None,
            id="valid config",
        ),
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": -1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}],
                "defaultingType": "List",
            },
            "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
            id="maxSkew less than zero",
        ),
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "ScheduleAnyway"}],
                "defaultingType": "List",
            },
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
            id="empty topology key",
        ),
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "T", "whenUnsatisfiable": ""}],
                "defaultingType": "List",
            },
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
            id="WhenUnsatisfiable is empty",
        ),
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "T", "whenUnsatisfiable": "Foo"}],
                "defaultingType": "List",
            },
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Foo": supported values: "DoNotSchedule", "ScheduleAnyway"',  # noqa: E501
            id="WhenUnsatisfiable contains unsupported action",
        ),
        pytest.param(
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
                    {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
                ],
                "defaultingType": "List",
            },
            'defaultConstraints[1]: Duplicate value: "{node, ScheduleAnyway}"',
            id="duplicated constraints",
        ),
        pytest.param(
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}
                ],
                "defaultingType": "List",
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",  # noqa: E501
            id="label selector present",
        ),
        pytest.param(
            {
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}],
                "defaultingType": "System",
            },
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
            id="system default with constraints",
        ),
        pytest.param(
            {"defaultingType": "Foo"},
            'defaultingType: Unsupported value: "Foo": supported values: "System", "List"',
            id="wrong defaulting type",
        ),
    ],
)
def test_args_validation(args: dict[str, Any], err: str | None) -> None:
    h = build_handle([])
    if err is None:
        PodTopologySpread.new(args, h)
    else:
        with pytest.raises(ValueError) as exc:
            PodTopologySpread.new(args, h)
        assert str(exc.value) == err


def test_critical_paths_update() -> None:
    """filtering_test.go TestPreFilterStateAddPod relies on criticalPaths.update keeping the two lowest."""
    p = CriticalPaths()
    for v, n in [("a", 3), ("b", 1), ("c", 2)]:
        p.update(v, n)
    assert (p.v0, p.n0, p.v1, p.n1) == ("b", 1, "c", 2)
    p.update("b", 4)
    assert (p.v0, p.n0, p.v1, p.n1) == ("c", 2, "b", 4)
    assert CriticalPaths().n0 == MAX_INT32


# --- randomized: plugin vs a literal reference ---------------------------------------------


def ref_constraints(pl: PodTopologySpread, pod: PodInfo, action: str) -> list[Any]:
    return pod_constraints(pod, action, pl.default_constraints, pl.handle.listers)


def ref_count(ni: NodeInfo, sel: Any, ns: str) -> int:
    if sel.empty:
        return 0
    return sum(1 for p in ni.pods if not p.deleting and p.namespace == ns and sel.matches(p.labels))


def ref_incl(c: Any, pod: PodInfo, ni: NodeInfo) -> bool:
    if c.affinity_honor and not node_matches_required_affinity(pod, ni):
        return False
    return not (
        c.taints_honor and find_untolerated_taint(ni.taints, pod.tolerations, ("NoSchedule", "NoExecute")) is not None
    )


def ref_filter(pl: PodTopologySpread, pod: PodInfo) -> list[Status | None] | None:
    cons = ref_constraints(pl, pod, "DoNotSchedule")
    infos = pl.handle.snapshot.node_infos
    if not cons:
        return None
    tp: list[dict[str, int]] = [{} for _ in cons]
    for ni in infos:
        if not all(c.topology_key in ni.labels for c in cons):
            continue
        for i, c in enumerate(cons):
            if ref_incl(c, pod, ni):
                v = ni.labels[c.topology_key]
                tp[i][v] = tp[i].get(v, 0) + ref_count(ni, c.selector, pod.namespace)
    out: list[Status | None] = []
    for ni in infos:
        res = None
        for i, c in enumerate(cons):
            if c.topology_key not in ni.labels:
                res = LABEL
                break
            mn = min(tp[i].values()) if tp[i] else MAX_INT32
            if len(tp[i]) < c.min_domains:
                mn = 0
            self_m = 1 if c.selector.matches(pod.labels) else 0
            if tp[i].get(ni.labels[c.topology_key], 0) + self_m - mn > c.max_skew:
                res = SKEW
                break
        out.append(res)
    return out


def ref_score(pl: PodTopologySpread, pod: PodInfo, cand: list[NodeInfo]) -> list[int] | None:
    cons = ref_constraints(pl, pod, "ScheduleAnyway")
    if not cons:
        return None
    require_all = bool(pod.spread_constraints) or not pl.system_defaulted
    ignored = {ni.name for ni in cand if require_all and not all(c.topology_key in ni.labels for c in cons)}
    counts: list[dict[str, int]] = [{} for _ in cons]
    for ni in cand:
        if ni.name in ignored:
            continue
        for i, c in enumerate(cons):
            if c.topology_key != "kubernetes.io/hostname":
                counts[i].setdefault(ni.labels.get(c.topology_key, ""), 0)
    weights = []
    for i, c in enumerate(cons):
        sz = len(cand) - len(ignored) if c.topology_key == "kubernetes.io/hostname" else len(counts[i])
        weights.append(math.log(float(sz + 2)))
    for ni in pl.handle.snapshot.node_infos:
        if require_all and not all(c.topology_key in ni.labels for c in cons):
            continue
        for i, c in enumerate(cons):
            if not ref_incl(c, pod, ni):
                continue
            v = ni.labels.get(c.topology_key, "")
            if v in counts[i]:
                counts[i][v] += ref_count(ni, c.selector, pod.namespace)
    raw = []
    for ni in cand:
        if ni.name in ignored:
            raw.append(0)
            continue
        s = 0.0
        for i, c in enumerate(cons):
            if c.topology_key in ni.labels:
                if c.topology_key == "kubernetes.io/hostname":
                    cnt = ref_count(ni, c.selector, pod.namespace)
                else:
                    cnt = counts[i][ni.labels[c.topology_key]]
                s += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw.append(math.floor(s) + (1 if s - math.floor(s) >= 0.5 else 0))
    live = [r for ni, r in zip(cand, raw) if ni.name not in ignored]
    lo, hi = (min(live) if live else 0), max([0, *live])
    return [0 if ni.name in ignored else (100 if hi == 0 else 100 * (hi + lo - r) // hi) for ni, r in zip(cand, raw)]


@pytest.mark.parametrize("seed", range(12))
def test_random_clusters_match_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods, nss = rand_cluster(rng, rng.randint(3, 25), rng.randint(0, 80), affinity_p=0.0)
    owners = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc", "namespace": "ns0"},
            "spec": {"selector": {"color": "red"}},
        }
    ]
    h = build_handle(nodes, pods, nss, owners)
    pl = PodTopologySpread.new(rng.choice([None, {"defaultingType": "List"}]), h)
    for k in range(12):
        pod = PodInfo(rand_incoming(rng, k))
        infos = h.snapshot.node_infos
        st = CycleState()
        r = pl.pre_filter(st, pod, infos)
        want = ref_filter(pl, pod)
        assert (isinstance(r, Status) and r.code == Code.SKIP) == (want is None)
        if want is not None:
            assert [pl.filter(st, pod, ni) for ni in infos] == want
            mask = pl.filter_batch(st, pod, h.snapshot, np.arange(len(infos)))
            assert mask is not None and mask.tolist() == [w is None for w in want]
        sub = sorted(rng.sample(range(len(infos)), rng.randint(1, len(infos))))
        cand = [infos[i] for i in sub]
        st2 = CycleState()
        r2 = pl.pre_score(st2, pod, cand)
        want_s = ref_score(pl, pod, cand)
        assert (isinstance(r2, Status) and r2.code == Code.SKIP) == (want_s is None)
        if want_s is not None:
            per = np.array([pl.score(st2, pod, ni) for ni in cand], dtype=np.int64)
            batch = pl.score_batch(st2, pod, h.snapshot, np.array(sub, dtype=np.int64))
            assert batch is not None and batch.tolist() == per.tolist()
            pl.normalize_score(st2, pod, batch)
            assert batch.tolist() == want_s
        raw_pod = dict(pod.raw)
        raw_pod["spec"] = {**raw_pod["spec"], "nodeName": infos[rng.randrange(len(infos))].name}
        raw_pod["metadata"] = {**raw_pod["metadata"], "uid": f"bound-{seed}-{k}"}
        add_pod_to_snapshot(h, raw_pod)


def test_add_remove_pod_matches_recompute() -> None:
    """PreFilterExtensions: RemovePod then AddPod of an existing pod keeps the filter exact."""
    rng = random.Random(3)
    checked = 0
    for _ in range(30):
        nodes, pods, nss = rand_cluster(rng, 8, 40, affinity_p=0.0)
        h = build_handle(nodes, pods, nss)
        pl = PodTopologySpread.new({"defaultingType": "List"}, h)
        pod = PodInfo(rand_incoming(rng, 0))
        st = CycleState()
        if isinstance(pl.pre_filter(st, pod, h.snapshot.node_infos), Status):
            continue
        node = next(ni for ni in h.snapshot.node_infos if ni.pods)
        victim = node.pods[0]
        pl.remove_pod(st, pod, victim, node)
        ref_h = build_handle(nodes, [p for p in pods if p["metadata"]["name"] != victim.name], nss)
        ref_pl = PodTopologySpread.new({"defaultingType": "List"}, ref_h)
        want = ref_filter(ref_pl, pod)
        assert want is not None
        # Removing can lower a minimum that only a full recount sees; upstream has the same
        # two-path approximation, so compare where the paths stayed exact.
        got = [pl.filter(st, pod, ni) for ni in ref_h.snapshot.node_infos]
        checked += got == want
        pl.add_pod(st, pod, victim, node)
        assert [pl.filter(st, pod, ni) for ni in h.snapshot.node_infos] == ref_filter(pl, pod)
    assert checked > 0


# --- filtering_test.go TestSingleConstraint / TestMultipleConstraints, transcribed (v1.36.3) --
S, U, UU = "S", "U", "UU"
UNSCHED_TAINT = [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]


def zn(name: str, zone: str | None = None, taints: bool = False, **labels: str) -> dict[str, Any]:
    """st.MakeNode() with labels zone (if given) and node=name, plus extras; no hostname label."""
    lbl: dict[str, str] = {}
    if zone is not None:
        lbl["zone"] = zone
    lbl["node"] = name
    lbl.update(labels)
    n = hnode(name, **lbl)
    if taints:
        n["spec"] = {"taints": UNSCHED_TAINT}
    return n


ZONE4 = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
FOO_NODES4 = [zn("node-a", foo=""), zn("node-b", foo=""), zn("node-x", foo=""), zn("node-y")]
P_2103 = [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b"),
          fpod("p-y1", "node-y"), fpod("p-y2", "node-y"), fpod("p-y3", "node-y")]
P_AB_Y = [fpod("p-b1", "node-a"), fpod("p-b2", "node-b"), fpod("p-y1", "node-y")]
NODE_AFF = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}]}}}
NODE_NOT_B = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b"]}]}]}}}


def sp(max_skew: int, key: str, sel: dict[str, Any] | None = FOO, **kw: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", **kw}
    if sel is not None:
        c["labelSelector"] = sel
    return c


def ppod(labels: dict[str, str], *constraints: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return make_pod("p", labels=labels, spread=list(constraints), **kw)


FOO_L = {"foo": ""}
FOO_BAR_L = {"foo": "", "bar": ""}
UPSTREAM_FILTER = [
    ("no existing pods", ppod(FOO_L, sp(1, ZONE)), ZONE4, [], [S, S, S, S]),
    ("no existing pods, incoming pod doesn't match itself", ppod(FOO_L, sp(1, ZONE, BAR)), ZONE4, [], [S, S, S, S]),
    ("existing pods in a different namespace do not count", ppod(FOO_L, sp(1, ZONE)), ZONE4,
     [fpod("p-a1", "node-a", namespace="ns1"), fpod("p-b1", "node-a", namespace="ns2"), fpod("p-x1", "node-x"),
      fpod("p-y1", "node-y")], [S, S, U, U]),
    ("existing pods do not match null selector", ppod(FOO_L, sp(1, ZONE, None)), ZONE4,
     [fpod("p-x1", "node-x"), fpod("p-y1", "node-y")], [S, S, S, S]),
    ("pods spread across zones as 3/3, all nodes fit", ppod(FOO_L, sp(1, ZONE)), ZONE4, P_2103, [S, S, S, S]),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b", ppod(FOO_L, sp(1, ZONE)),
     [zn("node-a", "zone1"), zn("node-b", zon="zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")],
     [fpod("p-a1", "node-a"), fpod("p-b1", "node-b"), fpod("p-x1", "node-x"), fpod("p-y1", "node-y")],
     [S, UU, U, U]),
    ("pod cannot be scheduled as all nodes don't have label 'rack'", ppod(FOO_L, sp(1, "rack")),
     [zn("node-a", "zone1"), zn("node-x", "zone2")], [], [UU, UU]),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", ppod(FOO_L, sp(1, NODE)), ZONE4, P_2103, [U, U, S, U]),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit", ppod(FOO_L, sp(2, NODE)), ZONE4,
     P_2103, [U, S, S, U]),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself", ppod({"bar": ""}, sp(1, NODE)), ZONE4,
     P_2103, [U, S, S, U]),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     ppod(FOO_L, sp(1, NODE), affinity=NODE_AFF), ZONE4, P_2103, [S, S, S, U]),
    ("terminating Pods should be excluded", ppod(FOO_L, sp(1, NODE)), [zn("node-a"), zn("node-b")],
     [fpod("p-a", "node-a", deleting=True), fpod("p-b", "node-b")], [S, U]),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     ppod(FOO_L, sp(1, ZONE), affinity=NODE_NOT_B), ZONE4,
     [fpod("p-b1", "node-b"), fpod("p-b2", "node-b"), fpod("p-y1", "node-y")], [S, S, U, U]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node "
     "fits", ppod(FOO_L, sp(2, NODE, minDomains=4)), [zn("node-a"), zn("node-b"), zn("node-c")],
     [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b"), fpod("p-b2", "node-b"),
      fpod("p-c1", "node-c")], [U, U, S]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes "
     "fit", ppod(FOO_L, sp(2, NODE, minDomains=2)), [zn("node-a"), zn("node-b"), zn("node-c")],
     [fpod("p-a1", "node-a"), fpod("p-a2", "node-a"), fpod("p-b1", "node-b"), fpod("p-b2", "node-b"),
      fpod("p-c1", "node-c")], [S, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth "
     "nodes fit", ppod(FOO_L, sp(2, ZONE, minDomains=3)), ZONE4, P_AB_Y, [U, U, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     ppod(FOO_L, sp(2, ZONE, minDomains=1)), ZONE4, P_AB_Y, [S, S, S, S]),
    ("NodeAffinityPolicy honored with labelSelectors", ppod(FOO_L, sp(1, NODE), node_selector=FOO_L), FOO_NODES4,
     P_AB_Y, [U, U, S, S]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     ppod(FOO_L, sp(1, NODE, nodeAffinityPolicy="Ignore"), node_selector=FOO_L), FOO_NODES4, P_AB_Y, [U, U, S, U]),
    ("NodeAffinityPolicy honored with nodeAffinity", ppod(FOO_L, sp(1, NODE), affinity=FOO_AFFINITY), FOO_NODES4,
     P_AB_Y, [U, U, S, S]),
    ("NodeAffinityPolicy ignored with labelSelectors (nodeAffinity)",
     ppod(FOO_L, sp(1, NODE, nodeAffinityPolicy="Ignore"), affinity=FOO_AFFINITY), FOO_NODES4, P_AB_Y,
     [U, U, S, U]),
    ("NodeTaintsPolicy honored", ppod(FOO_L, sp(1, NODE, nodeTaintsPolicy="Honor")),
     [zn("node-a", foo=""), zn("node-b", foo=""), zn("node-x", foo=""), zn("node-y", taints=True)], P_AB_Y,
     [U, U, S, S]),
    ("NodeTaintsPolicy ignored", ppod(FOO_L, sp(1, NODE)),
     [zn("node-a", foo=""), zn("node-b", foo=""), zn("node-x", foo=""), zn("node-y", taints=True)], P_AB_Y,
     [U, U, S, U]),
    # TestMultipleConstraints
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]", ppod(FOO_L, sp(1, ZONE), sp(1, NODE)), ZONE4,
     P_2103, [U, U, S, U]),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]", ppod(FOO_L, sp(1, ZONE), sp(1, NODE)), ZONE4,
     [*P_2103, fpod("p-y4", "node-y")], [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     ppod(FOO_BAR_L, sp(1, ZONE), sp(1, NODE, BAR)), ZONE4,
     [fpod("p-a1", "node-a"), fpod("p-y1", "node-y", {"bar": ""})], [U, U, S, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     ppod(FOO_BAR_L, sp(1, ZONE), sp(1, NODE, BAR)), ZONE4,
     [fpod("p-a1", "node-a"), fpod("p-x1", "node-x", {"bar": ""}), fpod("p-y1", "node-y", {"bar": ""})],
     [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     ppod(FOO_BAR_L, sp(1, ZONE), sp(1, NODE, BAR)), ZONE4,
     [fpod("p-a1", "node-a"), fpod("p-a2", "node-a", FOO_BAR_L), fpod("p-y1", "node-y"),
      fpod("p-y2", "node-y", FOO_BAR_L), fpod("p-y3", "node-y")], [U, S, U, U]),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     ppod({"bar": ""}, sp(1, ZONE), sp(1, NODE, BAR)), ZONE4,
     [fpod("p-a1", "node-a"), fpod("p-x1", "node-x", {"bar": ""}), fpod("p-y1", "node-y", {"bar": ""})],
     [S, S, U, U]),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     ppod(FOO_L, sp(1, ZONE), sp(1, NODE)),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), hnode("node-x", zone="zone2"), zn("node-y", "zone2")],
     [fpod("p-a1", "node-a"), fpod("p-y3", "node-y")], [U, S, UU, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     ppod(FOO_L, sp(1, ZONE), sp(1, NODE, nodeAffinityPolicy="Ignore"), node_selector=FOO_L),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo="")],
     [fpod("p-a1", "node-a"), fpod("p-b1", "node-b"), fpod("p-y1", "node-y")], [U, U, S]),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     ppod(FOO_L, sp(1, ZONE, nodeTaintsPolicy="Honor"), sp(1, NODE)),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=True)],
     [fpod("p-a1", "node-a"), fpod("p-b1", "node-b"), fpod("p-y1", "node-y")], [U, U, S, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     ppod(FOO_L, sp(1, ZONE), sp(1, NODE), node_selector=FOO_L),
     [zn("node-a", "zone1", foo=""), zn("node-x", "zone2", foo=""), zn("node-y", "zone2", taints=True, foo="")],
     [fpod("p-a1", "node-a"), fpod("p-b1", "node-b"), fpod("p-y1", "node-y")], [U, S, U]),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     ppod(FOO_L, sp(1, ZONE, nodeTaintsPolicy="Honor"), sp(1, NODE, nodeAffinityPolicy="Ignore"),
          node_selector=FOO_L),
     [zn("node-a", "zone1", foo=""), zn("node-x", "zone2", foo=""), zn("node-y", "zone2", taints=True, foo="")],
     [fpod("p-a1", "node-a"), fpod("p-b1", "node-b"), fpod("p-y1", "node-y")], [U, S, U]),
    ("two Constraints on zone, spreads = [3/3, 2/1]", ppod(FOO_BAR_L, sp(1, ZONE, BAR), sp(1, ZONE)), ZONE4,
     [fpod("p-a1", "node-a", FOO_BAR_L), fpod("p-a2", "node-a"), fpod("p-b1", "node-b", FOO_BAR_L),
      fpod("p-y1", "node-y"), fpod("p-y2", "node-y", FOO_BAR_L), fpod("p-y3", "node-y")], [U, U, S, S]),
    ("two Constraints on zone, spreads = [3/4, 2/1]", ppod(FOO_BAR_L, sp(1, ZONE, BAR), sp(1, ZONE)), ZONE4,
     [fpod("p-a1", "node-a", FOO_BAR_L), fpod("p-a2", "node-a"), fpod("p-b1", "node-b", FOO_BAR_L),
      fpod("p-y1", "node-y"), fpod("p-y2", "node-y", FOO_BAR_L), fpod("p-y3", "node-y"), fpod("p-y4", "node-y")],
     [U, U, U, U]),
]
_CODES = {S: None, U: Code.UNSCHEDULABLE, UU: Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"), [c[1:] for c in UPSTREAM_FILTER], ids=[c[0] for c in UPSTREAM_FILTER]
)
def test_constraints_upstream(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: list[str]
) -> None:
    """filtering_test.go TestSingleConstraint and TestMultipleConstraints (status codes, in node
    order; gates at their v1.36.3 defaults)."""
    got = run_filter(pod, nodes, pods)
    codes = [None if st is None else st.code for st in got.values()]
    assert codes == [_CODES[w] for w in want]


# --- plugin_test.go Test_isSchedulableAfterNodeChange / Test_isSchedulableAfterPodChange --------
def _hint_plugin() -> PodTopologySpread:
    return PodTopologySpread.new({"defaultingType": "List"}, build_handle([]))


def _n(**labels: str) -> NodeInfo:
    return NodeInfo(hnode("node-a", **labels))


def _tn(key: str, **labels: str) -> NodeInfo:
    w = MakeNode().name("node-a").no_hostname_label().labels(labels)
    return w.taints([{"key": key, "value": "bbb", "effect": "NoSchedule"}]).info()


ZONE_POD = make_pod("p", spread=[sp(1, ZONE)])
ZONE_NODE_POD = make_pod("p", spread=[sp(1, ZONE), sp(1, NODE)])
H = QueueingHint


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("node updates label which matches topologyKey", ZONE_POD, _n(zone="zone1"), _n(zone="zone2"), H.QUEUE),
        ("node that doesn't match topologySpreadConstraints updates non-related label", ZONE_POD, _n(foo="bar1"),
         _n(foo="bar2"), H.QUEUE_SKIP),
        ("node that match topologySpreadConstraints adds non-related label", ZONE_NODE_POD,
         _n(zone="zone1", node="node1", foo="bar"), _n(zone="zone1", node="node1"), H.QUEUE_SKIP),
        ("create node with non-related labels", ZONE_POD, None, _n(foo="bar"), H.QUEUE_SKIP),
        ("create node with related labels", ZONE_POD, None, _n(zone="zone1"), H.QUEUE),
        ("delete node with non-related labels", ZONE_POD, _n(foo="bar"), None, H.QUEUE_SKIP),
        ("delete node with related labels", ZONE_POD, _n(zone="zone1"), None, H.QUEUE),
        ("add node with related labels that only match one of topologySpreadConstraints", ZONE_NODE_POD, None,
         _n(zone="zone1"), H.QUEUE_SKIP),
        ("add node with related labels that match all topologySpreadConstraints", ZONE_NODE_POD, None,
         _n(zone="zone1", node="node1"), H.QUEUE),
        ("update node with related labels that only match one of topologySpreadConstraints", ZONE_NODE_POD,
         _n(zone="zone1"), _n(zone="zone1"), H.QUEUE_SKIP),
        ("update node with related labels that match all topologySpreadConstraints", ZONE_NODE_POD,
         _n(zone="zone1", node="node1"), _n(zone="zone1", node="node2"), H.QUEUE),
        ("update node with different taints that match all topologySpreadConstraints", ZONE_NODE_POD,
         _tn("aaa", zone="zone1", node="node1"), _tn("ccc", zone="zone1", node="node1"), H.QUEUE),
        ("update node with different taints that only match one of topologySpreadConstraints", ZONE_NODE_POD,
         _tn("aaa", node="node1"), _tn("ccc", node="node1"), H.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_node_change(
    name: str, pod: dict[str, Any], old: NodeInfo | None, new: NodeInfo | None, want: QueueingHint
) -> None:
    """plugin_test.go Test_isSchedulableAfterNodeChange."""
    ev = _hint_plugin().events_to_register()[1]
    assert ev.hint is not None
    assert ev.hint(PodInfo(pod), old, new) == want


def _p(uid: str, labels: dict[str, str] | None = None, node: str = "", nominated: str = "", ns: str = "default",
       tolerations: list[dict[str, str]] | None = None) -> PodInfo:
    w = MakePod().name(uid).namespace(ns).uid(uid).labels(labels or {}).node(node).toleration(*(tolerations or []))
    return (w.nominated_node_name(nominated) if nominated else w).info()


FOO_POD = make_pod("p", uid="p", labels={"foo": ""}, spread=[sp(1, ZONE)])
FOO_BAR_POD = make_pod("p", uid="p", labels={"foo": ""}, spread=[sp(1, ZONE), sp(1, NODE, BAR)])
HONOR_POD = make_pod(
    "p", uid="p", labels={"foo": ""}, spread=[sp(1, ZONE, nodeTaintsPolicy="Honor"), sp(1, NODE, BAR)]
)
IGNORE_POD = make_pod(
    "p", uid="p", labels={"foo": ""}, spread=[sp(1, ZONE, nodeTaintsPolicy="Ignore"), sp(1, NODE, BAR)]
)
UNSCHED_TOL = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
F = "fake-node"


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("add pod with labels match topologySpreadConstraints selector", FOO_POD, None, _p("p2", FOO_L, F), H.QUEUE),
        ("add un-scheduled pod", FOO_POD, None, _p("p2", FOO_L), H.QUEUE_SKIP),
        ("update un-scheduled pod", FOO_POD, _p("p2", {"bar": ""}), _p("p2", FOO_L), H.QUEUE_SKIP),
        ("delete un-scheduled pod", FOO_POD, _p("p2", FOO_L), None, H.QUEUE_SKIP),
        ("add pod with different namespace", FOO_POD, None, _p("p2", FOO_L, F, ns="fake-namespace"), H.QUEUE_SKIP),
        ("add pod with labels don't match topologySpreadConstraints selector", FOO_POD, None,
         _p("p2", {"bar": ""}, F), H.QUEUE_SKIP),
        ("delete pod with labels that match topologySpreadConstraints selector", FOO_POD, _p("p2", FOO_L, F), None,
         H.QUEUE),
        ("delete nominated pod with labels that don't match topologySpreadConstraints selector", FOO_POD,
         _p("p2", {"bar": ""}, nominated=F), None, H.QUEUE_SKIP),
        ("delete nominated pod with labels that match topologySpreadConstraints selector", FOO_POD,
         _p("p2", FOO_L, nominated=F), None, H.QUEUE),
        ("delete pod with labels that don't match topologySpreadConstraints selector", FOO_POD,
         _p("p2", {"bar": ""}, F), None, H.QUEUE_SKIP),
        ("update pod's non-related label", FOO_POD, _p("p2", {"foo": "", "bar": "bar1"}, F),
         _p("p2", {"foo": "", "bar": "bar2"}, F), H.QUEUE_SKIP),
        ("add pod's label that matches topologySpreadConstraints selector", FOO_POD, _p("p2", None, F),
         _p("p2", FOO_L, F), H.QUEUE),
        ("delete pod label that matches topologySpreadConstraints selector", FOO_POD, _p("p2", FOO_L, F),
         _p("p2", None, F), H.QUEUE),
        ("change pod's label that matches topologySpreadConstraints selector", FOO_POD, _p("p2", {"foo": "foo1"}, F),
         _p("p2", {"foo": "foo2"}, F), H.QUEUE_SKIP),
        ("change pod's label that doesn't match topologySpreadConstraints selector", FOO_POD,
         _p("p2", {"foo": "", "bar": "bar1"}, F), _p("p2", {"foo": "", "bar": "bar2"}, F), H.QUEUE_SKIP),
        ("add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
         FOO_BAR_POD, _p("p2", FOO_L, F), _p("p2", {"foo": "", "bar": "bar2"}, F), H.QUEUE),
        ("change pod's label that doesn't match topologySpreadConstraints selector with multi "
         "topologySpreadConstraints", FOO_BAR_POD, _p("p2", FOO_L, F), _p("p2", {"foo": "", "baz": ""}, F),
         H.QUEUE_SKIP),
        ("change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
         FOO_BAR_POD, _p("p2", {"foo": "", "bar": ""}, F), _p("p2", {"foo": "", "bar": "bar2"}, F), H.QUEUE_SKIP),
        ("the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new "
         "toleration", HONOR_POD, _p("p", FOO_L), _p("p", FOO_L, tolerations=UNSCHED_TOL), H.QUEUE),
        ("the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new "
         "toleration", IGNORE_POD, _p("p", FOO_L), _p("p", FOO_L, tolerations=UNSCHED_TOL), H.QUEUE_SKIP),
        ("the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the "
         "constraint", IGNORE_POD, _p("p"), _p("p", FOO_L), H.QUEUE),
        ("the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label", IGNORE_POD,
         _p("p"), _p("p", {"unrelated": ""}), H.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_pod_change(
    name: str, pod: dict[str, Any], old: PodInfo | None, new: PodInfo | None, want: QueueingHint
) -> None:
    """plugin_test.go Test_isSchedulableAfterPodChange."""
    ev = _hint_plugin().events_to_register()[0]
    assert ev.hint is not None
    assert ev.hint(PodInfo(pod), old, new) == want


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "args", "owners"),
    [
        (
            "the pod doesn't have soft topology spread Constraints",
            make_pod("p"),
            [hnode("node-a", **{HN: "node-a"}), hnode("node-b", **{HN: "node-b"})],
            {"defaultingType": "List"},
            [],
        ),
        (
            "default constraints and a replicaset that doesn't match",
            make_pod("p", labels={"foo": "bar", "baz": "sup"}, owner=("ReplicaSet", "rs2")),
            [hnode("node-a", planet="mars")],
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}],
            },
            [
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": "rs1", "namespace": "default"},
                    "spec": {"selector": {"matchExpressions": [{"key": "tar", "operator": "Exists"}]}},
                }
            ],
        ),
    ],
)
def test_pre_score_skip(
    name: str, pod: dict[str, Any], nodes: list[dict[str, Any]], args: dict[str, Any], owners: list[dict[str, Any]]
) -> None:
    """scoring_test.go TestPreScoreSkip."""
    h = build_handle(nodes, owners=owners)
    pl = PodTopologySpread.new(args, h)
    r = pl.pre_score(CycleState(), PodInfo(pod), h.snapshot.node_infos)
    assert isinstance(r, Status) and r.code == Code.SKIP
