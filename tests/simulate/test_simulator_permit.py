"""`simulate` with Permit plugins that make pods wait: deterministic outcomes, the live
scheduler's messages (upstream waiting_pods_map.go's timeout, schedule_one.go's binding cycle)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.interface import PODS_TO_ACTIVATE_KEY, EnqueueExtensions, PodsToActivate
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import WaitingPod
from scheduler.model.pod import PodInfo
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.permit import FakePermit, with_plugins


class Pairs(FakePermit):
    """Pods labelled pair=<id> wait until a second pod of the pair reaches Permit, which then
    lets the first go (a two-pod gang); unlabelled pods pass."""

    name = "Pairs"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        pair = pod.labels.get("pair")
        if pair is None:
            return None, 0.0
        partners: list[WaitingPod] = []
        self.handle.iterate_over_waiting_pods(
            lambda wp: partners.append(wp) if wp.pod.labels.get("pair") == pair else None
        )
        if partners:
            for wp in partners:
                wp.allow(self.name)
            return None, 0.0
        return Status(Code.WAIT, "waiting for the pair"), 120.0


def simulate(docs: list[dict[str, Any]], *plugins: type) -> list[tuple[str, str | None, str]]:
    cfg, registry = with_plugins(*plugins)
    sim = Simulator(build_cluster(docs), cfg, seed=1, registry=registry)
    return [(out.pod.name, out.node, out.message) for out in sim.attempts()]


def test_a_waiting_pod_is_placed_when_a_later_pod_allows_it() -> None:
    docs = [make_node("n1", cpu="4"), make_pod("a", cpu="1", labels={"pair": "x"}),
            make_pod("solo", cpu="1"), make_pod("b", cpu="1", labels={"pair": "x"})]
    # a waits (nothing printed yet), solo is placed, b lets a go: a's outcome follows b's.
    assert simulate(docs, Pairs) == [("solo", "n1", ""), ("b", "n1", ""), ("a", "n1", "")]


def test_a_wait_still_open_at_the_end_times_out_with_the_live_message() -> None:
    docs = [make_node("n1", cpu="1"), make_pod("a", cpu="1", labels={"pair": "x"}), make_pod("c", cpu="1")]
    # a holds the only cpu while it waits: c does not fit; at the end a's wait runs out.
    got = simulate(docs, Pairs)
    assert [(n, node) for n, node, _ in got] == [("c", None), ("a", None)]
    assert got[1][2] == "0/1 nodes are available: 1 rejected due to timeout after waiting 2m0s at plugin Pairs."


def test_open_waits_end_shortest_timeout_first() -> None:
    class Timed(FakePermit):
        name = "Timed"

        def permit(self, state, pod, node_name):
            return Status(Code.WAIT), float(pod.labels["t"])

    timeouts = (("x", "30"), ("y", "10"), ("z", "30"))
    docs = [make_node("n1", cpu="4")] + [make_pod(n, labels={"t": t}) for n, t in timeouts]
    got = simulate(docs, Timed)
    assert [n for n, _, _ in got] == ["y", "x", "z"]
    assert got[0][2] == "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin Timed."


def test_a_rejected_waiting_pod_gives_its_room_back() -> None:
    class Reject(FakePermit):
        """A pod named "stop" rejects every waiting pod."""

        name = "Reject"

        def permit(self, state, pod, node_name):
            if pod.name == "stop":
                self.handle.iterate_over_waiting_pods(lambda wp: wp.reject(self.name, "stopped"))
                return None, 0.0
            return Status(Code.WAIT), 60.0

    docs = [make_node("n1", cpu="2"), make_pod("a", cpu="1"), make_pod("stop", cpu="1"), make_pod("c", cpu="1")]
    got = simulate(docs, Reject)
    assert got[:2] == [("stop", "n1", ""), ("a", None, "0/1 nodes are available: 1 stopped.")]
    # a's cpu is free again: c fits (and then waits until the end).
    assert got[2][0] == "c" and got[2][1] is None and "timeout" in got[2][2]


def test_activate_tries_a_failed_pod_again() -> None:
    class Opener(FakePermit, EnqueueExtensions):
        """"blocked" is rejected until "key" has been placed; "key" activates it."""

        name = "Opener"
        placed = False

        def permit(self, state, pod, node_name):
            if pod.name == "blocked" and not type(self).placed:
                return Status(Code.UNSCHEDULABLE, "locked"), 0.0
            if pod.name == "key":
                type(self).placed = True
                blocked = PodInfo(make_pod("blocked"))
                state.read(PODS_TO_ACTIVATE_KEY, PodsToActivate).pods[blocked.key] = blocked
            return None, 0.0

        def events_to_register(self):
            return [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD))]

    docs = [make_node("n1"), make_pod("blocked"), make_pod("key")]
    assert simulate(docs, Opener) == [
        ("blocked", None, "0/1 nodes are available: 1 locked."), ("key", "n1", ""), ("blocked", "n1", "")
    ]
