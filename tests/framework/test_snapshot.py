"""Snapshot columns: the sparse extended-resource columns answer what dense ones would.

Scalar columns used to be dense, one per name ever seen; a cluster whose every node has its own
resource name (scheduler_perf misc/performance-config.yaml, SchedulingWithExtendedResource:
``foo.com/bar-{{.Index}}`` on node and pod) made that names x nodes. The reference below is the
dense form, rebuilt from the NodeInfos after every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from scheduler.framework import snapshot as snapshot_mod
from scheduler.framework.snapshot import NodeColumns, Snapshot
from scheduler.model.node import NodeInfo
from scheduler.testing.builders import make_node, node_info, pod_info


def _dense(nodes: list[NodeInfo], name: str, req: bool) -> np.ndarray:
    return np.array([(n.requested if req else n.allocatable).scalar.get(name, 0) for n in nodes], dtype=np.int64)


def _check(snap: Snapshot, names: set[str], unknown: str = "never.io/seen") -> None:
    cols = snap.columns
    for name in sorted(names):
        alloc, req = cols.scalar_alloc.get(name), cols.scalar_req.get(name)
        assert alloc is not None and req is not None, name
        assert alloc.tolist() == _dense(snap.node_infos, name, False).tolist(), name
        assert req.tolist() == _dense(snap.node_infos, name, True).tolist(), name
    assert cols.scalar_alloc.get(unknown) is None
    with pytest.raises(KeyError):
        cols.scalar_req[unknown]


def _own_resource_node(i: int) -> NodeInfo:
    return node_info(make_node(f"n{i}", extra={f"foo.com/bar-{i}": "1"}))


@dataclass
class Case:
    name: str
    nodes: int
    dense_keep: int


CASES = [
    Case("every name dense", nodes=5, dense_keep=32),
    # More names than dense columns kept: columns are rebuilt from the sparse values.
    Case("names beyond the dense columns", nodes=12, dense_keep=3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scalar_columns_match_dense(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_mod, "DENSE_SCALARS", case.dense_keep)
    snap = Snapshot()
    nodes = [_own_resource_node(i) for i in range(case.nodes)]
    snap.set_nodes(nodes)
    names = {f"foo.com/bar-{i}" for i in range(case.nodes)}
    _check(snap, names)

    # A pod asking for node 1's resource lands there: its requested column follows in place.
    ni = snap.node_infos[1].clone()
    ni.add_pod(pod_info("p1", requests={"foo.com/bar-1": "1"}))
    snap.replace_node(ni, False)
    _check(snap, names)
    assert snap.columns.scalar_req["foo.com/bar-1"].tolist()[1] == 1

    # A requested name no node offers: known, allocatable zeros everywhere.
    ni = snap.node_infos[2].clone()
    ni.add_pod(pod_info("p2", requests={"other.io/x": "2"}))
    snap.replace_node(ni, False)
    names.add("other.io/x")
    _check(snap, names)
    assert snap.columns.scalar_alloc["other.io/x"].tolist() == [0] * case.nodes

    # The pod goes: its node's requested value returns to zero.
    ni = snap.node_infos[1].clone()
    ni.remove_pod(ni.pods[0])
    snap.replace_node(ni, False)
    _check(snap, names)
    assert snap.columns.scalar_req["foo.com/bar-1"].tolist() == [0] * case.nodes

    # A node changes its resources: the name it dropped reads zero there, the new one appears.
    changed = node_info(make_node("n0", extra={"gpu.io/card": "4"}))
    snap.replace_node(changed, True)
    names.add("gpu.io/card")
    _check(snap, names)
    assert snap.columns.scalar_alloc["foo.com/bar-0"].tolist() == [0] * case.nodes
    assert snap.columns.scalar_alloc["gpu.io/card"].tolist() == [4] + [0] * (case.nodes - 1)


def test_poisoned_node_offers_no_scalars() -> None:
    cols = NodeColumns(2)
    nodes = [_own_resource_node(0), _own_resource_node(1)]
    for i, ni in enumerate(nodes):
        cols.set_node(i, ni)
    assert cols.scalar_alloc["foo.com/bar-1"].tolist() == [0, 1]
    cols._poison(1, nodes[1], OverflowError("test"))
    assert cols.scalar_alloc["foo.com/bar-1"].tolist() == [0, 0]
    assert cols.scalar_alloc["foo.com/bar-0"].tolist() == [1, 0]


# Snapshot.changed_since answers from its change log what scanning node_seq / label_seq
# answers (the reference below), including after the log was trimmed and after set_nodes.
# Steps: ("replace", position, node_changed) or ("set_nodes",).
_CHANGE_CASES = {
    "none since the list": [],
    "one node": [("replace", 2, False)],
    "labels and usage": [("replace", 1, True), ("replace", 3, False), ("replace", 1, False)],
    "same node again": [("replace", 0, False)] * 5,
    "log trimmed": [("replace", k % 4, k % 3 == 0) for k in range(150)],
    "rebuilt list": [("replace", 1, True), ("set_nodes",), ("replace", 2, False)],
}


@pytest.mark.parametrize("steps", list(_CHANGE_CASES.values()), ids=list(_CHANGE_CASES))
def test_changed_since_equals_scanning_the_seq_arrays(steps: list[tuple]) -> None:
    snap = Snapshot()
    snap.set_nodes([node_info(make_node(f"n{i}")) for i in range(4)])
    for step in steps:
        if step[0] == "set_nodes":
            snap.set_nodes([ni.clone() for ni in snap.node_infos])
            continue
        _, pos, node_changed = step
        snap.replace_node(snap.node_infos[pos].clone(), node_changed)
    for seq in range(-1, snap.change_seq + 2):
        for labels in (False, True):
            arr = snap.label_seq if labels else snap.node_seq
            want = np.flatnonzero(arr > seq).tolist()
            assert snap.changed_since(seq, labels).tolist() == want, (seq, labels)
