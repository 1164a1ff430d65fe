"""NodePorts; cases from upstream plugins/nodeports/node_ports_test.go and HostPortInfo tests."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import SKIP, Code
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.nodeports import ERR_REASON, NodePorts, fits_ports
from scheduler.testing.builders import MakeNode, MakePod, make_node, make_pod
from scheduler.testing.framework import new_snapshot


def pod_with(*specs: str, name: str = "p", node: str = "") -> dict:
    """Pods like upstream's newPod("m1", "UDP/127.0.0.1/8080", ...): protocol/hostIP/hostPort."""
    w = MakePod().name(name).node(node)
    for s in specs:
        proto, ip, port = s.split("/")
        w.host_port(int(port), proto, ip)
    return w.obj()


def node_with(*pods: dict) -> NodeInfo:
    return MakeNode().name("m1").info(*pods)


CASES = [
    # (upstream TestNodePorts case name, pod ports, existing pod ports, want conflict)
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], False),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], False),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    (
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        True,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        True,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ["UDP/127.0.0.1/8001"],
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        True,
    ),
    # Not upstream: an empty hostIP is 0.0.0.0 on both sides; "::" is not a wildcard to the scheduler.
    ("empty ip is wildcard", ["TCP//8001"], ["TCP/10.1.1.1/8001"], True),
    ("ipv6 any is literal", ["TCP/10.1.1.1/8001"], ["TCP/::/8001"], False),
]


@pytest.mark.parametrize(
    ("want_ports", "used_ports", "conflict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_filter(want_ports: list[str], used_ports: list[str], conflict: bool) -> None:
    pl = NodePorts()
    pod = PodInfo(pod_with(*want_ports))
    node = node_with(pod_with(*used_ports, name="existing", node="m1"))
    state = CycleState()
    assert pl.pre_filter(state, pod, [node]) is None
    st = pl.filter(state, pod, node)
    if conflict:
        assert st is not None
        assert st.code == Code.UNSCHEDULABLE
        assert st.reasons == (ERR_REASON,)
    else:
        assert st is None


def test_pre_filter_skip_without_host_ports() -> None:
    # TestNodePorts "skip filter"; a containerPort without hostPort does not count either.
    pl = NodePorts()
    assert pl.pre_filter(CycleState(), PodInfo(make_pod("p")), []) == SKIP
    raw = make_pod("p", containers=[{"name": "c", "ports": [{"containerPort": 80}]}])
    assert pl.pre_filter(CycleState(), PodInfo(raw), []) == SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    # TestPreFilterDisabled: Filter without PreFilter state reports an Error status.
    st = NodePorts().filter(CycleState(), PodInfo(pod_with("TCP/0.0.0.0/80")), NodeInfo(make_node("n")))
    assert st is not None and st.code == Code.ERROR


def test_sidecar_init_container_ports_count() -> None:
    # schedutil.GetHostPorts: restartable (sidecar) init containers' host ports count; plain init ones don't.
    sidecar = {"name": "s", "restartPolicy": "Always", "ports": [{"containerPort": 9000, "hostPort": 9000}]}
    plain = {"name": "i", "ports": [{"containerPort": 9001, "hostPort": 9001}]}
    existing = PodInfo(make_pod("e", node_name="m1", init_containers=[sidecar, plain]))
    assert [(h.port, h.protocol) for h in existing.host_ports] == [(9000, "TCP")]
    node = NodeInfo(make_node("m1"))
    node.add_pod(existing)
    assert ("TCP", 9000) in node.used_ports and ("TCP", 9001) not in node.used_ports
    pl = NodePorts()
    for port, want in ((9000, False), (9001, True)):
        pod = PodInfo(pod_with(f"TCP/0.0.0.0/{port}"))
        state = CycleState()
        pl.pre_filter(state, pod, [node])
        assert (pl.filter(state, pod, node) is None) is want
    node.remove_pod(existing)
    assert not node.used_ports


@pytest.mark.parametrize("seed", range(6))
def test_batch_matches_per_node(seed: int) -> None:
    rng = random.Random(seed)

    def rand_port() -> str:
        return f"{rng.choice(['TCP', 'UDP'])}/{rng.choice(['', '0.0.0.0', '10.0.0.1', '10.0.0.2'])}/{rng.choice([80, 81])}"  # noqa: E501

    nodes = []
    for i in range(50):
        ni = NodeInfo(make_node(f"n{i}"))
        for j in range(rng.randint(0, 2)):
            ni.add_pod(
                PodInfo(
                    pod_with(*[rand_port() for _ in range(rng.randint(0, 2))], name=f"e{i}-{j}", node=f"n{i}")
                )
            )
        nodes.append(ni)
    snap = new_snapshot(nodes)
    pl = NodePorts()
    for _ in range(10):
        pod = PodInfo(pod_with(*[rand_port() for _ in range(rng.randint(1, 3))]))
        state = CycleState()
        pl.pre_filter(state, pod, nodes)
        idx = np.array(rng.sample(range(50), rng.randint(1, 50)))
        want = [pl.filter(state, pod, nodes[i]) is None for i in idx]
        got = pl.filter_batch(state, pod, snap, idx)
        assert got is not None
        assert got.tolist() == want


HINT_CASES = [
    # upstream Test_isSchedulableAfterPodDeleted
    ("skip-queue-on-unscheduled", make_pod("old"), QueueingHint.QUEUE_SKIP),
    ("skip-queue-on-non-hostport", make_pod("old", node_name="fake-node"), QueueingHint.QUEUE_SKIP),
    (
        "skip-queue-on-unrelated-hostport",
        make_pod("old", node_name="fake-node", host_ports=[8081]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-released-hostport",
        make_pod("old", node_name="fake-node", host_ports=[8080]),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(("old", "want"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES])
def test_pod_deleted_hint(old: dict, want: QueueingHint) -> None:
    ev = NodePorts().events_to_register()[0]
    assert ev.event.resource == "AssignedPod" and ev.hint is not None
    pod = PodInfo(make_pod("p", host_ports=[8080]))
    assert ev.hint(pod, PodInfo(old), None) == want
    assert ev.hint(pod, old, None) == want  # raw dicts are accepted too


def _init_port_pod(sidecar: bool) -> PodInfo:
    c: dict = {"name": "init", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}
    if sidecar:
        c["restartPolicy"] = "Always"
    return PodInfo(make_pod("p", init_containers=[c]))


def test_non_sidecar_init_container_using_host_port() -> None:
    """TestNodePorts "non-sidecar initContainer using hostPort": PreFilter skips."""
    assert NodePorts().pre_filter(CycleState(), _init_port_pod(False), []) == SKIP


def test_tcp_host_port_conflict_from_sidecar_init_container() -> None:
    """TestNodePorts "TCP hostPort conflict from sidecar initContainer"."""
    pl = NodePorts()
    pod = _init_port_pod(True)
    node = node_with(pod_with("TCP/0.0.0.0/8001", name="m1", node="m1"))
    state = CycleState()
    assert pl.pre_filter(state, pod, [node]) is None
    st = pl.filter(state, pod, node)
    assert st is not None and st.code == Code.UNSCHEDULABLE and st.reasons == (ERR_REASON,)


@pytest.mark.parametrize(
    ("desc", "want", "existing", "fits"),
    [
        ("non-conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True),
        (
            "multiple non-conflicting ports",
            ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
            ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
            True,
        ),
        ("same ports on different protocols", ["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True),
        ("conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False),
        (
            "multiple ports, some conflicting",
            ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
            ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
            False,
        ),
    ],
)
def test_fits(desc: str, want: list[str], existing: list[str], fits: bool) -> None:
    """node_ports_test.go TestFits."""
    pod = PodInfo(pod_with(*want))
    node = node_with(pod_with(*existing, name="e", node="m1"))
    assert fits_ports(pod.host_ports, node.used_ports) is fits
