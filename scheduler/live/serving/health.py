"""/healthz, /livez, /readyz as k8s.io/apiserver's healthz handlers serve them, and the
health-check SLI metrics of /metrics/slis (component-base metrics/prometheus/slis).

Each path runs its named checks in order. All pass: 200 ``ok`` (``?verbose``: one ``[+]name ok``
line per check, then ``<path> check passed``). One fails: 500 with ``[-]name failed: reason
withheld`` for it (the reason goes to the log only) and ``<path> check failed``. ``?exclude=name``
skips a check. A path without checks has ``ping``. Every run check sets
``kubernetes_healthcheck{name,type}`` (1 passed, 0 failed) and counts
``kubernetes_healthchecks_total{name,type,status}``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import generate_latest

from scheduler.live import log as logconf

log = structlog.get_logger(__name__)
# component-base's healthz logs a failed check at V(2): a probe before sync is no news at -v=0.
_HEALTHZ = logconf.verbose("healthz")

# A check: None when healthy, else the reason (for the log).
Check = Callable[[], str | None]
SLI_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"


@dataclass(frozen=True, slots=True)
class NamedCheck:
    name: str
    check: Check


PING = NamedCheck("ping", lambda: None)


class HealthSLIs:
    """The /metrics/slis registry: the two health-check metrics and the process start time."""

    def __init__(self, start_time: float | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.healthcheck = Gauge("kubernetes_healthcheck", "[STABLE] This metric records the result of a single "
                                 "healthcheck.", ["name", "type"], registry=self.registry)
        self.total = Counter("kubernetes_healthchecks", "[STABLE] This metric records the results of all "
                             "healthcheck.", ["name", "type", "status"], registry=self.registry)
        start = Gauge("process_start_time_seconds", "[ALPHA] Start time of the process since unix epoch in "
                      "seconds.", registry=self.registry)
        self.start_time = start_time if start_time is not None else _process_start()
        start.set(self.start_time)

    def observe(self, name: str, kind: str, ok: bool) -> None:
        self.healthcheck.labels(name, kind).set(1 if ok else 0)
        self.total.labels(name, kind, "success" if ok else "error").inc()

    def exposition(self) -> bytes:
        # prometheus_client adds *_created series upstream has not.
        # Upstream writes no *_created series and no family that has no sample yet.
        out: list[bytes] = []
        head: list[bytes] = []
        for ln in generate_latest(self.registry).split(b"\n"):
            if not ln or any(t.endswith(b"_created") or b"_created{" in t for t in ln.split(b" ", 3)[:3]):
                continue
            if ln.startswith(b"# HELP"):
                head = [ln]
                continue
            if ln.startswith(b"#"):
                head.append(ln)
                continue
            out.extend(head)
            head = []
            out.append(ln)
        return b"\n".join(out) + b"\n"

    async def handler(self, _: web.Request) -> web.Response:
        body = self.exposition()
        return web.Response(body=body, headers={"Content-Type": SLI_CONTENT_TYPE})


def _process_start() -> float:
    """The process's start, seconds since the epoch (Linux /proc; this module's import elsewhere)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            btime = next(int(ln.split()[1]) for ln in f if ln.startswith("btime "))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


_IMPORTED = time.time()


class HealthEndpoint:
    """One of /healthz, /livez, /readyz: its checks, in order."""

    def __init__(self, kind: str, checks: Sequence[NamedCheck], slis: HealthSLIs) -> None:
        self.kind = kind
        self.checks = tuple(checks) or (PING,)
        self.slis = slis

    def run(self, excluded: Sequence[str], verbose: bool) -> tuple[int, str]:
        out: list[str] = []
        failed: list[str] = []
        reasons: list[str] = []
        unknown = set(excluded)
        for c in self.checks:
            if c.name in unknown or c.name in excluded:
                unknown.discard(c.name)
                out.append(f"[+]{c.name} excluded: ok\n")
                continue
            err = c.check()
            self.slis.observe(c.name, self.kind, err is None)
            if err is None:
                out.append(f"[+]{c.name} ok\n")
            else:
                out.append(f"[-]{c.name} failed: reason withheld\n")
                failed.append(c.name)
                reasons.append(f"[-]{c.name} failed: {err}")
        if unknown:
            names = ",".join(f'"{n}"' for n in sorted(unknown))
            out.append(f"warn: some health checks cannot be excluded: no matches for {names}\n")
        if failed:
            if _HEALTHZ.level >= 2:
                log.info("health_check_failed", path=self.kind, checks=",".join(failed), reasons="\n".join(reasons))
            # http.Error appends a newline.
            return 500, "".join(out) + f"{self.kind} check failed\n"
        if not verbose:
            return 200, "ok"
        return 200, "".join(out) + f"{self.kind} check passed\n"

    async def handler(self, request: web.Request) -> web.Response:
        excluded = request.query.getall("exclude", [])
        code, body = self.run(excluded, "verbose" in request.query)
        if code != 200:
            return web.Response(status=code, text=body, headers={"X-Content-Type-Options": "nosniff"})
        return web.Response(text=body, content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})
