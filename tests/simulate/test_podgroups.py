"""`simulate` with pod groups (GenericWorkload and friends): each group's first cycle, its pods'
outcomes and messages, and the PodGroupScheduled condition the live scheduler writes.

Expected messages are kube-scheduler v1.36.3's (schedule_one_podgroup.go,
gangscheduling.go); the e2e suite (e2e/test_gang.py) compares them with the binary's.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.simulate.simulator import InputError, build_cluster, run
from scheduler.testing.builders import make_node, make_pod
from tests.plugins._podgroup_helpers import group_pod, make_pod_group

GANG = FeatureGates({"GenericWorkload": True, "GangScheduling": True})
TAS = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True})
WAIT_MSG = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


def _run(tmp_path: Path, docs: list[dict[str, Any]], gates: FeatureGates = DEFAULT_GATES) -> list[dict[str, Any]]:
    p = tmp_path / "cluster.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(p), None, 1, "json", stream=buf, gates=gates) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _nodes(n: int, cpu: str = "1", zones: int = 0) -> list[dict[str, Any]]:
    return [make_node(f"n{i}", cpu=cpu, labels={"zone": f"z{i % zones}"} if zones else None) for i in range(n)]


def _gang(name: str, size: int, min_count: int, topology: str | None = None, cpu: str = "1") -> list[dict[str, Any]]:
    return [
        make_pod_group(name, min_count=min_count, topology=topology),
        *(group_pod(f"{name}-{i}", name, cpu=cpu) for i in range(size)),
    ]


def test_gang_of_n_on_room_for_n_minus_1_binds_nothing(tmp_path: Path) -> None:
    lines = _run(tmp_path, [*_nodes(2), *_gang("g", 3, 3)], GANG)
    *pods, group = lines
    assert [p["node"] for p in pods] == [None, None, None]
    # The two that fit waited at Permit; the third fit nowhere (its own FitError).
    assert [p["message"] for p in pods[:2]] == [WAIT_MSG, WAIT_MSG]
    assert pods[2]["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert group == {
        "podGroup": "default/g",
        "cycle": 1,
        "result": "unschedulable",
        "condition": {
            "type": "PodGroupScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "pod group is unschedulable",
        },
        "pods": {"default/g-0": None, "default/g-1": None, "default/g-2": None},
        "placements": {},
        "placementMessages": {},
        "victims": [],
    }


def test_gang_that_fits_binds_all(tmp_path: Path) -> None:
    *pods, group = _run(tmp_path, [*_nodes(3), *_gang("g", 3, 3)], GANG)
    assert sorted(p["node"] for p in pods) == ["n0", "n1", "n2"]
    assert group["result"] == "scheduled"
    assert group["condition"] == {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": ""}


def test_gang_above_min_count_binds_what_fits(tmp_path: Path) -> None:
    # minCount 2 of 3 pods on room for 2: the group is scheduled; the third is requeued alone.
    *pods, group = _run(tmp_path, [*_nodes(2), *_gang("g", 3, 2)], GANG)
    by_name = {p["pod"]: p for p in pods}
    assert [by_name[f"default/g-{i}"]["node"] is not None for i in range(3)] == [True, True, False]
    assert by_name["default/g-2"]["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert group["result"] == "scheduled"
    assert [n is not None for n in group["pods"].values()] == [True, True, False]


def test_topology_constrained_gang_lands_in_one_domain(tmp_path: Path) -> None:
    # Four 1-cpu nodes in two zones (n0, n2 in z0; n1, n3 in z1); a gang of 2 on "zone".
    *pods, group = _run(tmp_path, [*_nodes(4, zones=2), *_gang("g", 2, 2, topology="zone")], TAS)
    nodes = {p["node"] for p in pods}
    assert nodes in ({"n0", "n2"}, {"n1", "n3"})
    assert group["result"] == "scheduled"
    # Both zones hold the whole gang: PodGroupPodsCount ties them, the pick is random.
    assert set(group["placements"]) == {"z0", "z1"}
    assert group["placements"]["z0"] == group["placements"]["z1"]


def test_topology_constrained_gang_larger_than_any_domain(tmp_path: Path) -> None:
    *pods, group = _run(tmp_path, [*_nodes(4, zones=2), *_gang("g", 3, 3, topology="zone")], TAS)
    assert all(p["node"] is None for p in pods)
    assert group["condition"]["message"] == (
        "0/2 placements are available, first placement status: pod group is unschedulable"
    )


def test_without_the_gates_group_pods_are_scheduled_one_by_one(tmp_path: Path) -> None:
    lines = _run(tmp_path, [*_nodes(2), *_gang("g", 3, 3)])
    assert [line.get("node") for line in lines] == ["n0", "n1", None]
    assert all("podGroup" not in line for line in lines)


def test_two_gangs_competing_for_one_slot_set(tmp_path: Path) -> None:
    # Room for one gang of 2: the first (queue order) takes it, the second binds nothing.
    lines = _run(tmp_path, [*_nodes(2), *_gang("a", 2, 2), *_gang("b", 2, 2)], GANG)
    groups = {r["podGroup"]: r for r in lines if "podGroup" in r}
    assert groups["default/a"]["result"] == "scheduled"
    assert groups["default/b"]["result"] == "unschedulable"
    assert all(n is None for n in groups["default/b"]["pods"].values())


def test_gang_waiting_for_its_pod_group_is_not_attempted(tmp_path: Path) -> None:
    p = tmp_path / "cluster.yaml"
    p.write_text(yaml.safe_dump_all([*_nodes(2), group_pod("orphan", "missing", cpu="1")]))
    buf = io.StringIO()
    assert run(str(p), None, 1, "text", stream=buf, gates=GANG) == 0
    assert 'default/orphan: not attempted (waiting for pods\'s pod group "missing" to appear in scheduling queue)' in (
        buf.getvalue()
    )


def _class(name: str, value: int, default: bool = False) -> dict[str, Any]:
    pc: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
    pc["value"] = value
    if default:
        pc["globalDefault"] = True
    return pc


def test_pod_group_priority_is_resolved_from_its_class() -> None:
    """The Priority admission plugin resolves a PodGroup's spec.priority from its
    priorityClassName (admitPodGroup, with WorkloadAwarePreemption), else the global default."""
    named = make_pod_group("a", min_count=1)
    named["spec"]["priorityClassName"] = "high"
    given = make_pod_group("c", min_count=1, priority=7)
    c = build_cluster([named, make_pod_group("b", min_count=1), given, _class("high", 100), _class("d", 5, True)])
    got = {k: pg.priority for k, pg in c.listers.pod_groups.items()}
    assert got == {"default/a": 100, "default/b": 5, "default/c": 7}
    missing = make_pod_group("x", min_count=1)
    missing["spec"]["priorityClassName"] = "nope"
    with pytest.raises(InputError, match="PodGroup default/x: no PriorityClass with name nope was found"):
        build_cluster([missing])


def test_workload_aware_preemption_reports_its_victims(tmp_path: Path) -> None:
    """A gang of 2 (priority 100) on two full nodes: PodGroup preemption evicts the low pods
    and the group waits on it (schedule_one_podgroup.go runWorkloadAwarePreemption)."""
    wap = FeatureGates(
        {
            "GenericWorkload": True,
            "GangScheduling": True,
            "TopologyAwareWorkloadScheduling": True,
            "WorkloadAwarePreemption": True,
        }
    )
    low = [make_pod(f"low-{i}", cpu="1", node_name=f"n{i}", priority=10) for i in range(2)]
    group = make_pod_group("g", min_count=2, priority=100)
    pods = [group_pod(f"g-{i}", "g", cpu="1", priority=100) for i in range(2)]
    lines = _run(tmp_path, [*_nodes(2), *low, group, *pods], wap)
    first, second = (r for r in lines if "podGroup" in r)
    rec = first
    assert rec["cycle"] == 1
    assert rec["result"] == "waiting_on_preemption"
    assert rec["victims"] == ["default/low-0", "default/low-1"]
    # The placement algorithm's status stays the group's (the v1.36.3 binary writes the same,
    # differential workload mode, WorkloadAwarePreemption seeds).
    assert rec["condition"] == {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 placements are available, first placement status: pod group is unschedulable",
    }
    # The group's next cycle (issue 22: simulate used to stop at the first): the victims are
    # gone, each pod tries its nominated node first, and the whole group is placed.
    assert second["cycle"] == 2
    assert second["result"] == "scheduled"
    assert second["victims"] == []
    assert sorted(second["pods"].values()) == ["n0", "n1"]
    assert second["condition"]["reason"] == "Scheduled"
    # Each cycle's pod outcomes come before its group line: unbound, then bound.
    pod_lines = [(r["pod"], r["node"]) for r in lines if "pod" in r and r["pod"].startswith("default/g-")]
    assert [n for _, n in pod_lines[:2]] == [None, None]
    assert sorted(n for _, n in pod_lines[2:]) == ["n0", "n1"]


def test_text_output_numbers_a_later_cycle(tmp_path: Path) -> None:
    wap = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True,
                        "WorkloadAwarePreemption": True})
    low = [make_pod(f"low-{i}", cpu="1", node_name=f"n{i}", priority=10) for i in range(2)]
    docs = [*_nodes(2), *low, make_pod_group("g", min_count=2, priority=100),
            *(group_pod(f"g-{i}", "g", cpu="1", priority=100) for i in range(2))]
    p = tmp_path / "cluster.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(p), None, 1, "text", stream=buf, gates=wap) == 0
    text = buf.getvalue()
    assert "podgroup default/g: waiting_on_preemption (0/2 pods bound)" in text
    assert "podgroup default/g, cycle 2: scheduled (2/2 pods bound)" in text
    assert text.endswith("2/4 pods scheduled\n")  # four attempts: each pod in each cycle
