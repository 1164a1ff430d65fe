"""Taint and toleration comparisons in queueing hints and event classification, as v1.36.3.

Upstream compares whole objects with equality.Semantic.DeepEqual: a taint's timeAdded (a
metav1.Time, equal when the UTC instants are equal) and a toleration's tolerationSeconds count:
  podtopologyspread/plugin.go isSchedulableAfterPodChange / isSchedulableAfterNodeChange,
  framework/events.go extractNodeTaintsChange.
The pod-update classifier (events.go extractPodTolerationChange) compares only the count.
The first cases of each table are the upstream plugin_test.go / events_test.go cases by name.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.events import ActionType, QueueingHint, node_update_action, pod_update_events
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.taints import Taint, Toleration
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.framework import build_handle

H = QueueingHint
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
T0 = "2024-05-01T10:00:00Z"
T1 = "2024-05-01T10:00:07Z"


def sp(key: str, **kw: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": FOO, **kw}


def node(taints: list[dict[str, Any]], **labels: str) -> NodeInfo:
    return NodeInfo(make_node("node-a", labels=labels, taints=taints))


def taint(key: str, time_added: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "value": "bbb", "effect": "NoSchedule"}
    if time_added is not None:
        t["timeAdded"] = time_added
    return t


ZONE_NODE_POD = make_pod("p", spread=[sp("zone"), sp("node")])


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("update node with different taints that match all topologySpreadConstraints",
         node([taint("aaa")], zone="zone1", node="node1"), node([taint("ccc")], zone="zone1", node="node1"), H.QUEUE),
        ("update node with different taints that only match one of topologySpreadConstraints",
         node([taint("aaa")], node="node1"), node([taint("ccc")], node="node1"), H.QUEUE_SKIP),
        ("taint gets a timeAdded", node([taint("aaa")], zone="zone1", node="node1"),
         node([taint("aaa", T0)], zone="zone1", node="node1"), H.QUEUE),
        ("taint timeAdded changes", node([taint("aaa", T0)], zone="zone1", node="node1"),
         node([taint("aaa", T1)], zone="zone1", node="node1"), H.QUEUE),
        ("same timeAdded instant written with another offset",
         node([taint("aaa", T0)], zone="zone1", node="node1"),
         node([taint("aaa", "2024-05-01T12:00:00+02:00")], zone="zone1", node="node1"), H.QUEUE_SKIP),
        ("identical taints with timeAdded", node([taint("aaa", T0)], zone="zone1", node="node1"),
         node([taint("aaa", T0)], zone="zone1", node="node1"), H.QUEUE_SKIP),
    ],
)
def test_pts_node_change_compares_whole_taints(name: str, old: NodeInfo, new: NodeInfo, want: QueueingHint) -> None:
    pl = PodTopologySpread.new({"defaultingType": "List"}, build_handle([]))
    ev = pl.events_to_register()[1]
    assert ev.hint is not None
    assert ev.hint(PodInfo(ZONE_NODE_POD), old, new) == want


def _pts_pod(policy: str) -> dict[str, Any]:
    return make_pod("p", uid="p", labels={"foo": ""}, spread=[sp("zone", nodeTaintsPolicy=policy), sp("node")])


def _tol(seconds: int | None = None, key: str = "node.kubernetes.io/not-ready") -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def _self(tolerations: list[dict[str, Any]]) -> PodInfo:
    return PodInfo(make_pod("p", uid="p", labels={"foo": ""}, tolerations=tolerations))


@pytest.mark.parametrize(
    ("name", "policy", "old", "new", "want"),
    [
        ("the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new "
         "toleration", "Honor", _self([]), _self([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
         H.QUEUE),
        ("the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new "
         "toleration", "Ignore", _self([]),
         _self([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]), H.QUEUE_SKIP),
        ("tolerationSeconds lowered, NodeTaintsPolicy:Honor", "Honor", _self([_tol(300)]), _self([_tol(60)]),
         H.QUEUE),
        ("tolerationSeconds set, NodeTaintsPolicy:Honor", "Honor", _self([_tol()]), _self([_tol(60)]), H.QUEUE),
        ("tolerationSeconds lowered, NodeTaintsPolicy:Ignore", "Ignore", _self([_tol(300)]), _self([_tol(60)]),
         H.QUEUE_SKIP),
        ("tolerations unchanged, NodeTaintsPolicy:Honor", "Honor", _self([_tol(60)]), _self([_tol(60)]),
         H.QUEUE_SKIP),
    ],
)
def test_pts_pod_change_compares_whole_tolerations(
    name: str, policy: str, old: PodInfo, new: PodInfo, want: QueueingHint
) -> None:
    pl = PodTopologySpread.new({"defaultingType": "List"}, build_handle([]))
    ev = pl.events_to_register()[0]
    assert ev.hint is not None
    assert ev.hint(PodInfo(_pts_pod(policy)), old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        ([taint("aaa")], [taint("ccc")], True),
        ([taint("aaa")], [taint("aaa", T0)], True),
        ([taint("aaa", T0)], [taint("aaa", T1)], True),
        ([taint("aaa", T0)], [taint("aaa", "2024-05-01T10:00:00.000Z")], False),
        ([taint("aaa", T0)], [taint("aaa", T0)], False),
    ],
    ids=["key changes", "timeAdded set", "timeAdded changes", "same instant, other spelling", "unchanged"],
)
def test_node_taint_event(old: list[dict[str, Any]], new: list[dict[str, Any]], want: bool) -> None:
    """events.go extractNodeTaintsChange: Semantic.DeepEqual of spec.taints."""
    got = node_update_action(node(old), node(new))
    assert bool(got & ActionType.UPDATE_NODE_TAINT) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        ([{"key": "key", "operator": "Exists"}], [{"key": "key", "operator": "Exists"},
                                                   {"key": "key2", "operator": "Exists"}], True),
        ([_tol(300)], [_tol(60)], False),
    ],
    ids=["pod's tolerations are updated", "tolerationSeconds changed, count unchanged"],
)
def test_pod_toleration_event(old: list[dict[str, Any]], new: list[dict[str, Any]], want: bool) -> None:
    """events_test.go Test_podSchedulingPropertiesChange: UpdatePodToleration only when the
    number of tolerations changes (extractPodTolerationChange)."""
    events = pod_update_events(PodInfo(make_pod("p", tolerations=old)), PodInfo(make_pod("p", tolerations=new)))
    got = any(e.action & ActionType.UPDATE_POD_TOLERATION for e in events)
    assert got == want


def test_parsed_fields() -> None:
    n = node([taint("aaa", "2024-05-01T10:00:00.123456789Z"), taint("bbb")])
    assert n.taints == (
        Taint("aaa", "bbb", "NoSchedule", 1714557600123456789),
        Taint("bbb", "bbb", "NoSchedule", None),
    )
    p = PodInfo(make_pod("p", tolerations=[_tol(0), _tol()]))
    assert [t.toleration_seconds for t in p.tolerations] == [0, None]
    # Matching ignores both fields.
    assert Toleration("aaa", "Equal", "bbb", "NoSchedule", 5).tolerates(n.taints[0])
