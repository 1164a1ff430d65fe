"""Framework runtime and the filter/score pass, with fake plugins.

Behaviour from upstream framework/runtime/framework_test.go (RunPreFilterPlugins,
RunScorePlugins) and schedule_one_test.go (findNodesThatFitPod, start-index rotation,
PreFilterResult node restriction, "no score plugins" short cut).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.backend.cache import Cache
from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.core.algorithm import Algorithm, FitError
from scheduler.core.profiles import new_framework
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Handle,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ScorePlugin,
)
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP, Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod


class Sort(QueueSortPlugin):
    name = "Sort"

    def less(self, a: Any, b: Any) -> bool:
        return a.timestamp < b.timestamp


class Binder(BindPlugin):
    name = "Binder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


class FailingBind(BindPlugin):
    name = "FailingBind"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise ConnectionResetError("connection reset by peer")


class RejectNames(FilterPlugin):
    """Rejects nodes whose name is in ``reject``; counts calls."""

    name = "RejectNames"
    reject: set[str] = set()
    calls: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        type(self).calls.append(node.name)
        if node.name in self.reject:
            return Status(Code.UNSCHEDULABLE, "rejected by name")
        return None


class ErrFilter(FilterPlugin):
    name = "ErrFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        raise RuntimeError("boom")


class Narrow(PreFilterPlugin):
    """PreFilterResult restricting to ``names``."""

    name = "Narrow"
    names: set[str] | None = None

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        return PreFilterResult(set(self.names) if self.names is not None else None)


class Narrow2(Narrow):
    name = "Narrow2"


class SkipAll(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Returns Skip from PreFilter and PreScore: its Filter and Score must never run."""

    name = "SkipAll"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, "must not run")

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise AssertionError("must not run")


class ByIndex(ScorePlugin):
    """Score = the number in the node name, at most 100 (node-7 -> 7); ``bad``: 101 for node-0."""

    name = "ByIndex"
    bad = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        n = int(node.name.split("-")[1])
        return 101 if self.bad and n == 0 else min(n, 100)


class FailingScore(ScorePlugin):
    name = "FailingScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise StatusError(Status(Code.ERROR, "no score for you"))


REGISTRY: dict[str, type[Plugin]] = {
    c.name: c
    for c in (Sort, Binder, FailingBind, RejectNames, ErrFilter, Narrow, Narrow2, SkipAll, ByIndex, FailingScore)
}


def _setup(
    n_nodes: int, points: dict[str, list[str]], weights: dict[str, int] | None = None, percentage: int | None = None
) -> tuple[Framework, Snapshot, Algorithm]:
    plugins = {"queueSort": (PluginRef("Sort"),), "bind": (PluginRef("Binder"),)}
    for point, names in points.items():
        plugins[point] = tuple(PluginRef(n, (weights or {}).get(n, 1) if point == "score" else 0) for n in names)
    prof = Profile("test", {p: PluginSet(refs) for p, refs in plugins.items()}, {}, percentage)
    cache = Cache()
    for i in range(n_nodes):
        cache.add_node(make_node(f"node-{i}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    fw = new_framework(prof, REGISTRY, Handle(snap, Listers()))
    return fw, snap, Algorithm(random.Random(0))


@pytest.fixture(autouse=True)
def _reset() -> None:
    RejectNames.reject = set()
    RejectNames.calls = []
    Narrow.names = None
    Narrow2.names = None
    ByIndex.bad = False


POD = PodInfo(make_pod("p"))


def test_filter_stops_at_num_feasible_and_rotates_start_index() -> None:
    # 200 nodes: adaptive percentage 49 -> 98 -> raised to 100 feasible nodes to find.
    fw, snap, alg = _setup(200, {"filter": ["RejectNames"], "score": ["ByIndex"]})
    RejectNames.reject = {"node-3"}
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.feasible_nodes == 100
    assert r.evaluated_nodes == 101  # 100 feasible + node-3's rejection
    assert alg.next_start_node_index == 101
    assert r.suggested_host == "node-100"  # highest ByIndex among node-0..node-100 minus node-3
    RejectNames.calls = []
    alg.schedule_pod(fw, CycleState(), POD, snap)
    assert RejectNames.calls[0] == "node-101"  # the next search starts where the last stopped
    assert alg.next_start_node_index == (101 + 100) % 200


def test_no_score_plugins_stops_at_first_feasible_node() -> None:
    fw, snap, alg = _setup(150, {"filter": ["RejectNames"]})
    RejectNames.reject = {"node-0", "node-1"}
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert (r.suggested_host, r.feasible_nodes, r.evaluated_nodes) == ("node-2", 1, 3)


def test_fit_error_counts_reasons() -> None:
    fw, snap, alg = _setup(3, {"filter": ["RejectNames"], "score": ["ByIndex"]})
    RejectNames.reject = {"node-0", "node-1", "node-2"}
    with pytest.raises(FitError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert str(ei.value) == "0/3 nodes are available: 3 rejected by name."
    assert ei.value.diagnosis.unschedulable_plugins == {"RejectNames"}


def test_filter_exception_is_error_naming_plugin() -> None:
    fw, snap, alg = _setup(3, {"filter": ["ErrFilter"], "score": ["ByIndex"]})
    with pytest.raises(StatusError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert ei.value.status.code == Code.ERROR
    assert ei.value.status.message == 'running "ErrFilter" filter plugin: boom'


def test_prefilter_result_restricts_nodes_and_explains_the_rest() -> None:
    fw, snap, alg = _setup(4, {"preFilter": ["Narrow"], "filter": ["RejectNames"], "score": ["ByIndex"]})
    Narrow.names = {"node-1", "node-2", "ghost"}
    RejectNames.reject = {"node-1", "node-2"}
    with pytest.raises(FitError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert str(ei.value) == (
        "0/4 nodes are available: 2 node(s) didn't satisfy plugin(s) [Narrow], 2 rejected by name."
    )


@pytest.mark.parametrize(
    ("names1", "names2", "want"),
    [
        # framework.go RunPreFilterPlugins: one plugin with an empty set
        (set(), None, "0/3 nodes are available: node(s) didn't satisfy plugin Narrow."),
        # two plugins whose sets do not intersect
        (
            {"node-0"},
            {"node-1"},
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [Narrow Narrow2] simultaneously.",
        ),
    ],
)
def test_prefilter_empty_intersection(names1: set[str], names2: set[str] | None, want: str) -> None:
    fw, snap, alg = _setup(3, {"preFilter": ["Narrow", "Narrow2"], "filter": ["RejectNames"], "score": ["ByIndex"]})
    Narrow.names = names1
    Narrow2.names = names2
    with pytest.raises(FitError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert str(ei.value) == want


def test_skip_excludes_filter_and_score() -> None:
    fw, snap, alg = _setup(
        5, {"preFilter": ["SkipAll"], "filter": ["SkipAll"], "preScore": ["SkipAll"], "score": ["SkipAll", "ByIndex"]}
    )
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.suggested_host == "node-4"
    assert r.scores is not None and r.scores.plugins == ["ByIndex"]


def test_weights_multiply_normalized_scores() -> None:
    fw, snap, alg = _setup(3, {"score": ["ByIndex"]}, weights={"ByIndex": 3})
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert r.scores is not None
    assert r.scores.totals.tolist() == [0, 3, 6]


def test_score_out_of_range_is_an_error() -> None:
    fw, snap, alg = _setup(3, {"score": ["ByIndex"]})
    ByIndex.bad = True
    with pytest.raises(StatusError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert ei.value.status.message == (
        'applying score defaultWeights on Score plugins: plugin "ByIndex" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_score_error_names_plugin() -> None:
    fw, snap, alg = _setup(3, {"score": ["FailingScore"]})
    with pytest.raises(StatusError) as ei:
        alg.schedule_pod(fw, CycleState(), POD, snap)
    assert ei.value.status.message == 'running Score plugins: plugin "FailingScore" failed with: no score for you'


def test_single_feasible_node_is_not_scored() -> None:
    fw, snap, alg = _setup(3, {"filter": ["RejectNames"], "score": ["FailingScore"]})
    RejectNames.reject = {"node-0", "node-2"}
    r = alg.schedule_pod(fw, CycleState(), POD, snap)
    assert (r.suggested_host, r.scores) == ("node-1", None)


def test_no_nodes() -> None:
    fw, snap, alg = _setup(0, {"score": ["ByIndex"]})
    with pytest.raises(StatusError, match="no nodes available to schedule pods"):
        alg.schedule_pod(fw, CycleState(), POD, snap)


async def test_bind_error_names_the_plugin_and_keeps_the_exception() -> None:
    # Upstream RunBindPlugins: AsStatus(fmt.Errorf("running Bind plugin %q: %w", name, err)):
    # the message names the plugin; the error itself stays readable to the caller.
    fw, _, _ = _setup(1, {"bind": ["FailingBind"]})
    s = await fw.run_bind(CycleState(), POD, "node-0")
    assert s is not None and s.code == Code.ERROR and s.plugin == "FailingBind"
    assert s.message == 'running Bind plugin "FailingBind": connection reset by peer'
    assert isinstance(s.err, ConnectionResetError)
