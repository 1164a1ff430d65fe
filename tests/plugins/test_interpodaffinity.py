"""InterPodAffinity: cases transcribed from upstream interpodaffinity/filtering_test.go and
scoring_test.go (case names in the ids), plus batch/per-node forms against a straightforward
reference of upstream's algorithm on random clusters."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.model.affinity import AffinityTerm
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.testing.builders import make_namespace, make_node, make_pod
from scheduler.testing.framework import add_pod_to_snapshot, build_handle
from scheduler.testing.topology import rand_cluster, rand_incoming

AFF = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(sel: dict[str, Any], key: str, **kw: Any) -> dict[str, Any]:
    return {"labelSelector": sel, "topologyKey": key, **kw}


def req_aff(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def req_anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def pref(kind: str, *wterms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "podAffinityTerm": t} for w, t in wterms]
        }
    }


def sel_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def run_filter(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], nss: list[dict[str, Any]] = ()
) -> dict[str, Status | None]:  # type: ignore[assignment]
    h = build_handle(nodes, pods, list(nss))
    pl = InterPodAffinity.new(None, h)
    st = CycleState()
    pi = PodInfo(pod)
    r = pl.pre_filter(st, pi, h.snapshot.node_infos)
    out: dict[str, Status | None] = {}
    if isinstance(r, Status) and r.code == Code.SKIP:
        return {ni.name: None for ni in h.snapshot.node_infos}
    for ni in h.snapshot.node_infos:
        out[ni.name] = pl.filter(st, pi, ni)
    mask = pl.filter_batch(st, pi, h.snapshot, np.arange(len(h.snapshot.node_infos)))
    assert mask is not None
    assert mask.tolist() == [out[ni.name] is None for ni in h.snapshot.node_infos]
    return out


N1 = make_node("node1", labels={"region": "r1", "zone": "z11"})

# --- filtering_test.go TestRequiredAffinitySingleNode -----------------------------------------
SINGLE_NODE_CASES = [
    pytest.param(
        make_pod("p", labels={"service": "securityscan"}),
        [],
        None,
        id="A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
    ),
    pytest.param(
        make_pod("p", affinity=req_aff(term(sel_in("service", "securityscan", "value2"), "region"))),
        [make_pod("e", labels={"service": "securityscan"}, node_name="node1")],
        None,
        id="satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",  # noqa: E501
    ),
    pytest.param(
        make_pod(
            "p",
            affinity=req_aff(
                term(
                    {
                        "matchExpressions": [
                            {"key": "service", "operator": "NotIn", "values": ["securityscan3", "value3"]}
                        ]
                    },
                    "region",
                )
            ),
        ),
        [make_pod("e", labels={"service": "securityscan"}, node_name="node1")],
        None,
        id="satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",  # noqa: E501
    ),
    pytest.param(
        make_pod(
            "p",
            affinity=req_aff(term(sel_in("service", "securityscan", "value2"), "region", namespaces=["DiffNameSpace"])),
        ),
        [make_pod("e", "ns", labels={"service": "securityscan"}, node_name="node1")],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF),
        id="Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
    ),
    pytest.param(
        make_pod("p", affinity=req_aff(term(sel_in("service", "antivirusscan", "value2"), "region"))),
        [make_pod("e", labels={"service": "securityscan"}, node_name="node1")],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF),
        id="Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity={
                **req_aff(term(sel_in("service", "securityscan", "value2"), "zone")),
                **req_anti(term(sel_in("service", "antivirusscan", "value2"), "node")),
            },
        ),
        [make_pod("e", labels={"service": "securityscan"}, node_name="node1")],
        None,
        id="satisfies the PodAffinity and PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity={
                **req_aff(term(sel_in("service", "securityscan", "value2"), "region")),
                **req_anti(term(sel_in("service", "securityscan", "value2"), "zone")),
            },
        ),
        [make_pod("e", labels={"service": "securityscan"}, node_name="node1")],
        Status(Code.UNSCHEDULABLE, ANTI),
        id="satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        make_pod("p", labels={"foo": "bar", "service": "securityscan"}),
        [
            make_pod(
                "e",
                labels={"service": "securityscan"},
                node_name="node1",
                affinity=req_anti(term(sel_in("foo", "bar"), "zone")),
            )
        ],
        Status(Code.UNSCHEDULABLE, EXISTING),
        id="satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",  # noqa: E501
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity=req_aff(term(sel_in("service", "securityscan"), "region")),
        ),
        [],
        None,
        id="verify that PodAffinity is honored for pods with no existing pods and matching their own terms (the first pod of a series)",  # noqa: E501
    ),
    pytest.param(
        make_pod("p", labels={"foo": "bar"}, affinity=req_aff(term(sel_in("service", "securityscan"), "region"))),
        [],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF),
        id="pod matches its own Label in PodAffinity and that matches the existing pod Labels (negated: does not match itself)",  # noqa: E501
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"abc": "", "xyz": ""},
            affinity=req_aff(
                term({"matchExpressions": [{"key": "abc", "operator": "Exists"}]}, "zone"),
                term({"matchExpressions": [{"key": "def", "operator": "Exists"}]}, "zone"),
            ),
        ),
        [make_pod("e", labels={"abc": ""}, node_name="node1"), make_pod("e2", labels={"def": ""}, node_name="node1")],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF),
        id="affinity should fail since no single pod matches all terms, and the incoming pod does not match its own terms either",  # noqa: E501
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"abc": "", "def": ""},
            affinity=req_aff(
                term({"matchExpressions": [{"key": "abc", "operator": "Exists"}]}, "zone"),
                term({"matchExpressions": [{"key": "def", "operator": "Exists"}]}, "zone"),
            ),
        ),
        [make_pod("e", labels={"abc": ""}, node_name="node1"), make_pod("e2", labels={"def": ""}, node_name="node1")],
        None,
        id="affinity should succeed when no existing pod matches all terms but the incoming pod matches its own terms",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "bar"},
            affinity=req_aff(term(sel_in("service", "securityscan"), "region", namespaceSelector={})),
        ),
        [make_pod("e", "subteam/team-a", labels={"service": "securityscan"}, node_name="node1")],
        None,
        id="affinity with empty namespaceSelector matches existing pods in every namespace",
    ),
    pytest.param(
        make_pod(
            "p",
            "subteam/team-a",
            labels={"foo": "bar"},
            affinity=req_anti(
                term(sel_in("service", "securityscan"), "zone", namespaceSelector={"matchLabels": {"team": "team-a"}})
            ),
        ),
        [make_pod("e", "subteam/team-a", labels={"service": "securityscan"}, node_name="node1")],
        Status(Code.UNSCHEDULABLE, ANTI),
        id="PodAntiAffinity with namespaceSelector matches the namespace of the existing pod",
    ),
    pytest.param(
        make_pod(
            "p",
            labels={"foo": "bar"},
            affinity=req_anti(
                term(sel_in("service", "securityscan"), "zone", namespaceSelector={"matchLabels": {"team": "team-b"}})
            ),
        ),
        [make_pod("e", "subteam/team-a", labels={"service": "securityscan"}, node_name="node1")],
        None,
        id="PodAntiAffinity with namespaceSelector not matching the namespace of the existing pod",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want"), SINGLE_NODE_CASES)
def test_required_affinity_single_node(pod: dict[str, Any], pods: list[dict[str, Any]], want: Status | None) -> None:
    nss = [make_namespace("subteam/team-a", {"team": "team-a"}), make_namespace("default")]
    got = run_filter(pod, [N1], pods, nss)
    assert got["node1"] == want


# --- filtering_test.go TestRequiredAffinityMultipleNodes -----------------------------------
def test_multiple_nodes_affinity_in_same_region() -> None:
    """'A pod can be scheduled onto all the nodes that have the same topology key & label value
    with one of them has an existing pod that matches the affinity rules'."""
    nodes = [
        make_node("nodeA", labels={"region": "r1", "zone": "z11", "hostname": "nodeA"}),
        make_node("nodeB", labels={"region": "r1", "zone": "z12", "hostname": "nodeB"}),
        make_node("nodeC", labels={"region": "r2", "zone": "z21", "hostname": "nodeC"}),
    ]
    pod = make_pod("p", affinity=req_aff(term(sel_in("foo", "bar"), "region")))
    got = run_filter(pod, nodes, [make_pod("e", labels={"foo": "bar"}, node_name="nodeA")])
    assert got == {"nodeA": None, "nodeB": None, "nodeC": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF)}


def test_multiple_nodes_anti_affinity_symmetry_by_zone() -> None:
    """'NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that
    matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but
    can be scheduled onto nodeC' (anti-affinity of the existing pod)."""
    nodes = [
        make_node("nodeA", labels={"zone": "az1", "hostname": "h1"}),
        make_node("nodeB", labels={"zone": "az1", "hostname": "h2"}),
        make_node("nodeC", labels={"zone": "az2", "hostname": "h3"}),
    ]
    existing = make_pod(
        "e", labels={"foo": "123"}, node_name="nodeA", affinity=req_anti(term(sel_in("foo", "bar"), "zone"))
    )
    got = run_filter(make_pod("p", labels={"foo": "bar"}), nodes, [existing])
    u = Status(Code.UNSCHEDULABLE, EXISTING)
    assert got == {"nodeA": u, "nodeB": u, "nodeC": None}


def test_multiple_nodes_missing_topology_key() -> None:
    """'Test the case that the pod is placed on a node without the topologyKey label' for the
    incoming pod's affinity: nodes without the label fail with the affinity reason."""
    nodes = [make_node("nodeA", labels={"region": "r1"}), make_node("nodeB", labels={})]
    pod = make_pod("p", labels={"foo": "bar"}, affinity=req_aff(term(sel_in("foo", "bar"), "region")))
    got = run_filter(pod, nodes, [])
    assert got == {"nodeA": None, "nodeB": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF)}


def test_prefilter_skip() -> None:
    """filtering_test.go TestPreFilterDisabled/Skip: no terms anywhere -> PreFilter returns Skip."""
    h = build_handle([N1], [make_pod("e", labels={"a": "b"}, node_name="node1")])
    pl = InterPodAffinity.new(None, h)
    r = pl.pre_filter(CycleState(), PodInfo(make_pod("p")), h.snapshot.node_infos)
    assert isinstance(r, Status) and r.code == Code.SKIP


def test_args_validation() -> None:
    """validation_pluginargs.go: hardPodAffinityWeight in [0, 100]."""
    h = build_handle([N1])
    assert InterPodAffinity.new(None, h).args.hard_pod_affinity_weight == 1
    with pytest.raises(ValueError, match=r"^hardPodAffinityWeight: Invalid value: 110: not in valid range \[0, 100\]$"):
        InterPodAffinity.new({"hardPodAffinityWeight": 110}, h)
    with pytest.raises(ValueError, match="Invalid value: -1"):
        InterPodAffinity.new({"hardPodAffinityWeight": -1}, h)


# --- scoring_test.go TestPreferredAffinity ------------------------------------------------
SC_NODES = [
    make_node("node1", labels={"region": "China", "az": "az1"}),
    make_node("node2", labels={"region": "India", "az": "az2"}),
    make_node("node3", labels={"region": "China", "az": "az1"}),
    make_node("node4", labels={"az": "az1"}),
]
SEC = {"security": "S1"}
SEC2 = {"security": "S2"}
AFF_SEC1_REGION = pref("podAffinity", (5, term(sel_in("security", "S1"), "region")))
ANTI_SEC1_REGION = pref("podAntiAffinity", (5, term(sel_in("security", "S1"), "region")))


def run_score(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], args: dict[str, Any] | None = None
) -> list[int] | None:
    h = build_handle(nodes, pods)
    pl = InterPodAffinity.new(args, h)
    st = CycleState()
    pi = PodInfo(pod)
    infos = h.snapshot.node_infos
    r = pl.pre_score(st, pi, infos)
    if isinstance(r, Status):
        assert r.code == Code.SKIP
        return None
    raw = np.array([pl.score(st, pi, ni) for ni in infos], dtype=np.int64)
    batch = pl.score_batch(st, pi, h.snapshot, np.arange(len(infos)))
    assert batch is not None and batch.tolist() == raw.tolist()
    pl.normalize_score(st, pi, raw)
    return raw.tolist()


SCORE_CASES = [
    pytest.param(make_pod("p", labels=SEC), [], None, id="all nodes have same score: no pods, no affinity (Skip)"),
    pytest.param(
        make_pod("p", labels=SEC, affinity=AFF_SEC1_REGION),
        [make_pod("e1", labels=SEC2, node_name="node1"), make_pod("e2", labels=SEC2, node_name="node2")],
        None,
        id="Affinity: pod that matches topology key & pods in nodes will get high score comparing to others (no matching pod: Skip)",  # noqa: E501
    ),
    pytest.param(
        make_pod("p", labels=SEC, affinity=AFF_SEC1_REGION),
        [make_pod("e1", labels=SEC, node_name="node1")],
        [100, 0, 100, 0],
        id="Affinity: pod that matches topology key & pods in nodes will get high score comparing to others",
    ),
    pytest.param(
        make_pod("p", labels=SEC, affinity=ANTI_SEC1_REGION),
        [make_pod("e1", labels=SEC, node_name="node1")],
        [0, 100, 0, 100],
        id="Anti Affinity: pod that does not match existing pods in node will get high score",
    ),
    pytest.param(
        make_pod("p", labels=SEC2),
        [
            make_pod(
                "e1",
                labels=SEC,
                node_name="node1",
                affinity=pref("podAffinity", (5, term(sel_in("security", "S2"), "region"))),
            )
        ],
        [100, 0, 100, 0],
        id="Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",  # noqa: E501
    ),
    pytest.param(
        make_pod("p", labels=SEC2),
        [make_pod("e1", labels=SEC, node_name="node1", affinity=req_aff(term(sel_in("security", "S2"), "region")))],
        [100, 0, 100, 0],
        id="Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
    ),
    pytest.param(
        make_pod("p", labels=SEC2),
        [
            make_pod(
                "e1",
                labels=SEC,
                node_name="node1",
                affinity=pref("podAntiAffinity", (5, term(sel_in("security", "S2"), "region"))),
            )
        ],
        [0, 100, 0, 100],
        id="Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want"), SCORE_CASES)
def test_preferred_affinity(pod: dict[str, Any], pods: list[dict[str, Any]], want: list[int] | None) -> None:
    assert run_score(pod, SC_NODES, pods) == want


def test_hard_pod_affinity_weight_zero() -> None:
    """scoring_test.go TestPreferredAffinityWithHardPodAffinitySymmetricWeight: weight 0 -> Skip."""
    pods = [make_pod("e1", labels=SEC, node_name="node1", affinity=req_aff(term(sel_in("security", "S2"), "region")))]
    assert run_score(make_pod("p", labels=SEC2), SC_NODES, pods, {"hardPodAffinityWeight": 0}) is None
    assert run_score(make_pod("p", labels=SEC2), SC_NODES, pods, {"hardPodAffinityWeight": 1}) == [100, 0, 100, 0]


def test_ignore_preferred_terms_of_existing_pods() -> None:
    """scoring_test.go 'with IgnorePreferredTermsOfExistingPods...': Skip when the pod has no preferred terms."""
    pods = [
        make_pod(
            "e1",
            labels=SEC,
            node_name="node1",
            affinity=pref("podAffinity", (5, term(sel_in("security", "S2"), "region"))),
        )
    ]
    assert run_score(make_pod("p", labels=SEC2), SC_NODES, pods, {"ignorePreferredTermsOfExistingPods": True}) is None


# --- randomized: plugin (per-node and batch) vs a literal reference -----------------------


class Ref:
    """Upstream's algorithm, literally: walks every pod of every node."""

    def __init__(self, handle: Any, pod: PodInfo, hard: int = 1, ignore_pref: bool = False) -> None:
        self.h = handle
        self.pod = pod
        self.hard = hard
        self.ignore_pref = ignore_pref
        self.ns_labels = handle.listers.namespace_labels(pod.namespace) or {}

    def merged(self, t: AffinityTerm) -> tuple[bool, frozenset[str], Any, str]:
        sel = t.namespace_selector
        nss = set(t.namespaces)
        all_ns = False
        if sel is not None:
            if not sel.requirements:
                all_ns = True
            else:
                nss |= {n.name for n in self.h.listers.namespaces.values() if sel.matches(n.labels)}
        return all_ns, frozenset(nss), t.selector, t.topology_key

    @staticmethod
    def mmatch(m: tuple[bool, frozenset[str], Any, str], p: PodInfo) -> bool:
        return (m[0] or p.namespace in m[1]) and m[2].matches(p.labels)

    def prefilter(self) -> tuple[bool, dict, dict, dict, list, list]:
        ex: dict[tuple[str, str], int] = {}
        aff: dict[tuple[str, str], int] = {}
        anti: dict[tuple[str, str], int] = {}
        at = [self.merged(t) for t in self.pod.affinity_required]
        nt = [self.merged(t) for t in self.pod.anti_affinity_required]
        for ni in self.h.snapshot.node_infos:
            for p in ni.pods:
                for t in p.anti_affinity_required:
                    if t.matches(self.pod, self.ns_labels) and t.topology_key in ni.labels:
                        k = (t.topology_key, ni.labels[t.topology_key])
                        ex[k] = ex.get(k, 0) + 1
                if at and all(self.mmatch(m, p) for m in at):
                    for m in at:
                        if m[3] in ni.labels:
                            k = (m[3], ni.labels[m[3]])
                            aff[k] = aff.get(k, 0) + 1
                for m in nt:
                    if self.mmatch(m, p) and m[3] in ni.labels:
                        k = (m[3], ni.labels[m[3]])
                        anti[k] = anti.get(k, 0) + 1
        skip = not ex and not at and not nt
        return skip, ex, aff, anti, at, nt

    def filter(self, st: tuple, ni: NodeInfo) -> Status | None:
        _, ex, aff, anti, at, nt = st
        exist = True
        for m in at:
            if m[3] not in ni.labels:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF)
            if aff.get((m[3], ni.labels[m[3]]), 0) <= 0:
                exist = False
        if not exist and not (not aff and at and all(self.mmatch(m, self.pod) for m in at)):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF)
        if anti:
            for m in nt:
                if m[3] in ni.labels and anti.get((m[3], ni.labels[m[3]]), 0) > 0:
                    return Status(Code.UNSCHEDULABLE, ANTI)
        if ex:
            for k, v in ni.labels.items():
                if ex.get((k, v), 0) > 0:
                    return Status(Code.UNSCHEDULABLE, EXISTING)
        return None

    def prescore(self) -> dict[str, dict[str, int]] | None:
        pod = self.pod
        has = bool(pod.affinity_preferred or pod.anti_affinity_preferred)
        if self.ignore_pref and not has:
            return None
        topo: dict[str, dict[str, int]] = {}

        def proc(matched: bool, key: str, ni: NodeInfo, w: int) -> None:
            if matched and key in ni.labels:
                topo.setdefault(key, {})
                topo[key][ni.labels[key]] = topo[key].get(ni.labels[key], 0) + w

        pa = [(w.weight, self.merged(w.term)) for w in pod.affinity_preferred]
        pn = [(w.weight, self.merged(w.term)) for w in pod.anti_affinity_preferred]
        for ni in self.h.snapshot.node_infos:
            for p in ni.pods:
                for w, m in pa:
                    proc(self.mmatch(m, p), m[3], ni, w)
                for w, m in pn:
                    proc(self.mmatch(m, p), m[3], ni, -w)
                if self.hard > 0:
                    for t in p.affinity_required:
                        proc(t.matches(pod, self.ns_labels), t.topology_key, ni, self.hard)
                for wt in p.affinity_preferred:
                    proc(wt.term.matches(pod, self.ns_labels), wt.term.topology_key, ni, wt.weight)
                for wt in p.anti_affinity_preferred:
                    proc(wt.term.matches(pod, self.ns_labels), wt.term.topology_key, ni, -wt.weight)
        return topo or None

    @staticmethod
    def score(topo: dict[str, dict[str, int]], ni: NodeInfo) -> int:
        return sum(vals.get(ni.labels[k], 0) for k, vals in topo.items() if k in ni.labels)

    @staticmethod
    def normalize(scores: list[int]) -> list[int]:
        lo, hi = min(scores), max(scores)
        if hi - lo <= 0:
            return [0] * len(scores)
        return [int(100.0 * ((s - lo) / (hi - lo))) for s in scores]


@pytest.mark.parametrize("seed", range(12))
def test_random_clusters_match_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods, nss = rand_cluster(rng, rng.randint(3, 25), rng.randint(0, 60))
    h = build_handle(nodes, pods, nss)
    args = {"hardPodAffinityWeight": rng.choice([0, 1, 7]), "ignorePreferredTermsOfExistingPods": rng.random() < 0.3}
    pl = InterPodAffinity.new(args, h)
    infos = h.snapshot.node_infos
    allidx = np.arange(len(infos), dtype=np.int64)
    for k in range(12):
        pod = PodInfo(rand_incoming(rng, k))
        ref = Ref(h, pod, args["hardPodAffinityWeight"], args["ignorePreferredTermsOfExistingPods"])
        st = CycleState()
        r = pl.pre_filter(st, pod, infos)
        rs = ref.prefilter()
        assert (isinstance(r, Status) and r.code == Code.SKIP) == rs[0]
        if not rs[0]:
            want = [ref.filter(rs, ni) for ni in infos]
            assert [pl.filter(st, pod, ni) for ni in infos] == want
            mask = pl.filter_batch(st, pod, h.snapshot, allidx)
            assert mask is not None and mask.tolist() == [w is None for w in want]
        # Score over a random subset (the feasible nodes), in snapshot order.
        sub = sorted(rng.sample(range(len(infos)), rng.randint(1, len(infos))))
        sub_nodes = [infos[i] for i in sub]
        st2 = CycleState()
        r2 = pl.pre_score(st2, pod, sub_nodes)
        topo = ref.prescore()
        assert (isinstance(r2, Status) and r2.code == Code.SKIP) == (topo is None)
        if topo is not None:
            raw = [Ref.score(topo, ni) for ni in sub_nodes]
            assert [pl.score(st2, pod, ni) for ni in sub_nodes] == raw
            batch = pl.score_batch(st2, pod, h.snapshot, np.array(sub, dtype=np.int64))
            assert batch is not None and batch.tolist() == raw
            pl.normalize_score(st2, pod, batch)
            assert batch.tolist() == Ref.normalize(raw)
        # Bind the pod somewhere and keep going: exercises the incremental index.
        raw_pod = dict(pod.raw)
        raw_pod["spec"] = {**raw_pod["spec"], "nodeName": infos[rng.randrange(len(infos))].name}
        raw_pod["metadata"] = {**raw_pod["metadata"], "uid": f"bound-{seed}-{k}"}
        add_pod_to_snapshot(h, raw_pod)
        infos = h.snapshot.node_infos


def test_add_remove_pod_matches_recompute() -> None:
    """PreFilterExtensions: AddPod/RemovePod leave the same answers as a fresh PreFilter."""
    rng = random.Random(5)
    for _ in range(20):
        nodes, pods, nss = rand_cluster(rng, 8, 30, affinity_p=0.5)
        h = build_handle(nodes, pods, nss)
        pl = InterPodAffinity.new(None, h)
        pod = PodInfo(rand_incoming(rng, 0))
        st = CycleState()
        if isinstance(pl.pre_filter(st, pod, h.snapshot.node_infos), Status):
            continue
        victim_node = next(ni for ni in h.snapshot.node_infos if ni.pods)
        victim = victim_node.pods[0]
        pl.remove_pod(st, pod, victim, victim_node)
        reduced = [p for p in pods if p["metadata"]["name"] != victim.name]
        ref_h = build_handle(nodes, reduced, nss)
        ref = Ref(ref_h, pod)
        rs = ref.prefilter()
        for ni in ref_h.snapshot.node_infos:
            want = None if rs[0] else ref.filter(rs, ni)
            assert pl.filter(st, pod, ni) == want
        pl.add_pod(st, pod, victim, victim_node)
        ref = Ref(h, pod)
        rs = ref.prefilter()
        for ni in h.snapshot.node_infos:
            assert pl.filter(st, pod, ni) == (None if rs[0] else ref.filter(rs, ni))


# --- scoring_test.go TestPreferredAffinity, transcribed case by case (v1.36.3) -------------
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM_NAMESPACES = [
    make_namespace("subteam1.team1", {"team": "team1"}),
    make_namespace("subteam2.team1", {"team": "team1"}),
    make_namespace("subteam1.team2", {"team": "team2"}),
    make_namespace("subteam2.team2", {"team": "team2"}),
]
NS_TERM = {"namespaces": ["subteam2.team2"], "namespaceSelector": sel_in("team", "team1")}

STAY_WITH_S1_IN_REGION = pref("podAffinity", (5, term(sel_in("security", "S1"), "region")))
STAY_WITH_S2_IN_REGION = pref("podAffinity", (6, term(sel_in("security", "S2"), "region")))
AFFINITY3 = pref(
    "podAffinity",
    (
        8,
        term(
            {
                "matchExpressions": [
                    {"key": "security", "operator": "NotIn", "values": ["S1"]},
                    {"key": "security", "operator": "In", "values": ["S2"]},
                ]
            },
            "region",
        ),
    ),
    (
        2,
        term(
            {
                "matchExpressions": [
                    {"key": "security", "operator": "Exists"},
                    {"key": "wrongkey", "operator": "DoesNotExist"},
                ]
            },
            "region",
        ),
    ),
)
HARD_AFFINITY = req_aff(
    term(sel_in("security", "S1", "value2"), "region"),
    term(
        {
            "matchExpressions": [
                {"key": "security", "operator": "Exists"},
                {"key": "wrongkey", "operator": "DoesNotExist"},
            ]
        },
        "region",
    ),
)
AWAY_FROM_S1_IN_AZ = pref("podAntiAffinity", (5, term(sel_in("security", "S1"), "az")))
AWAY_FROM_S2_IN_AZ = pref("podAntiAffinity", (5, term(sel_in("security", "S2"), "az")))
STAY_S1_REGION_AWAY_S2_AZ = {
    **pref("podAffinity", (8, term(sel_in("security", "S1"), "region"))),
    **pref("podAntiAffinity", (5, term(sel_in("security", "S2"), "az"))),
}
AFFINITY_NS_SELECTOR = pref("podAffinity", (5, term(sel_in("security", "S1"), "region", **NS_TERM)))
ANTI_AFFINITY_NS_SELECTOR = pref("podAntiAffinity", (5, term(sel_in("security", "S1"), "region", **NS_TERM)))


def bare_node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A node with only the given labels, as the upstream table builds them."""
    n = make_node(name, labels=labels)
    n["metadata"]["labels"] = dict(labels)
    return n


_XPOD_IDS = itertools.count()


def xpod(
    node: str, labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None, ns: str = "default"
) -> dict[str, Any]:
    """An existing pod of the upstream tables (unique name, given labels / affinity / namespace)."""
    return make_pod(f"e{next(_XPOD_IDS)}", namespace=ns, labels=labels, node_name=node, affinity=affinity)


UPSTREAM_SCORE = [
    ("all nodes are same priority as Affinity is nil", make_pod("p", labels=S1), [],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], None, {}),
    ("Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
     "which doesn't match either pods in nodes or in topology key",
     make_pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION),
     [xpod("node1", S1), xpod("node2", S2), xpod("node3", S1)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [100, 0, 0], {}),
    ("All the nodes that have the same topology key & label value with one of them has an existing pod that match "
     "the affinity rules, have the same score",
     make_pod("p", affinity=STAY_WITH_S1_IN_REGION), [xpod("node1", S1)],
     [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)], [100, 100, 0], {}),
    ("Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
     "more matches will get high score",
     make_pod("p", labels=S1, affinity=STAY_WITH_S2_IN_REGION),
     [xpod("node1", S2), xpod("node1", S2), xpod("node2", S2), xpod("node3", S2), xpod("node4", S2),
      xpod("node5", S2)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", RG_CHINA), ("node4", RG_CHINA), ("node5", RG_INDIA)],
     [100, 0, 100, 100, 0], {}),
    ("Affinity: different Label operators and values for pod affinity scheduling preference, including some match "
     "failures ",
     make_pod("p", labels=S1, affinity=AFFINITY3), [xpod("node1", S1), xpod("node2", S2), xpod("node3", S1)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [20, 100, 0], {}),
    ("Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
     "symmetry",
     make_pod("p", labels=S2),
     [xpod("node1", S1, STAY_WITH_S1_IN_REGION), xpod("node2", S2, STAY_WITH_S2_IN_REGION)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [0, 100, 0], {}),
    ("Affinity symmetry with namespace selector",
     make_pod("p", namespace="subteam1.team1", labels=S1),
     [xpod("node1", S1, AFFINITY_NS_SELECTOR), xpod("node2", S2, STAY_WITH_S2_IN_REGION)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [100, 0, 0], {}),
    ("AntiAffinity symmetry with namespace selector",
     make_pod("p", namespace="subteam1.team1", labels=S1),
     [xpod("node1", S1, ANTI_AFFINITY_NS_SELECTOR), xpod("node2", S2, STAY_WITH_S2_IN_REGION)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [0, 100, 100], {}),
    ("Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
     make_pod("p", labels=S1), [xpod("node1", S1, HARD_AFFINITY), xpod("node2", S2, HARD_AFFINITY)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [100, 100, 0], {}),
    ("Anti Affinity: pod that does not match existing pods in node will get high score ",
     make_pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ), [xpod("node1", S1), xpod("node2", S2)],
     [("node1", AZ1), ("node2", RG_CHINA)], [0, 100], {}),
    ("Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
     "comparing to others ",
     make_pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ), [xpod("node1", S1), xpod("node2", S1)],
     [("node1", AZ1), ("node2", RG_CHINA)], [0, 100], {}),
    ("Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
     "unmatches will get high score",
     make_pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ), [xpod("node1", S1), xpod("node1", S1), xpod("node2", S2)],
     [("node1", AZ1), ("node2", RG_INDIA)], [0, 100], {}),
    ("Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
     make_pod("p", labels=S2), [xpod("node1", S1, AWAY_FROM_S2_IN_AZ), xpod("node2", S2, AWAY_FROM_S1_IN_AZ)],
     [("node1", AZ1), ("node2", AZ2)], [0, 100], {}),
    ("Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
     "affinity & anti affinity",
     make_pod("p", labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ), [xpod("node1", S1), xpod("node2", S1)],
     [("node1", RG_CHINA), ("node2", AZ1)], [100, 0], {}),
    ("Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
     "pods have the same labels",
     make_pod("p", labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ),
     [xpod("node1", S1), xpod("node1", S1), xpod("node2", S1), xpod("node3", S1), xpod("node3", S1),
      xpod("node4", S1), xpod("node5", S1)],
     [("node1", RG_CHINA_AZ1), ("node2", RG_INDIA), ("node3", RG_CHINA), ("node4", RG_CHINA), ("node5", RG_INDIA)],
     [100, 0, 100, 100, 0], {}),
    ("Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in "
     "both pod affinity & anti affinity & symmetry",
     make_pod("p", labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ),
     [xpod("node1", S1), xpod("node2", S2), xpod("node3", None, STAY_S1_REGION_AWAY_S2_AZ),
      xpod("node4", None, AWAY_FROM_S1_IN_AZ)],
     [("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)], [100, 0, 100, 0], {}),
    ("Avoid panic when partial nodes in a topology don't have pods with affinity",
     make_pod("p", labels=S1), [xpod("node1", S1), xpod("node2", None, STAY_S1_REGION_AWAY_S2_AZ)],
     [("node1", RG_CHINA), ("node2", RG_CHINA)], [0, 0], {}),
    ("Affinity with pods matching NamespaceSelector",
     make_pod("p", namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NS_SELECTOR),
     [xpod("node1", S1, ns="subteam1.team1"), xpod("node1", S1, ns="subteam1.team1"),
      xpod("node1", S1, ns="subteam1.team2"), xpod("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [100, 0], {}),
    ("Affinity with pods matching both NamespaceSelector and Namespaces fields",
     make_pod("p", namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NS_SELECTOR),
     [xpod("node1", S1, ns="subteam1.team1"), xpod("node1", S1, ns="subteam1.team1"),
      xpod("node1", S1, ns="subteam2.team2"), xpod("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [100, 0], {}),
    ("Affinity with pods matching NamespaceSelector (anti-affinity)",
     make_pod("p", namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NS_SELECTOR),
     [xpod("node1", S1, ns="subteam1.team1"), xpod("node1", S1, ns="subteam1.team1"),
      xpod("node1", S1, ns="subteam1.team2"), xpod("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, 100], {}),
    ("Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)",
     make_pod("p", namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NS_SELECTOR),
     [xpod("node1", S1, ns="subteam1.team1"), xpod("node1", S1, ns="subteam1.team1"),
      xpod("node1", S1, ns="subteam2.team2"), xpod("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, 100], {}),
    ("Ignore preferred terms of existing pods",
     make_pod("p", labels=S2),
     [xpod("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), xpod("node2", S2, STAY_WITH_S2_IN_REGION)],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], None, {"ignorePreferredTermsOfExistingPods": True}),
    ("Do not ignore preferred terms of existing pods",
     make_pod("p", labels=S2),
     [xpod("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), xpod("node2", S2, STAY_WITH_S2_IN_REGION)],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, 100], {"ignorePreferredTermsOfExistingPods": False}),
    ("No nodes to score", make_pod("p", labels=S2), [], [], None, {}),
]


def run_score_ns(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], args: dict[str, Any]
) -> list[int] | None:
    h = build_handle(nodes, pods, TEAM_NAMESPACES)
    pl = InterPodAffinity.new({"hardPodAffinityWeight": 1, **args}, h)
    st = CycleState()
    pi = PodInfo(pod)
    infos = h.snapshot.node_infos
    r = pl.pre_score(st, pi, infos)
    if isinstance(r, Status):
        assert r.code == Code.SKIP
        return None
    raw = np.array([pl.score(st, pi, ni) for ni in infos], dtype=np.int64)
    batch = pl.score_batch(st, pi, h.snapshot, np.arange(len(infos)))
    assert batch is not None and batch.tolist() == raw.tolist()
    pl.normalize_score(st, pi, raw)
    return raw.tolist()


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "want", "args"), [c[1:] for c in UPSTREAM_SCORE], ids=[c[0] for c in UPSTREAM_SCORE]
)
def test_preferred_affinity_upstream(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    want: list[int] | None,
    args: dict[str, Any],
) -> None:
    """scoring_test.go TestPreferredAffinity (None = PreScore Skip). Not transcribed: the two
    "invalid ... fails PreScore" cases (the API server rejects such label values)."""
    assert run_score_ns(pod, [bare_node(n, lbl) for n, lbl in nodes], pods, args) == want


# Upstream lists the namespace "" (its test pods' namespace); pods here default to "default".
HARD_POD_AFFINITY = req_aff(
    term(
        sel_in("service", "S1"),
        "region",
        namespaces=["default", "subteam2.team2"],
        namespaceSelector=sel_in("team", "team1"),
    )
)
SYM_NODES = [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)]


@pytest.mark.parametrize(
    ("name", "ns", "weight", "want"),
    [
        ("with default weight", "default", 1, [100, 100, 0]),
        ("with zero weight", "default", 0, None),
        ("with no matching namespace", "subteam1.team2", 1, None),
        ("with matching NamespaceSelector", "subteam1.team1", 1, [100, 100, 0]),
        ("with matching Namespaces", "subteam2.team2", 1, [100, 100, 0]),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str, ns: str, weight: int, want: list[int] | None
) -> None:
    """scoring_test.go TestPreferredAffinityWithHardPodAffinitySymmetricWeight."""
    pods = [xpod("node1", None, HARD_POD_AFFINITY), xpod("node2", None, HARD_POD_AFFINITY)]
    pod = make_pod("p", namespace=ns, labels={"service": "S1"})
    got = run_score_ns(pod, [bare_node(n, lbl) for n, lbl in SYM_NODES], pods, {"hardPodAffinityWeight": weight})
    assert got == want


# --- filtering_test.go TestRequiredAffinitySingleNode, transcribed case by case (v1.36.3) --
def req(key: str, op: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def exprs(*reqs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(reqs)}


def aff_anti(aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out.update(req_aff(*aff))
    if anti:
        out.update(req_anti(*anti))
    return out


SVC = {"service": "securityscan"}
SEC_S1 = {"security": "S1"}
NODE1 = bare_node("node1", {"region": "r1", "zone": "z11"})
EXISTING_SVC = make_pod("e-svc", labels=SVC, node_name="node1")
IN_SVC = term(exprs(req("service", "In", "securityscan", "value2")), "region")
ANTI_NODE = term(exprs(req("service", "In", "antivirusscan", "value2")), "node")
ANTI_ZONE_SVC = term(exprs(req("service", "In", "securityscan", "value2")), "zone")
NS_TEAM1 = {"namespaceSelector": exprs(req("team", "In", "team1"))}
U_AFF = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFF)
U_ANTI = Status(Code.UNSCHEDULABLE, ANTI)
U_EXISTING = Status(Code.UNSCHEDULABLE, EXISTING)
SKIP_STATUS = Status(Code.SKIP)


def exists(key: str, topo: str) -> dict[str, Any]:
    return term(exprs(req(key, "Exists")), topo)


UPSTREAM_SINGLE = [
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     make_pod("p"), [], SKIP_STATUS),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches "
     "the existing pod", make_pod("p", labels=SEC_S1, affinity=aff_anti([IN_SVC])), [EXISTING_SVC], None),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in "
     "labelSelector that matches the existing pod",
     make_pod("p", labels=SEC_S1,
              affinity=aff_anti([term(exprs(req("service", "NotIn", "securityscan3", "value3")), "region")])),
     [EXISTING_SVC], None),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     make_pod("p", labels=SEC_S1, affinity=aff_anti(
         [term(exprs(req("service", "In", "securityscan", "value2")), "", namespaces=["DiffNameSpace"])])),
     [make_pod("e", "ns", labels=SVC, node_name="node1")], U_AFF),
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     make_pod("p", labels=SVC, affinity=aff_anti([term(exprs(req("service", "In", "antivirusscan", "value2")), "")])),
     [EXISTING_SVC], U_AFF),
    ("satisfies the PodAffinity with different label Operators in multiple "
     "RequiredDuringSchedulingIgnoredDuringExecution ",
     make_pod("p", labels=SEC_S1, affinity=aff_anti([
         term(exprs(req("service", "Exists"), req("wrongkey", "DoesNotExist")), "region"),
         term(exprs(req("service", "In", "securityscan"), req("service", "NotIn", "WrongValue")), "region"),
     ])), [EXISTING_SVC], None),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
     "because one of the matchExpression item don't match.",
     make_pod("p", labels=SEC_S1, affinity=aff_anti([
         term(exprs(req("service", "Exists"), req("wrongkey", "DoesNotExist")), "region"),
         term(exprs(req("service", "In", "securityscan2"), req("service", "NotIn", "WrongValue")), "region"),
     ])), [EXISTING_SVC], U_AFF),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     make_pod("p", labels=SEC_S1, affinity=aff_anti([IN_SVC], [ANTI_NODE])), [EXISTING_SVC], None),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     make_pod("p", labels=SEC_S1, affinity=aff_anti([IN_SVC], [ANTI_NODE])),
     [make_pod("e", labels=SVC, node_name="node1", affinity=aff_anti(None, [ANTI_NODE]))], None),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     make_pod("p", labels=SEC_S1, affinity=aff_anti([IN_SVC], [ANTI_ZONE_SVC])), [EXISTING_SVC], U_ANTI),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     make_pod("p", labels=SVC, affinity=aff_anti([IN_SVC], [ANTI_NODE])),
     [make_pod("e", labels=SVC, node_name="node1", affinity=aff_anti(None, [ANTI_ZONE_SVC]))], U_EXISTING),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     make_pod("p", labels=SVC,
              affinity=aff_anti([term(exprs(req("service", "NotIn", "securityscan", "value2")), "region")])),
     [make_pod("e", labels=SVC, node_name="node2")], U_AFF),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't "
     "satisfy PodAntiAffinity symmetry with the existing pod",
     make_pod("p", labels=SVC),
     [make_pod("e", labels=SVC, node_name="node1", affinity=aff_anti(None, [ANTI_ZONE_SVC]))], U_EXISTING),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy "
     "PodAntiAffinity symmetry with the existing pod",
     make_pod("p", labels=SVC),
     [make_pod("e", labels=SVC, node_name="node1", affinity=aff_anti(
         None, [term(exprs(req("service", "NotIn", "securityscan", "value2")), "zone")]))], SKIP_STATUS),
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
     make_pod("p", labels=SVC, affinity=aff_anti(None, [exists("service", "region"), exists("security", "region")])),
     [make_pod("e", labels=SEC_S1, node_name="node1", affinity=aff_anti(None, [exists("security", "zone")]))], U_ANTI),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
     make_pod("p", labels=SVC, affinity=aff_anti(None, [exists("service", "zone"), exists("security", "zone")])),
     [make_pod("e", labels=SEC_S1, node_name="node1", affinity=aff_anti(None, [exists("security", "zone")]))], U_ANTI),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
     make_pod("p", labels=SEC_S1, affinity=aff_anti(None, [exists("security", "zone")])),
     [make_pod("e", labels=SVC, node_name="node1",
               affinity=aff_anti(None, [exists("service", "zone"), exists("security", "zone")]))], U_EXISTING),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
     make_pod("p", labels={"abc": "", "xyz": ""},
              affinity=aff_anti(None, [exists("abc", "zone"), exists("def", "zone")])),
     [make_pod("e", labels={"def": "", "xyz": ""}, node_name="node1",
               affinity=aff_anti(None, [exists("abc", "zone"), exists("def", "zone")]))], U_ANTI),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
     make_pod("p", labels={"def": "", "xyz": ""},
              affinity=aff_anti(None, [exists("abc", "zone"), exists("def", "zone")])),
     [make_pod("e", labels={"abc": "", "xyz": ""}, node_name="node1",
               affinity=aff_anti(None, [exists("abc", "zone"), exists("def", "zone")]))], U_ANTI),
    ("affinity with NamespaceSelector",
     make_pod("p", labels=SEC_S1, affinity=aff_anti(
         [term(exprs(req("service", "In", "securityscan", "value2")), "region", **NS_TEAM1)])),
     [make_pod("e", "subteam1.team1", labels=SVC, node_name="node1")], None),
    ("affinity with non-matching NamespaceSelector",
     make_pod("p", labels=SEC_S1, affinity=aff_anti(
         [term(exprs(req("service", "In", "securityscan", "value2")), "region", **NS_TEAM1)])),
     [make_pod("e", "subteam1.team2", labels=SVC, node_name="node1")], U_AFF),
    ("anti-affinity with matching NamespaceSelector",
     make_pod("p", "subteam1.team1", labels=SEC_S1, affinity=aff_anti(
         None, [term(exprs(req("service", "In", "securityscan", "value2")), "zone", **NS_TEAM1)])),
     [make_pod("e", "subteam2.team1", labels=SVC, node_name="node1")], U_ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     make_pod("p", "subteam1.team1", labels=SEC_S1, affinity=aff_anti(
         None, [term(exprs(req("service", "In", "securityscan", "value2")), "zone", namespaceSelector={})])),
     [make_pod("e", "subteam2.team1", labels=SVC, node_name="node1")], U_ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     make_pod("p", "subteam1.team1", labels=SEC_S1, affinity=aff_anti(
         None, [term(exprs(req("service", "In", "securityscan", "value2")), "zone", **NS_TEAM1)])),
     [make_pod("e", "subteam1.team2", labels=SVC, node_name="node1")], None),
]


@pytest.mark.parametrize(("pod", "pods", "want"), [c[1:] for c in UPSTREAM_SINGLE], ids=[c[0] for c in UPSTREAM_SINGLE])
def test_required_affinity_single_node_upstream(
    pod: dict[str, Any], pods: list[dict[str, Any]], want: Status | None
) -> None:
    """filtering_test.go TestRequiredAffinitySingleNode (a Skip want = PreFilter Skip). Not
    transcribed: the two "fails PreFilter with an invalid ... label syntax" cases (the API server
    rejects such selectors)."""
    h = build_handle([NODE1], pods, TEAM_NAMESPACES)
    pl = InterPodAffinity.new(None, h)
    st = CycleState()
    pi = PodInfo(pod)
    r = pl.pre_filter(st, pi, h.snapshot.node_infos)
    if isinstance(r, Status):
        assert want is not None and r.code == want.code == Code.SKIP
        return
    ni = h.snapshot.node_map["node1"]
    got = pl.filter(st, pi, ni)
    assert got == want
    mask = pl.filter_batch(st, pi, h.snapshot, np.arange(1))
    assert mask is not None and mask.tolist() == [got is None]


# --- filtering_test.go TestRequiredAffinityMultipleNodes, transcribed (v1.36.3) ------------
def mpod(node: str, labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None, ns: str = "default"
         ) -> dict[str, Any]:
    return xpod(node, labels, affinity, ns)


def rzh(name: str, region: str, zone: str) -> tuple[str, dict[str, str]]:
    return (name, {"region": region, "zone": zone, "hostname": name})


UPSTREAM_MULTI = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has "
     "an existing pod that matches the affinity rules",
     make_pod("p", affinity=aff_anti([term(exprs(req("foo", "In", "bar")), "region")])),
     [mpod("node1", {"foo": "bar"})],
     [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)], None, [None, None, U_AFF]),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
     "collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches "
     "the rule anywhere.",
     make_pod("p", labels={"foo": "bar", "service": "securityscan"}, affinity=aff_anti([
         term(exprs(req("foo", "In", "bar")), "zone"), term(exprs(req("service", "In", "securityscan")), "zone")])),
     [mpod("nodeA", {"foo": "bar"})],
     [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})], None, [None, None]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     make_pod("p", labels={"foo": "bar", "service": "securityscan"}, affinity=aff_anti([
         term(exprs(req("foo", "In", "bar")), "zone"), term(exprs(req("service", "In", "securityscan")), "zone")])),
     [mpod("nodeA", {"foo": "bar"})],
     [("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), ("nodeB", {"zoneLabel": "az2", "hostname": "h2"})], None,
     [U_AFF, U_AFF]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     make_pod("p", affinity=aff_anti(None, [term(exprs(req("foo", "In", "abc")), "region")])),
     [mpod("nodeA", {"foo": "abc"})],
     [("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})], None,
     [U_ANTI, U_ANTI]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     make_pod("p", affinity=aff_anti(None, [term(exprs(req("foo", "In", "abc")), "region"),
                                            term(exprs(req("service", "In", "securityscan")), "zone")])),
     [mpod("nodeA", {"foo": "abc", "service": "securityscan"})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_ANTI, U_ANTI]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     make_pod("p", affinity=aff_anti(None, [term(exprs(req("foo", "In", "abc")), "region")])),
     [mpod("nodeA", {"foo": "abc"})],
     [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)], None, [U_ANTI, U_ANTI, None]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an "
     "existing pod that match the inter pod affinity rule but in different namespace)",
     make_pod("p", "NS1", labels={"foo": "123"},
              affinity=aff_anti(None, [term(exprs(req("foo", "In", "bar")), "region")])),
     [mpod("nodeA", {"foo": "bar"}, ns="NS1"),
      mpod("nodeC", None, aff_anti(None, [term(exprs(req("foo", "In", "123")), "region")]), ns="NS2")],
     [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)], None, [U_ANTI, U_ANTI, None]),
    ("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the "
     "term is firstly checked, and then topologyKey of the term is also checked",
     make_pod("p", labels={"foo": ""}),
     [mpod("nodeA", None, aff_anti(None, [exists("foo", "invalid-node-label")]))],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z1")], SKIP_STATUS, [None, None]),
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     make_pod("p", affinity=aff_anti(None, [exists("foo", "invalid-node-label")])),
     [mpod("nodeA", {"foo": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z1")], None, [None, None]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's "
     "terms on all nodes",
     make_pod("p", labels={"foo": "", "bar": ""}),
     [mpod("nodeA", None, aff_anti(None, [exists("foo", "zone")])),
      mpod("nodeA", None, aff_anti(None, [exists("bar", "region")]))],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_EXISTING, U_EXISTING]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
     "anti-affinity rule of existingPod",
     make_pod("p", affinity=aff_anti(None, [exists("foo", "zone"), exists("bar", "region")])),
     [mpod("nodeA", {"foo": ""}), mpod("nodeB", {"bar": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_ANTI, U_ANTI]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when one term has invalid topologyKey",
     make_pod("p", labels={"foo": "", "bar": ""}),
     [mpod("nodeA", None, aff_anti(None, [exists("foo", "invalid-node-label"), exists("bar", "zone")]))],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_EXISTING, None]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when one term has invalid topologyKey",
     make_pod("p", affinity=aff_anti(None, [exists("foo", "invalid-node-label"), exists("bar", "zone")])),
     [mpod("nodeA", {"foo": "", "bar": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_ANTI, None]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when all terms have valid topologyKey",
     make_pod("p", labels={"foo": "", "bar": ""}),
     [mpod("nodeA", None, aff_anti(None, [exists("foo", "region"), exists("bar", "zone")]))],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_EXISTING, U_EXISTING]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when all terms have valid topologyKey",
     make_pod("p", affinity=aff_anti(None, [exists("foo", "region"), exists("bar", "zone")])),
     [mpod("nodeA", {"foo": "", "bar": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_ANTI, U_ANTI]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches "
     "incoming pod, so incoming pod can only be scheduled to nodeC",
     make_pod("p", labels={"foo": "", "bar": ""}),
     [mpod("nodeA", None, aff_anti(None, [exists("foo", "zone"), exists("labelA", "zone")])),
      mpod("nodeB", None, aff_anti(None, [exists("bar", "zone"), exists("labelB", "zone")]))],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2"), rzh("nodeC", "r1", "z3")], None,
     [U_EXISTING, U_EXISTING, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
     make_pod("p", affinity=aff_anti([exists("foo", "region"), exists("bar", "zone")])),
     [mpod("nodeA", {"foo": "", "bar": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z1")], None, [None, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match, and the match logic should be satisfied on the same pod",
     make_pod("p", affinity=aff_anti([exists("foo", "region"), exists("bar", "zone")])),
     [mpod("nodeA", {"foo": ""}), mpod("nodeB", {"bar": ""})],
     [rzh("nodeA", "r1", "z1"), rzh("nodeB", "r1", "z2")], None, [U_AFF, U_AFF]),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "pre", "want"), [c[1:] for c in UPSTREAM_MULTI], ids=[c[0] for c in UPSTREAM_MULTI]
)
def test_required_affinity_multiple_nodes_upstream(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    pre: Status | None,
    want: list[Status | None],
) -> None:
    """filtering_test.go TestRequiredAffinityMultipleNodes."""
    h = build_handle([bare_node(n, lbl) for n, lbl in nodes], pods, [make_namespace("NS1")])
    pl = InterPodAffinity.new(None, h)
    st = CycleState()
    pi = PodInfo(pod)
    infos = h.snapshot.node_infos
    r = pl.pre_filter(st, pi, infos)
    if isinstance(r, Status):
        assert pre is not None and r.code == pre.code == Code.SKIP
        return
    assert pre is None
    got = [pl.filter(st, pi, ni) for ni in infos]
    assert got == want
    mask = pl.filter_batch(st, pi, h.snapshot, np.arange(len(infos)))
    assert mask is not None and mask.tolist() == [g is None for g in got]


# --- plugin_test.go Test_isSchedulableAfterPodChange / Test_isSchedulableAfterNodeChange --------
def _hints() -> tuple[Any, Any]:
    pod_ev, node_ev = InterPodAffinity.new(None, build_handle([])).events_to_register()
    return pod_ev.hint, node_ev.hint


def hp(uid: str, labels: dict[str, str] | None = None, node: str = "", nominated: str = "",
       affinity: dict[str, Any] | None = None) -> PodInfo:
    raw = make_pod(uid, uid=uid, labels=labels, node_name=node, affinity=affinity)
    if nominated:
        raw["status"] = {"nominatedNodeName": nominated}
    return PodInfo(raw)


AFF_SVC = aff_anti([term(exprs(req("service", "In", "securityscan", "value2")), "region")])
ANTI_SVC = aff_anti(None, [term(exprs(req("service", "In", "securityscan", "value2")), "region")])
AFF_AAA_BBB = aff_anti([exists("aaa", "hostname"), exists("bbb", "hostname")])
SS = {"service": "securityscan"}
FN = "fake-node"
QH = QueueingHint


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("add a pod which matches the pod affinity", hp("p", affinity=AFF_SVC), None, hp("other", SS, FN), QH.QUEUE),
        ("add an un-scheduled pod", hp("p", affinity=AFF_SVC), None, hp("other", SS), QH.QUEUE_SKIP),
        ("add a pod which doesn't match the pod affinity", hp("p", affinity=AFF_SVC), None,
         hp("other", {"aaa": "a"}, FN), QH.QUEUE_SKIP),
        ("update a pod from non-match to match pod affinity", hp("p", affinity=AFF_SVC),
         hp("other", {"aaa": "a"}, FN), hp("other", SS, FN), QH.QUEUE),
        ("the updating pod matches target pod's affinity both before and after label changes",
         hp("p", affinity=AFF_SVC), hp("other", {"service": "value2"}, FN), hp("other", SS, FN), QH.QUEUE_SKIP),
        ("update an un-scheduled pod", hp("p", affinity=AFF_SVC), hp("other", {"aaa": "a"}), hp("other", SS),
         QH.QUEUE_SKIP),
        ("update a pod from match to non-match the pod affinity", hp("p", affinity=AFF_SVC), hp("other", SS, FN),
         hp("other", {"aaa": "a"}, FN), QH.QUEUE_SKIP),
        ("update a pod from match to non-match pod's affinity - multiple terms case", hp("p", affinity=AFF_AAA_BBB),
         hp("other", {"aaa": "a"}, FN), hp("other", SS, FN), QH.QUEUE_SKIP),
        ("update a pod from non-match to match pod's affinity - multiple terms case", hp("p", affinity=AFF_AAA_BBB),
         hp("other", {"aaa": "a"}, FN), hp("other", {"aaa": "", "bbb": ""}, FN), QH.QUEUE),
        ("updated pod is the target pod", hp("p", {"foo": "baz"}), hp("p", {"foo": "bar"}), hp("p", {"foo": "baz"}),
         QH.QUEUE),
        ("modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
         hp("p", affinity=ANTI_SVC), hp("other", SS, FN), hp("other", {"service": "aaaa"}, FN), QH.QUEUE),
        ("modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
         hp("p", affinity=ANTI_SVC), hp("other", {"service": "bbb"}, FN), hp("other", SS, FN), QH.QUEUE_SKIP),
        ("delete a pod which doesn't match pod's anti-affinity", hp("p", affinity=ANTI_SVC),
         hp("other", {"aaa": "a"}, FN), None, QH.QUEUE_SKIP),
        ("delete a pod which matches pod's anti-affinity", hp("p", affinity=ANTI_SVC), hp("other", SS, FN), None,
         QH.QUEUE),
        ("delete a pod with anti-affinity that matches pending pod", hp("p", SS),
         hp("other", None, FN, affinity=ANTI_SVC), None, QH.QUEUE),
        ("delete a pod with anti-affinity that doesn't match pending pod", hp("p", {"service": "foo"}),
         hp("other", None, FN, affinity=ANTI_SVC), None, QH.QUEUE_SKIP),
        ("delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match "
         "pending pod", hp("p", {"service": "foo"}, affinity=ANTI_SVC),
         hp("other", {"service": "foo"}, FN, affinity=ANTI_SVC), None, QH.QUEUE_SKIP),
        ("delete a nominated pod which doesn't match pod's anti-affinity", hp("p", affinity=ANTI_SVC),
         hp("other", {"aaa": "a"}, nominated=FN), None, QH.QUEUE_SKIP),
        ("delete a nominated pod which matches pod's anti-affinity", hp("p", affinity=ANTI_SVC),
         hp("other", SS, nominated=FN), None, QH.QUEUE),
    ],
)
def test_is_schedulable_after_pod_change(
    name: str, pod: PodInfo, old: PodInfo | None, new: PodInfo | None, want: QueueingHint
) -> None:
    """plugin_test.go Test_isSchedulableAfterPodChange."""
    pod_hint, _ = _hints()
    assert pod_hint(pod, old, new) == want


def hn(**labels: str) -> NodeInfo:
    return NodeInfo(bare_node("node-a", labels))


AFF_ZONE = aff_anti([term(exprs(req("service", "In", "securityscan", "value2")), "zone")])
AFF_REGION = aff_anti([term(exprs(req("service", "In", "securityscan", "value2")), "region")])
ANTI_ZONE = aff_anti(None, [term({"matchLabels": {"another": "label"}}, "zone")])


@pytest.mark.parametrize(
    ("name", "affinity", "old", "new", "want"),
    [
        ("add a new node with matched pod affinity topologyKey", AFF_ZONE, None, hn(zone="zone1"), QH.QUEUE),
        ("add a new node without matched topologyKey", AFF_REGION, None, hn(zone="zone1"), QH.QUEUE_SKIP),
        ("update node label but not topologyKey", AFF_ZONE, hn(aaa="a"), hn(aaa="b"), QH.QUEUE_SKIP),
        ("update node label that isn't related to the pod affinity", AFF_ZONE, hn(zone="zone1"),
         hn(zone="zone1", **{"unrelated-label": "unrelated"}), QH.QUEUE_SKIP),
        ("update node with different affinity topologyKey value", AFF_ZONE, hn(zone="zone1"), hn(zone="zone2"),
         QH.QUEUE),
        ("update node to have the affinity topology label", AFF_ZONE, hn(aaa="a"), hn(zone="zone1"), QH.QUEUE),
        ("add a new node with matched pod anti-affinity topologyKey", ANTI_ZONE, None, hn(zone="zone1"), QH.QUEUE),
        ("add a new node without matched pod anti-affinity topologyKey", ANTI_ZONE, None, hn(), QH.QUEUE),
        ("update node label that isn't related to the pod anti-affinity", ANTI_ZONE, hn(zone="zone1"),
         hn(zone="zone1", **{"unrelated-label": "unrelated"}), QH.QUEUE_SKIP),
        ("update node with different anti-affinity topologyKey value", ANTI_ZONE, hn(zone="zone1"), hn(zone="zone2"),
         QH.QUEUE),
        ("update node to have the anti-affinity topology label", ANTI_ZONE, hn(aaa="a"), hn(zone="zone1"),
         QH.QUEUE_SKIP),
        ("update node label not to have anti-affinity topology label", ANTI_ZONE, hn(zone="zone1"), hn(aaa="a"),
         QH.QUEUE),
    ],
)
def test_is_schedulable_after_node_change(
    name: str, affinity: dict[str, Any], old: NodeInfo | None, new: NodeInfo, want: QueueingHint
) -> None:
    """plugin_test.go Test_isSchedulableAfterNodeChange."""
    _, node_hint = _hints()
    assert node_hint(hp("p", affinity=affinity), old, new) == want


def test_events_registered_with_queueing_hints() -> None:
    """With queueing hints on (the default) UpdateNodeTaint is not registered."""
    pod_ev, node_ev = InterPodAffinity.new(None, build_handle([])).events_to_register()
    assert pod_ev.event == ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE)
    assert node_ev.event == ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
