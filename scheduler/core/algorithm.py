"""One pod's placement decision: filter, score, select (upstream schedule_one.go schedulePod).

Pure and synchronous: it reads one Snapshot and never awaits, so the live scheduler and
``simulate`` share it.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from scheduler.core.extenders import (
    find_nodes_that_pass_extenders,
    has_extender_filters,
    has_extender_prioritizers,
    prioritize_with_extenders,
)
from scheduler.framework.batch import SortedNodes
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import EXTENDER_NAME
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.runtime import SMALL_CHUNK, Framework, ScoreResult
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """Adaptive number of feasible nodes to stop filtering at (upstream numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    n = num_all_nodes * percentage // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    # The feasible nodes as the filter extenders returned them, when one rebuilt them from
    # its answer (upstream then scores those NodeInfos, without their pods); else None.
    extender_nodes: list[NodeInfo] | None = None

    def add_plugin_status(self, s: Status) -> None:
        if not s.plugin:
            return
        if s.code == Code.PENDING:
            self.pending_plugins.add(s.plugin)
        elif s.is_rejected():
            self.unschedulable_plugins.add(s.plugin)


class FitError(Exception):
    """The pod fits no node; ``str()`` is the exact FailedScheduling message."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        d = self.diagnosis
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            nts = d.node_to_status
            for s, n in nts.distinct():
                for r in s.reasons:
                    counts[r] = counts.get(r, 0) + n
            absent = self.num_all_nodes - len(nts.statuses)
            if absent > 0 and nts.absent is not None:
                for r in nts.absent.reasons:
                    counts[r] = counts.get(r, 0) + absent
            hist = sorted(f"{v} {k}" for k, v in counts.items())
            if hist:
                msg += f" {', '.join(hist)}."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: ScoreResult | None = None  # None when only one node was feasible
    diagnosis: Diagnosis | None = None
    winner: int = 0  # the chosen node's position in ``scores`` (decision records read it)


def _visited(alive: np.ndarray, need: int) -> int:
    """How many of a chunk's nodes the search visits: up to the ``need``-th feasible one, else all."""
    if len(alive) <= SMALL_CHUNK:  # a node or two: no array calls
        seen = 0
        for k, ok in enumerate(alive.tolist()):
            seen += ok
            if seen >= need:
                return k + 1
        return len(alive)
    cum = np.cumsum(alive)
    if len(cum) and cum[-1] >= need:
        return int(np.searchsorted(cum, need)) + 1
    return len(alive)


class Algorithm:
    """Holds what persists between attempts: the rotating start index and the tie-break RNG."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.next_start_node_index = 0
        # The standard library's generator: a cycle draws once at most, and numpy.random's
        # modules would hold about 6 MB of resident memory for it.
        self.rng = rng if rng is not None else random.Random()
        # Orders tied runners-up for OpportunisticBatching: a stream of its own, seeded once
        # from the selection's, so batching draws nothing from the selection's generator.
        self.order_rng = random.Random(self.rng.getrandbits(64))

    # -- filtering ---------------------------------------------------------------------------
    def _find_nodes_that_pass_filters(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        diagnosis: Diagnosis,
        nodes: np.ndarray,
    ) -> np.ndarray:
        n_all = len(nodes)
        if n_all == 0:
            return nodes
        to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, n_all)
        if not has_extender_filters(fw.extenders) and not self._has_scoring(fw):
            to_find = 1
        start = self.next_start_node_index % n_all
        rotated = nodes if start == 0 else np.concatenate((nodes[start:], nodes[:start]))
        if not fw.has_filter_plugins():
            return rotated[:to_find]
        # Upstream times the whole search as the Filter extension point (one observation per cycle).
        started = time.perf_counter()
        try:
            out = self._search(fw, state, pod, snap, diagnosis, rotated, to_find)
        except StatusError as exc:
            fw.observe_point("Filter", exc.status, started)
            raise
        fw.observe_point("Filter", None, started)
        return out

    def _search(
        self, fw: Framework, state: CycleState, pod: PodInfo, snap: Snapshot, diagnosis: Diagnosis,
        rotated: np.ndarray, to_find: int,
    ) -> np.ndarray:
        n_all = len(rotated)
        feasible: list[np.ndarray] = []
        found = 0
        pos = 0
        chunk = to_find
        infos = snap.node_infos
        while pos < n_all and found < to_find:
            cand = rotated[pos : pos + chunk]
            alive, failures, rejected_by = fw.filter_chunk(state, pod, snap, cand)
            need = to_find - found
            cut = _visited(alive, need)
            ok = cand[:cut][alive[:cut]]
            feasible.append(ok)
            found += len(ok)
            if failures or (rejected_by >= 0).any():
                self._record_failures(fw, state, pod, infos, cand, cut, failures, rejected_by, diagnosis)
            pos += cut
            chunk = max(chunk * 2, 64)
        return np.concatenate(feasible) if feasible else np.empty(0, dtype=np.int64)

    @staticmethod
    def _record_failures(
        fw: Framework, state: CycleState, pod: PodInfo, infos: list[NodeInfo], cand: np.ndarray, cut: int,
        failures: dict[int, Status], rejected_by: np.ndarray, diagnosis: Diagnosis,
    ) -> None:
        """Each rejected node (of the first ``cut`` visited) with its status, in the order the
        nodes were visited. The nodes a batch filter rejected get theirs one call per plugin:
        most nodes may fail one plugin, and a status is often shared by many of them."""
        pos_parts: list[np.ndarray] = []
        st_parts: list[Status] = []
        head = rejected_by[:cut]
        batch_pos = np.flatnonzero(head >= 0)
        if len(batch_pos):
            ks = head[batch_pos]
            for k in np.unique(ks).tolist():
                ps = batch_pos[ks == k]
                pos_parts.append(ps)
                st_parts.extend(fw.statuses_for(state, pod, infos, k, cand[ps]))
        own = [p for p in failures if p < cut]
        if own:
            pos_parts.append(np.array(own, dtype=np.int64))
            st_parts.extend(failures[p] for p in own)
        if not pos_parts:
            return
        pos = np.concatenate(pos_parts) if len(pos_parts) > 1 else pos_parts[0]
        # One batch plugin's positions are already in order; anything else is sorted.
        order = range(len(pos)) if len(pos_parts) == 1 and not own else np.argsort(pos, kind="stable").tolist()
        nodes = cand[pos].tolist()
        distinct = {id(s): s for s in st_parts}
        if any(s.code == Code.ERROR for s in distinct.values()):
            first = next(st_parts[j] for j in order if st_parts[j].code == Code.ERROR)
            raise StatusError(first)
        statuses = diagnosis.node_to_status.statuses
        for j in order:
            statuses[infos[nodes[j]].name] = st_parts[j]
        for s in distinct.values():  # shared statuses: the plugin sets need each once
            diagnosis.add_plugin_status(s)

    def find_nodes_that_fit(
        self, fw: Framework, state: CycleState, pod: PodInfo, snap: Snapshot,
        signature: bytes | None = None, cycle: int = 0,
    ) -> tuple[np.ndarray, Diagnosis, str]:
        """The feasible nodes, the diagnosis and OpportunisticBatching's node hint ("" none)."""
        diagnosis = Diagnosis()
        diagnosis.node_to_status.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        all_nodes = snap.node_infos
        pre_res, s, with_nodes = fw.run_pre_filter(state, pod, all_nodes)
        if s is not None and not s.is_success():
            if not s.is_rejected():
                raise StatusError(s)
            diagnosis.node_to_status.absent = s
            diagnosis.pre_filter_msg = s.message
            diagnosis.add_plugin_status(s)
            return np.empty(0, dtype=np.int64), diagnosis, ""

        # OpportunisticBatching's node hint (upstream GetNodeHint), asked for even when the pod
        # has a nominated node; the nominated node is tried first, else the hint.
        hint = fw.batch.get_node_hint(pod, signature, state, cycle) if fw.batch is not None else ""
        first = pod.nominated_node_name or hint
        if first:
            ni = snap.get(first)
            # In a pod-group cycle a nominated node outside the placement is simply not tried.
            if ni is not None and snap.in_placement(ni.name):
                ok = self._find_nodes_that_pass_filters_once(fw, state, pod, snap, diagnosis, ni.index)
                if ok and fw.extenders:
                    ok = bool(find_nodes_that_pass_extenders(fw.extenders, pod, [ni], diagnosis.node_to_status))
                if ok:
                    return np.array([ni.index], dtype=np.int64), diagnosis, hint

        # The candidates: every node, or the placement's (upstream ListNodesInPlacement).
        placement = snap.placement_idx
        if pre_res is None or pre_res.node_names is None:
            nodes = np.arange(len(all_nodes), dtype=np.int64) if placement is None else placement
        else:
            # Snapshot order (upstream iterates a set; we keep it deterministic).
            nodes = np.array(
                sorted(
                    snap.node_map[n].index
                    for n in pre_res.node_names
                    if n in snap.node_map and snap.in_placement(n)
                ),
                dtype=np.int64,
            )
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(with_nodes))}]",
            )
        n_all = snap.num_nodes_in_placement()
        try:
            feasible = self._find_nodes_that_pass_filters(fw, state, pod, snap, diagnosis, nodes)
        except StatusError:
            # Upstream advances the start index by what was processed even on error.
            self._advance(len(diagnosis.node_to_status.statuses), n_all)
            raise
        self._advance(len(feasible) + len(diagnosis.node_to_status.statuses), n_all)
        if fw.extenders and len(feasible):
            feasible = self._pass_extenders(fw, pod, snap, diagnosis, feasible)
        return feasible, diagnosis, hint

    def _pass_extenders(
        self, fw: Framework, pod: PodInfo, snap: Snapshot, diagnosis: Diagnosis, feasible: np.ndarray
    ) -> np.ndarray:
        """The filter extenders over the feasible nodes (upstream findNodesThatPassExtenders);
        when they removed some, the pod counts EXTENDER_NAME among its rejectors."""
        infos = snap.node_infos
        before = [infos[i] for i in feasible.tolist()]
        kept = find_nodes_that_pass_extenders(fw.extenders, pod, before, diagnosis.node_to_status)
        if len(kept) != len(before):
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        node_map = snap.node_map
        missing = next((n.name for n in kept if n.name not in node_map), None)
        if missing is not None:
            # Scoring and binding need the snapshot's node; upstream would go on and fail later.
            msg = f"extender returned node {missing!r}, which the scheduler does not know"
            raise StatusError(Status(Code.ERROR, msg))
        idx = np.fromiter((node_map[n.name].index for n in kept), dtype=np.int64, count=len(kept))
        foreign = False
        for n, i in zip(kept, idx.tolist()):
            if n is not infos[i]:
                n.index = i  # plugins' PreScore place a node by its snapshot position
                foreign = True
        if foreign:
            diagnosis.extender_nodes = kept
        return idx

    def _find_nodes_that_pass_filters_once(
        self, fw: Framework, state: CycleState, pod: PodInfo, snap: Snapshot, diagnosis: Diagnosis, i: int
    ) -> bool:
        ni = snap.node_infos[i]
        s = fw.run_filter_with_nominated_pods(state, pod, ni)
        if s is None:
            return True
        if s.code == Code.ERROR:
            raise StatusError(s)
        diagnosis.node_to_status.statuses[ni.name] = s
        diagnosis.add_plugin_status(s)
        return False

    @staticmethod
    def _has_scoring(fw: Framework) -> bool:
        return fw.has_score_plugins() or has_extender_prioritizers(fw.extenders)

    def _advance(self, processed: int, n_all: int) -> None:
        if n_all:
            self.next_start_node_index = (self.next_start_node_index + processed) % n_all

    # -- scoring and selection ---------------------------------------------------------------
    def select_host(self, totals: np.ndarray) -> int:
        """Position (into ``totals``) of the winner: highest total, ties at random.

        Upstream's reservoir sampling keeps the k-th tied node with probability 1/k, which
        leaves every tied node equally likely: one uniform draw from the injected generator
        picks with the same distribution and stays reproducible.
        """
        best = totals.max()
        ties = np.flatnonzero(totals == best)
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[self.rng.randrange(len(ties))])

    def schedule_pod(
        self, fw: Framework, state: CycleState, pod: PodInfo, snap: Snapshot,
        signature: bytes | None = None, cycle: int = 0,
    ) -> ScheduleResult:
        """The node for ``pod``. Raises ``FitError`` when it fits none, ``StatusError`` with the
        Error status of anything else that went wrong. ``signature`` (the queued pod's) and
        ``cycle`` (the queue's scheduling cycle) serve OpportunisticBatching."""
        if snap.num_nodes_in_placement() == 0:
            raise StatusError(Status(Code.ERROR, NO_NODES_AVAILABLE))
        feasible, diagnosis, hint = self.find_nodes_that_fit(fw, state, pod, snap, signature, cycle)
        if len(feasible) == 0:
            raise FitError(pod, snap.num_nodes_in_placement(), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status.statuses)
        infos = snap.node_infos
        if len(feasible) == 1:
            host = infos[int(feasible[0])].name
            if fw.batch is not None:
                fw.batch.store_schedule_results(signature, hint, host, None, cycle)
            return ScheduleResult(host, evaluated, 1, None, diagnosis)
        if not fw.has_score_plugins() and not fw.extenders:
            # Upstream gives every node a total of 1; selection is then a pure tie-break.
            totals = np.ones(len(feasible), dtype=np.int64)
            scores = ScoreResult(feasible, [], [], [], totals)
        else:
            # itemgetter builds the node tuple in C; len(feasible) >= 2 here, so it is a tuple.
            nodes = diagnosis.extender_nodes or itemgetter(*feasible.tolist())(infos)
            s = fw.run_pre_score(state, pod, nodes)
            if s is not None:
                raise StatusError(s)
            scores = fw.run_score(state, pod, snap, feasible, diagnosis.extender_nodes)
            if fw.extenders:
                scores.extenders = prioritize_with_extenders(fw.extenders, pod, nodes, scores.totals)
        winner = self.select_host(scores.totals)
        host = infos[int(feasible[winner])].name
        if fw.batch is not None:
            others = self._runners_up(infos, feasible, scores.totals, winner)
            fw.batch.store_schedule_results(signature, hint, host, others, cycle)
        return ScheduleResult(host, evaluated, len(feasible), scores, diagnosis, winner)

    def _runners_up(
        self, infos: list[NodeInfo], feasible: np.ndarray, totals: np.ndarray, winner: int
    ) -> SortedNodes:
        """The feasible nodes but the winner, best first, ties in random order (upstream pops
        them off a heap keyed by total score and a random number); ordered only when read."""

        def order() -> list[str]:
            rest = np.delete(np.arange(len(feasible)), winner)
            keys = np.frombuffer(self.order_rng.randbytes(8 * len(rest)), dtype=np.uint64)
            ranked = rest[np.lexsort((keys, -totals[rest]))]
            return [infos[int(feasible[i])].name for i in ranked.tolist()]

        return SortedNodes(order, len(feasible) - 1)
