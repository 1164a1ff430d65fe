"""Reserve and Permit plugins for tests of the waiting half of the framework (upstream:
pkg/scheduler/testing/framework fake_plugins.go, FakePermitPlugin and FakeReservePlugin), and
the configuration that puts them in the default profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from scheduler.config import SchedulerConfig, parse_config
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, PermitPlugin, Plugin, ReservePlugin
from scheduler.framework.status import Status
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry

PermitAnswer = Callable[[PodInfo], tuple[Status | None, float]]


class FakePermit(PermitPlugin):
    """Answers each pod with ``answer(pod)`` (status, timeout in seconds); keeps its Handle and
    every pod it was asked about. Subclass with ``fake_permit`` for a name and an answer."""

    name: ClassVar[str] = "FakePermit"
    answer: ClassVar[PermitAnswer] = staticmethod(lambda pod: (None, 0.0))

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.asked: list[tuple[str, str]] = []  # (pod name, node)

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> Plugin:
        inst = cls(handle)
        cls.instances.append(inst)
        return inst

    instances: ClassVar[list[FakePermit]] = []

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        self.asked.append((pod.name, node_name))
        return type(self).answer(pod)


def fake_permit(name: str, answer: PermitAnswer | Status | None, timeout: float = 60.0) -> type[FakePermit]:
    """A FakePermit class named ``name`` that answers ``answer`` (a Status for every pod, or a
    function of the pod) with ``timeout``."""
    if callable(answer):
        fn: PermitAnswer = answer
    else:
        fixed = answer

        def fn(pod: PodInfo) -> tuple[Status | None, float]:
            return fixed, timeout

    return type(name, (FakePermit,), {"name": name, "answer": staticmethod(fn), "instances": []})


class FakeReserve(ReservePlugin):
    """Reserve answers ``status`` (None: success); records Reserve and Unreserve calls."""

    name: ClassVar[str] = "FakeReserve"
    status: ClassVar[Status | None] = None
    calls: ClassVar[list[tuple[str, str, str]]] = []  # (point, pod name, node)

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> Plugin:
        return cls()

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        type(self).calls.append(("Reserve", pod.name, node_name))
        return type(self).status

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        type(self).calls.append(("Unreserve", pod.name, node_name))


def fake_reserve(status: Status | None = None) -> type[FakeReserve]:
    return type("FakeReserve", (FakeReserve,), {"status": status, "calls": []})


def with_plugins(
    *plugins: type[Plugin], args: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[SchedulerConfig, dict[str, type[Plugin]]]:
    """The default configuration plus ``plugins`` at their extension points (reserve and
    permit, after the defaults), and the registry that knows them."""
    registry: dict[str, type[Plugin]] = dict(default_registry(eps=()))
    points: dict[str, list[dict[str, str]]] = {}
    for cls in plugins:
        registry[cls.name] = cls
        for point, base in (("reserve", ReservePlugin), ("permit", PermitPlugin)):
            if issubclass(cls, base):
                points.setdefault(point, []).append({"name": cls.name})
    profile: dict[str, Any] = {"schedulerName": "default-scheduler",
                               "plugins": {p: {"enabled": e} for p, e in points.items()}}
    if args:
        profile["pluginConfig"] = [{"name": n, "args": dict(a)} for n, a in args.items()]
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [profile]}
    return parse_config(doc), registry
