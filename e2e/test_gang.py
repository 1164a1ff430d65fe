"""End-to-end: workload-aware scheduling (kube-scheduler v1.36.3's alpha: GenericWorkload,
GangScheduling, TopologyAwareWorkloadScheduling, WorkloadAwarePreemption) on the local control
plane, which serves scheduling.k8s.io/v1alpha2 with those gates on. Each case runs twice, with
the same assertions: by ``pyscheduler run`` and by the real kube-scheduler binary, both with the
same gates, so every message checked here is the binary's own text too.

* a gang of N on room for N-1 binds nothing, leaves nothing assumed (a plain pod still fits),
  and gets PodGroupScheduled=False with upstream's messages;
* a gang that fits is bound whole and gets PodGroupScheduled=True;
* a gang with a topology constraint lands in one domain;
* two gangs competing for one set of slots do not deadlock: one is bound, and the other once
  the first is gone.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.differential import kubescheduler
from e2e.support.objects import GROUP, make_pod, unique_name
from e2e.support.waits import events_for, wait_bound, wait_for
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

BINARY = "e2e-kube-scheduler"
GATES = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
PG = ("scheduling.k8s.io", "v1alpha2", "podgroups")
GANG_WAIT = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


@pytest.fixture(params=["pyscheduler", BINARY])
def sched_name(
    request: pytest.FixtureRequest,
    tmp_path: pathlib.Path,
    kubeconfig: str,
    scheduler_config_path: str,
    scheduler_kubeconfig: str,
) -> Iterator[str]:
    """The scheduler under test, both with the workload gates on: ours (the manifests'
    configuration under its ServiceAccount, so the PodGroup RBAC is exercised) or the binary."""
    flags = [f"--feature-gates={GATES}"]
    if request.param == "pyscheduler":
        with SchedulerProcess(
            scheduler_config_path, scheduler_kubeconfig, tmp_path, port=free_port(), extra_flags=flags
        ):
            yield "pyscheduler"
        return
    with kubescheduler.running(BINARY, kubeconfig, tmp_path, extra_args=flags):
        yield BINARY


# ---------------------------------------------------------------------------------------------
# Helpers


def pod_group(
    api: client.CustomObjectsApi, namespace: str, name: str, min_count: int, topology: str | None = None
) -> None:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    body = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}
    api.create_namespaced_custom_object(*PG[:2], namespace, PG[2], body)


def gang_pods(core: client.CoreV1Api, namespace: str, sched: str, group: str, count: int, cpu: str = "1") -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        pod = make_pod(
            name,
            namespace,
            scheduler_name=sched,
            cpu=cpu,
            memory=None,
            node_selector={GROUP: namespace},
            schedulingGroup={"podGroupName": group},
        )
        core.create_namespaced_pod(namespace, pod)
    return names


def condition(api: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any] | None:
    pg = api.get_namespaced_custom_object(*PG[:2], namespace, PG[2], name)
    for c in (pg.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodGroupScheduled":
            return {k: c.get(k) for k in ("type", "status", "reason", "message")}
    return None


def wait_condition(api: client.CustomObjectsApi, namespace: str, name: str, status: str) -> dict[str, Any]:
    return wait_for(
        lambda: (c := condition(api, namespace, name)) is not None and c["status"] == status and c,
        timeout=60,
        desc=f"PodGroupScheduled={status} on {namespace}/{name}",
    )


def bound(core: client.CoreV1Api, namespace: str, names: list[str]) -> dict[str, str | None]:
    return {n: core.read_namespaced_pod(n, namespace).spec.node_name for n in names}


def failed_messages(api_client: client.ApiClient, namespace: str, names: list[str]) -> dict[str, str]:
    """Each pod's first FailedScheduling note (waits until every pod has one)."""

    def all_failed() -> dict[str, str] | None:
        out: dict[str, str] = {}
        for n in names:
            evs = events_for(api_client, namespace, n, "FailedScheduling")
            if not evs:
                return None
            out[n] = sorted(evs, key=lambda e: e.metadata.creation_timestamp)[0].note
        return out

    return wait_for(all_failed, timeout=60, desc=f"FailedScheduling for {names}")


# ---------------------------------------------------------------------------------------------
# Cases


def test_gang_of_n_on_room_for_n_minus_1_binds_nothing(api_client, core_v1, node_factory, namespace, sched_name):
    custom = client.CustomObjectsApi(api_client)
    node_factory(2, cpu="1", labels={GROUP: namespace})
    pod_group(custom, namespace, "gang", 3)
    pods = gang_pods(core_v1, namespace, sched_name, "gang", 3)
    msgs = failed_messages(api_client, namespace, pods)
    print(f"{sched_name}: {msgs}")
    # The two pods that fit waited at Permit for a quorum that never came; the third fit nowhere.
    waits = sorted(m for m in msgs.values() if m == GANG_WAIT)
    assert len(waits) == 2, msgs
    [other] = [m for m in msgs.values() if m != GANG_WAIT]
    assert other.startswith("0/") and "2 Insufficient cpu." in other, other
    assert "preemption: not eligible due to workload aware preemption enabled" in other, other
    assert set(bound(core_v1, namespace, pods).values()) == {None}
    assert wait_condition(custom, namespace, "gang", "False") == {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        # TopologyAwareWorkloadScheduling: one placement (no constraint), then PodGroup preemption.
        "message": "0/1 placements are available, first placement status: pod group is unschedulable, "
        "No preemption victims found for incoming preemptor",
    }
    # Nothing stays assumed: a plain pod takes one of the two nodes at once.
    plain = make_pod(
        "plain", namespace, scheduler_name=sched_name, cpu="1", memory=None, node_selector={GROUP: namespace}
    )
    core_v1.create_namespaced_pod(namespace, plain)
    assert wait_bound(core_v1, namespace, "plain", timeout=30)
    assert set(bound(core_v1, namespace, pods).values()) == {None}


def test_gang_that_fits_binds_all(api_client, core_v1, node_factory, namespace, sched_name):
    custom = client.CustomObjectsApi(api_client)
    nodes = node_factory(3, cpu="1", labels={GROUP: namespace})
    pod_group(custom, namespace, "gang", 3)
    pods = gang_pods(core_v1, namespace, sched_name, "gang", 3)
    placed = {p: wait_bound(core_v1, namespace, p, timeout=60) for p in pods}
    assert sorted(placed.values()) == sorted(nodes)
    assert wait_condition(custom, namespace, "gang", "True") == {
        "type": "PodGroupScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
    }


def test_topology_constrained_gang_lands_in_one_domain(api_client, core_v1, node_factory, namespace, sched_name):
    custom = client.CustomObjectsApi(api_client)
    key = "e2e-rack"
    node_factory(2, prefix=unique_name("rack-a"), cpu="1", labels={GROUP: namespace, key: "a"})
    node_factory(2, prefix=unique_name("rack-b"), cpu="1", labels={GROUP: namespace, key: "b"})
    pod_group(custom, namespace, "gang", 2, topology=key)
    pods = gang_pods(core_v1, namespace, sched_name, "gang", 2)
    placed = [wait_bound(core_v1, namespace, p, timeout=60) for p in pods]
    racks = {core_v1.read_node(n).metadata.labels[key] for n in placed}
    assert len(racks) == 1, placed
    assert wait_condition(custom, namespace, "gang", "True")["reason"] == "Scheduled"


def test_two_gangs_competing_for_one_slot_set_do_not_deadlock(api_client, core_v1, node_factory, namespace, sched_name):
    custom = client.CustomObjectsApi(api_client)
    node_factory(2, cpu="1", labels={GROUP: namespace})
    pod_group(custom, namespace, "a", 2)
    pod_group(custom, namespace, "b", 2)
    a = gang_pods(core_v1, namespace, sched_name, "a", 2)
    b = gang_pods(core_v1, namespace, sched_name, "b", 2)

    def one_gang_bound() -> list[str] | None:
        for gang in (a, b):
            if all(bound(core_v1, namespace, gang).values()):
                return gang
        return None

    winner = wait_for(one_gang_bound, timeout=60, desc="one gang bound")
    loser = b if winner is a else a
    assert set(bound(core_v1, namespace, loser).values()) == {None}
    for p in winner:
        with contextlib.suppress(ApiException):
            core_v1.delete_namespaced_pod(p, namespace, grace_period_seconds=0)
    # The other gang gets the room once it is free (after its backoff).
    wait_for(lambda: all(bound(core_v1, namespace, loser).values()), timeout=90, desc="the other gang bound")


def test_topology_gang_above_min_count_keeps_retrying_its_leftover(
    api_client, core_v1, node_factory, namespace, sched_name
):
    """minCount 1 of 3 on a rack: two land in rack a (the placement holding more pods), the
    third is retried back to back (a group's pods back off only, and PopFromBackoffQ pops them
    when activeQ is empty), in rack a only. The condition stays Scheduled unless a retry's write
    lands before the scheduler's informer has seen Scheduled (upstream's guard reads the lister):
    a race kube-scheduler loses too, so either is accepted, with the retry's message."""
    custom = client.CustomObjectsApi(api_client)
    key = "e2e-rack"
    node_factory(2, prefix=unique_name("rack-a"), cpu="1", labels={GROUP: namespace, key: "a"})
    node_factory(1, prefix=unique_name("rack-b"), cpu="1", labels={GROUP: namespace, key: "b"})
    # The pods first: GangScheduling holds them until their PodGroup exists, so the first
    # cycle sees all three.
    pods = gang_pods(core_v1, namespace, sched_name, "gang", 3)
    pod_group(custom, namespace, "gang", 1, topology=key)

    def two_bound() -> list[str] | None:
        nodes = [n for n in bound(core_v1, namespace, pods).values() if n]
        return nodes if len(nodes) == 2 else None

    placed = wait_for(two_bound, timeout=60, desc="two of the gang bound")
    assert {core_v1.read_node(n).metadata.labels[key] for n in placed} == {"a"}
    [left] = [p for p, n in bound(core_v1, namespace, pods).items() if not n]
    msgs = failed_messages(api_client, namespace, [left])
    assert msgs[left].startswith("0/2 nodes are available: 2 Insufficient cpu."), msgs
    cond = wait_for(lambda: condition(custom, namespace, "gang"), timeout=30, desc="a PodGroupScheduled condition")
    print(f"{sched_name}: {msgs} {cond}")
    if cond["status"] == "True":
        assert cond == {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": ""}
    else:
        first = "0/1 placements are available, first placement status: pod group is unschedulable"
        assert cond["reason"] == "Unschedulable" and cond["message"].startswith(first), cond
    assert sorted(n for n in bound(core_v1, namespace, pods).values() if n) == sorted(placed)
