"""The live scheduling loop and the cluster-event handlers (upstream schedule_one.go,
eventhandlers.go).

The loop pops a pod, runs the profile's scheduling cycle synchronously (decide, assume,
Reserve, Permit), and hands the binding cycle (Permit wait, PreBind, Bind, PostBind) to its
own task so the next pod's cycle starts at once. Every path out of an attempt ends with the pod
bound, requeued, or known gone: no pod is lost. The API server refuses a second Binding of a
bound pod (409) and the cache refuses to assume a pod twice: no pod is bound twice.

With leader election, no cycle starts while the lease fence is closed (see elector.py); the
loop then ends with ``Fenced`` and ``abort`` cancels the bindings in flight and forgets their
assumptions. Events and conditions go through the Recorder's queue, never awaited here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.core.algorithm import Algorithm
from scheduler.core.cycle import CycleOutcome, scheduling_cycle
from scheduler.framework.interface import ActionType, ClusterEvent, QueuedPodInfo
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.live.kube.binder import BindConflict, Binder, Fenced, PodGone
from scheduler.live.kube.recorder import Recorder
from scheduler.live.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, Metrics
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.kinds import DRA_KINDS, Raw
from scheduler.model.node import NodeInfo
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

# Upstream events.k8s.io note limit (truncateMessage).
NOTE_LENGTH_LIMIT = 1024


def truncate_message(message: str) -> str:
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def node_update_action(old: NodeInfo, new: NodeInfo) -> ActionType:
    """Which scheduling-relevant properties of a node changed (upstream nodeSchedulingPropertiesChange)."""
    a = ActionType(0)
    if old.unschedulable != new.unschedulable:
        a |= ActionType.UPDATE_NODE_TAINT  # NodeSpecUnschedulableChange is registered as a taint update
    if old.allocatable != new.allocatable:
        a |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        a |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints:
        a |= ActionType.UPDATE_NODE_TAINT
    o_raw, n_raw = old.raw or {}, new.raw or {}
    o_st, n_st = o_raw.get("status") or {}, n_raw.get("status") or {}

    def conds(st: Mapping[str, Any]) -> dict[str, str]:
        return {str(c.get("type")): str(c.get("status")) for c in st.get("conditions") or []}

    if conds(o_st) != conds(n_st):
        a |= ActionType.UPDATE_NODE_CONDITION
    if (o_raw.get("metadata") or {}).get("annotations") != (n_raw.get("metadata") or {}).get("annotations"):
        a |= ActionType.UPDATE_NODE_ANNOTATION
    if old.declared_features != new.declared_features:
        a |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return a


def assigned_pod_update_action(old: PodInfo, new: PodInfo) -> ActionType:
    a = ActionType(0)
    if old.labels != new.labels:
        a |= ActionType.UPDATE_POD_LABEL
    names = set(old.requests.names()) | set(new.requests.names())
    if any(new.requests.get(n) < old.requests.get(n) for n in names):
        a |= ActionType.UPDATE_POD_SCALE_DOWN
    return a


class Scheduler:
    """The scheduling loop plus the handlers that feed the cache and the queue."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        cache: Cache,
        snapshot: Snapshot,
        listers: Listers,
        queue: SchedulingQueue,
        algorithm: Algorithm,
        binder: Binder,
        metrics: Metrics | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        recorder: Recorder | None = None,
    ) -> None:
        self.frameworks = frameworks
        self.cache = cache
        self.snapshot = snapshot
        self.listers = listers
        self.queue = queue
        self.algorithm = algorithm
        self.binder = binder
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.recorder = recorder or Recorder(binder, on_drop=self._event_dropped)
        self.fenced = False
        self.binding_tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.cycles = 0
        # Last seen version of every pending pod of ours, for update diffs.
        self._pending: dict[str, PodInfo] = {}
        # Awaited before each cycle: the watcher holds cycles while it re-lists after a gap.
        self.hold: Callable[[], Awaitable[Any]] | None = None
        # Storage kind -> the actions plugins registered for it (read once from the queue).
        self._registered_actions: dict[str, ActionType] = {}

    # ==========================================================================================
    # Cluster events (called by the watcher, one object at a time)

    def on_pod(self, etype: str | None, raw: Raw) -> None:
        if etype == "DELETED":
            self.pod_deleted(raw)
            return
        pod = PodInfo(raw)
        uid = pod.uid
        if pod.node_name:
            self._pending.pop(uid, None)
            self.queue.delete(uid)  # bound: no longer ours to schedule
            old = self.cache.get_pod(uid)
            was_assumed = self.cache.is_assumed(uid)
            if pod.terminal:
                if old is not None:
                    self.cache.remove_pod(uid)
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)
                return
            self.cache.add_pod(pod)
            if old is None or was_assumed:
                self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.ADD), None, pod)
            else:
                action = assigned_pod_update_action(old, pod)
                if action:
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", action), old, pod)
            return
        if pod.scheduler_name not in self.frameworks:
            return
        if pod.terminal:
            self._pending.pop(uid, None)
            self.queue.delete(uid)
            return
        if self.cache.is_assumed(uid):
            # Our own binding is in flight; a stale unbound version must not requeue it.
            return
        prev = self._pending.get(uid)
        self._pending[uid] = pod
        if prev is None and uid not in self.queue:
            self.queue.add(pod)
        else:
            self.queue.update(prev, pod)

    def pod_deleted(self, raw: Raw) -> None:
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}")
        self._pending.pop(uid, None)
        self.queue.delete(uid)
        self.binder.forget_pod(uid)
        self.recorder.forget_pod(uid)
        old = self.cache.get_pod(uid)
        if old is not None:
            self.cache.remove_pod(uid)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)

    def on_node(self, etype: str | None, raw: Raw) -> None:
        name = str((raw.get("metadata") or {}).get("name", ""))
        existing = self.cache.nodes.get(name)
        if etype == "DELETED":
            self.cache.remove_node(name)
            return
        old = existing.clone() if existing is not None and existing.node_present else None
        new = self.cache.add_node(raw)
        if old is None:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, new)
            return
        action = node_update_action(old, new)
        if action:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", action), old, new)

    def on_namespace(self, etype: str | None, raw: Raw) -> None:
        ns = NamespaceInfo.parse(raw)
        if etype == "DELETED":
            self.listers.namespaces.pop(ns.name, None)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.DELETE), ns, None)
            return
        old = self.listers.namespaces.get(ns.name)
        self.listers.namespaces[ns.name] = ns
        if old is None:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.ADD), None, ns)
        elif old.labels != ns.labels:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.UPDATE), old, ns)

    def on_owner(self, kind: str, etype: str | None, raw: Raw) -> None:
        """Services, ReplicaSets, StatefulSets, ReplicationControllers (default spreading's selectors)."""
        raw = dict(raw)
        raw.setdefault("kind", kind)
        o = SelectorOwner.parse(raw)
        key = f"{o.namespace}/{o.name}"
        byname = self.listers.owners.setdefault(kind, {})
        if etype == "DELETED":
            old = byname.pop(key, None)
            self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, ActionType.DELETE), old, None)
            return
        old = byname.get(key)
        byname[key] = o
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, action), old, o)

    def on_storage(self, kind: str, etype: str | None, raw: Raw) -> None:
        """PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
        VolumeAttachments: the volume plugins' store first, then the pods the change may help,
        with the stored (old, new) for the hints (upstream buildEvtResHandler: only for actions
        some plugin registered)."""
        store = self.listers.dra if kind in DRA_KINDS else self.listers.storage
        change = store.on_event(kind, etype, raw)
        if change is None:
            return
        old, new = change
        action, verb = (
            (ActionType.DELETE, "Delete") if new is None
            else (ActionType.ADD, "Add") if old is None
            else (ActionType.UPDATE, "Update")
        )
        registered = self._registered_actions.get(kind)
        if registered is None:
            registered = self._registered_actions[kind] = self.queue.registered_actions(kind)
        if registered & action:
            self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, action, f"{kind}{verb}"), old, new)

    def on_pdb(self, etype: str | None, raw: Raw) -> None:
        """PodDisruptionBudgets, for DefaultPreemption (no plugin requeues pods on them)."""
        pdb = PodDisruptionBudget.parse(raw)
        if etype == "DELETED":
            self.listers.pdbs.pop(pdb.key, None)
        else:
            self.listers.pdbs[pdb.key] = pdb

    # ==========================================================================================
    # The loop

    def _event_dropped(self, reason: str) -> None:
        self.metrics.events_dropped.labels(reason).inc()

    def stop(self) -> None:
        """Stop popping pods at once (lease lost, or shutting down)."""
        self._stopping = True
        self.queue.close()

    def _fence_closed(self) -> None:
        if not self.fenced:
            self.fenced = True
            log.error("lease_fence_closed", in_flight=len(self.binding_tasks))
        self.stop()

    async def abort(self) -> int:
        """Lease lost: cancel every binding in flight (each forgets its assumption and undoes
        Reserve) and drop queued events and conditions. Returns how many were cancelled."""
        self.stop()
        self.recorder.clear()
        pending = [t for t in self.binding_tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        return len(pending)

    async def run(self) -> None:
        log.info("scheduling_started", profiles=sorted(self.frameworks))
        while not self._stopping:
            q = await self.queue.pop()
            if q is not None and self.hold is not None and not self._stopping:
                await self.hold()
            # After the hold: the wait for a fresh view may outlast the lease.
            if q is not None and not self._stopping and not self.binder.fence_open():
                self._fence_closed()
            if q is None or self._stopping:
                if q is not None:
                    # Popped as we stopped: give it back untouched for the next leader/run.
                    self.queue.done(q.pod.uid)
                break
            try:
                self.schedule_one(q)
            except Exception as exc:
                self._cycle_crashed(q, exc)
            # Let the watcher and the binding tasks run between cycles.
            await asyncio.sleep(0)
        if self.fenced:
            raise Fenced("lease fence closed: scheduling stopped")

    def schedule_one(self, q: QueuedPodInfo) -> None:
        pod = q.pod
        uid = pod.uid
        fw = self.frameworks.get(pod.scheduler_name)
        if fw is None or pod.deleting or self.cache.get_pod(uid) is not None:
            # Upstream skipPodSchedule: being deleted, or already assumed/bound.
            self.queue.done(uid)
            return
        self.cycles += 1
        start = time.perf_counter()
        out = scheduling_cycle(fw, self.algorithm, self.cache, self.snapshot, pod)
        self.metrics.scheduling_algorithm_duration.observe(time.perf_counter() - start)
        if out.assumed is None:
            self._cycle_failed(fw, q, out, start)
            return
        # Assumed: its nomination (if any) has served its purpose.
        self.queue.nominator.delete(uid)
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(fw, q, out, start), name=f"bind {pod.key}"
        )
        self.binding_tasks.add(task)
        task.add_done_callback(self.binding_tasks.discard)

    def _cycle_crashed(self, q: QueuedPodInfo, exc: Exception) -> None:
        """A cycle that raised costs only its pod: logged, counted, evented, back with backoff."""
        log.exception("scheduling_cycle_crashed", pod=q.pod.key)
        self.metrics.object_error("Pod", "cycle")
        q.unschedulable_plugins = set()
        fw = self.frameworks.get(q.pod.scheduler_name)
        if fw is None:
            self.queue.add_unschedulable_if_not_present(q)
            return
        self.metrics.attempt(ERROR, fw.profile_name, 0.0)
        message = f"scheduling cycle failed: {type(exc).__name__}: {exc}"
        self._failure(fw, q, Status(Code.ERROR, message), message)

    def _cycle_failed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome, start: float) -> None:
        st = out.status or Status(Code.ERROR, "scheduling failed without a status")
        if out.fit_error is not None:
            q.unschedulable_plugins = set(out.fit_error.diagnosis.unschedulable_plugins)
            q.pending_plugins = set(out.fit_error.diagnosis.pending_plugins)
        elif st.is_rejected() and st.plugin:
            q.unschedulable_plugins = {p for p in st.plugin.split(",") if p}
        rejected = st.is_rejected()
        result = UNSCHEDULABLE if rejected else ERROR
        self.metrics.attempt(result, fw.profile_name, time.perf_counter() - start)
        for p in q.unschedulable_plugins:
            self.metrics.unschedulable_reasons.labels(p, fw.profile_name).inc()
        self._failure(fw, q, st, out.message or st.message, out.nominating)

    def _failure(
        self, fw: Framework, q: QueuedPodInfo, st: Status, message: str,
        nominating: tuple[str, str] = ("override", ""),
    ) -> None:
        """Requeue and tell the cluster (upstream handleSchedulingFailure)."""
        pod = q.pod
        if pod.uid not in self._pending:
            # Upstream checks the pod informer first: deleted, or bound by someone else, while
            # its attempt ran (after Done the queue no longer tracks that): never requeued.
            self.queue.done(pod.uid)
            log.info("pod_gone", pod=pod.key)
            return
        where = self.queue.add_unschedulable_if_not_present(q)
        if not where:
            log.info("pod_gone", pod=pod.key)
            return
        pod = q.pod  # the queue may hold a newer version now
        # Upstream AddNominatedPod, before the status patch lands, so the next cycles already
        # count the pod on its nominated node.
        mode, node = nominating
        self.queue.nominator.add(pod, mode, node)
        nominated = node if mode == "override" and node != pod.nominated_node_name else None
        reason = "Unschedulable" if st.is_rejected() else "SchedulerError"
        log.info(
            "pod_unschedulable" if st.is_rejected() else "scheduling_error",
            pod=pod.key,
            profile=fw.profile_name,
            attempts=q.attempts,
            queue=where,
            message=message,
        )
        self.recorder.event(pod, fw.profile_name, "Warning", "FailedScheduling", "Scheduling",
                            truncate_message(message))
        self.recorder.unschedulable(pod, reason, message, nominated)

    async def _binding_cycle(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome, start: float) -> None:
        assumed = out.assumed
        assert assumed is not None
        node = assumed.node_name
        state = out.state
        uid = assumed.uid
        s: Status | None = None
        try:
            if out.permit_timeout is not None:
                # No waiting-pod API for plugins yet: a Permit wait ends in its timeout.
                await asyncio.sleep(out.permit_timeout)
                s = Status(
                    Code.UNSCHEDULABLE, f"rejected due to timeout after waiting {out.permit_timeout}s at plugin Permit"
                )
            if s is None:
                # Past Permit the pod can no longer be "unschedulable" for in-flight events:
                # upstream calls Done here, so a burst of binds does not make every watch event
                # be recorded once per binding pod.
                self.queue.done(uid)
                s = await fw.run_pre_bind(state, assumed, node)
            if s is None:
                s = await fw.run_bind(state, assumed, node)
                if s is not None and s.code == Code.SKIP:
                    s = Status(Code.ERROR, "no bind plugin bound the pod")
        except asyncio.CancelledError:
            # Shutting down mid-binding: release the reservation; the next run retries the pod.
            fw.run_unreserve(state, assumed, node)
            self.cache.forget_pod(uid)
            self.queue.done(uid)
            raise
        except Exception as exc:  # the runtime catches plugin errors; this is a last resort
            s = Status(Code.ERROR, f"binding cycle: {exc}")
        if s is None:
            self.cache.finish_binding(uid)
            seconds = time.perf_counter() - start
            self.metrics.attempt(SCHEDULED, fw.profile_name, seconds)
            self.metrics.pod_scheduling_attempts.observe(q.attempts)
            if q.initial_attempt_timestamp is not None:
                self.metrics.pod_scheduling_sli_duration.labels(str(q.attempts)).observe(
                    max(0.0, self.clock() - q.initial_attempt_timestamp)
                )
            log.info("pod_scheduled", pod=assumed.key, node=node, profile=fw.profile_name, attempts=q.attempts)
            self.recorder.event(
                assumed, fw.profile_name, "Normal", "Scheduled", "Binding",
                f"Successfully assigned {assumed.namespace}/{assumed.name} to {node}",
            )
            fw.run_post_bind(state, assumed, node)
            return
        # Binding failed: undo Reserve and the assumption.
        fw.run_unreserve(state, assumed, node)
        self.cache.forget_pod(uid)
        # The forgotten assumption freed its room: an AssignedPod delete for the others
        # (upstream handleBindingCycleError; the pod itself is requeued by _failure).
        self.queue.move_all_to_active_or_backoff(
            ClusterEvent("AssignedPod", ActionType.DELETE), assumed, None, pre_check=lambda p: p.uid != uid
        )
        err = getattr(self.binder, "bind_errors", {}).pop(uid, None)
        if isinstance(err, Fenced):
            # Not sent: we may no longer lead. The next leader schedules the pod.
            self.metrics.binding_errors.labels("fenced").inc()
            log.warning("bind_fenced", pod=assumed.key, node=node)
            self._fence_closed()
            return
        if isinstance(err, BindConflict | PodGone):
            kind = "conflict" if isinstance(err, BindConflict) else "gone"
            self.metrics.binding_errors.labels(kind).inc()
            self.metrics.attempt(ERROR, fw.profile_name, time.perf_counter() - start)
            # Bound by someone else, being deleted, replaced, or gone: the watch tells the rest.
            log.info("bind_skipped", pod=assumed.key, node=node, reason=kind, error=str(err))
            self.queue.delete(uid)
            self._pending.pop(uid, None)
            return
        self.metrics.binding_errors.labels("error").inc()
        result = UNSCHEDULABLE if s.is_rejected() else ERROR
        self.metrics.attempt(result, fw.profile_name, time.perf_counter() - start)
        log.warning("bind_failed", pod=assumed.key, node=node, error=s.message)
        q.unschedulable_plugins = {s.plugin} if s.is_rejected() and s.plugin else set()
        self._failure(fw, q, s, s.message)

    async def drain(self, timeout: float) -> bool:
        """Wait for in-flight bindings (SIGTERM). True if all finished in time."""
        pending = set(self.binding_tasks)
        if pending:
            log.info("draining_bindings", count=len(pending))
            _, still = await asyncio.wait(pending, timeout=timeout)
            if still:
                for t in still:
                    t.cancel()
                await asyncio.gather(*still, return_exceptions=True)
                return False
        try:
            await asyncio.wait_for(self.recorder.flush(), timeout=max(1.0, timeout / 2))
        except TimeoutError:
            log.warning("events_not_flushed", pending=self.recorder.pending())
        return True
