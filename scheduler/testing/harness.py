"""The live loop driven by hand: the real Binder in front of a fake API, virtual time, one
cycle per ``step`` (upstream: schedule_one_test.go's scheduler built around a fake clientset)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.config import SchedulerConfig, load_config
from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.core.algorithm import Algorithm
from scheduler.core.profiles import build_frameworks
from scheduler.framework.extender import Extender
from scheduler.framework.interface import Plugin
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.waiting_pods import WaitingPodsMap
from scheduler.live.kube.binder import Binder
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import TokenBucket
from scheduler.live.loop import Scheduler
from scheduler.live.metrics import Metrics
from scheduler.testing.fakes import FakeClock, FakeCoreAPI, FakeFence, FakePermitTimer

# The longest a settle waits for bindings busy in lane threads.
SETTLE_TIMEOUT = 5.0


class Harness:
    """``config``/``registry``: the profiles and plugins (default: the default configuration);
    ``extenders``: the scheduler extenders every profile shares;
    Permit timeouts run on ``permit_timer`` (a FakePermitTimer, advanced by the test)."""

    def __init__(self, api: FakeCoreAPI | None = None, fence: FakeFence | None = None,
                 limiter: TokenBucket | None = None, *, config: SchedulerConfig | None = None,
                 registry: Mapping[str, type[Plugin]] | None = None, extenders: Sequence[Extender] = (),
                 gates: FeatureGates = DEFAULT_GATES) -> None:
        self.api = api or FakeCoreAPI()
        self.clock = FakeClock()
        self.metrics = Metrics()
        self.binder = Binder(self.api, limiter or TokenBucket(0, 1), fence=fence)
        self.permit_timer = FakePermitTimer()
        recorder = Recorder(self.binder.events_api, self.binder.events,
                            on_drop=lambda reason: self.metrics.events_dropped.labels(reason).inc())
        snap, listers = Snapshot(), Listers()
        cfg = config or load_config(None, gates)
        fws = build_frameworks(cfg, snap, listers, client=self.binder, registry=registry,
                               observers=self.metrics.extension_point_observer, permit_timer=self.permit_timer,
                               activator=self._activate, events=recorder, extenders=extenders)
        generic = cfg.feature_gates.enabled("GenericWorkload")
        self.cache = Cache(generic_workload=generic)
        self.queue = SchedulingQueue(fws, self.clock, generic_workload=generic)
        for fw in fws.values():
            fw.handle.pod_group_manager = self.cache.pod_group_state_lister()
        self.sched = Scheduler(fws, self.cache, snap, listers, self.queue, Algorithm(random.Random(0)),
                               self.binder, self.metrics, clock=self.clock, recorder=recorder,
                               nominate_for_expectation=cfg.feature_gates.enabled("NominatedNodeNameForExpectation"))

    def _activate(self, pods: Mapping[str, Any]) -> None:
        self.queue.activate(pods)

    async def step(self) -> bool:
        """One scheduling cycle plus its binding and API side effects."""
        q = self.queue.pop_nowait()
        if q is None:
            return False
        self.sched.schedule_one(q)
        await self.settle()
        return True

    async def settle(self) -> None:
        """Run every binding to its end, except those of pods still waiting at Permit."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        for _ in range(5):
            # A binding still busy (its API calls answer from lane threads, in real time) is
            # awaited until it ends or starts waiting at Permit.
            while time.monotonic() < deadline:
                busy = {t for t in self.sched.binding_tasks if not t.done() and t not in self.sched.permit_waits}
                if not busy:
                    break
                await asyncio.wait(busy, timeout=0.005)
            await self.sched.recorder.flush()
            await asyncio.sleep(0)

    def waiting_pods(self) -> WaitingPodsMap:
        return next(iter(self.sched.frameworks.values())).handle.waiting_pods

    def bound(self) -> dict[str, str]:
        return {name: body["target"]["name"] for _, name, body in self.api.bindings}

    def events(self, reason: str) -> list[dict]:
        return [e for _, e in self.api.events if e["reason"] == reason]
