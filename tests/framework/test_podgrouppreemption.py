"""PodGroup preemption: victims as units (pods, or PodGroups with disruptionMode PodGroup), the
reprieve order, PDBs and the importance of victims.

Upstream: pkg/scheduler/framework/preemption/podgrouppreemption_test.go
(TestPodGroupEvaluator_SelectVictimsOnDomain, TestMoreImportantVictim).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.podgrouppreemption import PodGroupEvaluator, Victim, more_important_victim
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.testing.builders import make_node, make_pod
from tests.plugins._podgroup_helpers import make_pod_group

LOW, MID, HIGH = 0, 100, 1000


def pod(name: str, node: str, prio: int, group: str | None = None, start: int | None = None, **kw: Any) -> dict:
    raw = make_pod(name, uid=name, node_name=node, priority=prio, **kw)
    if group is not None:
        raw["spec"]["schedulingGroup"] = {"podGroupName": group}
    if start is not None:
        # Upstream uses metav1.Unix(start, 0); 1970 itself would read as "no start time" here.
        raw["status"] = {"startTime": f"2020-01-01T00:00:{start:02d}Z"}
    return raw


def pg(name: str, mode: str, prio: int = LOW) -> dict:
    return make_pod_group(name, min_count=1, disruption_mode=mode, priority=prio)


PDB_FOO = {
    "metadata": {"name": "pdb", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "foo"}}},
    "status": {"disruptionsAllowed": 0},
}


@dataclass
class Case:
    name: str
    nodes: list[str]
    pods: list[dict[str, Any]]
    # (node, capacity, blocking victims): the node offers ``capacity`` slots once they are gone.
    rules: list[tuple[str, int, set[str]]]
    want: set[str] | None  # None: Unschedulable
    groups: list[dict[str, Any]] = field(default_factory=list)
    preemptors: int = 1
    never: bool = False
    pdbs: list[dict[str, Any]] = field(default_factory=list)


CASES = [
    Case(
        "Mix of no-group and single-pod-groups",
        ["node1", "node2", "node3"],
        [pod("p1", "node1", LOW), pod("p2", "node2", LOW, "pg1"), pod("p3", "node3", LOW, "pg2")],
        [("node1", 1, {"p1"}), ("node2", 1, {"p2"}), ("node3", 1, {"p3"})],
        {"p1"},
        groups=[pg("pg1", "Pod"), pg("pg2", "Pod")],
    ),
    Case(
        "Priority: Shared group vs no group",
        ["node1", "node2", "node3"],
        [pod("p1", "node1", LOW, "pg1", 1), pod("p2", "node2", LOW, "pg1", 0), pod("p3", "node3", MID)],
        [("node1", 1, {"p1"}), ("node2", 1, {"p2"}), ("node3", 1, {"p3"})],
        {"p1"},
        groups=[pg("pg1", "Pod")],
    ),
    Case(
        "Shared Group: Preempt separately",
        ["node1", "node2"],
        [pod("p1", "node1", LOW, "pg1", 1), pod("p2", "node2", LOW, "pg1", 0)],
        [("node1", 1, {"p1"}), ("node2", 1, {"p2"})],
        {"p1"},
        groups=[pg("pg1", "Pod")],
    ),
    Case(
        "PDB: Mixed groups",
        ["node1", "node2"],
        [pod("victim-pdb", "node1", LOW, "pg1", labels={"app": "foo"}), pod("victim-no-pdb", "node2", LOW, "pg1")],
        [("node1", 1, {"victim-pdb"}), ("node2", 1, {"victim-no-pdb"})],
        {"victim-no-pdb"},
        pdbs=[PDB_FOO],
    ),
    Case(
        "PodGroup with PreemptNever does not perform preemption",
        ["node1", "node2"],
        [pod("p1", "node1", LOW), pod("p2", "node2", LOW)],
        [("node1", 1, {"p1"}), ("node2", 1, {"p2"})],
        None,
        preemptors=2,
        never=True,
    ),
    Case("Preempt single lower priority pod", ["node1"], [pod("p1", "node1", LOW)], [("node1", 1, {"p1"})], {"p1"}),
    Case(
        "Priority: Prefer lower priority victim",
        ["node1"],
        [pod("p1", "node1", LOW), pod("p2", "node1", MID), pod("p3", "node1", HIGH)],
        [("node1", 1, {"p1"}), ("node1", 1, {"p2"}), ("node1", 1, {"p3"})],
        {"p1"},
    ),
    Case(
        "Efficiency: Preempt minimum number of victims",
        ["node1"],
        [pod(f"p{i}", "node1", LOW) for i in range(1, 5)],
        [("node1", 1, {"p1", "p2"}), ("node1", 1, {"p1"})],
        {"p1"},
    ),
    Case(
        "PDB: Prefer non-violating victim",
        ["node1"],
        [pod("victim-pdb", "node1", LOW, labels={"app": "foo"}), pod("victim-no-pdb", "node1", LOW)],
        [("node1", 1, {"victim-pdb"}), ("node1", 1, {"victim-no-pdb"})],
        {"victim-no-pdb"},
        pdbs=[PDB_FOO],
    ),
    Case(
        "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation is not possible",
        ["node1"],
        [pod("p1", "node1", LOW, labels={"app": "foo"}), pod("p2", "node1", MID, labels={"app": "foo"})],
        [("node1", 1, {"p1"}), ("node1", 1, {"p2"})],
        {"p1"},
        pdbs=[PDB_FOO],
    ),
    Case(
        "PodGroup: Preempt group as a whole",
        ["node1", "node2"],
        [pod("p1", "node1", LOW, "pg1"), pod("p2", "node2", LOW, "pg1")],
        [("node1", 1, {"p1"})],
        {"p1", "p2"},
        groups=[pg("pg1", "PodGroup")],
    ),
    Case(
        "PodGroup: Prefer single pod over podGroup for preemption candidate",
        ["node1"],
        [pod("p1", "node1", LOW), pod("g1-1", "node1", LOW, "pg1"), pod("g1-2", "node1", LOW, "pg1")],
        [("node1", 1, {"g1-1", "g1-2"}), ("node1", 1, {"p1"})],
        {"p1"},
        groups=[pg("pg1", "PodGroup")],
    ),
    Case(
        "Failure: Cannot preempt the victim with higher priority",
        ["node1"],
        [pod("p1", "node1", HIGH)],
        [("node1", 1, {"p1"})],
        None,
    ),
]


@pytest.mark.parametrize("tc", CASES, ids=[c.name for c in CASES])
def test_select_victims_on_domain(tc: Case) -> None:
    infos = {n: NodeInfo(make_node(n)) for n in tc.nodes}
    for raw in tc.pods:
        p = PodInfo(raw)
        infos[p.node_name].add_pod(p)
    snap = Snapshot()
    snap.set_nodes(list(infos.values()))
    listers = Listers()
    for g in tc.groups:
        parsed = PodGroup.parse(g)
        listers.pod_groups[parsed.key] = parsed
    for d in tc.pdbs:
        b = PodDisruptionBudget.parse(d)
        listers.pdbs[b.key] = b
    ev = PodGroupEvaluator(Handle(snap, listers), "DefaultPreemption")
    preemptor = PodGroup.parse(make_pod_group("preemptor-pg", min_count=1, priority=HIGH))
    members = [
        PodInfo(
            make_pod(f"p-{i}", uid=f"p-{i}", priority=HIGH, preemptionPolicy="Never" if tc.never and i == 0 else None)
        )
        for i in range(tc.preemptors)
    ]

    def feasible() -> Status | None:
        slots = 0
        for node, capacity, blocking in tc.rules:
            names = {p.name for p in snap.node_map[node].pods}
            if not names & blocking:
                slots += capacity
        return None if slots >= len(members) else Status(Code.UNSCHEDULABLE)

    victims, st = ev.select_victims(preemptor, members, list(snap.node_infos), feasible)
    if tc.want is None:
        assert st is not None and st.is_rejected()
        return
    assert st is None
    assert {v.name for v in victims} == tc.want
    # What is not evicted is back on its node (the snapshot's columns follow).
    kept = {p.name for ni in snap.node_infos for p in ni.pods}
    assert kept == {PodInfo(r).name for r in tc.pods} - tc.want
    assert int(snap.columns.num_pods.sum()) == len(kept)


def _v(prio: int, group: bool, n: int = 1, start: int = 0) -> Victim:
    pods = [PodInfo(pod(f"x{i}", "n", prio, "g" if group else None, start)) for i in range(n)]
    return Victim(pods, prio)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (_v(HIGH, False), _v(LOW, False), True),  # vi1 has higher priority
        (_v(LOW, False), _v(HIGH, False), False),  # vi2 has higher priority
        (_v(LOW, True), _v(LOW, False), True),  # vi1 is PG, vi2 is Pod, same priority
        (_v(LOW, False), _v(LOW, True), False),  # vi1 is Pod, vi2 is PG, same priority
        (_v(LOW, False, start=1), _v(LOW, False, start=2), True),  # both Pods, vi1 older
        (_v(LOW, False, start=2), _v(LOW, False, start=1), False),  # both Pods, vi2 older
        (_v(LOW, True, n=3), _v(LOW, True, n=2), True),  # both PGs, vi1 larger
        (_v(LOW, True, n=2), _v(LOW, True, n=3), False),  # both PGs, vi2 larger
        (_v(LOW, True, n=2, start=1), _v(LOW, True, n=2, start=2), True),  # both PGs, same size, vi1 older
        (_v(LOW, True, n=2, start=2), _v(LOW, True, n=2, start=1), False),  # both PGs, same size, vi2 older
    ],
)
def test_more_important_victim(a: Victim, b: Victim, want: bool) -> None:
    assert more_important_victim(a, b) is want
