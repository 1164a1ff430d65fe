"""PodInfo: pod request aggregation, and the parsed subtrees pods of one workload share.

Expected values follow component-helpers resource.PodRequests (init containers, sidecars,
overhead, pod-level).
"""

from __future__ import annotations

import copy

import pytest

from scheduler.model import pod as pod_module
from scheduler.model.pod import PodInfo
from scheduler.model.podrequests import DEFAULT_MEMORY_REQUEST
from scheduler.model.taints import parse_tolerations
from scheduler.testing.builders import make_pod


def _c(cpu: str | None = None, mem: str | None = None, restart: str | None = None, limits: dict | None = None) -> dict:
    res: dict = {}
    req = {}
    if cpu is not None:
        req["cpu"] = cpu
    if mem is not None:
        req["memory"] = mem
    if req:
        res["requests"] = req
    if limits:
        res["limits"] = limits
    c: dict = {"name": "x", "image": "pause", "resources": res}
    if restart:
        c["restartPolicy"] = restart
    return c


# (case, containers, init containers, extra spec kwargs, cpu milli, memory bytes, non0 cpu, non0 mem)
REQUEST_CASES = [
    # component-helpers resource/helpers_test.go TestPodRequests "init container max"
    (
        "init containers take the max",
        [_c("1"), _c("2")],
        [_c("2"), _c("4")],
        {},
        4000,
        0,
        4000,
        2 * DEFAULT_MEMORY_REQUEST,
    ),
    ("containers sum beats init", [_c("3")], [_c("2")], {}, 3000, 0, 3000, DEFAULT_MEMORY_REQUEST),
    # "restartable init container" cases: sidecars add to everything started after them
    (
        "sidecar then init",
        [_c("1")],
        [_c("1", restart="Always"), _c("2")],
        {},
        3000,
        0,
        3000,
        2 * DEFAULT_MEMORY_REQUEST,
    ),
    (
        "init then sidecar",
        [_c("1")],
        [_c("5"), _c("1", restart="Always")],
        {},
        5000,
        0,
        5000,
        2 * DEFAULT_MEMORY_REQUEST,
    ),
    # overhead is added on top (TestPodRequests "pod overhead")
    (
        "overhead",
        [_c("1", "1Gi")],
        [],
        {"overhead": {"cpu": "250m", "memory": "120Mi"}},
        1250,
        2**30 + 120 * 2**20,
        1250,
        2**30 + 120 * 2**20,
    ),
    # limits default requests (API-server defaulting)
    ("limits only", [_c(limits={"cpu": "2", "memory": "1Gi"})], [], {}, 2000, 2**30, 2000, 2**30),
    # explicit zero is not replaced by the non-zero default (schedutil.GetNonzeroRequests)
    ("explicit zero", [_c("0", "0")], [], {}, 0, 0, 0, 0),
    # pod-level resources replace the container aggregate (PodLevelResources)
    (
        "pod level",
        [_c("1", "1Gi")],
        [],
        {"pod_resources": {"requests": {"cpu": "2", "memory": "2Gi"}}},
        2000,
        2 * 2**30,
        2000,
        2 * 2**30,
    ),
    ("no requests", [_c()], [], {}, 0, 0, 100, DEFAULT_MEMORY_REQUEST),
]


@pytest.mark.parametrize(
    ("containers", "inits", "extra", "cpu", "mem", "n0cpu", "n0mem"),
    [c[1:] for c in REQUEST_CASES],
    ids=[c[0] for c in REQUEST_CASES],
)
def test_pod_requests(containers: list, inits: list, extra: dict, cpu: int, mem: int, n0cpu: int, n0mem: int) -> None:
    pod = PodInfo(make_pod(containers=containers, init_containers=inits, **extra))
    assert pod.requests.milli_cpu == cpu
    assert pod.requests.memory == mem
    assert (pod.non0_cpu, pod.non0_mem) == (n0cpu, n0mem)


# ------------------------------------------------------------------------------------------------
# Tolerations and node affinity are kept by the JSON of the subtree (taints._tolerations_memo,
# affinity._node_affinity_memo): a pod whose subtrees were seen before must get exactly what a fresh parse
# gives, a bad subtree must fail every time, and pod-affinity terms stay per pod (they take the
# pod's namespace, upstream's GetAffinityTerms).

_DEFAULT_TOLERATIONS = [  # what DefaultTolerationSeconds admission adds to every pod
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]
_ZONE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
        ],
    },
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    },
}


def _fresh(tolerations: list, affinity: dict) -> tuple:
    from scheduler.model.labels import NodeSelector, parse_preferred_terms

    na = affinity.get("nodeAffinity") or {}
    return (
        parse_tolerations(tolerations),
        NodeSelector.parse(na.get("requiredDuringSchedulingIgnoredDuringExecution")),
        parse_preferred_terms(na.get("preferredDuringSchedulingIgnoredDuringExecution")),
    )


@pytest.mark.parametrize(
    ("tolerations", "affinity"),
    [
        (_DEFAULT_TOLERATIONS, _ZONE_AFFINITY),
        ([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}], {}),
        ([], {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}),
    ],
)
def test_repeated_subtrees_parse_as_a_fresh_parse(tolerations: list, affinity: dict) -> None:
    import copy

    a = PodInfo(make_pod("a", "ns-a", tolerations=copy.deepcopy(tolerations), affinity=copy.deepcopy(affinity)))
    b = PodInfo(make_pod("b", "ns-b", tolerations=copy.deepcopy(tolerations), affinity=copy.deepcopy(affinity)))
    want = _fresh(tolerations, affinity)
    for p in (a, b):
        assert (p.tolerations, p.node_affinity_required, p.node_affinity_preferred) == want
    if tolerations:
        assert b.tolerations is a.tolerations  # the second pod reused the first one's parse
    # Pod-affinity terms are the pod's own: each names its pod's namespace.
    assert [t.namespaces for t in a.anti_affinity_required] == [frozenset({"ns-a"})] * len(a.anti_affinity_required)
    assert [t.namespaces for t in b.anti_affinity_required] == [frozenset({"ns-b"})] * len(b.anti_affinity_required)


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("tolerations", [{"key": "k", "tolerationSeconds": "5"}], "spec.tolerations[0].tolerationSeconds"),
        ("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": 7}}},
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"),
    ],
)
def test_a_bad_subtree_is_rejected_every_time(field: str, value: object, path: str) -> None:
    from scheduler.model.schema import ObjectError

    for name in ("first", "second"):
        with pytest.raises(ObjectError) as err:
            PodInfo(make_pod(name, **{field: value}))  # type: ignore[arg-type]
        assert err.value.path == path


def test_copy_is_shallow_and_whole() -> None:
    # The cycle's assumed pod (core/cycle.assumed_copy): every field the same objects, and a
    # node set on the copy leaves the original pending.
    orig = PodInfo(make_pod("p", cpu="100m", labels={"app": "a"}))
    dup = copy.copy(orig)
    dup.node_name = "n1"
    assert orig.node_name == "" and dup.node_name == "n1"
    assert all(getattr(dup, s) is getattr(orig, s) for s in PodInfo.__slots__ if s != "node_name")


def _bound(raw: dict) -> dict:
    out = copy.deepcopy(raw)
    out["spec"]["nodeName"] = "n1"
    return out


def _running(raw: dict) -> dict:
    out = _bound(raw)
    out["status"] = {"phase": "Running", "startTime": "2026-11-27T06:00:00Z",
                     "conditions": [{"type": "Ready", "status": "True"}]}
    return out


def _edit(path: tuple[str, ...], value: object):
    def apply(raw: dict) -> dict:
        out = _running(raw)
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = value
        return out
    return apply


def _resized(raw: dict) -> dict:
    out = _running(raw)
    out["status"]["containerStatuses"] = [
        {"name": "c0", "resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "3"}}
    ]
    return out


def _same(raw: dict) -> dict:
    return raw


@pytest.mark.parametrize(
    ("before", "change", "reused"),
    [
        (_same, _bound, True),  # our own binding: only nodeName
        (_same, _running, True),  # the kubelet's status
        (_same, _edit(("metadata", "deletionTimestamp"), "2026-11-27T07:00:00Z"), True),
        (_same, _edit(("status", "nominatedNodeName"), "n2"), True),
        (_same, _resized, True),  # in-place resize: requests come from the status
        (_resized, _running, True),  # the resize is over: requests from the spec again
        (_resized, _resized, True),
        (_same, _edit(("metadata", "labels"), {"app": "other"}), False),  # affinity terms read the labels
        (_same, _edit(("spec", "tolerations"), [{"key": "k", "operator": "Exists"}]), False),
        (_same, _edit(("spec", "priority"), 7), False),
    ],
)
def test_updated_pod_equals_a_fresh_parse(before, change, reused: bool) -> None:
    # PodInfo.updated must give exactly what parsing the new object gives, reusing the old
    # parse only when nothing it read has changed.
    raw = make_pod("p", cpu="1", memory="1Gi", labels={"app": "web"},
                   affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                       {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}})
    prev = PodInfo(before(raw))
    new_raw = change(raw)
    got, want = PodInfo.updated(prev, new_raw), PodInfo(new_raw)
    for slot in PodInfo.__slots__:
        assert getattr(got, slot) == getattr(want, slot), slot
    assert (got.anti_affinity_required is prev.anti_affinity_required) is reused


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("2026-11-27T06:00:00Z", 1795759200.0),
        ("2026-11-27T06:00:00.5+01:00", 1795755600.5),
        ("not a time", 0.0),
        ("", 0.0),
        (None, 0.0),
    ],
)
def test_times_parse_the_same_when_seen_again(value: object, want: float) -> None:
    # Pod timestamps are parsed once per distinct string (pods created in the same second).
    assert [pod_module._parse_time(value) for _ in range(3)] == [want] * 3
