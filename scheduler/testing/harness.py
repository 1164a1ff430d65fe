"""The live loop driven by hand: the real Binder in front of a fake API, virtual time, one
cycle per ``step`` (upstream: schedule_one_test.go's scheduler built around a fake clientset)."""

from __future__ import annotations

import asyncio

import numpy as np

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.config import load_config
from scheduler.core.algorithm import Algorithm
from scheduler.core.profiles import build_frameworks
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.live.kube.binder import Binder
from scheduler.live.kube.transport import TokenBucket
from scheduler.live.loop import Scheduler
from scheduler.live.metrics import Metrics
from scheduler.testing.fakes import FakeClock, FakeCoreAPI, FakeFence


class Harness:
    def __init__(self, api: FakeCoreAPI | None = None, fence: FakeFence | None = None,
                 limiter: TokenBucket | None = None) -> None:
        self.api = api or FakeCoreAPI()
        self.clock = FakeClock()
        self.metrics = Metrics()
        self.binder = Binder(self.api, limiter or TokenBucket(0, 1), fence=fence)
        snap, listers = Snapshot(), Listers()
        fws = build_frameworks(load_config(None), snap, listers, client=self.binder,
                               observers=self.metrics.extension_point_observer)
        self.cache = Cache()
        self.queue = SchedulingQueue(fws, self.clock)
        self.sched = Scheduler(fws, self.cache, snap, listers, self.queue, Algorithm(np.random.default_rng(0)),
                               self.binder, self.metrics, clock=self.clock)

    async def step(self) -> bool:
        """One scheduling cycle plus its binding and API side effects."""
        q = self.queue.pop_nowait()
        if q is None:
            return False
        self.sched.schedule_one(q)
        await self.settle()
        return True

    async def settle(self) -> None:
        for _ in range(3):
            tasks = set(self.sched.binding_tasks)
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            await self.sched.recorder.flush()
            await asyncio.sleep(0)

    def bound(self) -> dict[str, str]:
        return {name: body["target"]["name"] for _, name, body in self.api.bindings}

    def events(self, reason: str) -> list[dict]:
        return [e for _, e in self.api.events if e["reason"] == reason]
