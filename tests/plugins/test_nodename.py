"""NodeName; cases from upstream plugins/nodename/node_name_test.go TestNodeName."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent
from scheduler.framework.status import Code
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.nodename import ERR_REASON, NodeName
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.framework import new_snapshot


@pytest.mark.parametrize(
    ("pod_node", "node", "want_reject"),
    [
        ("", "foo", False),  # "no host specified"
        ("foo", "foo", False),  # "host matches"
        ("bar", "foo", True),  # "host doesn't match"
    ],
    ids=["no-host", "match", "mismatch"],
)
def test_filter(pod_node: str, node: str, want_reject: bool) -> None:
    st = NodeName().filter(
        CycleState(), PodInfo(make_pod("p", node_name=pod_node)), NodeInfo(make_node(node))
    )
    if want_reject:
        assert st is not None
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert st.reasons == (ERR_REASON,)
    else:
        assert st is None


@pytest.mark.parametrize("target", ["", "n3", "n17", "missing"])
def test_batch_matches_per_node(target: str) -> None:
    nodes = [NodeInfo(make_node(f"n{i}")) for i in range(20)]
    snap = new_snapshot(nodes)
    idx = np.array(random.Random(1).sample(range(20), 15))
    pod = PodInfo(make_pod("p", node_name=target))
    pl = NodeName()
    want = [pl.filter(CycleState(), pod, nodes[i]) is None for i in idx]
    assert pl.filter_batch(CycleState(), pod, snap, idx).tolist() == want


def test_node_add_registered_without_hint() -> None:
    """node_name.go EventsToRegister (queueing hints on): Node/Add and no QueueingHintFn, so
    every added node retries the pod."""
    (ev,) = NodeName().events_to_register()
    assert ev.event == ClusterEvent("Node", ActionType.ADD)
    assert ev.hint is None
