"""structlog configuration: kube-scheduler's log formats and verbosity on structlog.

Configured once, at start-up. Events have fixed snake_case names (``pod_scheduled``,
``pod_unschedulable``, ``bind_failed``); data goes in fields (``pod``, ``node``, ...). The few
events ported from a kube-scheduler log call that sits behind a verbosity (``logger.V(10)``)
keep upstream's message and keys and carry ``v`` (see ``Verbose``).

Formats (``--logging-format``, component-base logs/api): ``text``, the default as upstream's,
writes klog's text layout, ``I1123 08:09:10.123456    4242 loop.py:231] "pod_scheduled"
pod="ns/p" node="n1"``, so whatever reads kube-scheduler's log reads ours; ``json`` writes one
JSON object per line (``event``, ``level``, ``timestamp`` and the fields).

Verbosity (``-v``, ``--vmodule``, PUT /debug/flags/v) is klog's: a threshold per component.
Nothing in the scheduling path pays for a level it does not log: a verbose call site checks
``Verbose.level`` (one attribute read) before it builds anything. Our warnings, errors and info
events are written at every verbosity, as klog writes ``Info`` at V(0); structlog's ``debug``
events are klog's V(4) and the client libraries' debug output (every request) its V(6).

Our events are rendered by structlog and written directly, one write per line: routing them
through the standard library's logging (a LogRecord, handler and formatter per line) cost about
four times as much, and the scheduling loop logs once per pod. Standard-library loggers (kopf,
aiohttp, the kubernetes client) go through the same renderer on a handler that takes the same
lock, so lines from the binding threads and from those libraries never interleave.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping, MutableMapping
from types import FrameType
from typing import Any

import orjson
import structlog

TEXT = "text"
JSON = "json"
FORMATS = (TEXT, JSON)
# klog's levels as conventions use them: V(4) is debug, V(6) shows every API request.
DEBUG_VERBOSITY = 4
REQUESTS_VERBOSITY = 6
# Libraries whose INFO output is noise (kopf logs every handler run).
NOISY = ("kopf", "aiohttp.access", "kubernetes", "urllib3")
_CLIENT_LIBRARIES = ("kubernetes", "urllib3")


class LoggingError(ValueError):
    """A bad -v/--vmodule/--logging-format value, in component-base's words."""


# ---------------------------------------------------------------------------------------------
# Verbosity


class Verbose:
    """One component's verbosity: klog's V for one source file.

    ``level`` is the threshold in force for the component (``-v``, or the first ``--vmodule``
    pattern that matches its name). A call site guards its work with it:
    ``if SCHEDULE_ONE.level >= 10: ...``. The name is a module's dotted name or, for call sites
    ported from kube-scheduler, upstream's file name (``schedule_one``) so that the
    ``--vmodule`` a kube-scheduler user writes selects the same lines."""

    __slots__ = ("level", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.level = 0

    def enabled(self, v: int) -> bool:
        return self.level >= v


class _Verbosity:
    """The process's verbosity settings and every component handle made from them."""

    def __init__(self) -> None:
        self.global_level = 0
        self.vmodule: tuple[tuple[str, int], ...] = ()
        self.components: dict[str, Verbose] = {}
        self.lock = threading.Lock()

    def level_for(self, name: str) -> int:
        base = name.rsplit(".", 1)[-1]
        path = name.replace(".", "/")
        for pattern, level in self.vmodule:
            # klog: a pattern with a '/' matches the whole path, any other the file's base name.
            if fnmatch.fnmatchcase(path if "/" in pattern else base, pattern):
                return level
        return self.global_level

    def refresh(self) -> None:
        for comp in self.components.values():
            comp.level = self.level_for(comp.name)


_state = _Verbosity()


def verbose(name: str) -> Verbose:
    """The handle of component ``name`` (one per name; it follows later changes of -v)."""
    with _state.lock:
        comp = _state.components.get(name)
        if comp is None:
            comp = _state.components[name] = Verbose(name)
            comp.level = _state.level_for(name)
        return comp


def verbosity() -> int:
    """The global level (-v)."""
    return _state.global_level


def vmodule_text() -> str:
    return ",".join(f"{p}={n}" for p, n in _state.vmodule)


def set_verbosity(level: int) -> None:
    """-v, at start-up or later (PUT /debug/flags/v)."""
    with _state.lock:
        _state.global_level = level
        _state.refresh()
    _library_levels()


def set_vmodule(settings: Iterable[tuple[str, int]]) -> None:
    with _state.lock:
        _state.vmodule = tuple(settings)
        _state.refresh()


def parse_level(text: str) -> int:
    """A klog Level: an unsigned 32-bit decimal."""
    t = text.strip()
    if not t.isdigit() or int(t) > 0xFFFFFFFF:
        raise LoggingError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    return int(t)


def parse_vmodule(text: str) -> list[tuple[str, int]]:
    """``pattern=N,...`` as klog reads --vmodule."""
    out: list[tuple[str, int]] = []
    if not text.strip():
        return out
    for item in text.split(","):
        pattern, sep, level = item.partition("=")
        if not sep:
            raise LoggingError(f'"{item}" does not have the pattern=N format')
        if not pattern:
            raise LoggingError("File pattern must not be empty")
        try:
            n = parse_level(level)
        except LoggingError:
            raise LoggingError(f'"{item}" does not have the pattern=N format') from None
        out.append((pattern, n))
    return out


def validate(fmt: str, vmodule: Iterable[tuple[str, int]]) -> None:
    """logsapi's checks of the options, with its messages."""
    if fmt not in FORMATS:
        raise LoggingError(f'format: Invalid value: "{fmt}": Unsupported log format')
    if fmt != TEXT and list(vmodule):
        raise LoggingError("vmodule: Forbidden: Only supported for text log format")


# ---------------------------------------------------------------------------------------------
# Output


class LineLogger:
    """structlog's logger: writes each rendered event as one line under ``lock``."""

    __slots__ = ("_lock", "_stream")

    def __init__(self, stream: Any, lock: Any) -> None:
        self._stream = stream
        self._lock = lock

    def msg(self, message: str) -> None:
        with self._lock:
            try:
                self._stream.write(message + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                # A closed or broken stderr loses the line, never a pod (the standard
                # library's handlers swallow such errors too).
                pass

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


_SEVERITY = {"debug": "I", "info": "I", "warning": "W", "warn": "W", "error": "E", "exception": "E",
             "critical": "F", "fatal": "F"}
_SKIP_FRAMES = ("structlog", "logging", __name__)


def _go_value(v: Any) -> str:
    """A value as klog's text format writes it: strings quoted, numbers and booleans bare,
    multi-line strings as an indented block."""
    if isinstance(v, str):
        if v.isprintable() and '"' not in v and "\\" not in v:
            return f'"{v}"'  # nothing to escape: the common case, without json.dumps
        if "\n" in v:
            body = "\n".join("\t" + line for line in v.rstrip("\n").split("\n"))
            return f"<\n{body}\n >"
        return json.dumps(v, ensure_ascii=False)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "<nil>"
    if isinstance(v, int | float):
        return repr(v)
    try:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return json.dumps(str(v), ensure_ascii=False)


def _caller() -> str:
    """file:line of the code that logged (klog's header names it)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith(_SKIP_FRAMES):
            return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        f = f.f_back
    return "???:1"


class KlogTextRenderer:
    """structlog renderer writing klog's text layout (k8s.io/klog/v2 header, then the message
    quoted and the fields as key=value)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._second = -1
        self._stamp = ""

    def __call__(self, _logger: Any, method: str, ed: MutableMapping[str, Any]) -> str:
        record = ed.pop("_record", None)
        ed.pop("_from_structlog", None)
        if isinstance(record, logging.LogRecord):
            created, where = record.created, f"{record.filename}:{record.lineno}"
        else:
            created, where = time.time(), _caller()
        msg = ed.pop("event", "")
        ed.pop("level", None)
        ed.pop("v", None)  # klog's text header has no verbosity (its JSON has)
        sev = _SEVERITY.get(method, "I")
        second = int(created)
        if second != self._second:  # one strftime per second, not per line
            self._second, self._stamp = second, time.strftime("%m%d %H:%M:%S", time.localtime(second))
        frac = int((created - second) * 1_000_000)
        parts = [f"{sev}{self._stamp}.{frac:06d} {self.pid:>7} {where}] {_go_value(str(msg))}"]
        for k, v in ed.items():
            parts.append(f"{k}={_go_value(v)}")
        return " ".join(parts)


def _library_levels() -> None:
    lvl = logging.getLogger().level or logging.INFO
    for noisy in NOISY:
        wanted = max(lvl, logging.WARNING)
        if noisy in _CLIENT_LIBRARIES and _state.global_level >= REQUESTS_VERBOSITY:
            wanted = logging.DEBUG
        logging.getLogger(noisy).setLevel(wanted)


def _json_line(event: Any, default: Any = None) -> str:
    """One JSON log line through orjson (the standard library's encoder was 1-2% of a busy
    scheduler: a line per bound pod); a value neither knows how to encode is written as its
    repr, as structlog's default does."""
    try:
        return orjson.dumps(event, default=default or repr).decode()
    except TypeError:  # keys that are not strings, integers past 64 bits
        return json.dumps(event, default=default or repr)


def configure(
    level: str | int = "INFO",
    json_output: bool | None = None,
    stream: Any = None,
    *,
    v: int | None = None,
    vmodule: Iterable[tuple[str, int]] | None = None,
) -> None:
    """``json_output``: True for ``json``, False for ``text``; None picks JSON when the stream
    is not a terminal (callers without a --logging-format). ``v``/``vmodule``: klog's
    verbosity; ``v`` >= 4 also lowers ``level`` to debug."""
    stream = stream or sys.stderr
    if json_output is None:
        json_output = not (hasattr(stream, "isatty") and stream.isatty())
    if v is not None:
        with _state.lock:
            _state.global_level = v
    if vmodule is not None:
        set_vmodule(vmodule)
    else:
        with _state.lock:
            _state.refresh()
    lvl = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(lvl, int):
        lvl = logging.INFO
    if _state.global_level >= DEBUG_VERBOSITY:
        lvl = min(lvl, logging.DEBUG)
    shared: list[Any]
    renderer: Any
    if json_output:
        shared = [
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ]
        renderer = structlog.processors.JSONRenderer(serializer=_json_line)
    else:
        # klog's header carries the severity and the time.
        shared = [structlog.contextvars.merge_contextvars]
        renderer = KlogTextRenderer()
    # One lock for both writers: the standard-library handler's own.
    handler = logging.StreamHandler(stream)
    line_logger = LineLogger(stream, handler.lock)
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        logger_factory=lambda *args: line_logger,
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta if json_output else _keep_record,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)
    _library_levels()


def _keep_record(_logger: Any, _method: str, ed: MutableMapping[str, Any]) -> Mapping[str, Any]:
    # The text renderer reads the record's file and line for klog's header.
    return ed
