"""unschedulablePods' filing (backend/unschedulable_pods.py): gated pods are filed by their
gating plugin, so an event looks at them only when that plugin registered for it; the pods an
event may move come in the order they were first added, as the whole map used to give them."""

from __future__ import annotations

import pytest

from scheduler.backend.unschedulable_pods import UnschedulablePods
from scheduler.framework.interface import QueuedPodInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod


def _q(name: str, gate: str = "") -> QueuedPodInfo:
    q = QueuedPodInfo(PodInfo(make_pod(name)), 0.0)
    q.gated = bool(gate)
    q.gating_plugin = gate
    return q


@pytest.mark.parametrize(
    ("interested", "want"),
    [
        (set(), ["a", "c"]),  # an event no gating plugin registered for: gated pods not walked
        ({"SchedulingGates"}, ["a", "b", "c"]),
        ({"Other"}, ["a", "c", "d"]),
        ({"SchedulingGates", "Other"}, ["a", "b", "c", "d"]),
    ],
)
def test_candidates_follow_the_gating_plugins(interested: set[str], want: list[str]) -> None:
    u = UnschedulablePods()
    for q in (_q("a"), _q("b", "SchedulingGates"), _q("c"), _q("d", "Other")):
        u.add_or_update(q)
    assert [q.pod.name for q in u.candidates(lambda p: p in interested)] == want
    assert u.gated_count() == 2 and len(u) == 4


def test_refiling_a_changed_entry() -> None:
    # Callers change an entry in place (gated -> not) and file it again: it leaves its group.
    u = UnschedulablePods()
    q = _q("a", "SchedulingGates")
    assert u.add_or_update(q)
    assert u.is_gated(q.pod.uid)
    q.gated, q.gating_plugin = False, ""
    assert not u.add_or_update(q)
    assert not u.is_gated(q.pod.uid) and u.gated_count() == 0
    assert [x.pod.name for x in u.candidates(lambda p: False)] == ["a"]
    assert u.delete(q.pod.uid) is q and len(u) == 0 and u.candidates(lambda p: True) == []
