"""``pyscheduler run``: wires config, watcher, cache, queue, loop, binder, elector and the
health/metrics server, and owns the process lifecycle.

Order (as kube-scheduler): read and validate the configuration and build every profile
before touching the cluster; then start watching and wait until the cache holds what a LIST
shows (informer sync); then, when leader election is on, wait for the Lease; then schedule.
SIGTERM stops scheduling, drains in-flight bindings and releases the Lease. Losing the Lease
stops scheduling at once and exits non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import structlog
from aiohttp import web

from scheduler import log as logconf
from scheduler.algorithm import Algorithm
from scheduler.binder import Binder, KubeCoreAPI, TokenBucket
from scheduler.cache import Cache
from scheduler.config import ConfigError, SchedulerConfig, error_line, load_run_config
from scheduler.elector import KubeLeaseAPI, LeaderElector, LeadershipLost
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import Framework, FrameworkError
from scheduler.metrics import Metrics
from scheduler.plugins.registry import default_registry
from scheduler.queue import SchedulingQueue
from scheduler.scheduler import Scheduler
from scheduler.serving import SecureServer, ServingError, build_server, options_from_args
from scheduler.snapshot import Listers, Snapshot
from scheduler.volumeapi import KubeVolumeAPI
from scheduler.watcher import Credentials, Watcher

log = structlog.get_logger(__name__)

DRAIN_TIMEOUT = 30.0
ASSUMED_POD_TTL = 30.0  # an assumed pod whose binding finished but never shows up bound is dropped
EXIT_CONFIG = 2
EXIT_LEASE_LOST = 1


class StartupError(Exception):
    """One line, printed before exit."""


def load_kube(kubeconfig: str | None) -> tuple[Any, Credentials]:
    """The kubernetes client's config loading: the given kubeconfig, else in-cluster, else ~/.kube/config."""
    from kubernetes import client, config

    conf = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
        else:
            try:
                config.load_incluster_config(client_configuration=conf)
            except config.ConfigException:
                config.load_kube_config(client_configuration=conf)
    except Exception as exc:
        where = kubeconfig or "in-cluster/default kubeconfig"
        first = " ".join(str(exc).split())
        raise StartupError(f"{where}: cannot load credentials: {first}") from None
    conf.connection_pool_maxsize = 32  # more than the API executor's threads: no discarded connections
    header = conf.get_api_key_with_prefix("BearerToken") or conf.get_api_key_with_prefix("authorization")
    parts = header.split(" ", 1) if header else []
    scheme, token = (None, None) if not parts else ((None, parts[0]) if len(parts) == 1 else (parts[0], parts[1]))
    creds = Credentials(
        server=conf.host,
        ca_path=conf.ssl_ca_cert,
        insecure=not conf.verify_ssl,
        token=token,
        scheme=scheme,
        username=conf.username or None,
        password=conf.password or None,
        certificate_path=conf.cert_file,
        private_key_path=conf.key_file,
    )
    return client.ApiClient(conf), creds


class App:
    def __init__(self, cfg: SchedulerConfig, frameworks: dict[str, Framework], handle_list: list[Handle],
                 snapshot: Snapshot, listers: Listers, metrics: Metrics, api_client: Any, creds: Credentials,
                 server: SecureServer | None) -> None:
        self.cfg = cfg
        self.metrics = metrics
        self.api_client = api_client
        self.server = server
        self.executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="api")
        cc = cfg.client_connection
        self.binder = Binder(KubeCoreAPI(api_client), TokenBucket(cc.qps, cc.burst), executor=self.executor)
        # VolumeBinding's PreBind writes; the shared rate limit and executor, as one clientset.
        self.volume_api = KubeVolumeAPI(api_client, self.binder.limiter, self.executor)
        for h in handle_list:
            h.client = self.binder
            h.volume_api = self.volume_api
        self.cache = Cache(assumed_ttl=ASSUMED_POD_TTL)
        self.queue = SchedulingQueue(
            frameworks,
            time.monotonic,
            initial_backoff=cfg.pod_initial_backoff_seconds,
            max_backoff=cfg.pod_max_backoff_seconds,
            max_in_unschedulable=cfg.pod_max_in_unschedulable_pods_duration,
        )
        self.queue.on_incoming = metrics.incoming
        metrics.watch_queue(self.queue.counts)
        self.scheduler = Scheduler(frameworks, self.cache, snapshot, listers, self.queue,
                                   Algorithm(np.random.default_rng()), self.binder, metrics)
        self.watcher = Watcher(self.scheduler, lambda: creds, scheduler_names=frameworks,
                               on_error=metrics.object_error)
        self.scheduler.hold = self.watcher.fresh.wait  # no cycle on a half re-listed view
        le = cfg.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                KubeLeaseAPI(api_client), le.resource_name, le.resource_namespace,
                lease_duration=le.lease_duration, renew_deadline=le.renew_deadline, retry_period=le.retry_period,
                executor=self.executor,
                on_change=lambda v: metrics.leader.labels(le.resource_name).set(1 if v else 0),
            )
        self.synced = False
        self.shutdown = asyncio.Event()
        self._started = time.monotonic()

    # -- health / metrics --------------------------------------------------------------------
    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        if not self.synced:
            return web.Response(status=503, text="informer caches not synced")
        return web.Response(text="ok")

    async def _metrics(self, _: web.Request) -> web.Response:
        body, ctype = self.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def _start_http(self) -> None:
        # HTTPS, authentication and authorization live in serving.py; these are the routes.
        if self.server is not None:
            await self.server.start({
                "/healthz": self._healthz,
                "/livez": self._healthz,
                "/readyz": self._readyz,
                "/metrics": self._metrics,
            })

    # -- cache sync --------------------------------------------------------------------------
    async def wait_synced(self) -> None:
        """Wait until every kind's first LIST is in the cache (the informers' synced barrier)."""
        await self.watcher.synced.wait()

    # -- lifecycle ---------------------------------------------------------------------------
    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

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
        watcher_task = asyncio.create_task(self.watcher.run(), name="watcher")
        tasks: list[asyncio.Task[Any]] = []
        code = 0
        try:
            log.info("cache_syncing")
            sync_start = time.monotonic()
            if not await self._until(self.wait_synced(), watcher_task):
                if watcher_task.done():
                    raise StartupError(f"watcher stopped: {watcher_task.exception() or 'exited'}")
                return 0
            self.synced = True
            log.info("cache_synced", nodes=self.cache.node_count(), pods=self.cache.pod_count(),
                     pending=sum(self.queue.counts().values()), seconds=round(time.monotonic() - sync_start, 3))
            if self.elector is not None and not await self._until(self.elector.acquire(), watcher_task):
                return 0
            sched_task = asyncio.create_task(self.scheduler.run(), name="scheduling-loop")
            tasks = [
                sched_task,
                asyncio.create_task(self.queue.run_flushers(), name="queue-flushers"),
                asyncio.create_task(self.scheduler.cleanup_assumed(), name="cache-cleanup"),
            ]
            keep: asyncio.Task[Any] | None = None
            if self.elector is not None:
                keep = asyncio.create_task(self.elector.keep(), name="lease-renew")
                tasks.append(keep)
            stop = asyncio.create_task(self.shutdown.wait(), name="shutdown-wait")
            done, _ = await asyncio.wait({*tasks, watcher_task, stop}, return_when=asyncio.FIRST_COMPLETED)
            if keep is not None and keep in done:
                # Lost the lease: stop at once; another replica schedules now (upstream exits).
                self.scheduler.stop()
                exc = keep.exception()
                log.error("leader_election_lost", error=str(exc) if exc else "renew loop ended")
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
            log.error("leader_election_lost", error=str(exc))
            return EXIT_LEASE_LOST
        finally:
            self.scheduler.stop()
            for t in tasks:
                t.cancel()
            self.watcher.stop()
            try:
                await asyncio.wait_for(asyncio.gather(watcher_task, *tasks, return_exceptions=True), 10)
            except (TimeoutError, asyncio.CancelledError):
                watcher_task.cancel()
            if self.server is not None:
                await self.server.stop()
            self.executor.shutdown(wait=False, cancel_futures=True)
            log.info("stopped", code=code)


def build(cfg: SchedulerConfig, metrics: Metrics) -> tuple[dict[str, Framework], list[Handle], Snapshot, Listers]:
    registry = default_registry()
    snapshot, listers = Snapshot(), Listers()
    frameworks: dict[str, Framework] = {}
    handles: list[Handle] = []
    for prof in cfg.profiles:
        handle = Handle(snapshot, listers, prof.scheduler_name, cfg.parallelism, None)
        handles.append(handle)
        frameworks[prof.scheduler_name] = Framework(
            prof, registry, handle,
            global_percentage=cfg.percentage_of_nodes_to_score,
            observer=metrics.extension_point_observer(prof.scheduler_name),
        )
    return frameworks, handles, snapshot, listers


def main(args: argparse.Namespace) -> int:
    logconf.configure()
    cfg_name = args.config or "default configuration"
    # Everything that can be checked offline is checked before touching the cluster.
    try:
        cfg = load_run_config(args.config)
        metrics = Metrics()
        frameworks, handles, snapshot, listers = build(cfg, metrics)
    except (ConfigError, FrameworkError) as exc:
        print(f"error: {error_line(cfg_name, exc)}", file=sys.stderr)
        return EXIT_CONFIG
    for name in cfg.not_available:
        log.warning("plugin_not_available", plugin=name)
    kubeconfig = args.kubeconfig or cfg.client_connection.kubeconfig or None
    try:
        api_client, creds = load_kube(kubeconfig)
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        opts = options_from_args(args)
        server = build_server(opts) if opts.secure_port else None
    except ServingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    async def amain() -> int:
        app = App(cfg, frameworks, handles, snapshot, listers, metrics, api_client, creds, server)
        return await app.run()

    try:
        return asyncio.run(amain())
    except KeyboardInterrupt:
        return 130
