"""What the queue tests share: upstream's test objects (scheduling_queue_test.go's pod infos,
preEnqueuePlugin, queueHintReturnQueue/Skip) and a framework that is only what the queue reads
(QueueSort and the PreEnqueue plugins), for tables that give their own hint maps."""

from __future__ import annotations

from typing import Any

from scheduler.backend.hints import QueueingHintMap
from scheduler.backend.queue import SchedulingQueue
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint, QueueingHintFn
from scheduler.framework.interface import PreEnqueuePlugin, QueuedPodInfo
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.plugins.queuesort import PrioritySort
from scheduler.testing.builders import make_pod
from scheduler.testing.fakes import FakeClock

PROFILE = "default-scheduler"
NODE_ADD = ClusterEvent("Node", ActionType.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent("UnscheduledPod", ActionType.UPDATE)
LOW, MID, HIGH = 0, 100, 1000
MEDIUM = (LOW + HIGH) // 2


def pod(name: str, namespace: str = "default", *, nominated: str = "", **kw: Any) -> PodInfo:
    raw = make_pod(name, namespace, **kw)
    if nominated:
        raw["status"] = {"nominatedNodeName": nominated}
    return PodInfo(raw)


# scheduling_queue_test.go's package-level pod infos.
HIGH_POD = pod("hpp", "ns1", uid="hppns1", priority=HIGH)
HIGH_NOMINATED_POD = pod("hpp", "ns1", uid="hppns1", priority=HIGH, nominated="node1")
MED_POD = pod("mpp", "ns2", uid="mppns2", priority=MEDIUM, nominated="node1")
UNSCHEDULABLE_POD = pod("up", "ns1", uid="upns1", priority=LOW, nominated="node1")


def queue_hint_return_queue(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def queue_hint_return_skip(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def hint_map(*entries: tuple[ClusterEvent, str, QueueingHintFn | None]) -> QueueingHintMap:
    """A profile's QueueingHintMap from (event, plugin, hint) rows, in order."""
    out: QueueingHintMap = {}
    for ev, plugin, fn in entries:
        out.setdefault(ev, []).append((plugin, fn))
    return out


class AllowList(PreEnqueuePlugin):
    """Upstream's preEnqueuePlugin: passes pods carrying one of the allowed label keys."""

    def __init__(self, allow: list[str] | None = None, name: str = "preEnqueuePlugin") -> None:
        self.allow = allow or []
        self.name = name  # type: ignore[misc]

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if any(k in pod.labels for k in self.allow):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod name not in allowlists")


class QueueOnlyFramework:
    """The part of a Framework the queue uses."""

    def __init__(self, pre_enqueue: list[PreEnqueuePlugin] | None = None) -> None:
        self.queue_sort = PrioritySort()
        self.pre_enqueue_plugins = pre_enqueue or []
        self.batch = None  # OpportunisticBatching off: pods are not signed

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for pl in self.pre_enqueue_plugins:
            s = pl.pre_enqueue(pod)
            if s is not None and not s.is_success():
                return s.with_plugin(pl.name)
        return None


def new_test_queue(
    hints: QueueingHintMap | None = None,
    *,
    pre_enqueue: list[PreEnqueuePlugin] | None = None,
    clock: FakeClock | None = None,
    **kw: Any,
) -> tuple[SchedulingQueue, FakeClock]:
    """Upstream NewTestQueue with WithQueueingHintMapPerProfile/WithPreEnqueuePluginMap/WithClock."""
    clock = clock or FakeClock()
    fw: Any = QueueOnlyFramework(pre_enqueue)
    q = SchedulingQueue({PROFILE: fw}, clock, hint_maps={PROFILE: hints or {}}, **kw)
    return q, clock


def queued(p: PodInfo, *plugins: str, timestamp: float = 0.0, **fields: Any) -> QueuedPodInfo:
    """A QueuedPodInfo as upstream's tables spell them (newQueuedPodInfoForLookup and literals)."""
    qi = QueuedPodInfo(p, timestamp)
    qi.unschedulable_plugins = set(plugins)
    for k, v in fields.items():
        setattr(qi, k, v)
    return qi
