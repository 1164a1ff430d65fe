"""NodeUnschedulable; cases from upstream plugins/nodeunschedulable/node_unschedulable_test.go."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.framework import new_snapshot

TOLERATE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "want_reject"),
    [
        (True, None, True),  # "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"
        (False, None, False),  # "Schedule pod to normal node"
        (
            False,
            None,
            False,
        ),  # "Schedule pod with toleration to normal node (node.Spec.Unschedulable==false)"
        (
            True,
            TOLERATE,
            False,
        ),  # "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)"
        # An empty-key Exists toleration tolerates every taint, this one included.
        (True, [{"operator": "Exists"}], False),
        # Wrong effect: the unschedulable taint is NoSchedule.
        (
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
            True,
        ),
    ],
    ids=["unschedulable", "normal", "normal-tol", "unschedulable-tol", "exists-all", "wrong-effect"],
)
def test_filter(unschedulable: bool, tolerations: list | None, want_reject: bool) -> None:
    pod = PodInfo(make_pod("p", tolerations=tolerations))
    node = NodeInfo(make_node("n", unschedulable=unschedulable))
    st = NodeUnschedulable().filter(CycleState(), pod, node)
    if want_reject:
        assert st is not None
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert st.reasons == (ERR_REASON_UNSCHEDULABLE,)
    else:
        assert st is None


@pytest.mark.parametrize("seed", range(5))
def test_batch_matches_per_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [NodeInfo(make_node(f"n{i}", unschedulable=rng.random() < 0.3)) for i in range(60)]
    snap = new_snapshot(nodes)
    pl = NodeUnschedulable()
    idx = np.array(rng.sample(range(60), 40))
    for tol in (None, TOLERATE):
        pod = PodInfo(make_pod("p", tolerations=tol))
        want = [pl.filter(CycleState(), pod, nodes[i]) is None for i in idx]
        assert pl.filter_batch(CycleState(), pod, snap, idx).tolist() == want


def test_node_change_hint() -> None:
    # TestIsSchedulableAfterNodeChange: queue on a schedulable add or an uncordon only.
    pl = NodeUnschedulable()
    hint = pl.events_to_register()[0].hint
    assert hint is not None
    pod = PodInfo(make_pod("p"))
    cordoned, free = NodeInfo(make_node("n", unschedulable=True)), NodeInfo(make_node("n"))
    assert hint(pod, None, free) == QueueingHint.QUEUE
    assert hint(pod, None, cordoned) == QueueingHint.QUEUE_SKIP
    assert hint(pod, cordoned, free) == QueueingHint.QUEUE
    assert hint(pod, free, free) == QueueingHint.QUEUE_SKIP
    assert hint(pod, free, cordoned) == QueueingHint.QUEUE_SKIP


def _node(unschedulable: bool, taints: list | None = None) -> NodeInfo:
    return NodeInfo(make_node("n", unschedulable=unschedulable, taints=taints))


NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("skip-queue-on-unschedulable-node-added", None, _node(True), QueueingHint.QUEUE_SKIP),
        ("queue-on-schedulable-node-added", None, _node(False), QueueingHint.QUEUE),
        ("skip-unrelated-change-unschedulable-true", _node(True), _node(True, NOT_READY), QueueingHint.QUEUE_SKIP),
        ("skip-unrelated-change-unschedulable-false", _node(False), _node(False, NOT_READY), QueueingHint.QUEUE_SKIP),
        ("queue-on-unschedulable-field-change", _node(True), _node(False), QueueingHint.QUEUE),
    ],
)
def test_is_schedulable_after_node_change(name: str, old: NodeInfo | None, new: NodeInfo, want: QueueingHint) -> None:
    """node_unschedulable_test.go TestIsSchedulableAfterNodeChange (the wrong-object cases are
    Go type assertions with no counterpart here)."""
    hint = NodeUnschedulable().events_to_register()[0].hint
    assert hint is not None
    assert hint(PodInfo(make_pod("p")), old, new) == want


@pytest.mark.parametrize(
    ("name", "new_uid", "tolerations", "want"),
    [
        (
            "skip-different-pod-update",
            "different-uid",
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "queue-when-the-unsched-pod-gets-toleration",
            "uid",
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
            QueueingHint.QUEUE,
        ),
        (
            "skip-when-the-unsched-pod-gets-unrelated-toleration",
            "uid",
            [{"key": "unrelated-key", "operator": "Exists"}],
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_is_schedulable_after_pod_toleration_change(
    name: str, new_uid: str, tolerations: list, want: QueueingHint
) -> None:
    """node_unschedulable_test.go TestIsSchedulableAfterPodTolerationChange."""
    hint = NodeUnschedulable().events_to_register()[1].hint
    assert hint is not None
    pod = PodInfo(make_pod("p", uid="uid"))
    old = PodInfo(make_pod("p", uid=new_uid))
    new = PodInfo(make_pod("p", uid=new_uid, tolerations=tolerations))
    assert hint(pod, old, new) == want
