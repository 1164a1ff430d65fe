"""``pyscheduler run``: wires config, watcher, cache, queue, loop, binder, elector and the
health/metrics server, and owns the process lifecycle.

Order (as kube-scheduler): read and validate the configuration and build every profile
before touching the cluster; then ask the API server which of the kinds to watch it serves
(exactly kube-scheduler's informers for these profiles and gates; a missing one stops the start
with one line), start watching and wait until the cache holds what a LIST shows (informer
sync); then, when leader election is on, wait for the Lease; then schedule. With
``delayCacheUntilActive`` (and leader election) the Lease comes first and the watch after it.
SIGTERM stops scheduling, drains in-flight bindings and releases the Lease. Losing the Lease
(or its fence closing, see kube/elector.py) stops scheduling at once, cancels the bindings in
flight, forgets their assumptions and exits non-zero.

Clients (kube/clients.py): bindings, events/status and the elector each have their own API client,
rate limit and threads; all read one refreshing credential source, which the watcher shares.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import os
import pathlib
import random
import signal
import socket
import ssl
import sys
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
from aiohttp import web

from scheduler import __version__
from scheduler.backend import debugger
from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue, wall_window_phase
from scheduler.boot.gcpolicy import long_lived_objects
from scheduler.boot.gcpolicy import steady_state as gc_steady_state
from scheduler.config import ConfigError, SchedulerConfig, error_line, load_run_config
from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.config.validation import validate_leader_election
from scheduler.core.algorithm import Algorithm
from scheduler.core.profiles import FrameworkError, Registry, build_frameworks, check_profiles, plugin_resources
from scheduler.extender import build_extenders
from scheduler.framework.extender import Extender
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.live import log as logconf
from scheduler.live import presence
from scheduler.live.decisions import DecisionStore, RecordOptions
from scheduler.live.explainpage import ExplainPage
from scheduler.live.kube import wire
from scheduler.live.kube.annotator import ResultAnnotator
from scheduler.live.kube.binder import Binder
from scheduler.live.kube.clients import CredentialError, CredentialSource, describe_error, probe_api, wait_for_api
from scheduler.live.kube.elector import ElectorConfigError, KubeLeaseAPI, LeaderElector, LeadershipLost, check_timings
from scheduler.live.kube.preemptor import LivePreemption
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import Fenced, KubeCoreAPI, Lane, TokenBucket
from scheduler.live.kube.volumeapi import KubeVolumeAPI
from scheduler.live.loop import Scheduler, permit_timer
from scheduler.live.metrics import Metrics
from scheduler.live.metrics.resources import PodResources
from scheduler.live.serving.debug import DebugFlags, Profiling
from scheduler.live.serving.health import HealthEndpoint, HealthSLIs, NamedCheck
from scheduler.live.serving.options import ServingError, options_from_args
from scheduler.live.serving.server import Handler, SecureServer, build_server, fetch_client_ca
from scheduler.live.serving.zpages import Flagz, Statusz, configz_handler
from scheduler.live.watch.watcher import NotServed, Watcher
from scheduler.model.kinds import live_kinds
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry

log = structlog.get_logger(__name__)

DRAIN_TIMEOUT = 30.0
# Bindings in flight at once (kube-scheduler has no such bound): the binding lane's connections
# (loophttp) or, through a proxy, its threads. A Binding holds its connection for the API
# server's answer, so the lane tops out at connections / latency: with 8, SchedulingBasic
# (5,000 nodes, 11,000 pods, 2 cores) bound about 240 pods/s while its backlog grew to 4,500;
# with 32 it kept up with creation (backlog under 100).
BIND_THREADS = 32
# Events written at once (writer tasks and the events lane's connections). Upstream sends each Event from a
# goroutine of its own, so its 1000-deep queue drops nothing at a few hundred binds a second;
# with 4 writers ours dropped 3,449 of SchedulingDaemonset's 6,000 Scheduled Events (300 binds
# a second at that load's API latency keep about 15 in flight); with 16, none. Connections
# open only as writes queue up.
EVENT_THREADS = 16
EXIT_CONFIG = 2
EXIT_LEASE_LOST = 1
COMPONENT = "kube-scheduler"
# The Kubernetes minor this scheduler behaves as (statusz's emulationVersion).
EMULATION_VERSION = "1.36"


class StartupError(Exception):
    """One line, printed before exit."""


def informer_users(frameworks: Mapping[str, Framework]) -> frozenset[str]:
    """The plugins, over every profile, that make kube-scheduler start informers (their New
    asks for listers): all enabled ones, but PodTopologySpread only with default constraints."""
    users = set()
    for fw in frameworks.values():
        for name, pl in fw.plugins.items():
            if name == "PodTopologySpread" and not getattr(pl, "default_constraints", None):
                continue
            users.add(name)
    return frozenset(users)


class App:
    def __init__(self, cfg: SchedulerConfig, registry: Registry, metrics: Metrics, creds: CredentialSource,
                 server: SecureServer | None, flags: Mapping[str, str] | None = None,
                 extenders: Sequence[Extender] = (), records: RecordOptions | None = None) -> None:
        """Builds every part, frameworks included (FrameworkError for plugin args a factory
        refuses); talks to no API server until ``run``. ``flags``: /flagz's name -> value;
        ``extenders``: the scheduler extenders' clients (scheduler/extender); ``records``: the
        decision records' bounds and the result annotations."""
        self.cfg = cfg
        self.creds = creds
        records = records or RecordOptions()
        self.metrics = metrics
        self.server = server
        self.flags = dict(flags or {})
        self.slis = HealthSLIs()
        # Start-up reads (probe, LIST for the sync barrier); writes have lanes of their own.
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="api")
        cc = cfg.client_connection
        self.connection = creds.connection("scheduler", pool_size=BIND_THREADS + 4)
        events_connection = creds.connection("events", pool_size=EVENT_THREADS + 1)
        self.probe_connection = creds.connection("scheduler", pool_size=1, retries=False)
        le = cfg.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                KubeLeaseAPI(KubeCoreAPI(creds.connection("leader-election", pool_size=2))), le.resource_name,
                le.resource_namespace,
                lease_duration=le.lease_duration, renew_deadline=le.renew_deadline, retry_period=le.retry_period,
                limiter=TokenBucket(cc.qps, cc.burst),
                on_change=metrics.component.leader_status, on_slowpath=metrics.component.leader_slowpath,
            )
            metrics.component.leader_status(False)  # client-go's elector starts as a backup
        protobuf = cc.content_type == wire.PROTOBUF  # the Bindings' and Events' encoding
        self.binder = Binder(
            KubeCoreAPI(self.connection, protobuf), TokenBucket(cc.qps, cc.burst), workers=BIND_THREADS,
            events_api=KubeCoreAPI(events_connection, protobuf), events_limiter=TokenBucket(cc.qps, cc.burst),
            events_workers=EVENT_THREADS,
            fence=self.elector,
        )
        # VolumeBinding's and DynamicResources' PreBind writes: the binding lane's client and rate
        # limit, as one clientset, on threads of their own.
        self.volume_api = KubeVolumeAPI(
            KubeCoreAPI(self.connection), Lane(self.binder.limiter, workers=BIND_THREADS, name="volumes")
        )
        # Events from the loop, preemption and plugins (Handle.event_recorder) share one recorder.
        self.recorder = Recorder(self.binder.events_api, self.binder.events,
                                 on_drop=lambda reason: metrics.events_dropped.labels(reason).inc())
        snapshot, listers = Snapshot(), Listers()
        # The Handle's pieces: Permit timeouts on the loop's clock, the queue's Activate (the
        # queue is built from the frameworks, so the call is resolved then), plugins' client (one for
        # every profile, built at the first read).
        frameworks = build_frameworks(cfg, snapshot, listers, registry=registry, client=self.binder,
                                      volume_api=self.volume_api, observers=metrics.extension_point_observer,
                                      permit_timer=permit_timer, activator=self._activate_pods,
                                      client_set=functools.cache(lambda: creds.api_client("scheduler", pool_size=4)),
                                      events=self.recorder, extenders=extenders)
        # Kinds plugins named: watched as ours are (configuration errors surface here, offline).
        self.plugin_resources = {str(gvr): gvr.path for gvr in plugin_resources(frameworks)}
        for fw in frameworks.values():
            if fw.batch is not None and not fw.signatures_enabled:
                # Upstream says so when it builds the framework (computeBatchablePlugins).
                log.info("signatures_disabled", profile=fw.profile_name,
                         reason="extenders configured" if fw.extenders else "plugins do not sign", plugins=fw.unsigned)
        # GenericWorkload: the cache keeps pod-group states, the queue retries group pods after
        # backoff, PodGroups are watched (upstream starts their informer only then).
        generic_workload = cfg.feature_gates.enabled("GenericWorkload")
        self.cache = Cache(generic_workload=generic_workload)
        self.queue = SchedulingQueue(
            frameworks,
            time.monotonic,
            initial_backoff=cfg.pod_initial_backoff_seconds,
            max_backoff=cfg.pod_max_backoff_seconds,
            max_in_unschedulable=cfg.pod_max_in_unschedulable_pods_duration,
            generic_workload=generic_workload,
            pop_from_backoff_q=cfg.feature_gates.enabled("SchedulerPopFromBackoffQ"),
            # Backoff windows start on the wall clock's seconds, as kube-scheduler's do.
            window_phase=wall_window_phase(time.monotonic),
        )
        # Decision records (explain, /debug/explain) and, opted in, the simulator's annotations.
        self.annotator = (ResultAnnotator(self.binder.events_api, self.binder.events)  # type: ignore[arg-type]
                          if records.annotations else None)
        self.decisions = DecisionStore(records.max_pods, top=records.top,
                                       on_final=self.annotator.submit if self.annotator is not None else None)
        self.scheduler = Scheduler(frameworks, self.cache, snapshot, listers, self.queue,
                                   Algorithm(random.Random()), self.binder, metrics, recorder=self.recorder,
                                   decisions=self.decisions,
                                   nominate_for_expectation=cfg.feature_gates.enabled("NominatedNodeNameForExpectation"))
        # DefaultPreemption: the queue's nominator and the API side of preemption.
        self.preemption = LivePreemption(
            self.binder, self.scheduler.recorder, self.cache, self.queue.nominator, metrics,
            activate=self._activate, release=self._release_preemptor,
            waiting_pods=next(iter(frameworks.values())).handle.waiting_pods,
            sync=not next(iter(frameworks.values())).handle.features.enable_async_preemption,
        )
        metrics.attach(frameworks, self.queue, self.cache.sizes, lambda: len(self.scheduler.binding_tasks))
        # The queue (which needs the frameworks' QueueSort) owns the nominator, and preemption
        # needs the queue: both reach the handles afterwards, as upstream's SetPodNominator.
        for fw in frameworks.values():
            fw.handle.nominator = self.queue.nominator
            fw.handle.preemption = self.preemption
            fw.handle.pod_group_manager = self.cache.pod_group_state_lister()
        users = informer_users(frameworks)
        self.watcher = Watcher(self.scheduler, creds.credentials, kinds=live_kinds(users, cfg.feature_gates.enabled),
                               scheduler_names=frameworks, on_error=metrics.object_error,
                               resources=self.plugin_resources, informer_users=users)
        self.scheduler.hold = self.watcher.fresh.wait  # no cycle on a half re-listed view
        # Who this process is: the Lease holder identity when electing, else host and pid.
        self.identity = self.elector.identity if self.elector is not None else f"{socket.gethostname()}_{os.getpid()}"
        self.presence_path: pathlib.Path | None = None
        self.synced = False
        self.shutdown = asyncio.Event()
        self._debug_tasks: set[asyncio.Task[None]] = set()
        self._started = time.monotonic()

    def _activate(self, pod: PodInfo) -> None:
        """A failed preemption: move the preemptor back to activeQ (upstream fh.Activate)."""
        self.queue.activate({pod.key: pod})

    def _activate_pods(self, pods: Mapping[str, PodInfo]) -> None:
        """Handle.activate: the plugins' PodsToActivate and direct calls (upstream PodActivator)."""
        self.queue.activate(pods)

    def _release_preemptor(self, pod: PodInfo) -> None:
        """A preemption ended: its preemptor, if still gated by DefaultPreemption, is let through."""
        self.queue.release_gated(pod.uid, "DefaultPreemption", "PreemptionFinished")

    # -- health / metrics / debugging ------------------------------------------------------
    def _leader_check(self) -> str | None:
        # kube-scheduler adds the leader-election watchdog to /healthz and /readyz.
        return self.elector.check() if self.elector is not None else None

    def _shutdown_check(self) -> str | None:
        return "process is shutting down" if self.shutdown.is_set() else None

    def _sync_check(self) -> str | None:
        return None if self.synced else "handlers are not fully synchronized"

    async def _metrics(self, _: web.Request) -> web.Response:
        body, ctype = self.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def _metrics_resources(self, _: web.Request) -> web.Response:
        # kube-scheduler answers an empty 200 unless it leads (installMetricHandler).
        if self.elector is not None and not self.elector.is_leader:
            return web.Response(body=b"")
        body, ctype = PodResources(self.scheduler.informer_pods).exposition()
        return web.Response(body=body, headers={"Content-Type": ctype})

    def routes(self) -> dict[str, Handler]:
        """Every path served, as kube-scheduler's newEndpointsHandler installs them."""
        leader = [NamedCheck("leaderElection", self._leader_check)] if self.elector is not None else []
        ready = [*leader, NamedCheck("shutdown", self._shutdown_check),
                 NamedCheck("sched-handler-sync", self._sync_check)]
        routes: dict[str, Handler] = {
            "/healthz": HealthEndpoint("healthz", leader, self.slis).handler,
            "/livez": HealthEndpoint("livez", [], self.slis).handler,
            "/readyz": HealthEndpoint("readyz", ready, self.slis).handler,
            "/configz": configz_handler(self.cfg),
            "/metrics": self._metrics,
            "/metrics/resources": self._metrics_resources,
            "/metrics/slis": self.slis.handler,
        }
        gates = self.cfg.feature_gates
        if self.flags and gates.enabled("ComponentFlagz"):
            routes["/flagz"] = Flagz(COMPONENT, self.flags).handler
        if self.cfg.enable_profiling:
            prof = Profiling(self.cfg.enable_contention_profiling)
            routes.update(prof.routes())
            flags = DebugFlags(_set_verbosity)
            routes["/debug/flags/"] = flags.index
            routes["/debug/flags/v"] = flags.v
        # Listed paths (the debug ones are not), taken before /statusz itself is added.
        listed = [p for p in routes if not p.startswith("/debug/")]
        if gates.enabled("ComponentStatusz"):
            routes["/statusz"] = Statusz(COMPONENT, __version__, EMULATION_VERSION, self.slis.start_time,
                                         listed).handler
        return routes

    async def _start_http(self) -> None:
        # HTTPS, authentication and authorization live in live/serving/; these are the routes.
        if self.server is not None:
            # Ours beside upstream's: the decision records' page and API (live/explainpage.py).
            page = ExplainPage(self.decisions, self.queue, self.cache.nodes.values, identity=self.identity)
            await self.server.start({**self.routes(), **page.routes()})
            await self._publish_presence()

    async def _publish_presence(self) -> None:
        """Say where this process serves, for `explain` on this machine (live/presence.py)."""
        assert self.server is not None
        host = presence.local_host(self.server.options.bind_address)
        try:
            fingerprint = await presence.certificate_fingerprint(host, self.server.port)
            le = self.cfg.leader_election
            self.presence_path = presence.publish(presence.Presence(
                os.getpid(), self.identity, host, self.server.port, fingerprint, self.creds.host,
                sorted(p.scheduler_name for p in self.cfg.profiles),
                f"{le.resource_namespace}/{le.resource_name}" if le.leader_elect else "", time.time()))
        except (OSError, ssl.SSLError, TimeoutError) as exc:
            log.warning("presence_not_published", error=str(exc))

    async def _trust_client_ca(self) -> None:
        """Client certificates, as kube-scheduler's delegated authentication: with no
        --client-ca-file, the CA the API server publishes for its clients."""
        server = self.server
        if server is None or server.options.client_ca_file or server.authn_client is None:
            return
        pem = await asyncio.get_running_loop().run_in_executor(self.executor, fetch_client_ca, server.authn_client)
        if pem:
            server.trust_client_ca(pem, "configmap kube-system/extension-apiserver-authentication")

    async def _stop_http(self) -> None:
        presence.withdraw(self.presence_path)
        self.presence_path = None
        if self.server is not None:
            await self.server.stop()

    # -- cache sync --------------------------------------------------------------------------
    async def wait_synced(self) -> None:
        """Wait until every kind's first LIST is in the cache (the informers' synced barrier)."""
        await self.watcher.synced.wait()

    # -- new leader: see every binding the previous leader made ---------------------------
    def _list_bound(self) -> dict[str, str]:
        """uid -> node of every bound, non-terminal pod (a quorum read: resourceVersion unset)."""
        out: dict[str, str] = {}
        for i in self._list("/api/v1/pods", "spec.nodeName!="):
            if (i.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            out[str(i["metadata"]["uid"])] = str((i.get("spec") or {}).get("nodeName") or "")
        return out

    async def wait_bindings_seen(self) -> None:
        """Before the first cycle as leader: wait until the cache shows every binding a LIST
        (taken now) shows. The old leader's last Bindings may still be on their way through our
        watch; placing pods before they arrive would overcommit their nodes."""
        loop = asyncio.get_running_loop()
        start = time.monotonic()
        missing: dict[str, str] = {}
        last_list = -1e9
        while True:
            if time.monotonic() - last_list > 3.0:  # re-list: pods deleted meanwhile drop out
                last_list = time.monotonic()
                try:
                    missing = await loop.run_in_executor(self.executor, self._list_bound)
                except Exception as exc:
                    log.warning("leader_catch_up_list_failed", error=describe_error(exc))
                    await asyncio.sleep(1.0)
                    last_list = -1e9
                    continue
            missing = {uid: node for uid, node in missing.items() if self.cache.node_of(uid) != node}
            if not missing:
                log.info("leader_cache_caught_up", waited=round(time.monotonic() - start, 3))
                return
            await asyncio.sleep(0.05)

    # -- lifecycle ---------------------------------------------------------------------------
    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
            loop.add_signal_handler(signal.SIGUSR2, self._on_debug_signal)

    # -- SIGUSR2: the cache debugger ---------------------------------------------------------
    def _on_debug_signal(self) -> None:
        task = asyncio.get_running_loop().create_task(self.debug_cache(), name="cache-debugger")
        self._debug_tasks.add(task)
        task.add_done_callback(self._debug_tasks.discard)

    def _list_cluster(self) -> tuple[list[str], list[str]]:
        """Node names and the UIDs of non-terminal pods, as the scheduler's informers see them."""
        nodes = [str(n["metadata"]["name"]) for n in self._list("/api/v1/nodes")]
        pods = [str(p["metadata"]["uid"])
                for p in self._list("/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed")]
        return nodes, pods

    def _list(self, path: str, field_selector: str = "") -> list[dict[str, Any]]:
        """The items of one LIST (a quorum read: resourceVersion unset). Blocking."""
        query = "?" + urllib.parse.urlencode({"fieldSelector": field_selector}) if field_selector else ""
        return list(self.connection.get_json(path + query, timeout=60).get("items") or [])

    async def debug_cache(self) -> None:
        """Compare the cache and queue with the cluster, then dump both (upstream's debugger on
        SIGUSR2: CacheComparer.Compare, then CacheDumper.DumpAll)."""
        log.info("Cache comparer started")
        try:
            nodes, pods = await asyncio.get_running_loop().run_in_executor(self.executor, self._list_cluster)
        except Exception as exc:
            log.warning("cache_comparer_failed", error=describe_error(exc))
        else:
            pending = list(self.queue.pending())
            missed, redundant = debugger.compare_nodes(nodes, self.cache.nodes)
            if missed or redundant:
                log.info("Cache mismatch", missedNodes=missed, redundantNodes=redundant)
            missed, redundant = debugger.compare_pods(pods, pending, self.cache.nodes)
            if missed or redundant:
                log.info("Cache mismatch", missedPods=missed, redundantPods=redundant)
        log.info("Cache comparer finished")
        log.info("Dump of cached NodeInfo", nodes=debugger.dump_nodes(self.cache, self.queue.nominator))
        log.info("Dump of scheduling queue", summary=debugger.queue_summary(self.queue.counts()),
                 pods=debugger.dump_queue(self.queue.pending()))

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("signal_received", signal=sig.name)
        self.shutdown.set()

    async def _until(self, aw: Any, *others: asyncio.Future[Any]) -> bool:
        """Await ``aw`` unless shutdown (or one of ``others``) comes first. True if ``aw`` finished."""
        task = asyncio.ensure_future(aw)
        stop = asyncio.ensure_future(self.shutdown.wait())
        done, _ = await asyncio.wait({task, stop, *others}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            stop.cancel()
            task.result()
            return True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if not stop.done():
            stop.cancel()
        return False

    async def run(self) -> int:
        self._install_signals()
        await self._start_http()
        tasks: list[asyncio.Task[Any]] = []
        code = 0
        # The API may not be up yet: wait (one line per attempt) before anything else uses it.
        if not await self._until(wait_for_api(lambda: probe_api(self.probe_connection), executor=self.executor)):
            await self._stop_http()
            self._close()
            log.info("stopped", code=code)
            return code
        await self._trust_client_ca()
        # delayCacheUntilActive: a standby does not watch; it lists everything once it leads.
        delayed = self.cfg.delay_cache_until_active and self.elector is not None
        if delayed:
            assert self.elector is not None
            log.info("cache_delayed_until_leading")
            if not await self._until(self.elector.acquire()):
                await self._stop_http()
                self._close()
                log.info("stopped", code=code)
                return code
        watcher_task = asyncio.create_task(self.watcher.run(), name="watcher")
        try:
            log.info("cache_syncing")
            sync_start = time.monotonic()
            # The initial LISTs create millions of long-lived objects that the cyclic GC would
            # scan again and again (about a second at 5,000 nodes, on the way to the first bind).
            with long_lived_objects():
                synced = await self._until(self.wait_synced(), watcher_task)
            if not synced:
                if watcher_task.done():
                    exc = watcher_task.exception()
                    if isinstance(exc, NotServed):
                        raise StartupError(str(exc))
                    raise StartupError(f"watcher stopped: {exc or 'exited'}")
                return 0
            self.synced = True
            self.scheduler.listers.informers.mark_synced()
            gc_steady_state()
            log.info("cache_synced", nodes=self.cache.node_count(), pods=self.cache.pod_count(),
                     pending=sum(self.queue.counts().values()), seconds=round(time.monotonic() - sync_start, 3))
            if self.elector is not None and not delayed and not await self._until(self.elector.acquire(), watcher_task):
                return 0
            if self.elector is not None and not await self._until(self.wait_bindings_seen(), watcher_task):
                return 0
            sched_task = asyncio.create_task(self.scheduler.run(), name="scheduling-loop")
            tasks = [
                sched_task,
                asyncio.create_task(self.queue.run_flushers(), name="queue-flushers"),
                asyncio.create_task(self.scheduler.recorder.run(), name="event-writers"),
            ]
            if self.annotator is not None:
                tasks.append(asyncio.create_task(self.annotator.run(), name="result-annotations"))
            if self.decisions.enabled:
                tasks.append(asyncio.create_task(self.decisions.run_compactor(), name="decision-compactor"))
            keep: asyncio.Task[Any] | None = None
            if self.elector is not None:
                keep = asyncio.create_task(self.elector.keep(), name="lease-renew")
                tasks.append(keep)
            stop = asyncio.create_task(self.shutdown.wait(), name="shutdown-wait")
            done, _ = await asyncio.wait({*tasks, watcher_task, stop}, return_when=asyncio.FIRST_COMPLETED)
            fenced = sched_task in done and isinstance(sched_task.exception(), Fenced)
            if (keep is not None and keep in done) or fenced:
                # Lost the lease: stop at once; another replica schedules now (upstream exits).
                exc = keep.exception() if keep is not None and keep.done() else sched_task.exception()
                await self._lease_lost(str(exc) if exc else "renew loop ended")
                code = EXIT_LEASE_LOST
                return code
            for t in done:
                if t is not stop and t.done() and not t.cancelled() and t.exception() is not None:
                    log.error("task_failed", task=t.get_name(), error=repr(t.exception()))
                    code = 1
            if watcher_task in done and code == 0 and not self.shutdown.is_set():
                log.error("watcher_stopped")
                code = 1
            stop.cancel()
            # Graceful: no new cycles, let bindings in flight finish, then give the lease up.
            self.scheduler.stop()
            drained = await self.scheduler.drain(DRAIN_TIMEOUT)
            log.info("drained", complete=drained)
            if self.elector is not None and code != EXIT_LEASE_LOST:
                await self.elector.release()
            return code
        except StartupError as exc:
            log.error("startup_failed", error=str(exc))
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except LeadershipLost as exc:
            await self._lease_lost(str(exc))
            code = EXIT_LEASE_LOST
            return code
        finally:
            self.scheduler.stop()
            for t in tasks:
                t.cancel()
            self.watcher.stop()
            try:
                await asyncio.wait_for(asyncio.gather(watcher_task, *tasks, return_exceptions=True), 10)
            except (TimeoutError, asyncio.CancelledError):
                watcher_task.cancel()
            await self._stop_http()
            self._close()
            log.info("stopped", code=code)

    async def _lease_lost(self, error: str) -> None:
        if self.elector is not None:
            self.elector.stop()
        cancelled = await self.scheduler.abort()
        forgotten = self.cache.forget_all_assumed()
        log.error("leader_election_lost", error=error, bindings_cancelled=cancelled, assumed_forgotten=forgotten)

    def _close(self) -> None:
        if self.elector is not None:
            self.elector.stop()
        self.binder.shutdown()
        self.volume_api.lane.shutdown()
        self.executor.shutdown(wait=False, cancel_futures=True)


def _set_verbosity(text: str) -> int:
    """PUT /debug/flags/v: parse and apply (ValueError with klog's message)."""
    level = logconf.parse_level(text)
    logconf.set_verbosity(level)
    log.info("verbosity_changed", v=level)
    return level


LEADER_ELECTION_FLAGS = (
    ("leader_elect", "leader_elect"),
    ("leader_elect_lease_duration", "lease_duration"),
    ("leader_elect_renew_deadline", "renew_deadline"),
    ("leader_elect_retry_period", "retry_period"),
    ("leader_elect_resource_lock", "resource_lock"),
    ("leader_elect_resource_name", "resource_name"),
    ("leader_elect_resource_namespace", "resource_namespace"),
)


def apply_flags(cfg: SchedulerConfig, args: argparse.Namespace) -> SchedulerConfig:
    """The command line over the configuration, as kube-scheduler's Options.ApplyTo: the
    leader-election flags given override their fields with --config or without (then the result
    is validated again); the deprecated --profiling/--contention-profiling only without --config.
    ConfigError with the validation's message."""
    le_changes = {field: getattr(args, flag) for flag, field in LEADER_ELECTION_FLAGS
                  if getattr(args, flag, None) is not None}
    changes: dict[str, Any] = {}
    if getattr(args, "config", None) is None:
        for flag, field in (("profiling", "enable_profiling"), ("contention_profiling", "enable_contention_profiling")):
            if getattr(args, flag, None) is not None:
                changes[field] = getattr(args, flag)
    if le_changes:
        le = dataclasses.replace(cfg.leader_election, **le_changes)
        errs = validate_leader_election(le)
        if errs:
            raise ConfigError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        changes["leader_election"] = le
    return dataclasses.replace(cfg, **changes) if changes else cfg


def configure_logging(args: argparse.Namespace) -> str | None:
    """-v, --vmodule and --logging-format; the error line when they are refused."""
    fmt = getattr(args, "logging_format", None)
    vmodule = list(getattr(args, "vmodule", None) or [])
    if fmt is not None:
        try:
            logconf.validate(fmt, vmodule)
        except logconf.LoggingError as exc:
            return str(exc)
    logconf.configure(json_output=None if fmt is None else fmt == logconf.JSON, v=getattr(args, "v", 0) or 0,
                      vmodule=vmodule)
    return None


def records_from_args(args: argparse.Namespace) -> RecordOptions:
    """--decision-records, --decision-top-nodes and --result-annotations."""
    d = RecordOptions()
    return RecordOptions(getattr(args, "decision_records", d.max_pods), getattr(args, "decision_top_nodes", d.top),
                         bool(getattr(args, "result_annotations", False)))


def main(args: argparse.Namespace) -> int:
    err = configure_logging(args)
    if err is not None:
        print(f"error: {err}", file=sys.stderr)
        return 1
    cfg_name = args.config or "default configuration"
    gates: FeatureGates = getattr(args, "gates", DEFAULT_GATES)
    for message, gate, value in gates.warnings:
        log.warning(message, featureGate=gate, value=value)
    # Everything that can be checked offline is checked before touching the cluster.
    try:
        with long_lived_objects():
            cfg = apply_flags(load_run_config(args.config, gates), args)
            # Upstream builds the extenders before the profiles (scheduler.New).
            extenders, cfg = build_extenders(cfg)
            registry = default_registry()
            check_profiles(cfg, registry)
    except ConfigError as exc:
        print(f"error: {error_line(cfg_name, exc)}", file=sys.stderr)
        return EXIT_CONFIG
    for warning in cfg.warnings:
        log.warning("config_has_no_effect", config=cfg_name, detail=warning)
    le = cfg.leader_election
    if le.leader_elect:
        try:
            check_timings(le.lease_duration, le.renew_deadline, le.retry_period)
        except ElectorConfigError as exc:
            # kube-scheduler's Run fails the same way (leaderelection.NewLeaderElector).
            print(f"error: couldn't create leader elector: {exc}", file=sys.stderr)
            return EXIT_CONFIG
    kubeconfig = args.kubeconfig or cfg.client_connection.kubeconfig or None
    try:
        creds = CredentialSource(kubeconfig)
    except CredentialError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        opts = options_from_args(args)
        server = build_server(opts) if opts.secure_port else None
    except ServingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    try:
        with long_lived_objects():
            metrics = Metrics()
            metrics.feature_gates(gates)
            if server is not None:
                server.attach_metrics(metrics.auth)
            app = App(cfg, registry, metrics, creds, server, getattr(args, "flagz", None), extenders,
                      records_from_args(args))
    except FrameworkError as exc:
        print(f"error: {error_line(cfg_name, exc)}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return asyncio.run(app.run())
    except KeyboardInterrupt:
        return 130
