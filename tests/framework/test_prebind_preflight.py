"""PreBindPreFlight and the PreBind plugin groups it sets up.

Cases from upstream framework/runtime/framework_test.go v1.36.3: TestPreBindPreFlightPlugins
(RunPreBindPreFlights) and TestGetPreBindPluginGroups (getPreBindPluginGroups).
"""

from __future__ import annotations

import asyncio

import pytest

from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.core.profiles import new_framework
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin, Handle, PreBindPlugin, QueueSortPlugin
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod

POD = PodInfo(make_pod("p"))


class _Sort(QueueSortPlugin):
    name = "Sort"

    def less(self, a: object, b: object) -> bool:
        return False


class _Bind(BindPlugin):
    name = "Bind"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


def _pre_bind(name: str, flight: Code | None = None, parallel: bool = False, log: list[str] | None = None,
              delay: float = 0.0, fail: bool = False) -> type[PreBindPlugin]:
    class P(PreBindPlugin):
        def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
            if flight is None:
                return parallel, None
            return parallel, Status(flight, "injected status")

        async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            if log is not None:
                log.append(f"start {name}")
            await asyncio.sleep(delay)
            if log is not None:
                log.append(f"end {name}")
            return Status(Code.ERROR, f"{name} failed") if fail else None

    P.name = name
    return P


def _framework(*plugins: type[PreBindPlugin]) -> Framework:
    reg = {cls.name: cls for cls in (_Sort, _Bind, *plugins)}
    points = {
        "queueSort": PluginSet((PluginRef("Sort"),)),
        "bind": PluginSet((PluginRef("Bind"),)),
        "preBind": PluginSet(tuple(PluginRef(p.name) for p in plugins)),
    }
    return new_framework(Profile("test", points, {}, None), reg, Handle(Snapshot(), Listers()))


@pytest.mark.parametrize(
    ("case", "codes", "want"),
    [
        ("Success when PreBindPreFlight returns Success", [Code.SKIP, None], None),
        ("Skip when all PreBindPreFlight returns Skip", [Code.SKIP, Code.SKIP], (Code.SKIP, "")),
        (
            "Error when PreBindPreFlight returns Error",
            [Code.SKIP, Code.ERROR],
            (Code.ERROR, 'running PreBindPreFlight "TestPlugin2": injected status'),
        ),
        (
            "Error when PreBindPreFlight returns Unschedulable",
            [Code.UNSCHEDULABLE],
            (
                Code.ERROR,
                'PreBindPreFlight TestPlugin1 returned "Unschedulable", which is unsupported. It is supposed to '
                "return Success, Skip, or Error status",
            ),
        ),
    ],
)
def test_run_pre_bind_pre_flights(case: str, codes: list[Code | None], want: tuple[Code, str] | None) -> None:
    fw = _framework(*(_pre_bind(f"TestPlugin{i + 1}", c) for i, c in enumerate(codes)))
    got = fw.run_pre_bind_pre_flights(CycleState(), POD, "node")
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.message) == want


@pytest.mark.parametrize(
    ("case", "names", "skipped", "parallel", "want"),
    [
        ("No plugins", [], set(), set(), []),
        ("Single plugin, not skipped, not parallel", ["p1"], set(), set(), [["p1"]]),
        ("Single plugin, skipped", ["p1"], {"p1"}, set(), []),
        ("Single plugin, parallel", ["p1"], set(), {"p1"}, [["p1"]]),
        ("Single plugin, parallel & skipped", ["p1"], {"p1"}, {"p1"}, []),
        ("Multiple plugins, consecutive serial", ["p1", "p2"], set(), set(), [["p1"], ["p2"]]),
        ("Multiple plugins, consecutive parallel", ["p1", "p2"], set(), {"p1", "p2"}, [["p1", "p2"]]),
        (
            "Multiple plugins, mixed parallel and serial",
            ["p1", "p2", "p3", "p4"], set(), {"p2", "p3"}, [["p1"], ["p2", "p3"], ["p4"]],
        ),
        ("Parallel plugins separated by serial", ["p1", "p2", "p3"], set(), {"p1", "p3"}, [["p1"], ["p2"], ["p3"]]),
        ("Skipped plugins", ["p1", "p2", "p3"], {"p2"}, set(), [["p1"], ["p3"]]),
        ("Parallel plugins with one skipped in between", ["p1", "p2", "p3"], {"p2"}, {"p1", "p2", "p3"},
         [["p1", "p3"]]),
        ("Parallel plugins with one serial & skipped in between", ["p1", "p2", "p3"], {"p2"}, {"p1", "p3"},
         [["p1"], ["p3"]]),
        (
            "Complex mix",
            ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"],
            {"p3", "p5"},
            {"p2", "p4", "p5", "p6"},
            [["p1"], ["p2"], ["p4", "p6"], ["p7"], ["p8"]],
        ),
    ],
)
def test_pre_bind_plugin_groups(
    case: str, names: list[str], skipped: set[str], parallel: set[str], want: list[list[str]]
) -> None:
    fw = _framework(*(_pre_bind(n) for n in names))
    state = CycleState()
    state.skip_pre_bind_plugins = frozenset(skipped)
    state.parallel_pre_bind_plugins = frozenset(parallel)
    assert [[p.name for p in g] for g in fw._pre_bind_groups(state)] == want


def test_pre_flight_skips_and_parallel_groups_drive_pre_bind() -> None:
    # A plugin whose PreFlight says Skip does not run; two that allow it run side by side.
    log: list[str] = []
    fw = _framework(
        _pre_bind("a", None, True, log, 0.05),
        _pre_bind("b", Code.SKIP, True, log),
        _pre_bind("c", None, True, log, 0.0),
    )
    state = CycleState()
    assert fw.run_pre_bind_pre_flights(state, POD, "node") is None
    assert asyncio.run(fw.run_pre_bind(state, POD, "node")) is None
    assert log == ["start a", "start c", "end c", "end a"]


def test_parallel_pre_bind_failure_cancels_the_others() -> None:
    log: list[str] = []
    fw = _framework(_pre_bind("slow", None, True, log, 5.0), _pre_bind("bad", None, True, log, 0.0, fail=True))
    state = CycleState()
    fw.run_pre_bind_pre_flights(state, POD, "node")
    got = asyncio.run(fw.run_pre_bind(state, POD, "node"))
    assert got is not None and got.message == 'running PreBind plugin "bad": bad failed'
    assert "end slow" not in log
