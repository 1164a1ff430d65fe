"""Offline what-if: the real framework against a cluster described in YAML, no API server.

The same Cache, Snapshot, Framework, Algorithm and scheduling cycle as the live scheduler; the
binder is a stand-in that always succeeds. Configured extenders are asked over HTTP as live
(filter, prioritize, preempt), except to bind: a binder extender would write to a cluster.

Permit ``Wait``, deterministically: the pod stays assumed (its room held) while the next pods
are tried. When a later pod's cycle allows it (a plugin calls ``allow`` on the waiting pod), its
outcome is printed right after that pod's; a rejection likewise. Waits still open when every pod
has been tried end in their timeout, shortest first (ties in the order the pods waited), with
the live scheduler's message. Objects of kinds that plugins asked informers for are read from
the cluster file into those informers (before any pod is tried); ``Handle.activate`` tries a pod
that failed earlier once more, after the others.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, TextIO, cast

import structlog
import yaml

from scheduler.backend.cache import Cache
from scheduler.backend.queue import sort_queued
from scheduler.config import ConfigError, SchedulerConfig, error_line, load_config
from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.core.algorithm import Algorithm
from scheduler.core.cycle import CycleOutcome, activate_pods, binding_rejection, scheduling_cycle
from scheduler.core.decision import from_outcome
from scheduler.core.podgroup import WAITING_ON_PREEMPTION, PodGroupCycle, QueuedPodGroup, next_conditions
from scheduler.core.profiles import FrameworkError, build_frameworks
from scheduler.core.report import render
from scheduler.extender import build_extenders
from scheduler.framework.extender import Extender
from scheduler.framework.interface import Plugin, PodGroupInfo, QueuedPodInfo
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status
from scheduler.framework.waiting_pods import Cancel, WaitingPodsMap
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.dra import pod_claim_refs, pod_has_claims
from scheduler.model.kinds import KINDS, Role
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.model.schema import STORAGE, FieldError, ObjectError, check, object_error
from scheduler.simulate.podgroups import GroupRun, SimGroupHooks
from scheduler.simulate.templates import instantiate_templates


class InputError(Exception):
    """A bad input file; ``str()`` is the one line printed before exit 2."""


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(path: str) -> list[dict[str, Any]]:
    """Every object in a multi-document YAML (or JSON) file, with ``kind: List`` flattened."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}") from None
    try:
        if path.endswith(".json"):
            docs: list[Any] = [json.loads(text)]
        else:
            docs = list(yaml.load_all(text, Loader=_Loader))
    except (yaml.YAMLError, ValueError) as exc:
        first = " ".join(str(exc).split())
        raise InputError(f"{path}: not valid YAML: {first}") from None
    out: list[dict[str, Any]] = []

    def walk(doc: Any, where: str) -> None:
        if doc is None:
            return
        if not isinstance(doc, Mapping):
            raise InputError(f"{path}: {where}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
        kind = doc.get("kind")
        if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
            for i, item in enumerate(doc.get("items") or []):
                walk(item, f"{where}.items[{i}]")
            return
        if not isinstance(kind, str) or not kind:
            raise InputError(f"{path}: {where}: object has no kind")
        meta = doc.get("metadata")
        if not isinstance(meta, Mapping) or not meta.get("name"):
            raise InputError(f"{path}: {where}: {kind} has no metadata.name")
        for f in ("name", "namespace"):
            if meta.get(f) is not None and not isinstance(meta.get(f), str):
                raise InputError(f"{path}: {where}: {kind}: metadata.{f}: expected a string, got {meta.get(f)!r}")
        out.append(dict(doc))

    for i, d in enumerate(docs):
        walk(d, f"document {i}")
    return out


@dataclass(slots=True)
class Cluster:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    listers: Listers = field(default_factory=Listers)
    ignored_kinds: set[str] = field(default_factory=set)
    priority_classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Objects of kinds the scheduler does not read itself: offered to the plugins' informers.
    others: list[dict[str, Any]] = field(default_factory=list)


def build_cluster(docs: list[dict[str, Any]]) -> Cluster:
    c = Cluster()
    groups: list[dict[str, Any]] = []
    for d in docs:
        kind = d["kind"]
        role = KINDS[kind].role if kind in KINDS else None
        if role is Role.STORAGE or role is Role.PDB:
            # The volume plugins read these during cycles: their outline is checked here.
            try:
                check(d, STORAGE, "")
            except FieldError as fe:
                raise object_error(kind, d, STORAGE, fe) from None
        if kind == "Node":
            c.nodes.append(d)
        elif kind == "Pod":
            c.pods.append(d)
        elif kind == "Namespace":
            ns = NamespaceInfo.parse(d)
            c.listers.namespaces[ns.name] = ns
        elif role is Role.STORAGE:
            c.listers.storage.apply(kind, d)
        elif role is Role.DRA:
            c.listers.dra.apply(kind, d)  # ObjectError: printed after the file's name
        elif role is Role.OWNER:
            o = SelectorOwner.parse(d)
            c.listers.owners.setdefault(kind, {})[f"{o.namespace}/{o.name}"] = o
        elif kind == "PodDisruptionBudget":
            pdb = PodDisruptionBudget.parse(d)
            c.listers.pdbs[pdb.key] = pdb
        elif kind == "PriorityClass":
            c.priority_classes[str(d["metadata"]["name"])] = d
        elif kind == "PodGroup":
            groups.append(d)
        else:
            c.others.append(d)
            c.ignored_kinds.add(kind)
    c.pods = [resolve_priority(p, c.priority_classes) for p in c.pods]
    # PodGroups too (admission resolves theirs with WorkloadAwarePreemption, the only reader).
    for d in groups:
        pg = PodGroup.parse(resolve_priority(d, c.priority_classes, "PodGroup", preemption_policy=False))
        c.listers.pod_groups[pg.key] = pg
    return c


# Built-in classes the API server creates (scheduling/v1 SystemPriorityClasses).
# A group's cycles in one run: the first and those after its PodGroup preemptions.
MAX_GROUP_CYCLES = 3
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def resolve_priority(
    raw: dict[str, Any],
    classes: Mapping[str, Mapping[str, Any]],
    kind: str = "Pod",
    preemption_policy: bool = True,
) -> dict[str, Any]:
    """What the Priority admission plugin does to a pod (or PodGroup) without spec.priority:
    the value (and, for a pod, preemptionPolicy) of its priorityClassName, or of the
    globalDefault class, else 0."""
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping) or spec.get("priority") is not None:
        return raw  # a malformed spec is reported when the pod is parsed
    name = spec.get("priorityClassName")
    value: int | None = None
    policy: Any = None
    if name:
        if name in classes:
            pc = classes[name]
            value, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy")
        elif name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[name]
        else:
            meta = raw.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            raise InputError(f"{kind} {key}: no PriorityClass with name {name} was found")
    else:
        defaults = [pc for pc in classes.values() if pc.get("globalDefault")]
        if defaults:
            # Admission picks the lowest-valued global default when several exist.
            pc = min(defaults, key=lambda d: int(d.get("value") or 0))
            value, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy")
    if value is None:
        return raw
    out = dict(raw)
    new_spec = dict(spec)
    new_spec["priority"] = value
    if preemption_policy and policy and not new_spec.get("preemptionPolicy"):
        new_spec["preemptionPolicy"] = policy
    out["spec"] = new_spec
    return out


class _SimulatedPreemption:
    """Stands in for the API side of preemption: the victims leave the cluster at once (a
    victim waiting at Permit is preempted in memory, as live)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.waiting_pods: WaitingPodsMap | None = None
        # WorkloadAwarePreemption's victims since last taken, for the group's record.
        self.group_victims: list[str] = []

    def preempt(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo], plugin: str) -> None:
        for v in victims:
            wp = self.waiting_pods.get(v.uid) if self.waiting_pods is not None else None
            if wp is not None and wp.preempt(plugin, "preempted"):
                continue
            self.cache.remove_pod(v.uid)

    def preempt_group(
        self, pod_group: PodGroup, pods: Sequence[PodInfo], victims: Sequence[PodInfo], plugin: str
    ) -> None:
        """WorkloadAwarePreemption's victims leave just the same."""
        self.group_victims.extend(v.key for v in victims)
        self.preempt(pods[0], "cluster", victims, plugin)

    def is_running(self, uid: str) -> bool:
        return False

    def attempted(self) -> None:
        return None


class _Timer:
    """One Permit timeout: simulate has no clock, it fires what is still armed at the end."""

    __slots__ = ("armed", "fire", "seconds", "seq")

    def __init__(self, seconds: float, seq: int, fire: Callable[[], None]) -> None:
        self.seconds = seconds
        self.seq = seq
        self.fire = fire
        self.armed = True

    def cancel(self) -> None:
        self.armed = False


class _StaticBinder:
    """Stands in for the API: the binding always succeeds."""

    # Offline: plugins that would write to the API (VolumeBinding's PreBind) keep their
    # assumed state instead.
    offline = True

    async def bind(self, pod: PodInfo, node: str) -> None:
        return None


def _run_sync(coro: Any) -> Any:
    """Drive a coroutine that never suspends (simulate's binding plugins) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("a binding plugin awaited real I/O inside simulate")


class Simulator:
    def __init__(
        self,
        cluster: Cluster,
        config: SchedulerConfig,
        seed: int | None = None,
        registry: Mapping[str, type[Plugin]] | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        """``extenders``: the scheduler extenders to ask (their filter, prioritize and preempt
        verbs; a binder extender is not asked to bind: simulate writes nothing anywhere)."""
        self.config = config
        self.generic_workload = config.feature_gates.enabled("GenericWorkload")
        self.cache = Cache(generic_workload=self.generic_workload)
        self.snapshot = Snapshot()
        self.listers = cluster.listers
        self.algorithm = Algorithm(random.Random(seed))
        self._timers: list[_Timer] = []
        self._waiting: dict[str, CycleOutcome] = {}  # uid -> the attempt that waits
        self._ended: list[tuple[CycleOutcome, Status]] = []  # waits that ended, in order
        self._failed: dict[str, QueuedPodInfo] = {}  # uid -> a pod whose attempt failed
        preemption = self.preemption = _SimulatedPreemption(self.cache)
        self.frameworks: dict[str, Framework] = build_frameworks(
            config,
            self.snapshot,
            self.listers,
            registry=registry,
            client=_StaticBinder(),
            preemption=preemption,
            seed=seed,
            permit_timer=self._timer,
            activator=self._activate,
            extenders=extenders,
        )
        for f in self.frameworks.values():
            f.handle.pod_group_manager = self.cache.pod_group_state_lister()
            if f.batch is not None:
                # Cycles take no time here: a kept batch never expires, so a run is reproducible.
                f.batch.clock = lambda: 0.0
        # Scheduling cycles so far (the queue's pop count upstream; OpportunisticBatching reads it).
        self.cycles = 0
        self.group_hooks = SimGroupHooks(self._park_or_bind, self._set_condition)
        self.group_cycle = PodGroupCycle(
            self.frameworks, self.algorithm, self.cache, self.snapshot, None, self.group_hooks
        )
        self.group_cycle.current_cycle = lambda: self.cycles
        preemption.waiting_pods = next(iter(self.frameworks.values())).handle.waiting_pods
        # Kinds the plugins' informers asked for: the file's objects of those kinds go there.
        self.ignored_kinds = {str(d["kind"]) for d in cluster.others if not self.listers.informers.offer(d)}
        self.listers.informers.mark_synced()
        for n in cluster.nodes:
            self.cache.add_node(n)
        self.pending: list[QueuedPodInfo] = []
        self.current: PodInfo | None = None  # the pod being attempted (for error lines)
        # Pods PreEnqueue holds back (SchedulingGates): never attempted, as upstream.
        self.gated: list[tuple[PodInfo, str]] = []
        unbound: list[tuple[int, PodInfo, Framework]] = []
        for seq, raw in enumerate(cluster.pods):
            pod = PodInfo(raw)
            if pod.node_name:
                if not pod.terminal:
                    self.cache.add_pod(pod)
                continue
            pfw = self.frameworks.get(pod.scheduler_name)
            if pfw is None:
                continue
            if pod_has_claims(raw):
                # The resourceclaim-controller's part: claims for the pod's templates.
                instantiate_templates(self.listers.dra, raw)
                pod = PodInfo(raw)
            # Every pod of a group is known before any PreEnqueue runs (GangScheduling counts them).
            self.cache.add_pod_group_member(pod)
            unbound.append((seq, pod, pfw))
        for seq, pod, fw in unbound:
            held = fw.run_pre_enqueue(pod)
            if held is not None:
                self.gated.append((pod, held.message))
                continue
            q = QueuedPodInfo(pod, pod.creation_ts, seq)
            q.signature = fw.sign_pod(pod) if fw.batch is not None else None
            self.pending.append(q)
        # One queue order for all profiles (config validation makes their QueueSort equal).
        first = next(iter(self.frameworks.values()))
        self.pending = sort_queued(self.pending, first.queue_sort)

    # -- the edge's parts of the Handle --------------------------------------------------------
    def _timer(self, seconds: float, fire: Callable[[], None]) -> Cancel:
        t = _Timer(seconds, len(self._timers), fire)
        self._timers.append(t)
        return t.cancel

    def _activate(self, pods: Mapping[str, PodInfo]) -> None:
        """Handle.activate: a pod whose attempt failed is tried again after the pending ones."""
        for pod in pods.values():
            q = self._failed.pop(pod.uid, None)
            if q is not None:
                self.pending.append(q)

    # -- attempts ----------------------------------------------------------------------------
    def attempts(self) -> Iterator[CycleOutcome | GroupRun]:
        """Each pending pod's attempt in queue order; a pod of a pod group (GenericWorkload)
        brings its whole group, reported pod by pod and then as a ``GroupRun``."""
        tried: set[str] = set()
        i = 0
        while i < len(self.pending):  # Handle.activate may append
            q = self.pending[i]
            i += 1
            group = q.pod.pod_group_key if self.generic_workload else None
            if group is not None:
                if group in tried:
                    continue  # the group's cycles ran when its first pod came up
                tried.add(group)
                self.current = q.pod
                yield from self._group_cycles([p for p in self.pending if p.pod.pod_group_key == group])
                continue
            q.attempts += 1
            self.current = q.pod
            out = self.attempt(q.pod, q.signature)
            if out is not None:
                yield self._settled(q, out)
                pf = out.post_filter
                if out.node is None and pf is not None and pf.nominated_node_name:
                    # Preempted: the victims are gone; the pod is tried again at once, its
                    # nominated node first (as the live scheduler's next cycle would).
                    retry = copy.copy(q.pod)
                    retry.nominated_node_name = pf.nominated_node_name
                    q.attempts += 1
                    again = self.attempt(retry, q.signature)
                    if again is not None:
                        yield self._settled(q, again)
            yield from self._ended_waits()
        # Every pod tried: the waits still open run out, the shortest timeout first.
        for t in sorted(self._timers, key=lambda t: (t.seconds, t.seq)):
            if t.armed:
                t.armed = False
                t.fire()
                yield from self._ended_waits()
        self.current = None

    def _group_cycles(self, members: list[QueuedPodInfo]) -> Iterator[CycleOutcome | GroupRun]:
        """One group's cycles, each reported pod by pod and then as a ``GroupRun``: the first,
        and, while a cycle ends waiting on its PodGroup preemption (the victims are gone at
        once here), another for the pods it did not place, each on its nominated node first,
        as the live scheduler's next cycle for the group would (up to MAX_GROUP_CYCLES)."""
        for cycle in range(1, MAX_GROUP_CYCLES + 1):
            run = self.attempt_group(members)
            run.cycle = cycle
            # Waits the group's own pods ended (GangScheduling allowing them at quorum).
            ended = list(self._ended_waits())
            uids = {p.pod.uid for p in members}
            run.pods.extend(o for o in ended if o.pod.uid in uids)
            yield from run.pods
            yield from (o for o in ended if o.pod.uid not in uids)
            yield run
            if run.outcome is None or run.outcome.result != WAITING_ON_PREEMPTION:
                return
            outcomes = {o.pod.uid: o for o in run.pods}
            members = [self._retry(m, outcomes[m.pod.uid]) for m in members
                       if m.pod.uid in outcomes and outcomes[m.pod.uid].node is None
                       and self.waiting_attempt(m.pod.uid) is None]
            if not members:
                return

    @staticmethod
    def _retry(q: QueuedPodInfo, out: CycleOutcome) -> QueuedPodInfo:
        """``q`` for its group's next cycle, nominated where its last attempt said."""
        mode, node = out.nominating
        again = copy.copy(q)
        if mode == "override" and node != q.pod.nominated_node_name:
            again.pod = copy.copy(q.pod)
            again.pod.nominated_node_name = node
        return again

    def _settled(self, q: QueuedPodInfo, out: CycleOutcome) -> CycleOutcome:
        if out.node is None:
            self._failed[q.pod.uid] = q
        else:
            self._failed.pop(q.pod.uid, None)
        return out

    def attempt(self, pod: PodInfo, signature: bytes | None = None) -> CycleOutcome | None:
        """One scheduling cycle and, unless the pod waits at Permit (None), its binding cycle;
        ``signature`` is the queued pod's (OpportunisticBatching)."""
        fw = self.frameworks[pod.scheduler_name]
        self.cycles += 1
        out = scheduling_cycle(fw, self.algorithm, self.cache, self.snapshot, pod, signature, self.cycles)
        if out.assumed is None:
            return out
        return self._park_or_bind(fw, out)

    def attempt_group(self, queued: list[QueuedPodInfo]) -> GroupRun:
        """One pod-group cycle for ``queued`` (one group's pending pods, in queue order)."""
        for q in queued:
            q.attempts += 1
        self.cycles += len(queued)  # each member is popped upstream
        first = queued[0].pod
        group = QueuedPodGroup(PodGroupInfo(first.namespace, first.scheduling_group or ""), [])
        group.set_queued(list(queued))
        run = self.group_hooks.start()
        self.preemption.group_victims = []
        run.outcome = self.group_cycle.schedule_group(group)
        run.victims = sorted(self.preemption.group_victims)
        # A pod sent back carries its own attempt (filters, scores, preemption) in the report.
        tried = {d.q.pod.uid: d.out for d in run.outcome.decisions if d.status is not None} if run.outcome else {}
        run.pods = [
            dataclasses.replace(tried[o.pod.uid], status=o.status, nominating=o.nominating, assumed=None)
            if o.assumed is None and o.pod.uid in tried
            else o
            for o in run.pods
        ]
        return run

    def _park_or_bind(self, fw: Framework, out: CycleOutcome) -> CycleOutcome | None:
        """An assumed pod: it waits at Permit (None; its outcome comes when the wait ends) or
        goes through its binding cycle now."""
        assumed = out.assumed
        assert assumed is not None
        wp = fw.get_waiting_pod(assumed.uid)
        if wp is not None:
            self._waiting[assumed.uid] = out
            wp.on_done(lambda st: self._ended.append((out, st)))
            return None
        return self._bind(fw, out)

    def _set_condition(self, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        """What the live scheduler writes to the PodGroup's status, applied to our copy."""
        pg = self.listers.pod_groups.get(group.key)
        if pg is None:
            return
        conditions = next_conditions(pg, condition, "1970-01-01T00:00:00Z")
        if conditions is None:
            return
        raw = copy.deepcopy(dict(pg.raw))
        raw.setdefault("status", {})["conditions"] = conditions
        self.listers.pod_groups[group.key] = PodGroup.parse(raw)

    def waiting_attempt(self, uid: str) -> CycleOutcome | None:
        """The attempt of a pod that waits at Permit (``attempt`` returned None for it)."""
        return self._waiting.get(uid)

    def _ended_waits(self) -> Iterator[CycleOutcome]:
        """The waits that ended since the last look: bound, or rejected and released."""
        while self._ended:
            out, outcome = self._ended.pop(0)
            assumed = out.assumed
            assert assumed is not None
            self._waiting.pop(assumed.uid, None)
            fw = self.frameworks[out.pod.scheduler_name]
            s = fw.end_wait_on_permit(assumed, outcome)
            if s is None:
                out = self._bind(fw, out)
            else:
                node = assumed.node_name
                fw.run_unreserve(out.state, assumed, node)
                self.cache.forget_pod(assumed.uid)
                out.status = binding_rejection(out.pod, node, s) if s.is_rejected() else s
                out.assumed = None
            q = next((p for p in self.pending if p.pod.uid == out.pod.uid), None)
            yield self._settled(q, out) if q is not None else out

    def _bind(self, fw: Framework, out: CycleOutcome) -> CycleOutcome:
        assumed = out.assumed
        assert assumed is not None
        node = assumed.node_name
        # Binding cycle, synchronously: nothing here waits on I/O.
        s = _run_sync(fw.run_pre_bind(out.state, assumed, node))
        if s is None:
            s = _run_sync(fw.run_bind(out.state, assumed, node))
        if s is not None:
            fw.run_unreserve(out.state, assumed, node)
            self.cache.forget_pod(assumed.uid)
            out.status = s
            out.assumed = None
            return out
        self.cache.confirm_pod(assumed.uid)
        fw.run_post_bind(out.state, assumed, node)
        activate_pods(fw, out.state)
        return out


# ---------------------------------------------------------------------------------------------
# Output


def attempt_record(sim: Simulator, out: CycleOutcome) -> dict[str, Any]:
    """The --output json line of one attempt (simulate contract)."""
    rec: dict[str, Any] = {"pod": out.pod.key, "node": out.node}
    res = out.result
    diag = res.diagnosis if res is not None else (out.fit_error.diagnosis if out.fit_error else None)
    filtered: dict[str, Any] = {}
    if diag is not None:
        nts = diag.node_to_status
        for name, s in nts.statuses.items():
            filtered[name] = {"plugin": s.plugin, "reasons": list(s.reasons)}
        if out.fit_error is not None and nts.absent is not None and nts.absent.reasons:
            # Nodes the attempt never filtered carry the PreFilter (or PreFilterResult) status.
            for ni in sim.snapshot.node_infos:
                if ni.name not in filtered:
                    filtered[ni.name] = {"plugin": nts.absent.plugin, "reasons": list(nts.absent.reasons)}
    if res is not None:
        rec["evaluated"] = res.evaluated_nodes
        rec["feasible"] = res.feasible_nodes
    else:
        rec["evaluated"] = len(filtered)
        rec["feasible"] = 0
    rec["filtered"] = filtered
    scores: dict[str, Any] = {}
    if res is not None and res.scores is not None:
        sc = res.scores
        infos = sim.snapshot.node_infos
        raws = [r.tolist() for r in sc.raw]
        finals = [f.tolist() for f in sc.final]
        totals = sc.totals.tolist()
        for j, i in enumerate(sc.idx.tolist()):
            scores[infos[i].name] = {
                "plugins": {name: {"score": raws[k][j], "final": finals[k][j]} for k, name in enumerate(sc.plugins)},
                "total": totals[j],
            }
        for ext in sc.extenders:
            # What the extender answered for each node it scored, and what that added.
            answered: dict[str, int] = {}
            for hp in ext.priorities:
                answered[hp.host] = answered.get(hp.host, 0) + hp.score
            for j, i in enumerate(sc.idx.tolist()):
                name = infos[i].name
                if name in answered:
                    scores[name].setdefault("extenders", {})[ext.name] = {
                        "score": answered[name],
                        "final": int(ext.final[j]),
                    }
    rec["scores"] = scores
    if out.node is None:
        rec["message"] = out.message
    else:
        claims = claim_allocations(sim, out.pod)
        if claims:
            rec["claims"] = claims
    if out.post_filter is not None and out.post_filter.nominated_node_name:
        rec["nominated"] = out.post_filter.nominated_node_name
        rec["victims"] = [v.key for v in out.post_filter.victims]
    return rec


def claim_allocations(sim: Simulator, pod: PodInfo) -> dict[str, Any]:
    """The placed pod's ResourceClaims as DynamicResources left them: claim name -> the
    allocated devices (request, driver, pool, device); the claim it created for the pod's
    extended resources (DRAExtendedResource) last."""
    out: dict[str, Any] = {}
    claims = [
        sim.listers.dra.get_claim_or_none(pod.namespace, ref.claim_name)
        for ref in pod_claim_refs(pod.raw)
        if not isinstance(ref, str) and ref.claim_name is not None
    ]
    claims.append(sim.listers.dra.extended_claim_for(pod.name, pod.uid))
    for c in claims:
        if c is None or c.allocation is None:
            continue
        out[c.key] = [
            {k: r.get(k) for k in ("request", "driver", "pool", "device")}
            for r in (c.allocation.get("devices") or {}).get("results") or []
        ]
    return out


def _human(sim: Simulator, out: CycleOutcome, stream: IO[str], top: int = 3) -> None:
    fw = sim.frameworks[out.pod.scheduler_name]
    d = from_outcome(out, fw, sim.snapshot.node_infos, top=top)
    claims = claim_allocations(sim, out.pod) if out.node is not None else None
    stream.write(render(d, top=top, claims=claims))


def group_record(run: GroupRun) -> dict[str, Any] | None:
    """The --output json line of one pod group's attempt: its result, the PodGroupScheduled
    condition the scheduler writes, and where each of its pods went."""
    oc = run.outcome
    if oc is None:
        return None
    nodes = {out.pod.uid: out.node for out in run.pods}
    return {
        "podGroup": oc.group.key,
        # The group's cycles are numbered from 1: a later one follows its PodGroup preemption.
        "cycle": run.cycle,
        "result": oc.result,
        "condition": oc.condition,
        # In the cycle's order; a pod still held at Permit has no node yet.
        "pods": {q.pod.key: nodes.get(q.pod.uid) for q in oc.group.queued},
        # Placement name -> total score, when several feasible placements were scored.
        "placements": oc.placement_scores,
        # No placement feasible: each placement's pod messages (the reported one is the first).
        "placementMessages": oc.placement_messages,
        # WorkloadAwarePreemption: the pods its PodGroupPostFilter evicted.
        "victims": run.victims,
    }


def _group_output(run: GroupRun, output: str, stream: IO[str]) -> None:
    rec = group_record(run)
    if rec is None:
        return
    if output in ("json", "placements"):
        stream.write(json.dumps(rec) + "\n")
        return
    cond = rec["condition"]
    bound = sum(1 for n in rec["pods"].values() if n is not None)
    cycle = f", cycle {rec['cycle']}" if rec["cycle"] > 1 else ""
    stream.write(f"podgroup {rec['podGroup']}{cycle}: {rec['result']} ({bound}/{len(rec['pods'])} pods bound)\n")
    stream.write(f"  {cond['type']}={cond['status']} reason={cond['reason']}")
    stream.write(f" message={json.dumps(cond['message'])}\n\n" if cond["message"] else "\n\n")


class _Stderr:
    """Whatever ``sys.stderr`` is when a line is written (it may be replaced after start-up)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def run(
    cluster_path: str,
    config_path: str | None,
    seed: int | None,
    output: str,
    stream: IO[str] | None = None,
    stats: bool = False,
    gates: FeatureGates = DEFAULT_GATES,
) -> int:
    if stream is None and not structlog.is_configured():
        # The output is the contract: whatever the core logs (an extender skipped, a plugin's
        # warning) goes to stderr, not between the JSON lines.
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(cast(TextIO, _Stderr())))
    stream = stream or sys.stdout
    try:
        docs = load_documents(cluster_path)
        cluster = build_cluster(docs)
        config = load_config(config_path, gates)
        extenders, config = build_extenders(config)
        sim = Simulator(cluster, config, seed, extenders=extenders)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"error: {error_line(config_path or 'default configuration', exc)}", file=sys.stderr)
        return 2
    except FrameworkError as exc:
        print(f"error: {config_path or 'default configuration'}: {exc}", file=sys.stderr)
        return 2
    except ObjectError as exc:
        print(f"error: {cluster_path}: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # Last resort for a shape the checks above do not know: still one line, still exit 2.
        print(f"error: {cluster_path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if sim.ignored_kinds:
        print(f"note: ignored kinds: {', '.join(sorted(sim.ignored_kinds))}", file=sys.stderr)
    placed = 0
    attempts = 0
    write = stream.write
    t0 = time.perf_counter()
    attempts_iter = sim.attempts()
    while True:
        try:
            out = next(attempts_iter)
        except StopIteration:
            break
        except Exception as exc:
            # Something in the file the checks at load time let through: name the pod, exit 2.
            pod = sim.current.key if sim.current is not None else "?"
            print(f"error: {cluster_path}: Pod {pod}: scheduling failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        if isinstance(out, GroupRun):
            _group_output(out, output, stream)
            continue
        attempts += 1
        if out.node is not None:
            placed += 1
        if output == "placements":
            line = {"pod": out.pod.key, "node": out.node}
            if out.post_filter is not None and out.post_filter.nominated_node_name:
                line["nominated"] = out.post_filter.nominated_node_name
            write(json.dumps(line) + "\n")
        elif output == "json":
            write(json.dumps(attempt_record(sim, out)) + "\n")
        else:
            _human(sim, out, stream)
    elapsed = time.perf_counter() - t0
    if output == "text":
        for gated, why in sim.gated:
            write(f"{gated.key}: not attempted ({why})\n")
        write(f"{placed}/{attempts} pods scheduled\n")
    if stats:
        rate = attempts / elapsed if elapsed > 0 else 0.0
        print(
            json.dumps(
                {
                    "attempts": attempts,
                    "scheduled": placed,
                    "seconds": round(elapsed, 4),
                    "pods_per_second": round(rate, 1),
                }
            ),
            file=sys.stderr,
        )
    return 0
