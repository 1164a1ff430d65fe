"""What the live bench knows of the plane's pods, and scheduler_perf's throughput collector.

``PodTracker`` is the bench's pod informer: one watch of every pod (after a list), keeping each
pod's namespace, labels, node and whether a scheduler has attempted it (a PodScheduled
condition), and noting the moment each pod is first seen bound. The waits of the ops
(createPods, barrier) read it, and so do the metric windows.

``Window`` is scheduler_perf's ``throughputCollector`` (util.go): it counts the pods of its
namespaces (and label selector) that go from unbound to bound; an existing bound pod counts
when the window opens, as the informer replays it to a new handler. Every second it samples
that count; the first non-zero sample only sets the base; an interval with no new pod is
skipped and the next one that has some records its rate once per interval it spans; the
result is the average of the samples (and their percentiles). No sample (less than two seconds
of binds): no throughput, as upstream ("Failed to measure SchedulingThroughput").
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from bench.live_http import Kube
from bench.live_observe import ResumingWatch

# How often a wait for pods re-checks its condition.
POLL_S = 0.1

SAMPLE_INTERVAL = 1.0  # throughputSampleInterval


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


@dataclasses.dataclass(slots=True)
class PodState:
    name: str
    uid: str
    labels: Mapping[str, str]
    node: str
    attempted: bool
    message: str  # the PodScheduled condition's reason and message, if any
    # Bound and not yet made Running (or finished) by kwok, nor being deleted.
    starting: bool = False


def _pod_state(obj: Mapping[str, Any]) -> PodState:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    conds = status.get("conditions") or ()
    sched = next((c for c in conds if c.get("type") == "PodScheduled"), None)
    node = (obj.get("spec") or {}).get("nodeName") or ""
    return PodState(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        labels=meta.get("labels") or {},
        node=node,
        attempted=sched is not None,
        message=f"{sched.get('reason', '')}: {sched.get('message', '')}" if sched else "",
        starting=bool(node)
        and status.get("phase") not in ("Running", "Succeeded", "Failed")
        and not meta.get("deletionTimestamp"),
    )


class Window:
    """One metrics collection (start/stopCollectingMetrics, or a createPods with collectMetrics)."""

    def __init__(self, name: str, namespaces: list[str], selector: Mapping[str, str] | None) -> None:
        self.name = name
        self.namespaces = frozenset(namespaces)
        self.selector = dict(selector or {})
        self.scheduled = 0  # the collector's counter (binds seen, bound pods at the start)
        self.bind_times: list[float] = []  # binds after the start, monotonic
        self.create_times: list[float] = []  # matching pods that appeared after the start
        self.t0 = 0.0
        self.t1: float | None = None
        self.settle: tuple[float, int] = (0.0, 0)  # see PerfExecutor._settle
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def matches(self, ns: str, labels: Mapping[str, str]) -> bool:
        return ns in self.namespaces and labels_match(labels, self.selector)

    def on_bind(self, now: float) -> None:
        with self._lock:
            self.scheduled += 1
            self.bind_times.append(now)

    def on_create(self, now: float) -> None:
        with self._lock:
            self.create_times.append(now)

    def backlog(self) -> dict[str, Any]:
        """Pods created in the window and not yet bound, sampled each second: a contestant that
        keeps up holds it near zero; one that is the bottleneck lets it grow."""
        with self._lock:
            creates, binds = list(self.create_times), list(self.bind_times)
        if not creates:
            return {}
        end = max(creates[-1], binds[-1] if binds else creates[-1])
        out, ci, bi, t = [], 0, 0, self.t0
        while t <= end + SAMPLE_INTERVAL:
            while ci < len(creates) and creates[ci] <= t:
                ci += 1
            while bi < len(binds) and binds[bi] <= t:
                bi += 1
            out.append(max(0, ci - bi))
            t += SAMPLE_INTERVAL
        return {"last_create_s": round(creates[-1] - self.t0, 3), "max": max(out, default=0), "per_s": out}

    def count(self) -> int:
        with self._lock:
            return self.scheduled

    def start(self, now: float) -> None:
        self.t0 = now
        self._thread = threading.Thread(target=self._sample_loop, name=f"window-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.t1 = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _sample_loop(self) -> None:
        sampler = Sampler(self.count(), time.monotonic())
        tick = self.t0
        while True:
            tick += SAMPLE_INTERVAL
            now = time.monotonic()
            if tick < now:  # a Go ticker drops the ticks it could not deliver
                tick += math.floor((now - tick) / SAMPLE_INTERVAL) * SAMPLE_INTERVAL
            if self._stop.wait(max(0.0, tick - now)):
                return
            sampler.observe(time.monotonic(), self.count())
            self.samples = sampler.samples

    def summary(self) -> dict[str, Any]:
        return summarize(self.samples)


class Sampler:
    """The per-tick step of throughputCollector.run: ``observe(now, scheduled)`` at each tick."""

    def __init__(self, scheduled: int, now: float) -> None:
        self.last_count, self.last_time = scheduled, now
        self.started = False
        self.skipped = 0
        self.samples: list[float] = []

    def observe(self, now: float, scheduled: int) -> None:
        if scheduled == 0:
            return  # no sampling before the first scheduled pod
        if not self.started:
            # The first sample is likely an outlier: it only sets the base.
            self.started, self.last_count, self.last_time = True, scheduled, now
            return
        new = scheduled - self.last_count
        if new == 0:
            self.skipped += 1  # no zero rate: wait for the next pod
            return
        rate = new / (now - self.last_time)
        # One sample per interval spanned, to keep the percentiles right.
        self.samples = [*self.samples, *[rate] * (self.skipped + 1)]
        self.last_count, self.last_time, self.skipped = scheduled, now, 0


def summarize(samples: list[float]) -> dict[str, Any]:
    """The collector's DataItem: Average and Perc50/90/95/99 of the samples (pods/s)."""
    s = sorted(samples)
    if not s:
        return {"samples": 0}

    def perc(p: int) -> float:
        return round(s[math.ceil(len(s) * p / 100) - 1], 2)

    return {
        "samples": len(s),
        "Average": round(sum(s) / len(s), 2),
        "Perc50": perc(50),
        "Perc90": perc(90),
        "Perc95": perc(95),
        "Perc99": perc(99),
    }


class PodTracker(ResumingWatch):
    """A list and watch of every pod of the plane."""

    resume_limit = 50

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube, name="pod-tracker")
        self.pods: dict[str, dict[str, PodState]] = {}  # namespace -> name -> state
        self.cond = threading.Condition()
        self.windows: list[Window] = []
        self.bind_listeners: list[Callable[[str, str], None]] = []
        self.events = 0
        self._rv = ""

    # -- queries (callers need no lock: reads of dicts under the GIL, counts re-checked) --

    def states(self, ns: str, selector: Mapping[str, str] | None = None) -> list[PodState]:
        with self.cond:
            return [p for p in self.pods.get(ns, {}).values() if labels_match(p.labels, selector)]

    def starting(self) -> tuple[int, int]:
        """(bound pods kwok has not made Running yet, bound pods) over the whole plane."""
        starting = bound = 0
        with self.cond:
            for byns in self.pods.values():
                for p in byns.values():
                    if p.node:
                        bound += 1
                        starting += p.starting
        return starting, bound

    def stages(self, ns: str, selector: Mapping[str, str] | None = None) -> tuple[int, int, int]:
        """(scheduled, attempted but not scheduled, not attempted) pods of ``ns``."""
        sched = att = un = 0
        for p in self.states(ns, selector):
            if p.node:
                sched += 1
            elif p.attempted:
                att += 1
            else:
                un += 1
        return sched, att, un

    def wait_for(
        self,
        what: str,
        pred: Callable[[], bool],
        timeout: float,
        check: Callable[[], None],
        namespaces: tuple[str, ...] = (),
    ) -> None:
        """Until ``pred()`` holds; ``check()`` may raise to abort (a contestant that exited). A
        timeout names one pending pod of ``namespaces`` and why it is pending, as upstream."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                if self.error:
                    raise RuntimeError(f"pod watch failed: {self.error}")
                check()
                left = deadline - time.monotonic()
                if left <= 0:
                    hint = self._pending_hint(namespaces)
                    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{hint}")
                # Polled, not woken per event: ``pred`` walks every pod of a namespace, and doing
                # that per watch event cost the bench (and so the machine the contestant shares)
                # time quadratic in the pods, more the longer a contestant takes.
                self.cond.wait(min(left, POLL_S))

    def _pending_hint(self, namespaces: tuple[str, ...]) -> str:
        for ns in namespaces:
            pending = [p for p in self.pods.get(ns, {}).values() if not p.node]
            if pending:
                p = min(pending, key=lambda p: (not p.attempted, p.name))
                return f"; at least pod {ns}/{p.name} is not scheduled ({p.message or 'not attempted'})"
        return ""

    # -- windows --

    def open_window(self, win: Window) -> None:
        with self.cond:
            win.scheduled = sum(
                1
                for ns in win.namespaces
                for p in self.pods.get(ns, {}).values()
                if p.node and labels_match(p.labels, win.selector)
            )
            self.windows.append(win)
            win.start(time.monotonic())

    def close_window(self, win: Window) -> None:
        win.stop()
        with self.cond:
            if win in self.windows:
                self.windows.remove(win)

    # -- the watch --

    def _begin(self) -> None:
        pods, self._rv = self._list()
        with self.cond:
            for ns, name, obj in pods:
                self.pods.setdefault(ns, {})[name] = _pod_state(obj)
        self.ready.set()

    def _ended(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def _list(self) -> tuple[list[tuple[str, str, dict[str, Any]]], str]:
        doc = self.kube.request("GET", "/api/v1/pods?limit=0")
        items = [(p["metadata"]["namespace"], p["metadata"]["name"], p) for p in doc.get("items") or []]
        return items, doc["metadata"]["resourceVersion"]

    def _watch_once(self) -> str | None:
        path = f"/api/v1/pods?watch=1&resourceVersion={self._rv}&allowWatchBookmarks=true&timeoutSeconds=3600"
        self._conn.request("GET", path, headers=self.kube.headers)
        resp = self._conn.getresponse()
        if resp.status != 200:
            self.error = f"watch: HTTP {resp.status} {resp.read()[:200]!r}"
            return None
        while not self._stopping:
            line = resp.readline()
            if not line:
                return "closed by the server"
            ev = orjson.loads(line)
            obj = ev.get("object") or {}
            kind = ev.get("type")
            if kind == "ERROR":
                self.error = f"watch error: {obj}"
                return None
            self._rv = (obj.get("metadata") or {}).get("resourceVersion") or self._rv
            if kind != "BOOKMARK":
                self._apply(kind, obj, time.monotonic())
        return None

    def _apply(self, kind: str | None, obj: Mapping[str, Any], now: float) -> None:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        bound_now = False
        with self.cond:
            self.events += 1
            byns = self.pods.setdefault(ns, {})
            if kind == "DELETED":
                byns.pop(name, None)
            else:
                new = _pod_state(obj)
                old = byns.get(name)
                if old is not None and old.uid != new.uid:
                    old = None  # another pod of the same name
                byns[name] = new
                if old is None and not new.node:
                    for w in self.windows:
                        if w.matches(ns, new.labels):
                            w.on_create(now)
                bound_now = bool(new.node) and (old is None or not old.node)
                if bound_now:
                    for w in self.windows:
                        if w.matches(ns, new.labels):
                            w.on_bind(now)
        if bound_now:
            for fn in list(self.bind_listeners):
                fn(ns, name)
