"""NodeInfo: a Node object read once, and the pods accounted on it."""

from __future__ import annotations

import pytest

from scheduler.model.node import POSITIONS_FROM, NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.podrequests import DEFAULT_MEMORY_REQUEST
from scheduler.testing.builders import make_node, make_pod


def test_node_info_accounting() -> None:
    ni = NodeInfo(make_node("n1", cpu="4", memory="8Gi"))
    p1 = PodInfo(make_pod("a", cpu="1", memory="1Gi", host_ports=[8080]))
    p2 = PodInfo(make_pod("b"))
    ni.add_pod(p1)
    ni.add_pod(p2)
    assert ni.requested.milli_cpu == 1000
    assert ni.non0_cpu == 1100 and ni.non0_mem == 2**30 + DEFAULT_MEMORY_REQUEST
    assert ("TCP", 8080) in ni.used_ports
    assert ni.remove_pod(p1)
    assert ni.requested.milli_cpu == 0 and not ni.used_ports
    assert ni.allocatable.allowed_pod_number == 110


def test_allocatable_defaults_to_capacity() -> None:
    raw = make_node("n1")
    del raw["status"]["allocatable"]
    assert NodeInfo(raw).allocatable.milli_cpu == 4000


def _names(ni: NodeInfo) -> list[str]:
    return [p.name for p in ni.pods]


@pytest.mark.parametrize("count", [5, POSITIONS_FROM + 6], ids=["scanned", "indexed"])
def test_removal_moves_the_last_pod_into_the_gap_as_upstream(count: int) -> None:
    # types.go removeFromSlice: s[i] = s[len(s)-1]; the order of NodeInfo.Pods is upstream's.
    ni = NodeInfo(make_node("n1", pods=str(count + 10)))
    pods = [PodInfo(make_pod(f"p{i}", uid=f"u{i}")) for i in range(count)]
    for p in pods:
        ni.add_pod(p)
    want = [p.name for p in pods]

    def remove(name: str) -> None:
        i = want.index(name)
        last = want.pop()
        if i < len(want):
            want[i] = last

    assert ni.remove_pod(pods[1])
    remove("p1")
    assert _names(ni) == want and _names(ni)[1] == f"p{count - 1}"
    # Another object with the same uid (the watch's newer version) removes the pod too.
    assert ni.remove_pod(PodInfo(make_pod("p3", uid="u3")))
    remove("p3")
    assert _names(ni) == want
    assert not ni.remove_pod(PodInfo(make_pod("x", uid="nobody")))
    ni.add_pod(pods[1])  # added again: found again
    want.append("p1")
    assert ni.remove_pod(pods[1])
    remove("p1")
    assert _names(ni) == want and len(ni.pods) == count - 2
    # A clone keeps the order and finds its pods too, apart from the original.
    c = ni.clone()
    assert c.remove_pod(c.pods[0]) and _names(c)[0] == want[-1] and _names(ni) == want
