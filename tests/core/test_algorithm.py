"""algorithm.py: numFeasibleNodesToFind, start-index rotation, FitError text, selectHost."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.core.algorithm import Algorithm, Diagnosis, FitError, num_feasible_nodes_to_find
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod


# schedule_one_test.go TestNumFeasibleNodesToFind
@pytest.mark.parametrize(
    ("case", "percentage", "nodes", "want"),
    [
        ("not set percentageOfNodesToScore and nodes number not more than 50", 0, 10, 10),
        ("set percentageOfNodesToScore and nodes number not more than 50", 40, 10, 10),
        ("not set percentageOfNodesToScore and nodes number more than 50", 0, 1000, 420),
        ("set percentageOfNodesToScore and nodes number more than 50", 40, 1000, 400),
        ("not set percentageOfNodesToScore and nodes number more than 50*125", 0, 6000, 300),
        ("set percentageOfNodesToScore and nodes number more than 50*125", 40, 6000, 2400),
        ("spec example: 5000 nodes adaptive", 0, 5000, 500),
        ("spec example: 100 nodes", 0, 100, 100),
        ("small percentage is raised to 100 nodes", 1, 1000, 100),
    ],
)
def test_num_feasible_nodes_to_find(case: str, percentage: int, nodes: int, want: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == want


def _fit_error(
    statuses: dict[str, Status], num: int, absent: Status | None = None, pre: str = "", post: str = ""
) -> str:
    d = Diagnosis()
    d.node_to_status.statuses.update(statuses)
    d.node_to_status.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    d.pre_filter_msg = pre
    d.post_filter_msg = post
    return str(FitError(PodInfo(make_pod()), num, d))


U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# framework/types.go FitError.Error() and schedule_one_test.go TestSchedulerSchedulePod messages
@pytest.mark.parametrize(
    ("case", "statuses", "num", "absent", "pre", "post", "want"),
    [
        (
            "histogram sorted as strings, counts per reason",
            {
                "a": Status(U, "Insufficient cpu"),
                "b": Status(U, "Insufficient cpu", "Insufficient memory"),
                "c": Status(UU, "node(s) had untolerated taint(s)"),
            },
            3,
            None,
            "",
            "",
            "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
        ),
        (
            "lexicographic: 10 sorts before 2",
            {**{f"n{i}": Status(U, "x") for i in range(10)}, "m1": Status(U, "y"), "m2": Status(U, "y")},
            12,
            None,
            "",
            "",
            "0/12 nodes are available: 10 x, 2 y.",
        ),
        (
            "absent nodes take the PreFilterResult status",
            {"a": Status(UU, "node(s) didn't match Pod's node affinity/selector")},
            3,
            Status(UU, "node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            "",
            "",
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            "2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
        ),
        (
            "prefilter message replaces the histogram",
            {},
            2,
            Status(UU, "pod affinity terms conflict"),
            "pod affinity terms conflict",
            "",
            "0/2 nodes are available: pod affinity terms conflict.",
        ),
        (
            "postfilter message appended after a space",
            {"a": Status(U, "Insufficient cpu")},
            1,
            None,
            "",
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod.",
        ),
    ],
)
def test_fit_error_message(
    case: str, statuses: dict, num: int, absent: Status | None, pre: str, post: str, want: str
) -> None:
    assert _fit_error(statuses, num, absent, pre, post) == want


def test_select_host_picks_unique_max() -> None:
    alg = Algorithm(random.Random(0))
    assert alg.select_host(np.array([3, 9, 4, 8])) == 1


def test_select_host_ties_are_uniform_and_reproducible() -> None:
    totals = np.array([5, 7, 7, 1, 7])
    picks = [Algorithm(random.Random(s)).select_host(totals) for s in range(600)]
    assert set(picks) == {1, 2, 4}
    counts = [picks.count(i) for i in (1, 2, 4)]
    assert min(counts) > 150  # each tied node wins about a third of the time
    a = [Algorithm(random.Random(7)).select_host(totals) for _ in range(5)]
    assert len(set(a)) == 1


S1 = Status(U, "Insufficient cpu", plugin="NodeResourcesFit")
S2 = Status(UU, "node(s) had untolerated taint(s)", plugin="TaintToleration")


@pytest.mark.parametrize(
    ("statuses", "want"),
    [
        pytest.param({}, [], id="none"),
        pytest.param({"a": S1, "b": S1, "c": S1}, [(S1, 3)], id="one-run"),
        pytest.param({"a": S1, "b": S2, "c": S1, "d": S2, "e": S2}, [(S1, 2), (S2, 3)], id="alternating"),
        # Equal but distinct objects stay apart: the callers group them by plugin and reasons.
        pytest.param({"a": S1, "b": Status(U, "Insufficient cpu", plugin="NodeResourcesFit")},
                     [(S1, 1), (Status(U, "Insufficient cpu"), 1)], id="equal-not-same"),
    ],
)
def test_node_to_status_counts_each_distinct_status(statuses: dict[str, Status], want: list) -> None:
    nts = Diagnosis().node_to_status
    nts.statuses.update(statuses)
    got = nts.distinct()
    assert [(s, n) for s, n in got] == want
    assert sum(n for _, n in got) == len(statuses)
    assert [s for s, _ in got][:1] == [s for s in statuses.values()][:1]  # first seen first
