"""The framework runtime: runs one profile's plugins at each extension point (upstream
framework/runtime/framework.go; core/profiles.py builds it)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from scheduler.config import PluginRef
from scheduler.framework.batch import OpportunisticBatch
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint, unroll_wildcard_resource
from scheduler.framework.extender import EXTENDER_NAME, Extender, HostPriority
from scheduler.framework.interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NodeToStatus,
    PermitPlugin,
    Placement,
    PlacementGeneratePlugin,
    PlacementPluginScores,
    PlacementScore,
    PlacementScorePlugin,
    Plugin,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.signers import SCHEDULER_NAME_SIGNER, encode_signature
from scheduler.framework.status import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    Status,
    StatusError,
    code_string,
    go_quote,
)
from scheduler.framework.waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

log = structlog.get_logger(__name__)

# Up to this many candidate nodes, Filter runs each plugin's per-node form in plain Python
# (``Framework._filter_few``): a batch form's fixed array work costs more than it saves there.
SMALL_CHUNK = 2

# Observer called as (extension_point, plugin_or_empty, status_code_name, seconds); metrics hook in here.
DurationObserver = Callable[[str, str, str, float], None]


@dataclass(slots=True)
class ExtenderScores:
    """One prioritizing extender's answer: its scores as returned (in its order, hosts it was
    not asked about included) and, aligned with the scored nodes, what it added to each total."""

    name: str
    weight: int
    priorities: list[HostPriority]
    final: np.ndarray


@dataclass(slots=True)
class ScoreResult:
    """Scores of the feasible nodes: per plugin raw and weighted-normalised, plus totals
    (extenders' contributions included)."""

    idx: np.ndarray  # snapshot positions of the scored nodes
    plugins: list[str]
    raw: list[np.ndarray]  # what Score returned, per plugin
    final: list[np.ndarray]  # after NormalizeScore and weight, per plugin
    totals: np.ndarray
    extenders: list[ExtenderScores] = field(default_factory=list)


def _status_name(s: Status | None) -> str:
    return "Success" if s is None else _CODE_LABELS[s.code]


# Metric label of each status code ("UnschedulableAndUnresolvable"): read on every observation.
_CODE_LABELS = {c: c.name.title().replace("_", "") for c in Code}


def _has_extensions(pl: PreFilterPlugin) -> bool:
    """Whether a PreFilter plugin overrides AddPod/RemovePod (upstream PreFilterExtensions != nil)."""
    t = type(pl)
    return t.add_pod is not PreFilterPlugin.add_pod or t.remove_pod is not PreFilterPlugin.remove_pod


def _as_status(exc: Exception) -> Status:
    """A plugin's exception as the Status it stands for (upstream plugins return errors, which
    the framework wraps with AsStatus): a StatusError carries its own, anything else is an Error
    with the exception's text. Called from each run method's ``except``, so the success path
    costs nothing (no wrapper call or bound-method allocation per plugin and node)."""
    return exc.status if isinstance(exc, StatusError) else Status(Code.ERROR, str(exc), err=exc)


def _failed(point: str, plugin: str, s: Status) -> Status:
    """A plugin's failure at ``point``: a rejection as it is, anything else an Error naming it."""
    if s.is_rejected():
        return s.with_plugin(plugin)
    return Status(Code.ERROR, f"running {point} plugin {go_quote(plugin)}: {s.message}", plugin=plugin)


def _invalid_score(plugin: str, score: int) -> str:
    return (
        f"applying score defaultWeights on Score plugins: plugin {go_quote(plugin)} returns an invalid score "
        f"{score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    )


class _EveryEvent(EnqueueExtensions):
    """Upstream defaultEnqueueExtension: every kind's every action, each one queueing the pod."""

    def __init__(self, generic_workload: bool) -> None:
        self.generic_workload = generic_workload

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return unroll_wildcard_resource(self.generic_workload)


class Framework:
    """One profile's plugins, instantiated once, and the code that runs them."""

    def __init__(
        self,
        profile_name: str,
        handle: Handle,
        plugins: Mapping[str, Plugin],
        points: Mapping[str, Sequence[PluginRef]],
        *,
        percentage_of_nodes_to_score: int = 0,
        observer: DurationObserver | None = None,
        pod_group_post_filter: Sequence[str] = (),
        opportunistic_batching: bool = False,
    ) -> None:
        """``plugins`` by name, each built once; ``points`` lists them per extension point (score
        and placementScore entries with their weights). core/profiles.py builds both from a
        profile and has checked every plugin against its points, the queueSort, bind and
        placementGenerate counts and the weights' sums; ``pod_group_post_filter`` names the
        PodGroupPostFilter plugins (DefaultPreemption, with WorkloadAwarePreemption on);
        ``opportunistic_batching`` is that gate (then pods are signed and ``batch`` keeps the
        last cycle's scored nodes)."""
        self.profile_name = profile_name
        self.handle = handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.observer = observer
        self.plugins: dict[str, Plugin] = dict(plugins)
        self.weights: dict[str, int] = {ref.name: ref.weight for ref in points.get("score", ())}
        self.placement_weights: dict[str, int] = {ref.name: ref.weight for ref in points.get("placementScore", ())}

        def at(point: str) -> list[Any]:
            return [self.plugins[ref.name] for ref in points.get(point, ())]

        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = at("preEnqueue")
        self.queue_sort: QueueSortPlugin = at("queueSort")[0]
        self.pre_filter_plugins: list[PreFilterPlugin] = at("preFilter")
        # Preemption runs the extensions once per victim on each node it tries: asked once here.
        self._pre_filter_extensions = [pl for pl in self.pre_filter_plugins if _has_extensions(pl)]
        self.filter_plugins: list[FilterPlugin] = at("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = at("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = at("preScore")
        self.score_plugins: list[ScorePlugin] = at("score")
        self.reserve_plugins: list[ReservePlugin] = at("reserve")
        self.permit_plugins: list[PermitPlugin] = at("permit")
        self.pre_bind_plugins: list[PreBindPlugin] = at("preBind")
        self.bind_plugins: list[BindPlugin] = at("bind")
        self.post_bind_plugins: list[PostBindPlugin] = at("postBind")
        self.placement_generate_plugins: list[PlacementGeneratePlugin] = at("placementGenerate")
        self.placement_score_plugins: list[PlacementScorePlugin] = at("placementScore")
        self.pod_group_post_filter_plugins: list[PodGroupPostFilterPlugin] = [
            pl for name in pod_group_post_filter if isinstance(pl := self.plugins.get(name), PodGroupPostFilterPlugin)
        ]
        # Plugins whose batch form overrides the base class's "None" default.
        self._filter_has_batch = {
            pl.name: type(pl).filter_batch is not FilterPlugin.filter_batch for pl in self.filter_plugins
        }
        self._filter_has_statuses = {
            pl.name: type(pl).filter_batch_statuses is not FilterPlugin.filter_batch_statuses
            for pl in self.filter_plugins
        }
        self._score_has_batch = {
            pl.name: type(pl).score_batch is not ScorePlugin.score_batch for pl in self.score_plugins
        }
        # scheduler_plugin_evaluation_total: calls per plugin, parallel to the plugin lists
        # (upstream counts each Filter and Score call, i.e. one per node, and PreFilter and
        # PreScore calls that did not Skip). Plain ints: the edge reads them when scraped.
        self._evals: dict[str, list[int]] = {
            "PreFilter": [0] * len(self.pre_filter_plugins),
            "Filter": [0] * len(self.filter_plugins),
            "PreScore": [0] * len(self.pre_score_plugins),
            "Score": [0] * len(self.score_plugins),
        }
        # When True every plugin is run in its per-node reference form (tests compare both).
        self.reference_mode = False
        # OpportunisticBatching (upstream NewFramework, computeBatchablePlugins).
        self.batch: OpportunisticBatch | None = None
        self.signers: list[SignPlugin] = []
        self.unsigned: list[str] = []  # the plugins that keep this profile from signing
        self.signatures_enabled = False
        if opportunistic_batching:
            self.batch = OpportunisticBatch(self)
            self._batchable_plugins()
        # Plugins that drive the framework themselves (preemption's dry runs) get it here.
        for pl in self.plugins.values():
            setter = getattr(pl, "set_framework", None)
            if setter is not None:
                setter(self)

    # -- helpers -----------------------------------------------------------------------------
    def _observe(self, point: str, plugin: str, status: Status | None, started: float) -> None:
        if self.observer is not None:
            self.observer(point, plugin, _status_name(status), time.perf_counter() - started)

    def observe_point(self, point: str, status: Status | None, started: float) -> None:
        """An extension point timed by the caller (the Filter search runs in core/algorithm.py)."""
        self._observe(point, "", status, started)

    def _timed(self, point: str, plugin: str, status: Status | None, started: float, count: int = 1) -> None:
        """A sampled cycle's plugin call(s): ``count`` nodes decided in one batch call."""
        self.handle.metrics.plugin(point, plugin, _status_name(status), time.perf_counter() - started, count)

    def sample_plugin_metrics(self) -> bool:
        """Whether a new cycle times its plugins (CycleState.record_plugin_metrics)."""
        return self.handle.metrics.sample()

    def plugin_evaluations(self) -> list[tuple[str, str, int]]:
        """(plugin, extension point, calls so far) for PreFilter, Filter, PreScore and Score."""
        lists: dict[str, Sequence[Plugin]] = {
            "PreFilter": self.pre_filter_plugins, "Filter": self.filter_plugins,
            "PreScore": self.pre_score_plugins, "Score": self.score_plugins,
        }
        return [(pl.name, point, n) for point, pls in lists.items() for pl, n in zip(pls, self._evals[point])]

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    @property
    def extenders(self) -> tuple[Extender, ...]:
        """The scheduler extenders (upstream Framework.Extenders()), from the Handle."""
        return self.handle.extenders

    def enqueue_extensions(self) -> list[tuple[str, EnqueueExtensions]]:
        out: list[tuple[str, EnqueueExtensions]] = []
        if self.handle.extenders:
            # Extenders register no events: a pod they rejected moves on any of them (upstream
            # gives EXTENDER_NAME the default enqueue extension).
            out.append((EXTENDER_NAME, _EveryEvent(self.handle.features.enable_generic_workload)))
        out.extend((name, pl) for name, pl in self.plugins.items() if isinstance(pl, EnqueueExtensions))
        return out

    # -- signatures (OpportunisticBatching) ---------------------------------------------------
    def _batchable_plugins(self) -> None:
        """Every PreFilter, Filter, PreScore and Score plugin must sign, and no extender may be
        configured, for the profile to sign pods (upstream computeBatchablePlugins; the live
        app logs ``unsigned`` at start, as upstream logs it when building the framework)."""
        self.signatures_enabled = not self.handle.extenders
        seen: set[str] = set()
        for pl in (*self.pre_filter_plugins, *self.filter_plugins, *self.pre_score_plugins, *self.score_plugins):
            if pl.name in seen:
                continue
            seen.add(pl.name)
            if isinstance(pl, SignPlugin):
                self.signers.append(pl)
            else:
                self.unsigned.append(pl.name)
                self.signatures_enabled = False

    def sign_pod(self, pod: PodInfo) -> bytes | None:
        """The pod's signature, None when some plugin cannot sign it (upstream SignPod). Two
        pods with equal signatures get the same feasibility and scores on the same nodes."""
        started = time.perf_counter()
        try:
            if not self.signatures_enabled:
                return None
            fragments: dict[str, Any] = {SCHEDULER_NAME_SIGNER: pod.scheduler_name}
            for pl in self.signers:
                t0 = time.perf_counter()
                try:
                    r = pl.sign_pod(pod)
                except Exception as exc:
                    r = _as_status(exc)
                st = r if isinstance(r, Status) else None
                self.handle.metrics.plugin("Sign", pl.name, _status_name(st), time.perf_counter() - t0)
                if st is not None:
                    if st.is_success():
                        continue
                    if st.code == Code.ERROR:
                        log.error("sign_pod_failed", pod=pod.key, plugin=pl.name, error=st.message)
                    return None
                assert not isinstance(r, Status)
                fragments.update(r)
            return encode_signature(fragments)
        finally:
            # Upstream observes Success whatever happened (its deferred status is never set).
            self._observe("Sign", "", None, started)

    # -- PreEnqueue --------------------------------------------------------------------------
    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        started = time.perf_counter()
        rec = self.handle.metrics.sample()  # upstream samples each PreEnqueue run on its own
        out: Status | None = None
        for pl in self.pre_enqueue_plugins:
            t0 = time.perf_counter() if rec else 0.0
            try:
                s = pl.pre_enqueue(pod)
            except Exception as exc:
                s = _as_status(exc)
                if rec:
                    self._timed("PreEnqueue", pl.name, s, t0)
                msg = s.message
                out = Status(Code.ERROR, f"running PreEnqueue plugin {go_quote(pl.name)}: {msg}", plugin=pl.name)
                break
            if rec:
                self._timed("PreEnqueue", pl.name, s, t0)
            if s is not None and not s.is_success():
                out = s.with_plugin(pl.name)
                break
        # Upstream's deferred observation reads a status its loop shadows: always Success.
        self._observe("PreEnqueue", "", None, started)
        return out

    # -- PreFilter ---------------------------------------------------------------------------
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, list[str]]:
        """Returns (node restriction or None, status, plugins that restricted the nodes)."""
        started = time.perf_counter()
        result: PreFilterResult | None = None
        returned: Status | None = None
        with_nodes: list[str] = []
        rec = state.record_plugin_metrics
        evals = self._evals["PreFilter"]
        for k, pl in enumerate(self.pre_filter_plugins):
            t0 = time.perf_counter() if rec else 0.0
            try:
                r = pl.pre_filter(state, pod, nodes)
            except Exception as exc:
                r = _as_status(exc)
            if rec:
                self._timed("PreFilter", pl.name, r if isinstance(r, Status) else None, t0)
            if isinstance(r, Status) and r.code == Code.SKIP:
                state.skip_filter_plugins.add(pl.name)
                continue
            evals[k] += 1
            if isinstance(r, Status):
                if r.code == Code.SUCCESS:
                    continue
                r = r.with_plugin(pl.name)
                if r.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    self._observe("PreFilter", "", r, started)
                    return None, r, with_nodes
                if r.code == Code.UNSCHEDULABLE:
                    # Keep running the others: preemption needs all PreFilter state.
                    returned = r
                    continue
                err = Status(Code.ERROR, f"running PreFilter plugin {go_quote(pl.name)}: {r.message}", plugin=pl.name)
                self._observe("PreFilter", "", err, started)
                return None, err, with_nodes
            if r is not None and r.node_names is not None:
                with_nodes.append(pl.name)
                result = r if result is None else result.merge(r)
                if result.node_names is not None and not result.node_names:
                    if len(with_nodes) == 1:
                        msg = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                    st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
                    self._observe("PreFilter", "", st, started)
                    return result, st, with_nodes
        self._observe("PreFilter", "", returned, started)
        return result, returned, with_nodes

    # -- Filter (reference, one node) --------------------------------------------------------
    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        rec = state.record_plugin_metrics
        evals = self._evals["Filter"]
        for k, pl in enumerate(self.filter_plugins):
            if pl.name in skip:
                continue
            evals[k] += 1
            t0 = time.perf_counter() if rec else 0.0
            s = self._filter_one(pl, state, pod, node)
            if rec:
                self._timed("Filter", pl.name, s, t0)
            if s is not None:
                return s
        return None

    def filter_verdicts(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> list[Status]:
        """Every Filter plugin's rejection of ``node``, not stopping at the first (``explain``'s
        "which nodes fail only one plugin"; never part of a scheduling cycle)."""
        out: list[Status] = []
        for pl in self.filter_plugins:
            if pl.name not in state.skip_filter_plugins:
                s = self._filter_one(pl, state, pod, node)
                if s is not None:
                    out.append(s)
        return out

    def _filter_one(self, pl: FilterPlugin, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            s = pl.filter(state, pod, node)
        except Exception as exc:
            s = _as_status(exc)
        if s is None or s.code == Code.SUCCESS:
            return None
        if not s.is_rejected():
            return Status(Code.ERROR, f"running {go_quote(pl.name)} filter plugin: {s.message}", plugin=pl.name)
        return s.with_plugin(pl.name)

    def filter_chunk(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, cand: np.ndarray
    ) -> tuple[np.ndarray, dict[int, Status], np.ndarray]:
        """Run Filter over ``cand`` (snapshot positions). Returns the pass mask, the Status of
        each position a per-node form rejected, and per position the index of the filter
        plugin whose batch form rejected it (-1: none; its Status is computed when needed, by
        ``statuses_for``)."""
        if len(cand) <= SMALL_CHUNK:
            return self._filter_few(state, pod, snap, cand)
        alive = np.ones(len(cand), dtype=bool)
        failures: dict[int, Status] = {}
        rejected_by = np.full(len(cand), -1, dtype=np.int32)
        skip = state.skip_filter_plugins
        infos = snap.node_infos
        rec = state.record_plugin_metrics
        evals = self._evals["Filter"]
        for k, pl in enumerate(self.filter_plugins):
            if pl.name in skip:
                continue
            pos = np.flatnonzero(alive)
            if len(pos) == 0:
                break
            evals[k] += len(pos)
            t0 = time.perf_counter() if rec else 0.0
            sub = cand[pos]
            mask: np.ndarray | None = None
            if self._filter_has_batch[pl.name] and not self.reference_mode:
                try:
                    mask = pl.filter_batch(state, pod, snap, sub)
                except StatusError as exc:
                    raise StatusError(
                        Status(
                            Code.ERROR,
                            f"running {go_quote(pl.name)} filter plugin: {exc.status.message}",
                            plugin=pl.name,
                        )
                    ) from None
            if mask is not None:
                bad = pos[~mask]
                if len(bad):
                    alive[bad] = False
                    rejected_by[bad] = k
                if rec:
                    self._timed_chunk(pl, state, pod, infos, cand, t0, len(pos), bad.tolist(), failures, k)
                continue
            for p, i in zip(pos.tolist(), sub.tolist()):
                s = self._filter_one(pl, state, pod, infos[i])
                if s is not None:
                    if s.code == Code.ERROR:
                        raise StatusError(s)
                    alive[p] = False
                    failures[p] = s
            if rec:
                self._timed_chunk(pl, state, pod, infos, cand, t0, len(pos), pos[~alive[pos]].tolist(), failures, -1)
        self._refilter_nominated(state, pod, snap, cand, alive, failures, rejected_by)
        return alive, failures, rejected_by

    def _filter_few(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, cand: np.ndarray
    ) -> tuple[np.ndarray, dict[int, Status], np.ndarray]:
        """``filter_chunk`` over a handful of nodes (a PreFilterResult that names one, a
        DaemonSet pod's): the per-node forms in plain Python, since a batch form's array work
        costs more than it saves on so few. Same results, metrics and errors."""
        n = len(cand)
        idxs = cand.tolist()
        ok = [True] * n
        failures: dict[int, Status] = {}
        skip = state.skip_filter_plugins
        infos = snap.node_infos
        rec = state.record_plugin_metrics
        evals = self._evals["Filter"]
        live = list(range(n))
        for k, pl in enumerate(self.filter_plugins):
            if pl.name in skip:
                continue
            if not live:
                break
            evals[k] += len(live)
            t0 = time.perf_counter() if rec else 0.0
            bad: list[int] = []
            for p in live:
                s = self._filter_one(pl, state, pod, infos[idxs[p]])
                if s is not None:
                    if s.code == Code.ERROR:
                        raise StatusError(s)
                    ok[p] = False
                    failures[p] = s
                    bad.append(p)
            if bad:
                live = [p for p in live if ok[p]]
            if rec:
                self._timed_chunk(pl, state, pod, infos, cand, t0, len(live) + len(bad), bad, failures, -1)
        alive = np.array(ok, dtype=bool)
        rejected_by = np.full(n, -1, dtype=np.int32)
        self._refilter_nominated(state, pod, snap, cand, alive, failures, rejected_by)
        return alive, failures, rejected_by

    def _refilter_nominated(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, cand: np.ndarray, alive: np.ndarray,
        failures: dict[int, Status], rejected_by: np.ndarray,
    ) -> None:
        """Nodes with nominated pods are decided by the per-node form with those pods
        (upstream runs RunFilterPluginsWithNominatedPods for every node)."""
        nom = self.handle.nominator
        if nom is None:
            return
        nodes = nom.nominated_nodes()
        if not nodes:
            return
        infos = snap.node_infos
        node_map = snap.node_map
        held = np.array([node_map[n].index for n in nodes if n in node_map], dtype=np.int64)
        for p in np.flatnonzero(np.isin(cand, held)).tolist():
            ni = infos[int(cand[p])]
            s = self.run_filter_with_nominated_pods(state, pod, ni)
            rejected_by[p] = -1
            if s is None:
                alive[p] = True
                failures.pop(p, None)
                continue
            if s.code == Code.ERROR:
                raise StatusError(s)
            alive[p] = False
            failures[p] = s

    def _timed_chunk(
        self, pl: FilterPlugin, state: CycleState, pod: PodInfo, infos: Sequence[NodeInfo], cand: np.ndarray,
        started: float, n: int, bad: list[int], failures: Mapping[int, Status], batch: int,
    ) -> None:
        """A sampled cycle's Filter over ``n`` nodes in one go, as upstream's one observation per
        node: the mean time for each, Success for those that passed, the rejection's code for
        those that failed (``batch``: the plugin index whose batch form rejected ``bad``; its
        code is read from its first failure)."""
        seconds = time.perf_counter() - started
        per = seconds / n if n else 0.0
        codes: dict[str, int] = {}
        if batch >= 0:
            if bad:
                codes[_status_name(self.status_for(state, pod, infos[int(cand[bad[0]])], batch))] = len(bad)
        else:
            for b in bad:
                name = _status_name(failures[b])
                codes[name] = codes.get(name, 0) + 1
        m = self.handle.metrics
        if n > len(bad):
            m.plugin("Filter", pl.name, "Success", per * (n - len(bad)), n - len(bad))
        for name, c in codes.items():
            m.plugin("Filter", pl.name, name, per * c, c)

    def statuses_for(
        self, state: CycleState, pod: PodInfo, infos: Sequence[NodeInfo], plugin: int, idx: np.ndarray
    ) -> list[Status]:
        """The statuses of the nodes ``infos[idx]`` that filter plugin ``plugin``'s batch form
        rejected: from its batch statuses when it has them (one Status per distinct answer,
        shared by its nodes), else node by node."""
        pl = self.filter_plugins[plugin]
        raw = None
        if self._filter_has_statuses[pl.name] and not self.reference_mode:
            raw = pl.filter_batch_statuses(state, pod, self.handle.snapshot, idx)
        if raw is None:
            return [self.status_for(state, pod, infos[i], plugin) for i in idx.tolist()]
        out: list[Status] = []
        seen: dict[int, Status] = {}
        for i, s in zip(idx.tolist(), raw):
            t = seen.get(id(s))
            if t is None:
                t = seen[id(s)] = self._as_filter_status(pl, s, infos[i])
            out.append(t)
        return out

    def _as_filter_status(self, pl: FilterPlugin, s: Status | None, node: NodeInfo) -> Status:
        if s is None or s.code == Code.SUCCESS:
            # The batch form rejected a node its per-node form accepts: a plugin bug, said loudly.
            return Status(
                Code.ERROR, f"plugin {go_quote(pl.name)}: batch filter disagrees with filter on node {node.name}"
            )
        if not s.is_rejected():
            return Status(Code.ERROR, f"running {go_quote(pl.name)} filter plugin: {s.message}", plugin=pl.name)
        return s.with_plugin(pl.name)

    def status_for(self, state: CycleState, pod: PodInfo, node: NodeInfo, failure: Status | int) -> Status:
        if isinstance(failure, Status):
            return failure
        pl = self.filter_plugins[failure]
        s = self._filter_one(pl, state, pod, node)
        if s is None:
            # The batch form rejected a node its per-node form accepts: a plugin bug, said loudly.
            return Status(
                Code.ERROR, f"plugin {go_quote(pl.name)}: batch filter disagrees with filter on node {node.name}"
            )
        return s

    # -- PostFilter --------------------------------------------------------------------------
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream RunPostFilterPlugins: the first success or UnschedulableAndUnresolvable wins;
        otherwise the rejections' reasons are joined (DynamicResources' then DefaultPreemption's)
        and the last non-noop result is kept."""
        started = time.perf_counter()
        if state.skip_all_post_filter:
            st = Status(Code.UNSCHEDULABLE, "All PostFilter plugins are skipped")
            self._observe("PostFilter", "", st, started)
            return None, st
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            try:
                r, s = pl.post_filter(state, pod, statuses)
            except Exception as exc:
                r, s = None, _as_status(exc)
            if s is None or s.code == Code.SUCCESS:
                st = Status(Code.SUCCESS, *(s.reasons if s is not None else ()), plugin=pl.name)
                self._observe("PostFilter", "", None, started)
                return r, st
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                st = s.with_plugin(pl.name)
                self._observe("PostFilter", "", st, started)
                return r, st
            if not s.is_rejected():
                st = Status(Code.ERROR, s.message, plugin=pl.name)
                self._observe("PostFilter", "", st, started)
                return None, st
            if r is not None and r.mode != "noop":
                result = r
            reasons.extend(s.reasons)
            if not rejector:
                rejector = pl.name
        st = Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)
        self._observe("PostFilter", "", st, started)
        return result, st

    # -- PreFilter extensions and nominated pods (preemption) --------------------------------
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._pre_filter_extension("AddPod", state, pod, to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._pre_filter_extension("RemovePod", state, pod, to_remove, node)

    def _pre_filter_extension(
        self, op: str, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status | None:
        skip = state.skip_filter_plugins
        rec = state.record_plugin_metrics
        for pl in self._pre_filter_extensions:
            if pl.name in skip:
                continue
            t0 = time.perf_counter() if rec else 0.0
            try:
                if op == "AddPod":
                    s = pl.add_pod(state, pod, other, node)
                else:
                    s = pl.remove_pod(state, pod, other, node)
            except Exception as exc:
                s = _as_status(exc)
            if rec:
                self._timed(f"PreFilterExtension{op}", pl.name, s, t0)
            if s is not None and not s.is_success():
                return Status(Code.ERROR, f"running {op} on PreFilter plugin {go_quote(pl.name)}: {s.message}",
                              plugin=pl.name)
        return None

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        nom = self.handle.nominator
        return nom.nominated_pods_for_node(node) if nom is not None else []

    def _add_ge_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo]:
        """Upstream addGENominatedPods: a copy of the node and state with the pods nominated to
        it that ``pod`` must yield to (priority >= its own), so it cannot take their room."""
        nominated = self.nominated_pods_for_node(node.name)
        if not nominated:
            return False, state, node
        node_out: NodeInfo | None = None
        state_out: CycleState | None = None
        for p in nominated:
            if p.priority >= pod.priority and p.uid != pod.uid:
                if node_out is None or state_out is None:
                    node_out, state_out = node.clone(), state.clone()
                node_out.add_pod(p)
                s = self.run_pre_filter_extension_add_pod(state_out, pod, p, node_out)
                if s is not None:
                    raise StatusError(s)
        if node_out is None or state_out is None:
            return False, state, node
        return True, state_out, node_out

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """Upstream RunFilterPluginsWithNominatedPods: with the >= priority nominated pods added,
        then (only if that passed and some were added) again without them."""
        try:
            added, st2, ni2 = self._add_ge_nominated_pods(state, pod, node)
        except StatusError as exc:
            return exc.status
        s = self.run_filter(st2, pod, ni2)
        if not added or s is not None:
            return s
        return self.run_filter(state, pod, node)

    # -- PreScore / Score --------------------------------------------------------------------
    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        started = time.perf_counter()
        rec = state.record_plugin_metrics
        evals = self._evals["PreScore"]
        for k, pl in enumerate(self.pre_score_plugins):
            t0 = time.perf_counter() if rec else 0.0
            try:
                s = pl.pre_score(state, pod, nodes)
            except Exception as exc:
                s = _as_status(exc)
            if rec:
                self._timed("PreScore", pl.name, s, t0)
            if s is not None and s.code == Code.SKIP:
                state.skip_score_plugins.add(pl.name)
                continue
            evals[k] += 1
            if s is None or s.code == Code.SUCCESS:
                continue
            st = Status(Code.ERROR, f"running PreScore plugin {go_quote(pl.name)}: {s.message}", plugin=pl.name)
            self._observe("PreScore", "", st, started)
            return st
        self._observe("PreScore", "", None, started)
        return None

    def run_score(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray, nodes: Sequence[NodeInfo] | None = None
    ) -> ScoreResult:
        """Score the nodes at snapshot positions ``idx``. ``nodes``, aligned with ``idx``, are
        the NodeInfos to score instead of the snapshot's (what a filter extender returned):
        then only the per-node forms run, on those objects, as upstream scores what it is given."""
        started = time.perf_counter()
        names: list[str] = []
        raws: list[np.ndarray] = []
        finals: list[np.ndarray] = []
        totals = np.zeros(len(idx), dtype=np.int64)
        infos: Sequence[NodeInfo] = snap.node_infos
        scored = idx.tolist()
        if nodes is not None:
            infos, scored = nodes, list(range(len(nodes)))
        rec = state.record_plugin_metrics
        evals = self._evals["Score"]
        for k, pl in enumerate(self.score_plugins):
            if pl.name in state.skip_score_plugins:
                continue
            evals[k] += len(idx)
            t0 = time.perf_counter() if rec else 0.0
            try:
                arr: np.ndarray | None = None
                if self._score_has_batch[pl.name] and not self.reference_mode and nodes is None:
                    arr = pl.score_batch(state, pod, snap, idx)
                if arr is None:
                    arr = np.fromiter(
                        (pl.score(state, pod, infos[i]) for i in scored), dtype=np.int64, count=len(idx)
                    )
                else:
                    arr = np.asarray(arr, dtype=np.int64)
                raw = arr.copy()
                if rec:
                    self._timed("Score", pl.name, None, t0, len(idx))
                if pl.has_normalize:
                    t0 = time.perf_counter() if rec else 0.0
                    s = pl.normalize_score(state, pod, arr)
                    if rec:
                        self._timed("ScoreExtensionNormalize", pl.name, s, t0)
                    if s is not None and not s.is_success():
                        msg = f"plugin {go_quote(pl.name)} failed with: {s.message}"
                        raise StatusError(Status(Code.ERROR, f"running Normalize on Score plugins: {msg}"))
            except StatusError as exc:
                if exc.status.code == Code.ERROR and "Score plugins" in exc.status.message:
                    raise
                raise StatusError(
                    Status(
                        Code.ERROR,
                        f"running Score plugins: plugin {go_quote(pl.name)} failed with: {exc.status.message}",
                        plugin=pl.name,
                    )
                ) from None
            if len(arr) and (int(arr.max()) > MAX_NODE_SCORE or int(arr.min()) < MIN_NODE_SCORE):
                bad = int(arr.max()) if int(arr.max()) > MAX_NODE_SCORE else int(arr.min())
                raise StatusError(Status(Code.ERROR, _invalid_score(pl.name, bad), plugin=pl.name))
            weighted = arr * self.weights[pl.name]
            totals += weighted
            names.append(pl.name)
            raws.append(raw)
            finals.append(weighted)
        self._observe("Score", "", None, started)
        return ScoreResult(idx, names, raws, finals, totals)

    # -- Reserve / Permit --------------------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        started = time.perf_counter()
        rec = state.record_plugin_metrics
        out: Status | None = None
        for pl in self.reserve_plugins:
            t0 = time.perf_counter() if rec else 0.0
            try:
                s = pl.reserve(state, pod, node)
            except Exception as exc:
                s = _as_status(exc)
            if rec:
                self._timed("Reserve", pl.name, s, t0)
            if s is not None and not s.is_success():
                out = _failed("Reserve", pl.name, s)
                break
        self._observe("Reserve", "", out, started)
        return out

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        started = time.perf_counter()
        rec = state.record_plugin_metrics
        for pl in reversed(self.reserve_plugins):
            t0 = time.perf_counter() if rec else 0.0
            with contextlib.suppress(Exception):  # Unreserve must not fail the cleanup of the others.
                pl.unreserve(state, pod, node)
            if rec:
                self._timed("Unreserve", pl.name, None, t0)
        self._observe("Unreserve", "", None, started)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[dict[str, float], Status | None]:
        """Upstream RunPermitPlugins: ({}, None) to allow; a rejection or an error at the first
        plugin that gives one; else, when some plugins asked to wait, their capped timeouts
        (plugin -> seconds) and a WAIT status. It makes no waiting pod: ``add_waiting_pod`` does."""
        started = time.perf_counter()
        waits: dict[str, float] = {}
        wait_status: Status | None = None
        rec = state.record_plugin_metrics
        for pl in self.permit_plugins:
            t0 = time.perf_counter() if rec else 0.0
            try:
                s, timeout = pl.permit(state, pod, node)
            except Exception as exc:
                s, timeout = _as_status(exc), 0.0
            if rec:
                self._timed("Permit", pl.name, s, t0)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                st = s.with_plugin(pl.name)
                self._observe("Permit", "", st, started)
                return {}, st
            if s.code == Code.WAIT:
                waits[pl.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                wait_status = s
                continue
            msg = f"running Permit plugin {go_quote(pl.name)}: {s.message}"
            st = Status(Code.ERROR, msg, plugin=pl.name, err=s.err)
            self._observe("Permit", "", st, started)
            return {}, st
        if wait_status is not None:
            st = Status(Code.WAIT, *wait_status.reasons, "one or more plugins asked to wait and no plugin rejected pod")
            self._observe("Permit", "", st, started)
            return waits, st
        self._observe("Permit", "", None, started)
        return {}, None

    # -- waiting pods (upstream AddWaitingPod, WillWaitOnPermit, WaitOnPermit) ---------------
    def add_waiting_pod(self, pod: PodInfo, plugins_wait_time: Mapping[str, float]) -> WaitingPod:
        """Park ``pod`` (assumed) until the plugins in ``plugins_wait_time`` allow it, one
        rejects it or a timeout ends; the timers start now, on the map's PermitTimer."""
        wp = WaitingPod(pod, plugins_wait_time, self.handle.waiting_pods.timer)
        self.handle.waiting_pods.add(wp)
        return wp

    def will_wait_on_permit(self, pod: PodInfo) -> bool:
        return self.handle.waiting_pods.get(pod.uid) is not None

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.handle.get_waiting_pod(uid)

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        self.handle.iterate_over_waiting_pods(callback)

    def reject_waiting_pod(self, uid: str) -> bool:
        return self.handle.reject_waiting_pod(uid)

    def end_wait_on_permit(self, pod: PodInfo, outcome: Status) -> Status | None:
        """The tail of upstream WaitOnPermit, once the edge has the waiting pod's ``outcome``:
        the pod leaves the map; None if allowed, the rejection as it is, any other outcome (a
        preemption) as an Error that names the wait."""
        self.handle.waiting_pods.remove(pod.uid)
        if outcome.is_success():
            return None
        if outcome.is_rejected():
            return outcome
        return Status(Code.ERROR, f"waiting on permit for pod: {outcome.message}", plugin=outcome.plugin,
                      err=outcome.err)

    def discard_waiting_pod(self, pod: PodInfo) -> None:
        """The binding cycle was cancelled while the pod waited: it leaves the map, timers stopped."""
        self.handle.waiting_pods.remove(pod.uid)

    # -- PlacementGenerate / PlacementScore (pod-group cycle) --------------------------------
    def run_placement_generate(
        self, state: CycleState, pod_group: PodGroupInfo, nodes: list[NodeInfo]
    ) -> tuple[list[Placement], Status | None]:
        """Upstream RunPlacementGeneratePlugins: the one plugin's placements within all
        ``nodes``; without a plugin, one placement of all nodes."""
        started = time.perf_counter()
        parent = Placement("", nodes)
        if not self.placement_generate_plugins:
            self._observe("PlacementGenerate", "", None, started)
            return [parent], None
        pl = self.placement_generate_plugins[0]
        try:
            r = pl.generate_placements(state, pod_group, parent)
        except Exception as exc:
            r = _as_status(exc)
        if isinstance(r, Status):
            if r.is_success():
                r = []
            else:
                st = r.with_plugin(pl.name)
                self._observe("PlacementGenerate", "", st, started)
                return [], st
        if not r:
            st = Status(Code.UNSCHEDULABLE, "no feasible placements found", plugin=pl.name)
            self._observe("PlacementGenerate", "", st, started)
            return [], st
        self._observe("PlacementGenerate", "", None, started)
        return list(r), None

    def run_placement_score(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: Sequence[PodGroupAssignments]
    ) -> list[PlacementPluginScores]:
        """Upstream RunPlacementScorePlugins: each plugin's (normalized, weighted) score per
        placement and the totals; raises StatusError with upstream's messages."""
        started = time.perf_counter()
        per_plugin: dict[str, list[PlacementScore]] = {}
        try:
            for pl in self.placement_score_plugins:
                scores: list[PlacementScore] = []
                for a in assignments:
                    try:
                        v = int(pl.score_placement(state, pod_group, a))
                    except Exception as exc:
                        msg = f"plugin {go_quote(pl.name)} failed with: {_as_status(exc).message}"
                        raise StatusError(Status(Code.ERROR, f"running PlacementScore plugins: {msg}")) from None
                    scores.append(PlacementScore(a.placement, v))
                per_plugin[pl.name] = scores
            for pl in self.placement_score_plugins:
                if not pl.has_normalize_placement:
                    continue
                try:
                    s = pl.normalize_placement_score(state, pod_group, per_plugin[pl.name])
                except Exception as exc:
                    s = _as_status(exc)
                if s is not None and not s.is_success():
                    msg = f"plugin {go_quote(pl.name)} failed with: {s.message}"
                    raise StatusError(
                        Status(Code.ERROR, f"running NormalizePlacementScore on PlacementScore plugins: {msg}")
                    )
            out: list[PlacementPluginScores] = []
            for i, a in enumerate(assignments):
                ps = PlacementPluginScores(a.placement, [])
                for pl in self.placement_score_plugins:
                    v = per_plugin[pl.name][i].score
                    if v > MAX_NODE_SCORE or v < MIN_NODE_SCORE:
                        msg = (
                            f"plugin {go_quote(pl.name)} returns an invalid score {v}, it should in the range of "
                            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                        )
                        raise StatusError(
                            Status(Code.ERROR, f"applying score defaultWeights on PlacementScore plugins: {msg}")
                        )
                    weighted = v * self.placement_weights[pl.name]
                    ps.scores.append((pl.name, weighted))
                    ps.total_score += weighted
                out.append(ps)
        except StatusError as exc:
            self._observe("PlacementScore", "", exc.status, started)
            raise
        self._observe("PlacementScore", "", None, started)
        return out

    # -- binding cycle -----------------------------------------------------------------------
    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        """RunPreBindPreFlights: None when some PreBind plugin has work for the pod, SKIP when
        none has, an Error when one failed or answered what PreBindPreFlight may not. Records in
        ``state`` which plugins PreBind skips and which may run in parallel."""
        started = time.perf_counter()
        skip: set[str] = set()
        parallel: set[str] = set()
        out: Status | None = Status(Code.SKIP)
        for pl in self.pre_bind_plugins:
            try:
                allow_parallel, s = pl.pre_bind_pre_flight(state, pod, node)
            except Exception as exc:
                allow_parallel, s = False, _as_status(exc)
            if allow_parallel:
                parallel.add(pl.name)
            if s is None or s.is_success():
                out = None
            elif s.code == Code.SKIP:
                skip.add(pl.name)
            elif s.code == Code.ERROR:
                out = Status(Code.ERROR, f"running PreBindPreFlight {go_quote(pl.name)}: {s.message}", err=s.err)
                break
            else:
                out = Status(
                    Code.ERROR,
                    f"PreBindPreFlight {pl.name} returned {go_quote(code_string(s.code))}, which is unsupported. "
                    "It is supposed to return Success, Skip, or Error status",
                )
                break
        else:
            state.skip_pre_bind_plugins = frozenset(skip)
            state.parallel_pre_bind_plugins = frozenset(parallel)
        self._observe("PreBindPreFlight", "", out, started)
        return out

    def _pre_bind_groups(self, state: CycleState) -> list[list[PreBindPlugin]]:
        """getPreBindPluginGroups: neighbours that allow it run together; skipped ones not at all."""
        groups: list[list[PreBindPlugin]] = []
        group: list[PreBindPlugin] = []
        for pl in self.pre_bind_plugins:
            if pl.name in state.parallel_pre_bind_plugins:
                if pl.name not in state.skip_pre_bind_plugins:
                    group.append(pl)
                continue
            if group:
                groups.append(group)
                group = []
            if pl.name not in state.skip_pre_bind_plugins:
                groups.append([pl])
        if group:
            groups.append(group)
        return groups

    async def _run_one_pre_bind(self, pl: PreBindPlugin, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        t0 = time.perf_counter() if state.record_plugin_metrics else 0.0
        try:
            s = await pl.pre_bind(state, pod, node)
        except Exception as exc:
            s = _as_status(exc)
        if state.record_plugin_metrics:
            self._timed("PreBind", pl.name, s, t0)
        if s is not None and not s.is_success() and s.code != Code.SKIP:
            return _failed("PreBind", pl.name, s)
        return None

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        started = time.perf_counter()
        out: Status | None = None
        for group in self._pre_bind_groups(state):
            if len(group) == 1:
                out = await self._run_one_pre_bind(group[0], state, pod, node)
            else:
                out = await self._run_pre_bind_group(group, state, pod, node)
            if out is not None:
                break
        self._observe("PreBind", "", out, started)
        return out

    async def _run_pre_bind_group(
        self, group: list[PreBindPlugin], state: CycleState, pod: PodInfo, node: str
    ) -> Status | None:
        """Plugins side by side; the first failure cancels the others and is the result."""
        tasks = [asyncio.ensure_future(self._run_one_pre_bind(pl, state, pod, node)) for pl in group]
        try:
            for fut in asyncio.as_completed(tasks):
                s = await fut
                if s is not None:
                    return s
            return None
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        started = time.perf_counter()
        out = await self._bind(state, pod, node)
        self._observe("Bind", "", out, started)
        return out

    async def _bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        rec = state.record_plugin_metrics
        for pl in self.bind_plugins:
            t0 = time.perf_counter() if rec else 0.0
            try:
                s = await pl.bind(state, pod, node)
            except Exception as exc:  # not CancelledError (a BaseException): cancellation goes through
                s = _as_status(exc)
            if rec:
                self._timed("Bind", pl.name, s, t0)
            if s is not None and s.code == Code.SKIP:
                continue
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(pl.name)
                return Status(
                    Code.ERROR, f"running Bind plugin {go_quote(pl.name)}: {s.message}", plugin=pl.name, err=s.err
                )
            return None
        return Status(Code.SKIP)

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        started = time.perf_counter()
        rec = state.record_plugin_metrics
        for pl in self.post_bind_plugins:
            t0 = time.perf_counter() if rec else 0.0
            with contextlib.suppress(Exception):  # PostBind is informational; a failure must not undo the binding.
                pl.post_bind(state, pod, node)
            if rec:
                self._timed("PostBind", pl.name, None, t0)
        self._observe("PostBind", "", None, started)
