"""The live scheduling loop (upstream schedule_one.go: ScheduleOne, the binding cycle and the
failure handling); the watch events that feed it are in handlers.py.

The loop pops a pod, runs the profile's scheduling cycle synchronously (core/cycle.py: decide,
assume, Reserve, Permit), and hands the binding cycle (Permit wait, PreBind, Bind, PostBind) to
its own task so the next pod's cycle starts at once. A pod a Permit plugin made wait stays
assumed while its task awaits the outcome: the framework's WaitingPod signals it through a
callback (from any thread), and its timeouts run on this loop's clock (``permit_timer``). Every
path out of an attempt ends with the pod bound, requeued, or known gone: no pod is lost. The API
server refuses a second Binding of a bound pod (409) and the cache refuses to assume a pod
twice: no pod is bound twice.

A pod of a PodGroup (GenericWorkload gate) brings its whole group into one pod-group cycle
(core/podgroup.py): the group's pods that it keeps go to their binding cycles as above, the
others are requeued, and the PodGroup's PodGroupScheduled condition is patched.

With leader election, no cycle starts while the lease fence is closed (see kube/elector.py); the
loop then ends with ``Fenced`` and ``abort`` cancels the bindings in flight and forgets their
assumptions. Events and conditions go through the Recorder's queue, never awaited here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.core.algorithm import Algorithm
from scheduler.core.cycle import CycleOutcome, activate_pods, binding_rejection, rejecting_plugins, scheduling_cycle
from scheduler.core.extenders import extenders_binding
from scheduler.core.podgroup import PodGroupCycle, QueuedPodGroup, next_conditions
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent
from scheduler.framework.interface import QueuedPodInfo
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, code_string
from scheduler.framework.waiting_pods import Cancel, WaitingPod
from scheduler.live.decisions import DecisionStore
from scheduler.live.handlers import EventHandlers
from scheduler.live.kube.binder import BindConflict, Binder, PodGone
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import Fenced
from scheduler.live.log import verbose
from scheduler.live.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, Metrics
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)
# kube-scheduler's schedule_one.go log calls behind V(n), selected by -v or --vmodule=schedule_one=N.
SCHEDULE_ONE = verbose("schedule_one")

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def permit_timer(seconds: float, fire: Callable[[], None]) -> Cancel:
    """The live PermitTimer: ``fire`` after ``seconds`` on the running loop (the scheduling
    cycle arms it, in the loop's thread); the cancel it returns may be called from any thread."""
    loop = asyncio.get_running_loop()
    handle = loop.call_later(max(0.0, seconds), fire)

    def cancel() -> None:
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False
        if here:
            handle.cancel()
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing will fire
            loop.call_soon_threadsafe(handle.cancel)

    return cancel


async def wait_on_permit(wp: WaitingPod) -> Status:
    """The waiting pod's outcome, awaited: the callback may run in any thread (a plugin's
    informer or its own), so it hands the result to the loop thread-safely."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Status] = loop.create_future()

    def settle(st: Status) -> None:
        if not fut.done():
            fut.set_result(st)

    def done(st: Status) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, st)

    wp.on_done(done)
    return await fut


class Scheduler(EventHandlers):
    """The scheduling loop, fed by the event handlers it extends (upstream's Scheduler, whose
    methods are spread over schedule_one.go and eventhandlers.go)."""

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
        decisions: DecisionStore | None = None,
        nominate_for_expectation: bool = True,
    ) -> None:
        self.metrics = metrics or Metrics()
        # The NominatedNodeNameForExpectation gate (beta, on in v1.36.3; upstream reads it once
        # when the scheduler is built).
        self.nominate_for_expectation = nominate_for_expectation
        # Each pod's latest attempts, for `explain` and the page (references, kept bounded).
        self.decisions = decisions if decisions is not None else DecisionStore()
        recorder = recorder or Recorder(binder.events_api, binder.events, on_drop=self._event_dropped)
        super().__init__(frameworks, cache, listers, queue, recorder)
        self.observe_event = self.metrics.event_handled
        self.snapshot = snapshot
        self.algorithm = algorithm
        self.binder = binder
        self.clock = clock
        self.fenced = False
        self.binding_tasks: set[asyncio.Task[None]] = set()
        self.permit_waits: set[asyncio.Task[Any]] = set()  # binding tasks waiting at Permit
        self._stopping = False
        self.cycles = 0
        # Awaited before each cycle: the watcher holds cycles while it re-lists after a gap.
        self.hold: Callable[[], Awaitable[Any]] | None = None
        # Pod groups (GenericWorkload): the cycle, and the PodGroup status patches in flight.
        self.generic_workload = cache.generic_workload
        self.pod_groups = PodGroupCycle(
            frameworks,
            algorithm,
            cache,
            snapshot,
            queue,
            _GroupHooks(self),
            on_algorithm_duration=self.metrics.pod_group_algorithm,
        )
        if self.generic_workload:
            self.metrics.enable_pod_groups()
        self.status_tasks: set[asyncio.Task[None]] = set()

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
            if self.status_tasks:
                # Upstream patches a PodGroup's condition inside its scheduling cycle: the next
                # cycle (a retry of the group's leftover pods) starts once the write is done.
                await asyncio.gather(*list(self.status_tasks), return_exceptions=True)
            # Let the watcher and the binding tasks run between cycles.
            await asyncio.sleep(0)
        if self.fenced:
            raise Fenced("lease fence closed: scheduling stopped")

    def schedule_one(self, q: QueuedPodInfo) -> None:
        pod = q.pod
        uid = pod.uid
        if self.generic_workload and pod.scheduling_group is not None:
            self.cycles += 1
            outcome = self.pod_groups.schedule(q)
            if outcome is not None:
                self.metrics.pod_group_attempt(outcome.result, outcome.profile, outcome.seconds)
                log.info(
                    "pod_group_scheduled" if outcome.result == "scheduled" else "pod_group_not_scheduled",
                    pod_group=outcome.group.key,
                    result=outcome.result,
                    scheduled_pods=len(outcome.scheduled),
                    unschedulable_pods=len(outcome.decisions) - len(outcome.scheduled),
                    message=outcome.condition["message"],
                )
            return
        fw = self.frameworks.get(pod.scheduler_name)
        if fw is None or pod.deleting or self.cache.get_pod(uid) is not None:
            # Upstream skipPodSchedule: being deleted, or already assumed/bound.
            self.queue.done(uid)
            return
        self.cycles += 1
        start = time.perf_counter()
        out = scheduling_cycle(fw, self.algorithm, self.cache, self.snapshot, pod, q.signature,
                               self.queue.scheduling_cycle)
        elapsed = time.perf_counter() - start
        self.metrics.scheduling_algorithm_duration.observe(elapsed)
        self.decisions.record(pod, fw, out, self.snapshot.node_infos, q.attempts, start, elapsed)
        if SCHEDULE_ONE.level >= 10 and out.result is not None:
            self._log_scores(pod.key, out)
        if out.assumed is None:
            self._cycle_failed(fw, q, out, start)
            return
        self._start_binding(fw, q, out, start)

    def _start_binding(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome, start: float) -> None:
        # Assumed: its nomination (if any) has served its purpose.
        self.queue.nominator.delete(q.pod.uid)
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(fw, q, out, start), name=f"bind {q.pod.key}"
        )
        self.binding_tasks.add(task)
        task.add_done_callback(self.binding_tasks.discard)

    def _update_pod_group_condition(self, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        """Upstream updatePodGroupCondition: patched off the loop; never back from Scheduled."""
        pg = self.listers.pod_groups.get(group.key)
        if pg is None:
            log.error("pod_group_status_update_failed", pod_group=group.key, error="PodGroup not found")
            return
        now = time.strftime(RFC3339, time.gmtime())
        conditions = next_conditions(pg, condition, now)
        if conditions is None:
            return
        body = {"status": {"conditions": conditions}}

        async def patch() -> None:
            try:
                await self.binder.binds.run(self.binder.api.patch_pod_group_status, pg.namespace, pg.name, body)
            except Exception as exc:
                log.error("pod_group_status_update_failed", pod_group=group.key, error=str(exc))

        task = asyncio.get_running_loop().create_task(patch(), name=f"podgroup status {group.key}")
        self.status_tasks.add(task)
        task.add_done_callback(self.status_tasks.discard)

    def _log_scores(self, pod: str, out: CycleOutcome) -> None:
        """prioritizeNodes' V(10) lines: each plugin's weighted score per node, then each node's total."""
        scores = out.result.scores if out.result is not None else None
        if scores is None or not (scores.plugins or scores.extenders):
            return  # one feasible node, or nothing scored: upstream logs no scores either
        infos = self.snapshot.node_infos
        names = [infos[int(i)].name for i in scores.idx]
        for k, node in enumerate(names):
            for plugin, final in zip(scores.plugins, scores.final):
                log.info("Plugin scored node for pod", v=10, pod=pod, plugin=plugin, node=node, score=int(final[k]))
        for ext in scores.extenders:
            for hp in ext.priorities:  # as the extender answered, before weight and scaling
                log.info("Extender scored node for pod", v=10, pod=pod, extender=ext.name, node=hp.host, score=hp.score)
        for k, node in enumerate(names):
            log.info("Calculated node's final score for pod", v=10, pod=pod, node=node, score=int(scores.totals[k]))

    def _cycle_crashed(self, q: QueuedPodInfo, exc: Exception) -> None:
        """A cycle that raised costs only its pod: logged, counted, evented, back with backoff."""
        log.exception("scheduling_cycle_crashed", pod=q.pod.key)
        self.metrics.object_error("Pod", "cycle")
        q.unschedulable_plugins, q.pending_plugins = set(), set()  # an error: no rejector
        fw = self.frameworks.get(q.pod.scheduler_name)
        if fw is None:
            self.queue.add_unschedulable_if_not_present(q)
            return
        self.metrics.attempt(ERROR, fw.profile_name, 0.0)
        st = Status(Code.ERROR, f"scheduling cycle failed: {type(exc).__name__}: {exc}", err=exc)
        self._handle_scheduling_failure(fw, q, st)

    def _cycle_failed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome, start: float) -> None:
        st = out.status or Status(Code.ERROR, "scheduling failed without a status")
        q.unschedulable_plugins, q.pending_plugins = rejecting_plugins(st)
        result = UNSCHEDULABLE if st.is_rejected() else ERROR
        self.metrics.attempt(result, fw.profile_name, time.perf_counter() - start)
        self.metrics.rejected(q.unschedulable_plugins | q.pending_plugins, fw.profile_name)
        self._handle_scheduling_failure(fw, q, st, out.nominating)

    def _handle_scheduling_failure(
        self, fw: Framework, q: QueuedPodInfo, st: Status, nominating: tuple[str, str] = ("override", "")
    ) -> None:
        """Requeue and tell the cluster, with ``st``'s message (upstream handleSchedulingFailure)."""
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
        rejected = st.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = st.message
        # A rejection is upstream's V(2) "Unable to schedule pod; no fit; waiting"; an error is
        # logged at every verbosity, as upstream's HandleError. Nothing is built below V(2).
        if not rejected or SCHEDULE_ONE.level >= 2:
            event, v = ("pod_unschedulable", {"v": 2}) if rejected else ("scheduling_error", {})
            log.info(event, pod=pod.key, profile=fw.profile_name, attempts=q.attempts, queue=where, message=message,
                     **v)
        self.recorder.event(pod, fw.profile_name, "Warning", "FailedScheduling", "Scheduling", message)
        self.recorder.unschedulable(pod, reason, message, nominated)

    async def _binding_cycle(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome, start: float) -> None:
        assumed = out.assumed
        assert assumed is not None
        node = assumed.node_name
        state = out.state
        uid = assumed.uid
        s: Status | None = None
        at_permit = False  # the attempt ended in the wait at Permit, not in PreBind or Bind
        timings: dict[str, float] = {}  # the decision record's
        try:
            wp = fw.get_waiting_pod(uid)
            if self.nominate_for_expectation:
                # PreBindPreFlight: a PreBind with work to do (claims to write, devices to wait
                # for) or a wait at Permit is announced with status.nominatedNodeName first.
                pre_flight = fw.run_pre_bind_pre_flights(state, assumed, node)
                if pre_flight is not None and pre_flight.code != Code.SKIP:
                    s = pre_flight
                    self.decisions.stage(uid, "PreBindPreFlight", s)
                elif pre_flight is None or wp is not None:
                    await self._nominate_while_waiting(assumed, node)
            if s is None and wp is not None:
                # Upstream WaitOnPermit: the pod stays in flight (events are recorded for it)
                # and assumed until every waiting plugin allows it, one rejects it or time runs out.
                log.info("pod_waiting_on_permit", pod=assumed.key, node=node, plugins=sorted(wp.get_pending_plugins()))
                began = time.perf_counter()
                task = asyncio.current_task()
                assert task is not None  # this coroutine runs as its own task
                self.permit_waits.add(task)
                try:
                    outcome = await wait_on_permit(wp)
                finally:
                    self.permit_waits.discard(task)
                timings["permitWait"] = time.perf_counter() - began
                self.metrics.permit_waited(code_string(outcome.code), timings["permitWait"])
                s = fw.end_wait_on_permit(assumed, outcome)
                self.decisions.stage(uid, "Permit", s)
                at_permit = s is not None
                if s is not None and s.is_rejected():
                    s = binding_rejection(assumed, node, s)
            if s is None:
                # Past Permit the pod can no longer be "unschedulable" for in-flight events:
                # upstream calls Done here, so a burst of binds does not make every watch event
                # be recorded once per binding pod.
                self.queue.done(uid)
                s = await fw.run_pre_bind(state, assumed, node)
                self.decisions.stage(uid, "PreBind", s)
            if s is None:
                if self.recorder.has_condition(uid):
                    # The failed attempt's PodScheduled and nomination first, as upstream's
                    # order has them: never onto the pod once it is bound.
                    await self.recorder.settle(uid)
                bound, s = await self._extenders_bind(fw, assumed, node)
                if not bound:
                    s = await fw.run_bind(state, assumed, node)
                if s is not None and s.code == Code.SKIP:
                    s = Status(Code.ERROR, "no bind plugin bound the pod")
                self.decisions.stage(uid, "Bind", s)
        except asyncio.CancelledError:
            # Shutting down mid-binding: release the reservation; the next run retries the pod.
            self.decisions.finish(uid, Status(Code.ERROR, "binding cycle cancelled"), timings)
            fw.discard_waiting_pod(assumed)
            fw.run_unreserve(state, assumed, node)
            self.cache.forget_pod(uid)
            self.queue.done(uid)
            raise
        except Exception as exc:  # the runtime catches plugin errors; this is a last resort
            s = Status(Code.ERROR, f"binding cycle: {exc}", err=exc)
        timings["total"] = time.perf_counter() - start
        self.decisions.finish(uid, s, timings)
        if s is None:
            self.cache.finish_binding(uid)
            seconds = time.perf_counter() - start
            self.metrics.attempt(SCHEDULED, fw.profile_name, seconds)
            first = q.initial_attempt_timestamp
            self.metrics.scheduled(q, None if first is None else max(0.0, self.clock() - first))
            if SCHEDULE_ONE.level >= 2:  # upstream's V(2) "Successfully bound pod to node"
                log.info("pod_scheduled", v=2, pod=assumed.key, node=node, profile=fw.profile_name, attempts=q.attempts)
            self.recorder.event(
                assumed, fw.profile_name, "Normal", "Scheduled", "Binding",
                f"Successfully assigned {assumed.namespace}/{assumed.name} to {node}",
            )
            fw.run_post_bind(state, assumed, node)
            activate_pods(fw, state)
            return
        # Binding failed (or the wait at Permit did not end in an allow): undo Reserve and the
        # assumption. The room it freed is an AssignedPod delete for the others (upstream
        # handleBindingCycleError); for a rejection that move waits until the pod is requeued,
        # so the pod's own event is not among its in-flight events.
        fw.run_unreserve(state, assumed, node)
        self.cache.forget_pod(uid)
        if not s.is_rejected():
            self._freed(assumed)
        err = s.err
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
        if not at_permit:
            self.metrics.binding_errors.labels("error").inc()
            log.warning("bind_failed", pod=assumed.key, node=node, error=s.message)
        result = UNSCHEDULABLE if s.is_rejected() else ERROR
        self.metrics.attempt(result, fw.profile_name, time.perf_counter() - start)
        q.unschedulable_plugins, q.pending_plugins = rejecting_plugins(s)
        self.metrics.rejected(q.unschedulable_plugins | q.pending_plugins, fw.profile_name)
        self._handle_scheduling_failure(fw, q, s)
        if s.is_rejected():
            self._freed(assumed)

    async def _extenders_bind(self, fw: Framework, pod: PodInfo, node: str) -> tuple[bool, Status | None]:
        """A binder extender interested in the pod binds it before any Bind plugin (upstream
        extendersBinding), off the event loop: its HTTP call may take up to its timeout. The
        lease fence is checked first, as the Binder does before a Binding."""
        if not any(e.is_binder() for e in fw.extenders):
            return False, None
        if not self.binder.fence_open():
            return True, Status(Code.ERROR, "lease fence closed", err=Fenced())
        return await asyncio.to_thread(extenders_binding, fw.extenders, pod, node)

    async def _nominate_while_waiting(self, pod: PodInfo, node: str) -> None:
        """NominatedNodeNameForExpectation (beta, on in v1.36.3; the caller reads the gate): a pod
        about to wait at Permit or with PreBind work to do gets status.nominatedNodeName, so
        autoscalers and others see where it is going. Not critical: a failure is logged and the
        binding cycle goes on (upstream bindingCycle)."""
        if pod.nominated_node_name == node:
            return
        try:
            await self.binder.binds.run(
                self.binder.api.patch_pod_status, pod.namespace, pod.name, {"status": {"nominatedNodeName": node}}
            )
        except Exception as exc:
            log.warning("nominated_node_update_failed", pod=pod.key, node=node, error=str(exc))

    def _freed(self, assumed: PodInfo) -> None:
        uid = assumed.uid
        self.queue.move_all_to_active_or_backoff(
            ClusterEvent("AssignedPod", ActionType.DELETE), assumed, None, pre_check=lambda p: p.uid != uid
        )

    async def drain(self, timeout: float) -> bool:
        """Wait for in-flight bindings (SIGTERM). True if all finished in time. Pods still
        waiting at Permit have nothing in flight: their waits end at once (Unreserve, the
        assumption forgotten; the next run schedules them again)."""
        waiting = [t for t in self.permit_waits if not t.done()]
        for t in waiting:
            t.cancel()
        if waiting:
            log.info("permit_waits_cancelled", count=len(waiting))
            await asyncio.gather(*waiting, return_exceptions=True)
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


class _GroupHooks:
    """What the pod-group cycle asks of the live scheduler (core/podgroup.PodGroupHooks)."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched

    def failure(self, fw: Framework, q: QueuedPodInfo, status: Status, nominating: tuple[str, str]) -> None:
        out = CycleOutcome(q.pod, CycleState(), status=status, nominating=nominating)
        self.sched._cycle_failed(fw, q, out, time.perf_counter())

    def assumed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome) -> None:
        self.sched._start_binding(fw, q, out, time.perf_counter())

    def done(self, uid: str) -> None:
        self.sched.queue.done(uid)

    def condition(self, fw: Framework, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        self.sched._update_pod_group_condition(group, condition)

