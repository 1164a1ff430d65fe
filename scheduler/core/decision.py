"""Decision records: what one scheduling attempt saw and decided, kept so that ``explain`` can
answer "why this node?" and "why is my pod pending?" afterwards.

Two forms:

* ``Attempt``: what the live loop keeps right after a cycle. References only, to what the cycle
  computed anyway: the ScheduleResult (its ScoreResult arrays), the Diagnosis's statuses,
  PostFilter's result, the snapshot's node list of that cycle (positions -> names) and the
  framework. Building one is O(1): nothing is copied per node on the hot path. The live store
  then ``narrow``s the score arrays (one copy of them all in the smallest integer type that
  holds them: a quarter of int64's). The binding cycle fills in its outcome (Permit, PreBind,
  Bind) and timings when it ends.
* ``Decision``: the answer, with node names, ranked score rows (raw, normalized and weighted per
  plugin), filter verdicts per node and per plugin, the FailedScheduling message, the nominated
  node and victims, the binding stages and the timings. ``explain`` builds it from an Attempt
  when someone asks. ``compact`` keeps a small one and lets the references go; the store does
  that to attempts that are no longer among the newest, so an old attempt costs a few hundred
  bytes whatever the size of the cluster. The kept score rows stay one small integer matrix
  (total, raw scores, weighted scores per row) with their node names until someone asks: a
  burst past the budget compacts in its cycles, and building every row's lists there cost more
  than picking the rows.

What a compact Decision keeps, and what it drops (docs/troubleshooting.md says the same):

* scores: the rows of the ``top`` best nodes by total (the chosen node always among them), with
  every plugin's raw, normalized and weighted score; how many nodes were scored in all;
* filter: per rejecting plugin, the number of nodes, each distinct reason with its node count and
  up to ``examples`` node names per reason; each rejected node's own verdict only when no more
  than ``filtered_limit`` nodes were rejected;
* the rest as is: message, nominated node, victims, stages, timings.

``to_json``/``from_json`` carry a Decision across the wire (``explain`` asks the scheduler over
HTTPS); the ``scores`` and ``filtered`` maps have ``simulate --output json``'s shape.
"""

from __future__ import annotations

import pickle
import weakref
from collections import Counter
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.core.algorithm import FitError, ScheduleResult
from scheduler.core.cycle import CycleOutcome
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status, code_string

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework
    from scheduler.framework.snapshot import Snapshot
    from scheduler.model.node import NodeInfo
    from scheduler.model.pod import PodInfo
    from scheduler.model.resource import Resource

# Attempt outcomes.
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
BINDING = "binding"  # assumed, the binding cycle still running
WAITING = "waiting"  # assumed, waiting at Permit

# Where a Decision comes from.
SOURCE_SCHEDULER = "scheduler"
SOURCE_WHAT_IF = "what-if"
SOURCE_SIMULATE = "simulate"

# What a compact Decision keeps (see the module docstring).
DEFAULT_TOP_NODES = 10
DEFAULT_FILTERED_LIMIT = 50
DEFAULT_EXAMPLES = 3
# An explained (not compacted) attempt lists every node, up to these many.
FULL_LIMIT = 5000
# A prioritizing extender's raw score on a node it gave no answer for.
NOT_ASKED = -1
# Up to this many scored nodes one stable sort is the cheapest way to the best rows.
SORT_ALL_BELOW = 4096
# Extension points as the record names them, and the Framework's lists of their plugins; the
# names per framework, listed once.
_POINTS_OF: weakref.WeakKeyDictionary[Framework, dict[str, list[str]]] = weakref.WeakKeyDictionary()
_POINTS = (
    ("preFilter", "pre_filter_plugins"), ("filter", "filter_plugins"), ("postFilter", "post_filter_plugins"),
    ("preScore", "pre_score_plugins"), ("score", "score_plugins"), ("reserve", "reserve_plugins"),
    ("permit", "permit_plugins"), ("preBind", "pre_bind_plugins"), ("bind", "bind_plugins"),
)


@dataclass(slots=True)
class ScoreRow:
    """One scored node: per score plugin (in ``Decision.plugins`` order) what Score returned and
    the weighted normalized score; the normalized one is ``final // weight``."""

    node: str
    total: int
    raw: list[int]
    final: list[int]


@dataclass(slots=True)
class Verdict:
    """A rejected node: the Filter (or PreFilter) plugin that rejected it and why."""

    plugin: str
    reasons: list[str]


@dataclass(slots=True)
class Rejection:
    """One rejecting plugin over all nodes: how many it rejected, each reason with its count,
    and a few of the nodes per reason."""

    plugin: str
    nodes: int
    reasons: dict[str, int]
    examples: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class NearMiss:
    """A node that every Filter plugin but one accepts (what-if only: it runs them all)."""

    node: str
    plugin: str
    reasons: list[str]


@dataclass(slots=True)
class Decision:
    pod: str
    uid: str = ""
    profile: str = ""
    attempt: int = 0
    time: float = 0.0  # wall clock of the cycle's start (Unix seconds)
    outcome: str = ""
    node: str | None = None  # the node the algorithm chose (None: it fit nowhere)
    message: str = ""  # why the attempt failed (the FailedScheduling message)
    num_nodes: int = 0
    evaluated: int = 0
    feasible: int = 0
    # Each extension point's plugins in the profile (preFilter, filter, postFilter, preScore,
    # score, reserve, permit, preBind, bind), and those PreFilter or PreScore made skip.
    points: dict[str, list[str]] = field(default_factory=dict)
    skipped_filter: list[str] = field(default_factory=list)
    skipped_score: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)  # score plugins that ran, then extenders
    weights: list[int] = field(default_factory=list)
    extenders: list[str] = field(default_factory=list)  # the columns of ``plugins`` that are extenders
    scored: int = 0  # nodes scored; 0: one feasible node, or no Score plugin
    scores: list[ScoreRow] = field(default_factory=list)  # best first
    filtered: dict[str, Verdict] = field(default_factory=dict)
    filtered_total: int = 0  # nodes rejected in all (``filtered`` may list fewer)
    rejections: list[Rejection] = field(default_factory=list)  # most nodes first
    nominated: str = ""
    victims: list[str] = field(default_factory=list)
    stages: dict[str, str] = field(default_factory=dict)  # Permit/PreBind/Bind -> "Success" or why not
    timings: dict[str, float] = field(default_factory=dict)  # seconds
    near_misses: list[NearMiss] = field(default_factory=list)
    source: str = SOURCE_SCHEDULER
    compact: bool = False

    @property
    def filter_plugins(self) -> list[str]:
        return self.points.get("filter", [])

    @property
    def placed(self) -> bool:
        return self.outcome in (SCHEDULED, BINDING, WAITING)

    def normalized(self, row: ScoreRow) -> list[int]:
        return [f // w if w else f for f, w in zip(row.final, self.weights)]


# ---------------------------------------------------------------------------------------------
# The hot path's part


_NO_PLUGINS: frozenset[str] = frozenset()


class PodRef:
    """What an attempt keeps of its pod once its outcome is final: the names and the requests
    (the page shows them). The PodInfo it was made with holds the pod's whole JSON, and once the
    pod is bound or updated the current version is the cache's: every kept attempt held an
    outdated copy."""

    __slots__ = ("key", "name", "namespace", "requests", "uid")

    def __init__(self, pod: PodInfo | PodRef) -> None:
        self.key: str = pod.key
        self.name: str = pod.name
        self.namespace: str = pod.namespace
        self.uid: str = pod.uid
        self.requests: Resource = pod.requests


class Attempt:
    """One scheduling attempt as the loop leaves it: references, no copies (see the module
    docstring). ``decision`` holds the compacted cycle part once the references are let go."""

    __slots__ = (
        "at",
        "compacted",
        "cycle_seconds",
        "fw",
        "message",
        "nodes",
        "nominated",
        "number",
        "outcome",
        "pod",
        "result",
        "skipped",
        "skipped_score",
        "stages",
        "status",
        "timings",
        "victims",
        "weight",
    )

    def __init__(
        self,
        pod: PodInfo,
        fw: Framework,
        out: CycleOutcome,
        nodes: list[NodeInfo],
        number: int,
        at: float,
        cycle_seconds: float,
    ) -> None:
        self.pod: PodInfo | PodRef = pod
        self.fw: Framework | None = fw
        self.nodes: list[NodeInfo] | None = nodes
        self.number = number
        self.at = at
        self.cycle_seconds = cycle_seconds
        self.result: ScheduleResult | None = out.result
        self.status: Status | None = out.status
        # PostFilter's nomination and its victims' names: the victims' PodInfos (pods being
        # deleted) are not kept for them.
        pf = out.post_filter
        self.nominated = pf.nominated_node_name if pf is not None else ""
        self.victims: tuple[str, ...] = (
            tuple(v.key for v in pf.victims) if pf is not None and pf.nominated_node_name else ())
        # Mostly empty: one shared empty set then, not the cycle's two (200 bytes each).
        self.skipped: AbstractSet[str] = out.state.skip_filter_plugins or _NO_PLUGINS
        self.skipped_score: AbstractSet[str] = out.state.skip_score_plugins or _NO_PLUGINS
        # What the references hold, in node entries (scored nodes, rejected nodes): the store's
        # measure of memory. Read off lengths: O(1).
        res = out.result
        diag = res.diagnosis if res is not None else (out.fit_error.diagnosis if out.fit_error else None)
        self.weight = (len(res.scores.idx) if res is not None and res.scores is not None else 0) + (
            len(diag.node_to_status.statuses) if diag is not None else 0) + 1
        if out.assumed is not None:
            self.outcome = WAITING if fw.will_wait_on_permit(out.assumed) else BINDING
        elif out.status is not None and out.status.is_rejected():
            self.outcome = UNSCHEDULABLE
        else:
            self.outcome = ERROR
        self.message = out.message
        self.stages: dict[str, str] | None = None
        self.timings: dict[str, float] | None = None
        self.compacted: Compacted | None = None

    @property
    def decision(self) -> Decision | None:
        """The compacted cycle part (None while the references are held)."""
        c = self.compacted
        if c is None:
            return None
        base: Decision = pickle.loads(c.blob) if c.base is None else replace(c.base)
        base.points = c.points
        base.scores = _rows(c.names, c.matrix, len(base.plugins))
        return base

    @property
    def node(self) -> str | None:
        """The node the algorithm chose, compacted or not."""
        if self.result is not None:
            return self.result.suggested_host
        # The compact base has it: no need to build the score rows (the page lists 100 of these).
        return self.compacted.node if self.compacted is not None else None

    def finish(self, outcome: str, message: str, stages: dict[str, str], timings: dict[str, float]) -> None:
        """The binding cycle ended: its outcome, the message when it failed, what each stage
        answered and how long the stages took."""
        self.outcome = outcome
        self.message = message
        self.stages = stages
        self.timings = timings


def explain(
    att: Attempt,
    *,
    top: int | None = None,
    filtered_limit: int = FULL_LIMIT,
    examples: int = DEFAULT_EXAMPLES,
) -> Decision:
    """The Decision of ``att``: every scored node and every rejected node (up to FULL_LIMIT)
    while its references are held, else what compaction kept. Never mutates ``att``."""
    base = att.decision if att.fw is None else None
    if base is None:
        base = _cycle_decision(att, FULL_LIMIT if top is None else top, filtered_limit, examples)
    timings = {"cycle": att.cycle_seconds, **(att.timings or {})}
    stages = {**base.stages, **(att.stages or {})}
    return replace(base, outcome=att.outcome, message=att.message, stages=stages, timings=timings)


def summarize(
    att: Attempt,
    top: int = DEFAULT_TOP_NODES,
    filtered_limit: int = DEFAULT_FILTERED_LIMIT,
    examples: int = DEFAULT_EXAMPLES,
) -> None:
    """Keep the small cycle part of ``att`` beside its references (idempotent). Cheapest right
    after the cycle, while its arrays are still in the CPU's cache."""
    if att.compacted is not None or att.fw is None:
        return
    kept = Compacted()
    base = _cycle_decision(att, top, filtered_limit, examples, kept)
    # Complete: every scored node has its row and every rejected node its verdict (a small
    # cluster), so the references would add nothing.
    kept.complete = len(kept.names) >= base.scored and len(base.filtered) >= base.filtered_total
    base.compact = not kept.complete
    kept.node = base.node
    kept.points, base.points = base.points, {}  # the framework's, shared by every attempt
    kept.base = base
    att.compacted = kept


def compact(
    att: Attempt,
    top: int = DEFAULT_TOP_NODES,
    filtered_limit: int = DEFAULT_FILTERED_LIMIT,
    examples: int = DEFAULT_EXAMPLES,
) -> None:
    """Keep the small cycle part of ``att`` and let its references go (idempotent)."""
    summarize(att, top, filtered_limit, examples)
    release(att)
    if att.compacted is not None:
        att.compacted.freeze()


def release(att: Attempt) -> None:
    """Let the references go without keeping anything (an attempt nobody can ask for any more)."""
    att.result = att.status = None
    att.nodes = None
    att.fw = None
    att.skipped = att.skipped_score = _NO_PLUGINS
    att.weight = 0


# Signed integer types a whole attempt's score arrays may be kept in, narrowest first, each with
# the largest magnitude it holds together with its negation (the best rows sort by -total).
_NARROW_TYPES = tuple((np.dtype(t), int(np.iinfo(t).max)) for t in (np.int8, np.int16, np.int32))


def _narrow_type(m: int) -> np.dtype[Any] | None:
    """The narrowest of _NARROW_TYPES holding magnitudes up to ``m``; None: none does."""
    for dt, top in _NARROW_TYPES:
        if m <= top:
            return dt
    return None


def narrowest(a: np.ndarray) -> np.ndarray:
    """``a``'s values in the narrowest signed integer type that holds each of them and its
    negation exactly; ``a`` itself when no narrower one does, or it is empty or not integers."""
    if a.dtype.kind != "i" or not a.size:
        return a
    # The ufuncs' reduce, not a.max(): a third cheaper on arrays this small.
    dt = _narrow_type(max(int(np.maximum.reduce(a, axis=None)), -int(np.minimum.reduce(a, axis=None))))
    return a if dt is None or dt.itemsize >= a.dtype.itemsize else a.astype(dt)


def narrow(att: Attempt) -> None:
    """Keep the score arrays ``att`` refers to in the narrowest type that holds them exactly
    (``narrowest``): scores are 0-100 and default weights at most 3, so a quarter of int64's.
    Raw scores, weighted scores and totals become rows of one matrix: one scan and one copy, not
    one per array (a type per kind would save a byte per raw score for twice the cost). The
    scored nodes' positions, below the cycle's node count, need no scan. The ScoreResult
    changes in place and its values stay the same: the cycle is over, and what reads it later
    (explain, the loop's V(10) score lines) reads values."""
    res = att.result
    sc = res.scores if res is not None else None
    if sc is None or not len(sc.idx):
        return
    p = len(sc.raw)
    # np.array, not np.stack: the same matrix (each array has one entry per scored node) for a
    # quarter of the call's cost.
    *rows, totals = narrowest(np.array([*sc.raw, *sc.final, sc.totals]))
    sc.raw, sc.final, sc.totals = rows[:p], rows[p:], totals
    dt = _narrow_type(len(att.nodes or ()))
    if dt is not None and dt.itemsize < sc.idx.dtype.itemsize:
        sc.idx = sc.idx.astype(dt)


class Compacted:
    """A compacted attempt's cycle part: the Decision without its score rows and extension
    points; the rows as their node names and one integer matrix (see the module docstring);
    the chosen node (the page lists 100 of them); whether it is complete (nothing dropped).
    Once the attempt's references are gone the Decision is kept pickled: one bytes object,
    where its few dozen small containers took about three times the memory and kept the
    allocator's pages from the cycle's garbage long after that was freed."""

    __slots__ = ("base", "blob", "complete", "matrix", "names", "node", "points")

    # Set by summarize(), right after _cycle_decision filled the rows.
    complete: bool
    node: str | None
    points: dict[str, list[str]]

    def __init__(self) -> None:
        self.names: list[str] = []
        self.matrix: np.ndarray | None = None
        self.base: Decision | None = None
        self.blob = b""

    def freeze(self) -> None:
        """Keep the Decision pickled (idempotent)."""
        if self.base is not None:
            self.blob = pickle.dumps(self.base, pickle.HIGHEST_PROTOCOL)
            self.base = None


def _cycle_decision(
    att: Attempt, top: int, filtered_limit: int, examples: int, kept: Compacted | None = None
) -> Decision:
    """The cycle part of ``att``'s Decision; with ``kept``, the score rows go there as a matrix
    and the Decision has none."""
    pod, fw = att.pod, att.fw
    nodes = att.nodes or []
    d = Decision(pod.key, pod.uid, fw.profile_name if fw is not None else "", att.number, att.at,
                 num_nodes=len(nodes))
    if fw is not None:
        d.points = _points(fw)
    d.skipped_filter = sorted(att.skipped)
    d.skipped_score = sorted(att.skipped_score)
    res = att.result
    st = att.status
    fe = st.err if st is not None and isinstance(st.err, FitError) else None
    diag = res.diagnosis if res is not None else (fe.diagnosis if fe is not None else None)
    if res is not None:
        d.node = res.suggested_host
        d.evaluated, d.feasible = res.evaluated_nodes, res.feasible_nodes
    if diag is not None:
        _filter_part(d, diag.node_to_status, diag.node_to_status.absent if fe is not None else None,
                     nodes, filtered_limit, examples)
    if res is None:
        d.evaluated = d.filtered_total
    if res is not None and res.scores is not None and fw is not None:
        sc = res.scores
        raw, final = list(sc.raw), list(sc.final)
        d.plugins = list(sc.plugins)
        d.weights = [fw.weights.get(p, 1) for p in sc.plugins]
        if sc.extenders:
            # Prioritizing extenders: columns after the plugins' (as simulate's table), their
            # answer as the raw score, NOT_ASKED where they gave none for a node.
            names = [nodes[i].name for i in sc.idx.tolist()]
            for ext in sc.extenders:
                answered: dict[str, int] = {}
                for hp in ext.priorities:
                    answered[hp.host] = answered.get(hp.host, 0) + hp.score
                raw.append(np.array([answered.get(n, NOT_ASKED) for n in names], dtype=np.int64))
                final.append(ext.final)
                d.plugins.append(ext.name)
                d.weights.append(ext.weight)
                d.extenders.append(ext.name)
        d.scored = len(sc.idx)
        names, matrix = _top_rows(sc.idx, raw, final, sc.totals, nodes, res.winner, top)
        if kept is not None:
            kept.names, kept.matrix = names, matrix
        else:
            d.scores = _rows(names, matrix, len(raw))
    if res is not None and st is not None and fw is not None:
        # Chosen, then refused in the scheduling cycle: Reserve or Permit, told by the plugin.
        inner = next(iter(fe.diagnosis.node_to_status.statuses.values()), st) if fe is not None else st
        if inner.plugin in d.points.get("permit", ()):
            d.stages = {"Reserve": "Success", "Permit": status_text(inner)}
        else:
            d.stages = {"Reserve": status_text(inner)}
    elif res is not None and st is None:
        d.stages = {"Reserve": "Success"}
    if att.nominated:
        d.nominated = att.nominated
        d.victims = list(att.victims)
    return d


def _points(fw: Framework) -> dict[str, list[str]]:
    """Each extension point's plugin names: a framework's never change, so they are listed once
    per framework and shared by its records (read-only)."""
    pts = _POINTS_OF.get(fw)
    if pts is None:
        pts = _POINTS_OF[fw] = {point: [pl.name for pl in getattr(fw, attr)] for point, attr in _POINTS}
    return pts


def _top_rows(
    idx: np.ndarray, raw: list[np.ndarray], final: list[np.ndarray], totals: np.ndarray,
    nodes: list[NodeInfo], winner: int, top: int,
) -> tuple[list[str], np.ndarray]:
    """The ``top`` best rows, best first, ties in snapshot order (as simulate's table), the chosen
    node always among them: their node names and a matrix with, per row, the total, then each
    column's raw score, then each column's weighted score. Whole-array numpy work only."""
    n = len(totals)
    if n > SORT_ALL_BELOW:
        # The top-th best total: every node above it is kept, then the first nodes at it (ties
        # in snapshot order); only those few are sorted.
        cut = np.partition(totals, n - top)[n - top]
        above = np.flatnonzero(totals > cut)
        cand = np.concatenate((above, np.flatnonzero(totals == cut)[: top - len(above)]))
        picked = cand[np.argsort(-totals[cand], kind="stable")]
    else:
        picked = np.argsort(-totals, kind="stable")[:top]
    if winner not in picked.tolist():
        # Tied with more nodes than are kept: the chosen one is added after them.
        picked = np.append(picked, winner)
    names = [nodes[i].name for i in idx[picked].tolist()]
    # One matrix of every column, then one pick: a pick per column cost twice the rest. Its
    # type holds every value of the arrays (a narrowed attempt's: see ``narrow``).
    cols = np.array(raw + final) if raw or final else None
    dtype = totals.dtype if cols is None else np.promote_types(totals.dtype, cols.dtype)
    matrix = np.empty((len(picked), 1 + len(raw) + len(final)), dtype=dtype)
    matrix[:, 0] = totals[picked]
    if cols is not None:
        matrix[:, 1:] = cols[:, picked].T
    return names, matrix


def _rows(names: list[str], matrix: np.ndarray | None, columns: int) -> list[ScoreRow]:
    """``_top_rows``' answer as ScoreRows (``columns`` raw and as many weighted scores each)."""
    if matrix is None:
        return []
    return [ScoreRow(name, row[0], row[1 : 1 + columns], row[1 + columns :])
            for name, row in zip(names, matrix.tolist())]


def _filter_part(
    d: Decision, nts: NodeToStatus, absent: Status | None, nodes: list[NodeInfo], limit: int, examples: int,
) -> None:
    """Rejections grouped by plugin and reason, a few nodes per reason, and each rejected node's
    verdict up to ``limit``. Nodes never filtered carry ``absent`` (PreFilter's rejection, or the
    PreFilterResult's), as in the FailedScheduling message."""
    statuses = nts.statuses
    if not statuses and (absent is None or not absent.reasons):
        return
    groups: Counter[tuple[str, tuple[str, ...]]] = Counter()
    for s, n in nts.distinct():
        groups[(s.plugin, s.reasons)] += n
    missing = len(nodes) - len(statuses) if absent is not None and absent.reasons else 0
    if absent is not None and missing > 0:
        groups[(absent.plugin, absent.reasons)] += missing
    by_plugin: dict[str, Rejection] = {}
    for (plugin, reasons), n in groups.items():
        r = by_plugin.get(plugin)
        if r is None:
            r = by_plugin[plugin] = Rejection(plugin, 0, {}, {})
        r.nodes += n
        for reason in reasons or ("",):
            r.reasons[reason] = r.reasons.get(reason, 0) + n
    d.filtered_total = sum(groups.values())
    wanted = sum(len(r.reasons) for r in by_plugin.values()) * examples
    got = 0
    # Nodes with the same verdict share one Verdict: a kept record holds up to ``limit`` of them.
    shared: dict[tuple[str, tuple[str, ...]], Verdict] = {}
    for name, plugin, reasons in _verdicts(statuses, absent if missing > 0 else None, nodes):
        if len(d.filtered) < limit:
            v = shared.get((plugin, reasons))
            if v is None:
                v = shared[(plugin, reasons)] = Verdict(plugin, list(reasons))
            d.filtered[name] = v
        for reason in reasons or ("",):
            lst = by_plugin[plugin].examples.setdefault(reason, [])
            if len(lst) < examples:
                lst.append(name)
                got += 1
        if got >= wanted and len(d.filtered) >= min(limit, d.filtered_total):
            break
    for r in by_plugin.values():
        r.reasons = dict(sorted(r.reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    d.rejections = sorted(by_plugin.values(), key=lambda r: (-r.nodes, r.plugin))


def _verdicts(
    statuses: dict[str, Status], absent: Status | None, nodes: list[NodeInfo]
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    for name, s in statuses.items():
        yield name, s.plugin, s.reasons
    if absent is not None:
        for ni in nodes:
            if ni.name not in statuses:
                yield ni.name, absent.plugin, absent.reasons


def from_outcome(
    out: CycleOutcome, fw: Framework, nodes: list[NodeInfo], *, number: int = 1, at: float = 0.0,
    seconds: float = 0.0, source: str = SOURCE_SIMULATE, top: int | None = None,
) -> Decision:
    """A Decision straight from a finished attempt (simulate and what-if: nothing is waiting
    for a binding cycle, so the outcome is the CycleOutcome's)."""
    att = Attempt(out.pod, fw, out, nodes, number, at, seconds)
    if out.assumed is not None:
        att.outcome = SCHEDULED
    elif out.result is not None and out.status is not None:
        # Chosen, then refused later (Reserve, Permit, PreBind, Bind).
        att.outcome = UNSCHEDULABLE if out.status.is_rejected() else ERROR
    d = explain(att, top=top)
    d.source = source
    return d


# ---------------------------------------------------------------------------------------------
# Wire form


def to_json(d: Decision) -> dict[str, Any]:
    """The JSON object of a Decision. ``scores`` and ``filtered`` have simulate's shapes (node ->
    {"plugins": {plugin: {"score", "normalized", "final"}}, "total"}; node -> {"plugin", "reasons"}),
    scores best first."""
    scores: dict[str, Any] = {}
    ext = set(d.extenders)
    for row in d.scores:
        norm = d.normalized(row)
        entry: dict[str, Any] = {"plugins": {
            p: {"score": row.raw[k], "normalized": norm[k], "final": row.final[k]}
            for k, p in enumerate(d.plugins) if p not in ext}, "total": row.total}
        answered = {p: {"score": row.raw[k], "final": row.final[k]}
                    for k, p in enumerate(d.plugins) if p in ext and row.raw[k] != NOT_ASKED}
        if answered:
            entry["extenders"] = answered  # only the nodes an extender scored, as simulate
        scores[row.node] = entry
    out: dict[str, Any] = {
        "pod": d.pod, "uid": d.uid, "profile": d.profile, "attempt": d.attempt, "time": d.time,
        "outcome": d.outcome, "node": d.node, "message": d.message, "numNodes": d.num_nodes,
        "evaluated": d.evaluated, "feasible": d.feasible, "extensionPoints": d.points,
        "skippedFilterPlugins": d.skipped_filter, "skippedScorePlugins": d.skipped_score, "scorePlugins": d.plugins,
        "weights": dict(zip(d.plugins, d.weights)), "extenders": d.extenders, "scored": d.scored, "scores": scores,
        "filtered": {n: {"plugin": v.plugin, "reasons": v.reasons} for n, v in d.filtered.items()},
        "filteredTotal": d.filtered_total,
        "rejections": [{"plugin": r.plugin, "nodes": r.nodes, "reasons": r.reasons, "examples": r.examples}
                       for r in d.rejections],
        "stages": d.stages, "timings": d.timings, "source": d.source, "compact": d.compact,
    }
    if d.nominated:
        out["nominated"] = d.nominated
        out["victims"] = d.victims
    if d.near_misses:
        out["nearMisses"] = [{"node": m.node, "plugin": m.plugin, "reasons": m.reasons} for m in d.near_misses]
    return out


def from_json(doc: dict[str, Any]) -> Decision:
    """The Decision of ``to_json``'s object; ValueError (naming the field) for anything else."""
    try:
        plugins = [str(p) for p in doc.get("scorePlugins") or []]
        extenders = [str(e) for e in doc.get("extenders") or []]
        weights_map = doc.get("weights") or {}
        rows = []
        for node, s in (doc.get("scores") or {}).items():
            per = {**(s.get("plugins") or {}), **(s.get("extenders") or {})}
            asked = {"score": NOT_ASKED, "final": 0}
            rows.append(ScoreRow(str(node), int(s["total"]), [int(per.get(p, asked)["score"]) for p in plugins],
                                 [int(per.get(p, asked)["final"]) for p in plugins]))
        return Decision(
            pod=str(doc["pod"]), uid=str(doc.get("uid") or ""), profile=str(doc.get("profile") or ""),
            attempt=int(doc.get("attempt") or 0), time=float(doc.get("time") or 0.0),
            outcome=str(doc.get("outcome") or ""), node=doc.get("node"), message=str(doc.get("message") or ""),
            num_nodes=int(doc.get("numNodes") or 0), evaluated=int(doc.get("evaluated") or 0),
            feasible=int(doc.get("feasible") or 0),
            points={str(k): [str(p) for p in v] for k, v in (doc.get("extensionPoints") or {}).items()},
            skipped_filter=[str(p) for p in doc.get("skippedFilterPlugins") or []],
            skipped_score=[str(p) for p in doc.get("skippedScorePlugins") or []],
            plugins=plugins, weights=[int(weights_map.get(p, 1)) for p in plugins], extenders=extenders,
            scored=int(doc.get("scored") or 0), scores=rows,
            filtered={str(n): Verdict(str(v.get("plugin") or ""), [str(r) for r in v.get("reasons") or []])
                      for n, v in (doc.get("filtered") or {}).items()},
            filtered_total=int(doc.get("filteredTotal") or 0),
            rejections=[Rejection(str(r["plugin"]), int(r["nodes"]), {str(k): int(v) for k, v in r["reasons"].items()},
                                  {str(k): [str(x) for x in v] for k, v in (r.get("examples") or {}).items()})
                        for r in doc.get("rejections") or []],
            nominated=str(doc.get("nominated") or ""), victims=[str(v) for v in doc.get("victims") or []],
            stages={str(k): str(v) for k, v in (doc.get("stages") or {}).items()},
            timings={str(k): float(v) for k, v in (doc.get("timings") or {}).items()},
            near_misses=[NearMiss(str(m["node"]), str(m["plugin"]), [str(r) for r in m.get("reasons") or []])
                         for m in doc.get("nearMisses") or []],
            source=str(doc.get("source") or SOURCE_SCHEDULER), compact=bool(doc.get("compact")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a decision record: {type(exc).__name__}: {exc}") from None


def status_text(s: Status | None) -> str:
    """One stage's answer as a record shows it: "Success", or the code, plugin and message."""
    if s is None or s.code == Code.SUCCESS:
        return "Success"
    name = code_string(s.code)
    who = f" ({s.plugin})" if s.plugin else ""
    return f"{name}{who}: {s.message}" if s.message else f"{name}{who}"


# ---------------------------------------------------------------------------------------------
# What would change the answer (what-if only: it runs every Filter plugin on every node)


def near_misses(fw: Framework, pod: PodInfo, snap: Snapshot) -> list[NearMiss]:
    """The nodes that exactly one Filter plugin rejects now (a node outside a PreFilter plugin's
    node list counts that as one rejection): change that one verdict and the pod fits there.
    Nominated pods are not added. Empty when PreFilter rejects the pod outright."""
    state = CycleState()
    pre, s, with_nodes = fw.run_pre_filter(state, pod, snap.node_infos)
    if s is not None and not s.is_success():
        return []
    allowed = pre.node_names if pre is not None else None
    out: list[NearMiss] = []
    for ni in snap.node_infos:
        verdicts = fw.filter_verdicts(state, pod, ni)
        outside = allowed is not None and ni.name not in allowed
        if len(verdicts) + outside != 1:
            continue
        if outside:
            out.append(NearMiss(ni.name, " ".join(with_nodes), ["node(s) didn't satisfy the PreFilter node list"]))
        else:
            out.append(NearMiss(ni.name, verdicts[0].plugin, list(verdicts[0].reasons)))
    out.sort(key=lambda m: (m.plugin, m.node))
    return out
