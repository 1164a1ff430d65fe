"""The live scheduler's decision records: each pod's latest attempts, for ``explain`` and the page.

Bounded: at most ``max_pods`` pods (the pod attempted longest ago is dropped first) and
``per_pod`` attempts each (the oldest dropped). An attempt keeps references to what its cycle
computed (every scored node's scores, every rejected node's verdict), the score arrays narrowed
to the smallest integer type that holds them (core/decision.py ``narrow``: a quarter of the
memory, for about five microseconds), and its compact form (its best ``top`` score rows and
per-plugin counts; core/decision.py says what is kept), made right after the cycle while the
arrays are still in the CPU's cache: about ten microseconds, where the same work on an attempt
recorded hundreds of cycles earlier cost four to five times that. What the references hold is
bounded, in node entries (scored plus rejected nodes per attempt): past ``budget`` the oldest
attempts let them go (O(1)) and keep their compact form, the ``full`` newest never; between
bursts (``compact_idle``) down to half the budget. Small clusters never reach the budget: every
kept attempt stays whole.

Everything runs on the event loop's thread: the loop records, the HTTPS handlers read.
"""

from __future__ import annotations

import asyncio
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
    PodRef,
    compact,
    explain,
    narrow,
    release,
    status_text,
    summarize,
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
# Node entries the whole attempts may hold: a scored node is about 25 bytes of (narrowed)
# arrays, a rejected one 50 (its place in the statuses map; nodes rejected alike share one
# Status) to 250 (a Status of its own): some 2.5-25 MB at most. kube-scheduler's whole process
# is 50-150 MB on the scheduler_perf workloads: the records stay a fraction of that.
DEFAULT_BUDGET = 100_000
# The loop counts as idle this long after its last record.
IDLE_AFTER = 0.05


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
        budget: int = DEFAULT_BUDGET,
        top: int = DEFAULT_TOP_NODES,
        on_final: Callable[[Attempt], None] | None = None,
        wall: Callable[[], float] = time.time,
        perf: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``on_final``: called with each attempt once its outcome is final (the result
        annotations' writer). Attempts are stamped from the cycle's own perf_counter start
        (no clock read per record), turned into wall time with the offset taken here."""
        self.max_pods = max(0, max_pods)
        self.per_pod = max(1, per_pod)
        self.full = max(1, full)
        self.budget = max(1, budget)
        self.top = max(1, top)
        self.on_final = on_final
        self._perf = perf
        self._wall_offset = wall() - perf()
        self._pods: OrderedDict[str, list[Attempt]] = OrderedDict()
        self._whole: deque[Attempt] = deque()  # attempts with their references, oldest first
        self._thaw: deque[Attempt] = deque()  # compacted attempts whose Decision is not pickled yet
        self._weight = 0  # node entries they hold
        self._last = -1e18  # perf time of the last record
        self.compacted = 0  # by a cycle (the budget was full) and when idle
        self.compacted_in_cycle = 0
        self._binding: dict[str, Attempt] = {}  # uid -> the attempt in its binding cycle
        self.recorded = 0

    @property
    def enabled(self) -> bool:
        return self.max_pods > 0

    # -- the loop's side ---------------------------------------------------------------------
    def record(
        self, pod: PodInfo, fw: Framework, out: CycleOutcome, nodes: list[NodeInfo], number: int, started: float,
        seconds: float,
    ) -> Attempt | None:
        """Keep one finished scheduling cycle (references, the score arrays narrowed): ``started``
        is the cycle's perf_counter start, ``seconds`` its length."""
        if not self.max_pods:
            return None
        att = Attempt(pod, fw, out, nodes, number, self._wall_offset + started, seconds)
        narrow(att)  # first: the compact form's score rows are then as narrow
        summarize(att, self.top)
        key = pod.key
        atts = self._pods.get(key)
        if atts is None:
            # A list, not a deque(maxlen): a deque takes 600 bytes for its first block.
            atts = self._pods[key] = []
            if len(self._pods) > self.max_pods:
                for gone in self._pods.popitem(last=False)[1]:
                    self._forget(gone)
        else:
            self._pods.move_to_end(key)
            if len(atts) >= self.per_pod:
                self._forget(atts.pop(0))
        atts.append(att)
        if att.compacted is not None and att.compacted.complete:
            # A small cluster's attempt: its compact form lacks nothing, the references go now.
            # Pickling it waits for the loop to idle (about 6 us a cycle otherwise).
            release(att)
            thaw = self._thaw
            thaw.append(att)
            if len(thaw) > self.max_pods * self.per_pod:
                self._freeze(thaw.popleft())
        whole = self._whole
        if len(whole) > 2 * self.max_pods * self.per_pod:
            # Attempts forgotten in the middle: drop them from the list now and then.
            whole = self._whole = deque(a for a in whole if a.weight)
        if att.weight:
            whole.append(att)
            self._weight += att.weight
        self._last = started + seconds
        if self._weight > self.budget:
            self.compacted_in_cycle += self._compact_oldest(self.budget)
        self.recorded += 1
        if att.outcome in (BINDING, WAITING):
            att.stages = {"Permit": "Wait" if att.outcome == WAITING else "Success"}
            self._binding[pod.uid] = att
        else:
            self._final(att)
        return att

    def _final(self, att: Attempt) -> None:
        if self.on_final is not None:
            self.on_final(att)
        att.pod = PodRef(att.pod)

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
        self._final(att)

    # -- bounding what the references hold ----------------------------------------------------
    def _forget(self, att: Attempt) -> None:
        """An attempt nobody can ask for any more (its pod or its place was taken)."""
        self._weight -= att.weight
        release(att)

    def _compact_oldest(self, target: int, limit: int | None = None) -> int:
        """Compact the oldest whole attempts (never the ``full`` newest) until they hold no
        more than ``target`` entries, or ``limit`` were compacted."""
        n = 0
        whole = self._whole
        while self._weight > target and len(whole) > self.full and (limit is None or n < limit):
            att = whole.popleft()
            if att.weight:
                self._weight -= att.weight
                compact(att, self.top)
                n += 1
        self.compacted += n
        return n

    def idle(self) -> bool:
        """No record for a while: compaction now costs no cycle anything."""
        return self._perf() - self._last >= IDLE_AFTER

    @staticmethod
    def _freeze(att: Attempt) -> None:
        if att.compacted is not None:
            att.compacted.freeze()

    def compact_idle(self, limit: int = 64) -> int:
        """Compaction between bursts: the compacted attempts' Decisions pickled, then the
        whole ones down to half the budget, at most ``limit`` attempts in all (about 2 ms at
        5,000 nodes). Returns how many."""
        n = 0
        thaw = self._thaw
        while thaw and n < limit:
            self._freeze(thaw.popleft())
            n += 1
        return n + self._compact_oldest(self.budget // 2, limit - n)

    async def run_compactor(self, period: float = 0.1) -> None:
        """The app's background task: compact while the loop is idle."""
        while True:
            await asyncio.sleep(period)
            while self.idle() and self.compact_idle():
                await asyncio.sleep(0)

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
            out.append(Summary(a.pod.key, a.number, a.at, a.outcome, a.node, a.message))
        return out

    def _newest(self) -> Iterator[list[Attempt]]:
        return reversed(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)
