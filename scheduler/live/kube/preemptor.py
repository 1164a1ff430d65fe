"""Carries out preemption decisions against the API server (upstream preemption.Executor).

Async mode (SchedulerAsyncPreemption, the v1.36.3 default): the scheduling cycle only calls
``preempt``: it records the preemptor as running and starts a task; the task clears the
nominations of lower-priority pods on the node, gives each victim the DisruptionTarget
condition, deletes it and records a ``Preempted`` Event, the last victim after the others.
Until the last victim is being deleted, DefaultPreemption's PreEnqueue keeps the preemptor out
of activeQ (``is_running``). Writes go through the binder's scheduler lane (the scheduler's own
client and rate limit), never awaited by the loop.

Without the gate (upstream prepareCandidate) ``preempt`` blocks the scheduling cycle, as the
scheduling goroutine blocks upstream: every victim gets its condition and is deleted in
parallel, then the lower-priority nominations on the node are cleared; a failed write fails
the PostFilter with its error. Nothing gates the preemptor then: its retry finds the victims
deleted or terminating, never still running (which made it preempt a second node).

A PodGroup preempts the same way (``preempt_group``, WorkloadAwarePreemption): the preemptor is
the group (its uid, its priority), the candidate is the whole cluster (named "cluster").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from scheduler.backend.cache import Cache
from scheduler.backend.nominator import PodNominator
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import WaitingPodsMap
from scheduler.live.kube.binder import Binder
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import ApiError
from scheduler.live.metrics import Metrics
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup

log = structlog.get_logger(__name__)

# Victims deleted at once by a synchronous preemption (upstream's parallelizer default).
SYNC_PARALLELISM = 16

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Upstream ExecutorPreemptor: a pod, or a PodGroup with its pods being scheduled."""

    uid: str
    key: str
    priority: int
    scheduler_name: str
    kind: str  # "pod" or "podgroup" (upstream Type())
    pods: tuple[PodInfo, ...]

    @staticmethod
    def of_pod(p: PodInfo) -> Preemptor:
        return Preemptor(p.uid, p.key, p.priority, p.scheduler_name, "pod", (p,))

    @staticmethod
    def of_group(pg: PodGroup, pods: Sequence[PodInfo]) -> Preemptor:
        # All pods of a group name one scheduler; the group's priority decides.
        return Preemptor(pg.uid, pg.key, pg.priority, pods[0].scheduler_name, "podgroup", tuple(pods))


def disruption_condition(preemptor: PodInfo | Preemptor, victim: PodInfo, now: float) -> dict[str, Any]:
    kind = preemptor.kind if isinstance(preemptor, Preemptor) else "pod"
    meta = (victim.raw.get("metadata") or {}) if isinstance(victim.raw, dict) else {}
    cond: dict[str, Any] = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority {kind}",
        "lastProbeTime": None,
        "lastTransitionTime": datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    gen = meta.get("generation")
    if gen:
        # PodObservedGenerationTracking is GA (locked on) in v1.36.
        cond["observedGeneration"] = int(gen)
    return cond


def condition_already_set(victim: PodInfo, cond: dict[str, Any]) -> bool:
    """podutil.UpdatePodCondition would change nothing (same status, reason, message)."""
    raw = victim.raw if isinstance(victim.raw, dict) else {}
    for c in (raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == cond["type"]:
            return bool(
                c.get("status") == cond["status"]
                and c.get("reason") == cond["reason"]
                and c.get("message") == cond["message"]
                and int(c.get("observedGeneration") or 0) == int(cond.get("observedGeneration") or 0)
            )
    return False


class LivePreemption:
    """The framework Handle's ``preemption`` actuator in the live scheduler."""

    def __init__(
        self,
        binder: Binder,
        recorder: Recorder,
        cache: Cache,
        nominator: PodNominator,
        metrics: Metrics,
        *,
        activate: Callable[[PodInfo], None] | None = None,
        release: Callable[[PodInfo], None] | None = None,
        clock: Callable[[], float] = time.time,
        waiting_pods: WaitingPodsMap | None = None,
        sync: bool = False,
    ) -> None:
        self.binder = binder
        self.recorder = recorder
        self.cache = cache
        self.nominator = nominator
        self.metrics = metrics
        self.activate = activate
        # Called when a preemption ends without error. Upstream relies on the victims' deletion
        # events to re-run PreEnqueue; when the last of them arrived before this task had
        # registered its last victim (it was deleted by a concurrent preemptor), nothing would
        # wake the gated preemptor until the 5-minute unschedulable flush.
        self.release = release
        self.clock = clock
        # A victim waiting at Permit is preempted in memory, not deleted (upstream PreemptPod).
        self.waiting_pods = waiting_pods
        self._running: set[str] = set()
        self._last_victim: dict[str, str] = {}  # preemptor uid -> uid of the victim deleted last
        self.tasks: set[asyncio.Task[None]] = set()
        # SchedulerAsyncPreemption off: preempt() blocks until the victims are deleted.
        self.sync = sync
        self._pool: ThreadPoolExecutor | None = None

    # -- called from the scheduling cycle ----------------------------------------------------
    def attempted(self) -> None:
        self.metrics.preemption_attempts.inc()

    def preempt(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo], plugin: str) -> Status | None:
        if self.sync:
            return self._prepare(Preemptor.of_pod(preemptor), node, victims, plugin)
        self._start(Preemptor.of_pod(preemptor), node, victims, plugin)
        return None

    def preempt_group(
        self, pod_group: PodGroup, pods: Sequence[PodInfo], victims: Sequence[PodInfo], plugin: str
    ) -> Status | None:
        """Upstream actuatePodGroupPreemption: the candidate is the cluster."""
        if self.sync:
            return self._prepare(Preemptor.of_group(pod_group, pods), "cluster", victims, plugin)
        self._start(Preemptor.of_group(pod_group, pods), "cluster", victims, plugin)
        return None

    # -- synchronous (upstream prepareCandidate) ---------------------------------------------
    def _prepare(self, preemptor: Preemptor, node: str, victims: Sequence[PodInfo], plugin: str) -> Status | None:
        """Blocks the loop's thread until every victim is deleted (the writes run on a pool, in
        parallel), then clears the lower-priority nominations on the node. An error fails the
        preemption (the PostFilter) with its text; the nominations are cleared only after
        success, and a failure to clear them is only logged, as upstream."""
        self.metrics.preemption_victims.observe(len(victims))
        log.info("preemption_started", pod=preemptor.key, node=node, victims=len(victims))
        to_write: list[PodInfo] = []
        for v in victims:
            if v.deleting:
                continue  # graceful deletion already started: no second call
            wp = self.waiting_pods.get(v.uid) if self.waiting_pods is not None else None
            if wp is not None and wp.preempt(plugin, "preempted"):
                log.info("waiting_pod_preempted", pod=v.key, preemptor=preemptor.key, node=node)
                self._preempted_event(preemptor, node, v, in_memory=True)
                continue
            to_write.append(v)
        if to_write:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(SYNC_PARALLELISM, thread_name_prefix="preempt")
            now = self.clock()
            futures = [self._pool.submit(self._evict_blocking, preemptor, v, now) for v in to_write]
            errors: list[str] = []
            for v, fut in zip(to_write, futures):
                try:
                    deleted = fut.result()
                except Exception as exc:  # the write's own error, as upstream's AsStatus(err)
                    errors.append(str(exc))
                    continue
                if deleted:
                    log.info("pod_preempted", pod=v.key, preemptor=preemptor.key, node=node)
                    self._preempted_event(preemptor, node, v, in_memory=False)
            if errors:
                log.warning("preemption_failed", pod=preemptor.key, node=node, error=errors[0])
                log.info("preemption_finished", pod=preemptor.key, node=node, result="error")
                return Status(Code.ERROR, errors[0])
        lower = [p for p in self.nominator.nominated_pods_for_node(node) if p.priority < preemptor.priority]
        for p in lower:
            if not p.nominated_node_name:
                continue
            try:
                self.binder.binds.run_blocking(
                    self.binder.api.patch_pod_status, p.namespace, p.name, {"status": {"nominatedNodeName": None}}
                )
            except ApiError as exc:
                log.warning("clear_nomination_failed", pod=p.key, node=node, error=exc.message)
        log.info("preemption_finished", pod=preemptor.key, node=node, result="success")
        return None

    def _evict_blocking(self, preemptor: Preemptor, victim: PodInfo, now: float) -> bool:
        """A pool thread: the victim's DisruptionTarget condition, then its deletion. False when
        it was already gone (404), which is no error."""
        cond = disruption_condition(preemptor, victim, now)
        lane = self.binder.binds
        try:
            if not condition_already_set(victim, cond):
                lane.run_blocking(
                    self.binder.api.patch_pod_status, victim.namespace, victim.name, {"status": {"conditions": [cond]}}
                )
            lane.run_blocking(self.binder.api.delete_pod, victim.namespace, victim.name)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def _preempted_event(self, preemptor: Preemptor, node: str, victim: PodInfo, in_memory: bool) -> None:
        # Upstream passes the preemptor as the related object, but through a wrapper type the
        # event library cannot reference: the binary's Event has no "related" (checked in e2e).
        tail = " (in kube-scheduler memory)." if in_memory else ""
        self.recorder.event(
            victim,
            preemptor.scheduler_name,
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by {preemptor.kind} {preemptor.uid} on node {node}{tail}",
        )

    def _start(self, preemptor: Preemptor, node: str, victims: Sequence[PodInfo], plugin: str) -> None:
        to_delete = [v for v in victims if not v.deleting]
        if not to_delete:
            return
        self.metrics.preemption_victims.observe(len(victims))
        self._running.add(preemptor.uid)
        try:
            task = asyncio.get_running_loop().create_task(
                self._run(preemptor, node, to_delete, plugin), name=f"preempt {preemptor.key}"
            )
        except RuntimeError:  # no loop (a synchronous caller): nothing can be written
            self._running.discard(preemptor.uid)
            raise
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def is_running(self, uid: str) -> bool:
        """Upstream isRunningPreemption: running until the last victim is being deleted or gone."""
        if uid not in self._running:
            return False
        last = self._last_victim.get(uid)
        if last is None:
            return True
        victim = self.cache.get_pod(last)
        return victim is not None and not victim.deleting

    # -- the task ----------------------------------------------------------------------------
    async def _run(self, preemptor: Preemptor | PodInfo, node: str, victims: list[PodInfo], plugin: str) -> None:
        if isinstance(preemptor, PodInfo):
            preemptor = Preemptor.of_pod(preemptor)
        started = time.perf_counter()
        result = "success"
        log.info("preemption_started", pod=preemptor.key, node=node, victims=len(victims))
        try:
            lower = [p for p in self.nominator.nominated_pods_for_node(node) if p.priority < preemptor.priority]
            for p in lower:
                try:
                    await self._clear_nomination(p)
                except ApiError as exc:
                    result = "error"
                    log.warning("clear_nomination_failed", pod=p.key, node=node, error=exc.message)
            last_ok = True
            if len(victims) > 1:
                outcomes = await asyncio.gather(
                    *(self._preempt_pod(preemptor, node, v, plugin) for v in victims[:-1]), return_exceptions=True
                )
                errs = [o for o in outcomes if isinstance(o, BaseException)]
                if errs:
                    result = "error"
                    last_ok = False
                    log.warning("preemption_failed", pod=preemptor.key, node=node, error=str(errs[0]))
            if last_ok:
                last = victims[-1]
                self._last_victim[preemptor.uid] = last.uid
                try:
                    await self._preempt_pod(preemptor, node, last, plugin)
                except Exception as exc:
                    result = "error"
                    log.warning("preemption_failed", pod=preemptor.key, node=node, victim=last.key, error=str(exc))
        finally:
            self._running.discard(preemptor.uid)
            self._last_victim.pop(preemptor.uid, None)
            self.metrics.preemption_goroutines_duration.labels(result).observe(time.perf_counter() - started)
            self.metrics.preemption_goroutines_execution_total.labels(result).inc()
            for pod in preemptor.pods:
                if result == "error" and self.activate is not None:
                    self.activate(pod)
                elif result == "success" and self.release is not None:
                    self.release(pod)
            log.info("preemption_finished", pod=preemptor.key, node=node, result=result)

    async def _clear_nomination(self, p: PodInfo) -> None:
        if not p.nominated_node_name:
            return
        body = {"status": {"nominatedNodeName": None}}
        await self.binder.binds.run(self.binder.api.patch_pod_status, p.namespace, p.name, body)

    async def _preempt_pod(self, preemptor: Preemptor, node: str, victim: PodInfo, plugin: str = "") -> None:
        """Upstream PreemptPod: condition, delete, then the Preempted Event. A victim already
        gone is fine; any other API error fails this preemption. A victim waiting at Permit
        is only told so: its binding cycle gives its room back and retries it after backoff."""
        wp = self.waiting_pods.get(victim.uid) if self.waiting_pods is not None else None
        if wp is not None and wp.preempt(plugin, "preempted"):
            log.info("waiting_pod_preempted", pod=victim.key, preemptor=preemptor.key, node=node)
            self._preempted_event(preemptor, node, victim, in_memory=True)
            return
        cond = disruption_condition(preemptor, victim, self.clock())
        if not condition_already_set(victim, cond):
            try:
                await self.binder.binds.run(
                    self.binder.api.patch_pod_status, victim.namespace, victim.name, {"status": {"conditions": [cond]}}
                )
            except ApiError as exc:
                if exc.status == 404:
                    return
                raise
        try:
            await self.binder.binds.run(self.binder.api.delete_pod, victim.namespace, victim.name)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise
        log.info("pod_preempted", pod=victim.key, preemptor=preemptor.key, node=node)
        self._preempted_event(preemptor, node, victim, in_memory=False)

    async def drain(self) -> None:
        if self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
