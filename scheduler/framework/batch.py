"""OpportunisticBatching (beta, on in v1.36.3; upstream framework/runtime/batch.go, KEP-5598):
one profile keeps the scored nodes of its last cycle and hands the next best one to the next
pod with the same signature, which then skips the full filter and score pass.

The kept list is only valid when pods go one per node: the hint is given only if the previous
pod's node now rejects this pod (so the previous winner is out and the runner-up leads). Any
other case flushes the list, and the reason is counted (scheduler_batch_cache_flushed_total):

* pod_skipped: a cycle in between did not store results (another profile, a failed pod);
* pod_incompatible: the new pod's signature differs (or it has none);
* expired: the list is older than 500 ms;
* node_missing: the previous pod's node left the snapshot;
* node_not_full: the previous pod's node would still take this pod;
* empty_list / pod_not_batchable: the cycle left no runner-up, or its pod had no signature.

(upstream also names pod_failed, which v1.36.3 never records: a failed pod stores nothing, so
the next cycle sees pod_skipped.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework.cycle_state import CycleState
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework

# Upstream maxBatchAge.
MAX_BATCH_AGE = 0.5

# scheduler_batch_attempts_total{result}
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
NO_HINT = "no_hint"
# scheduler_batch_cache_flushed_total{reason}
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_EXPIRED = "expired"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"


class SortedNodes:
    """Node names best first; ``pop`` takes the best (upstream SortedScoredNodes). Built from
    the names, or from a function that orders ``count`` names when first read (most cycles'
    lists are never read: their pod had no signature)."""

    __slots__ = ("_count", "_names", "_next", "_order")

    def __init__(self, names: Sequence[str] | Callable[[], list[str]], count: int | None = None) -> None:
        self._order: Callable[[], list[str]] | None = None
        self._names: list[str] = []
        if callable(names):
            self._order = names
            self._count = count or 0
        else:
            self._names = list(names)
            self._count = len(self._names)
        self._next = 0

    def _ordered(self) -> list[str]:
        if self._order is not None:
            self._names, self._order = self._order(), None
        return self._names

    def pop(self) -> str:
        name = self._ordered()[self._next]
        self._next += 1
        return name

    def __len__(self) -> int:
        return self._count - self._next

    def remaining(self) -> list[str]:
        return self._ordered()[self._next :]


@dataclass(slots=True)
class _State:
    signature: bytes
    nodes: SortedNodes
    created: float


@dataclass(slots=True)
class _LastCycle:
    cycle: int = 0
    chosen: str = ""


class OpportunisticBatch:
    """One profile's batch (upstream OpportunisticBatch). ``clock`` is monotonic seconds."""

    def __init__(self, fw: Framework, clock: Callable[[], float] = time.monotonic) -> None:
        self.fw = fw
        self.clock = clock
        self.state: _State | None = None
        self.last = _LastCycle()
        self.batched_pods = 0  # pods placed on a hint (upstream batchedPods, for tests)

    def get_node_hint(self, pod: PodInfo, signature: bytes | None, state: CycleState, cycle: int) -> str:
        """The node to try first for ``pod`` in scheduling cycle ``cycle`` ("" for none); run
        after PreFilter, since it filters the previous pod's node with ``state``."""
        started = time.perf_counter()
        metrics = self.fw.handle.metrics
        profile = self.fw.profile_name
        hint = ""
        if self._compatible(pod, signature, state, cycle):
            assert self.state is not None
            hint = self.state.nodes.pop()
        else:
            metrics.batch_attempt(profile, NO_HINT)
        metrics.batch_hint(profile, time.perf_counter() - started, bool(hint))
        return hint

    def store_schedule_results(
        self, signature: bytes | None, hinted: str, chosen: str, others: SortedNodes | None, cycle: int
    ) -> None:
        """What a cycle that found ``chosen`` leaves for the next one: ``others`` are the other
        feasible nodes best first (None when only one was feasible)."""
        started = time.perf_counter()
        metrics = self.fw.handle.metrics
        profile = self.fw.profile_name
        self.last = _LastCycle(cycle, chosen)
        try:
            if hinted and hinted == chosen:
                # The hint was taken: the rest of the list stays for the next pod.
                metrics.batch_attempt(profile, HINT_USED)
                self.batched_pods += 1
                return
            if hinted:
                metrics.batch_attempt(profile, HINT_NOT_USED)
            if signature is not None and others is not None and len(others) > 0:
                self.state = _State(signature, others, self.clock())
                return
            self._flush(FLUSH_EMPTY_LIST if others is None or len(others) == 0 else FLUSH_POD_NOT_BATCHABLE)
            self.state = None
        finally:
            metrics.batch_stored(profile, time.perf_counter() - started)

    def _flush(self, reason: str) -> None:
        self.fw.handle.metrics.batch_flushed(self.fw.profile_name, reason)

    def _compatible(self, pod: PodInfo, signature: bytes | None, state: CycleState, cycle: int) -> bool:
        """Whether the kept list serves ``pod`` (upstream batchStateCompatible); flushes are
        counted here but the list itself is only replaced by the next store, as upstream."""
        b = self.state
        if b is None or len(b.nodes) == 0:
            return False
        if cycle != self.last.cycle + 1:
            self._flush(FLUSH_POD_SKIPPED)
            return False
        if signature is None or signature != b.signature:
            self._flush(FLUSH_POD_INCOMPATIBLE)
            return False
        if self.clock() > b.created + MAX_BATCH_AGE:
            self._flush(FLUSH_EXPIRED)
            return False
        node = self.fw.handle.snapshot.get(self.last.chosen)
        if node is None:
            self._flush(FLUSH_NODE_MISSING)
            return False
        # Only when the previous winner rejects this pod is the runner-up the best node now.
        s = self.fw.run_filter(state, pod, node)
        if s is None or not s.is_rejected():
            self._flush(FLUSH_NODE_NOT_FULL)
            return False
        return True
