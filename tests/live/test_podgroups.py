"""The live loop with pod groups (GenericWorkload, GangScheduling): a popped gang pod brings its
group, the pods kept wait at Permit until the quorum allows them and are then bound, the others
are requeued; the PodGroup's PodGroupScheduled condition is patched; pods of a group are held
until their PodGroup and minCount pods exist; the scheduler_podgroup_* metrics.

Upstream: schedule_one_podgroup.go (scheduleOnePodGroup, submitPodGroupAlgorithmResult,
updatePodGroupCondition), eventhandlers.go (addPodToSchedulingQueue with GangScheduling).
"""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import generate_latest

from scheduler.config.features import FeatureGates
from scheduler.testing.builders import make_node
from scheduler.testing.harness import Harness
from tests.plugins._podgroup_helpers import group_pod, make_pod_group

GANG = FeatureGates({"GenericWorkload": True, "GangScheduling": True})


def _harness(nodes: int) -> Harness:
    h = Harness(gates=GANG)
    for i in range(nodes):
        h.sched.on_node("ADDED", make_node(f"n{i}", cpu="1"))
    return h


def _gang(h: Harness, name: str, size: int, min_count: int) -> None:
    h.sched.on_pod_group("ADDED", make_pod_group(name, min_count=min_count))
    for i in range(size):
        h.sched.on_pod("ADDED", group_pod(f"{name}-{i}", name, cpu="1"))


def _condition(h: Harness) -> dict[str, Any]:
    [(_, _, body)] = h.api.pod_group_patches
    [cond] = body["status"]["conditions"]
    return {k: cond[k] for k in ("type", "status", "reason", "message")}


async def test_gang_that_fits_is_bound_whole() -> None:
    h = _harness(3)
    _gang(h, "g", 3, 3)
    assert await h.step()
    await h.settle()
    await asyncio_drain(h)
    assert sorted(h.bound()) == ["g-0", "g-1", "g-2"]
    assert sorted(h.bound().values()) == ["n0", "n1", "n2"]
    assert _condition(h) == {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": ""}
    assert not await h.step()  # the whole group went in one cycle
    text = generate_latest(h.metrics.registry).decode()
    assert 'scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text


async def test_gang_of_n_on_room_for_n_minus_1_binds_nothing() -> None:
    h = _harness(2)
    _gang(h, "g", 3, 3)
    assert await h.step()
    await asyncio_drain(h)
    assert h.bound() == {}
    assert h.cache.assumed_pods() == []  # nothing left assumed
    assert len(h.waiting_pods()) == 0
    assert _condition(h) == {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
    }
    msgs = sorted(e["note"] for e in h.events("FailedScheduling"))
    wait = (
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod"
    )
    assert msgs[1:] == [wait, wait]
    assert msgs[0].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    # Pods of a group come back after backoff, not on events.
    assert h.queue.counts()["backoff"] == 3


async def test_gang_is_held_until_its_pod_group_and_quorum_exist() -> None:
    h = _harness(2)
    h.sched.on_pod("ADDED", group_pod("g-0", "g", cpu="1"))
    assert h.queue.counts()["gated"] == 1  # no PodGroup yet
    h.sched.on_pod_group("ADDED", make_pod_group("g", min_count=2))
    assert h.queue.counts()["gated"] == 1  # one pod of two
    h.sched.on_pod("ADDED", group_pod("g-1", "g", cpu="1"))
    assert h.queue.counts()["active"] == 2
    assert await h.step()
    await asyncio_drain(h)
    assert sorted(h.bound()) == ["g-0", "g-1"]


async def asyncio_drain(h: Harness) -> None:
    """Bindings and status patches in flight run to their end."""
    for _ in range(3):
        await h.settle()
        if h.sched.status_tasks:
            await asyncio.gather(*h.sched.status_tasks, return_exceptions=True)
