"""NodeInfo: a Node object read once, and the pods accounted on it."""

from __future__ import annotations

from scheduler.model.node import NodeInfo
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
