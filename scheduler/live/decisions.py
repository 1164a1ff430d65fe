"""The live scheduler's decision records: each pod's latest attempts, for ``explain`` and the page.

Bounded three ways: at most ``max_pods`` pods (the pod attempted longest ago is dropped first),
``per_pod`` attempts each (the oldest dropped), and only the ``full`` newest attempts keep
their references to what the cycle computed (every node's scores and verdicts); an older one
is compacted to the best ``top`` score rows and per-plugin counts (core/decision.py says what
is kept). Recording is O(1) per attempt (no copy per node); compaction of the one attempt that
leaves the full window costs what grouping its rejected nodes by plugin costs.

Everything runs on the event loop's thread: the loop records, the HTTPS handlers read.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.core.decision import (
    BINDING,
    DEFAULT_TOP_NODES,
    ERROR,
    SCHEDULED,
    UNSCHEDULABLE,
    WAITING,
    Attempt,
    Decision,
    compact,
    explain,
    status_text,
)
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.core.cycle import CycleOutcome
    from scheduler.framework.runtime import Framework
    from scheduler.model.node import NodeInfo
    from scheduler.model.pod import PodInfo

DEFAULT_MAX_PODS = 1000
DEFAULT_PER_POD = 3
DEFAULT_FULL = 32


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """``run``'s flags for the records: pods kept (0: none), score rows kept once compacted,
    and whether each attempt's outcome is also written to the pod as kube-scheduler-simulator's
    result annotations."""

    max_pods: int = DEFAULT_MAX_PODS
    top: int = DEFAULT_TOP_NODES
    annotations: bool = False


@dataclass(frozen=True, slots=True)
class Summary:
    """One attempt in a line (the page's list of recent decisions)."""

    pod: str
    attempt: int
    time: float
    outcome: str
    node: str | None
    message: str


class DecisionStore:
    def __init__(
        self,
        max_pods: int = DEFAULT_MAX_PODS,
        *,
        per_pod: int = DEFAULT_PER_POD,
        full: int = DEFAULT_FULL,
        top: int = DEFAULT_TOP_NODES,
        on_final: Callable[[Attempt], None] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """``on_final``: called with each attempt once its outcome is final (the result
        annotations' writer)."""
        self.max_pods = max(0, max_pods)
        self.per_pod = max(1, per_pod)
        self.full = max(1, full)
        self.top = max(1, top)
        self.on_final = on_final
        self.wall = wall
        self._pods: OrderedDict[str, deque[Attempt]] = OrderedDict()
        self._full: deque[Attempt] = deque()
        self._binding: dict[str, Attempt] = {}  # uid -> the attempt in its binding cycle
        self.recorded = 0

    @property
    def enabled(self) -> bool:
        return self.max_pods > 0

    # -- the loop's side ---------------------------------------------------------------------
    def record(
        self, pod: PodInfo, fw: Framework, out: CycleOutcome, nodes: list[NodeInfo], number: int, seconds: float
    ) -> Attempt | None:
        """Keep one finished scheduling cycle (references only)."""
        if not self.max_pods:
            return None
        att = Attempt(pod, fw, out, nodes, number, self.wall() - seconds, seconds)
        key = pod.key
        atts = self._pods.get(key)
        if atts is None:
            atts = self._pods[key] = deque(maxlen=self.per_pod)
            if len(self._pods) > self.max_pods:
                self._pods.popitem(last=False)
        else:
            self._pods.move_to_end(key)
        atts.append(att)
        self._full.append(att)
        if len(self._full) > self.full:
            compact(self._full.popleft(), self.top)
        self.recorded += 1
        if att.outcome in (BINDING, WAITING):
            att.stages = {"Permit": "Wait" if att.outcome == WAITING else "Success"}
            self._binding[pod.uid] = att
        elif self.on_final is not None:
            self.on_final(att)
        return att

    def stage(self, uid: str, name: str, status: Status | None) -> None:
        """What one binding stage (Permit after a wait, PreBind, Bind) answered."""
        att = self._binding.get(uid)
        if att is not None:
            if att.stages is None:
                att.stages = {}
            att.stages[name] = status_text(status)

    def finish(self, uid: str, status: Status | None, timings: dict[str, float]) -> None:
        """The binding cycle of ``uid``'s attempt ended: bound (``status`` None) or not."""
        att = self._binding.pop(uid, None)
        if att is None:
            return
        if status is None:
            att.finish(SCHEDULED, "", att.stages or {}, timings)
        else:
            att.finish(UNSCHEDULABLE if status.is_rejected() else ERROR, status.message, att.stages or {}, timings)
        if self.on_final is not None:
            self.on_final(att)

    # -- readers -----------------------------------------------------------------------------
    def attempts(self, key: str) -> list[Decision]:
        """The pod's kept attempts, newest first."""
        return [explain(a) for a in reversed(self._pods.get(key, ()))]

    def latest(self, key: str) -> Attempt | None:
        atts = self._pods.get(key)
        return atts[-1] if atts else None

    def recent(self, limit: int = 100) -> list[Summary]:
        """The latest attempt of the pods attempted most recently, newest first."""
        out: list[Summary] = []
        for _, atts in zip(range(limit), self._newest()):
            a = atts[-1]
            node = a.result.suggested_host if a.result is not None else (a.decision.node if a.decision else None)
            out.append(Summary(a.pod.key, a.number, a.at, a.outcome, node, a.message))
        return out

    def _newest(self) -> Iterator[deque[Attempt]]:
        return reversed(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)
