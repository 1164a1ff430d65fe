"""The debugging endpoints kube-scheduler serves when ``enableProfiling`` is on: /debug/pprof
(k8s.io/apiserver routes.Profiling over Go's net/http/pprof) and /debug/flags/v (routes.DebugFlags:
PUT a number to change the log verbosity while running).

Go's profiles have Python counterparts with the same purpose:

- ``profile?seconds=N`` (default 30): a CPU profile of the event loop's thread (where every
  scheduling cycle runs) for N seconds, in the pstats format (``python -m pstats FILE``,
  snakeviz); ``debug=1``: the pstats text, sorted by cumulative time.
- ``goroutine``: every thread's stack and every asyncio task's stack, as text.
- ``heap`` / ``allocs``: live objects counted by type (the 200 most numerous), as text.
- ``block`` / ``mutex`` (only with ``enableContentionProfiling``): the stacks of the threads
  waiting right now on a lock, a queue or a socket. Python has no contention sampler like
  Go's; this answers the same question (where are threads stuck) at the moment asked.
- ``cmdline``: the command line, NUL-separated.
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import html
import io
import marshal
import pstats
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiohttp import web

MAX_PROFILE_SECONDS = 3600
# Functions a thread sits in while it waits (threading, queue, selectors, socket reads).
_WAITING = frozenset({"wait", "acquire", "get", "select", "poll", "recv", "recv_into", "accept",
                      "_wait_for_tstate_lock", "sleep", "read", "readinto", "join"})


def _plain(text: str, status: int = 200) -> web.Response:
    return web.Response(status=status, body=text.encode(), headers={
        "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"})


class DebugFlags:
    """/debug/flags/ (an index) and /debug/flags/v (PUT the new verbosity)."""

    def __init__(self, set_v: Callable[[str], int]) -> None:
        # set_v parses and applies the text, returning the level; ValueError with upstream's
        # message for a bad value.
        self.set_v = set_v

    async def index(self, _: web.Request) -> web.Response:
        body = ("<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n/debug/flags/<br>\n<br>\n"
                "flags:<br>\n<table>\n<tr>v<br>\n</table>\n<br>\nfull flags configurable<br>\n</body>\n</html>\n")
        return web.Response(body=body.encode(), headers={"Content-Type": "text/html; charset=utf-8"})

    async def v(self, request: web.Request) -> web.Response:
        if request.method != "PUT":
            return web.Response(status=406, body=b"unsupported http method\n", headers={
                "Content-Type": "text/plain", "X-Content-Type-Options": "nosniff"})
        text = (await request.text()).strip()
        try:
            level = self.set_v(text)
        except ValueError as exc:
            return web.Response(status=400, body=f"{exc}\n".encode(), headers={
                "Content-Type": "text/plain", "X-Content-Type-Options": "nosniff"})
        return web.Response(body=f"successfully set klog.logging.verbosity to {level}\n".encode(), headers={
            "Content-Type": "text/plain", "X-Content-Type-Options": "nosniff"})


def thread_stacks(waiting_only: bool = False) -> str:
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for ident, frame in sys._current_frames().items():
        if waiting_only and frame.f_code.co_name not in _WAITING:
            continue
        out.append(f"thread {names.get(ident, '?')} ({ident}):\n{''.join(traceback.format_stack(frame))}")
    return "\n".join(out)


def task_stacks() -> str:
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:
        return ""
    out = []
    for t in sorted(tasks, key=lambda t: t.get_name()):
        buf = io.StringIO()
        t.print_stack(file=buf)
        out.append(f"task {t.get_name()}:\n{buf.getvalue()}")
    return "\n".join(out)


def heap_counts(limit: int = 200) -> str:
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    lines = [f"{n} {name}" for name, n in counts.most_common(limit)]
    head = (f"heap profile: {sum(counts.values())} objects tracked by the collector, "
            f"{gc.get_freeze_count()} more frozen at start-up (not listed)\n")
    return head + "\n".join(lines) + "\n"


class Profiling:
    """/debug/pprof/ and its profiles."""

    def __init__(self, contention: bool, argv: list[str] | None = None) -> None:
        self.contention = contention
        self.argv = list(sys.argv if argv is None else argv)
        self._busy = asyncio.Lock()
        self.profiles: dict[str, tuple[str, Callable[[web.Request], Any]]] = {
            "allocs": ("Live objects by type (the collector's view; Python keeps no allocation samples)", self.heap),
            "cmdline": ("The command line invocation of the current program", self.cmdline),
            "goroutine": ("Stack traces of all current threads and asyncio tasks", self.goroutine),
            "heap": ("Live objects by type", self.heap),
            "profile": ("CPU profile of the event loop's thread. The seconds GET parameter sets its duration "
                        "(default 30); the result is a pstats file (python -m pstats)", self.profile),
        }
        if contention:
            self.profiles["block"] = ("Stack traces of the threads blocked right now on a lock, queue or socket",
                                      self.blocked)
            self.profiles["mutex"] = ("Stack traces of the threads waiting right now on a lock", self.blocked)

    async def index(self, _: web.Request) -> web.Response:
        rows = "".join(f"<tr><td><a href='{n}?debug=1'>{n}</a></td><td>{html.escape(d)}</td></tr>\n"
                       for n, (d, _) in sorted(self.profiles.items()))
        body = ("<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n/debug/pprof/\n<br>\n"
                "<p>Set debug=1 as a query parameter to export in text format</p>\n<br>\n"
                f"Types of profiles available:\n<table>\n<thead><td>Profile</td><td>Description</td></thead>\n{rows}"
                "</table>\n<a href=\"goroutine?debug=2\">full stack dump</a>\n</body>\n</html>\n")
        return web.Response(body=body.encode(), headers={"Content-Type": "text/html; charset=utf-8",
                                                         "X-Content-Type-Options": "nosniff"})

    async def named(self, request: web.Request) -> web.StreamResponse:
        entry = self.profiles.get(request.match_info.get("name", ""))
        if entry is None:
            return _plain("Unknown profile\n", 404)
        result: web.StreamResponse = await entry[1](request)
        return result

    async def cmdline(self, _: web.Request) -> web.Response:
        return _plain("\x00".join(self.argv))

    async def goroutine(self, _: web.Request) -> web.Response:
        return _plain(f"{thread_stacks()}\n{task_stacks()}")

    async def blocked(self, _: web.Request) -> web.Response:
        return _plain(thread_stacks(waiting_only=True))

    async def heap(self, _: web.Request) -> web.Response:
        return _plain(heap_counts())

    async def profile(self, request: web.Request) -> web.Response:
        try:
            seconds = float(request.query.get("seconds", "30"))
        except ValueError:
            return _plain("Bad Request: invalid seconds\n", 400)
        if not 0 < seconds <= MAX_PROFILE_SECONDS:
            return _plain("Bad Request: seconds out of range\n", 400)
        if self._busy.locked():
            return _plain("Could not enable CPU profiling: cpu profiling already in use\n", 500)
        async with self._busy:
            prof = cProfile.Profile()
            prof.enable()
            try:
                await asyncio.sleep(seconds)
            finally:
                prof.disable()
        if request.query.get("debug", "0") not in ("", "0"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(200)
            return _plain(buf.getvalue())
        prof.create_stats()
        data = marshal.dumps(prof.stats)  # type: ignore[attr-defined]
        return web.Response(body=data, headers={
            "Content-Type": "application/octet-stream", "X-Content-Type-Options": "nosniff",
            "Content-Disposition": 'attachment; filename="profile"'})

    def routes(self) -> dict[str, Callable[[web.Request], Any]]:
        return {"/debug/pprof/": self.index, "/debug/pprof/{name}": self.named}
