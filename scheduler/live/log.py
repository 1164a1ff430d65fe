"""structlog configuration: JSON lines when stderr is not a TTY, console otherwise.

Configured once, at start-up. Events have fixed snake_case names (``pod_scheduled``,
``pod_unschedulable``, ``bind_failed``); data goes in fields (``pod``, ``node``, ...).

Our events are rendered by structlog and written directly, one write per line: routing them
through the standard library's logging (a LogRecord, handler and formatter per line) cost about
four times as much, and the scheduling loop logs once per pod. Standard-library loggers (kopf,
aiohttp, the kubernetes client) go through the same renderer on a handler that takes the same
lock, so lines from the binding threads and from those libraries never interleave.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog


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


def configure(level: str | int = "INFO", json_output: bool | None = None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if json_output is None:
        json_output = not (hasattr(stream, "isatty") and stream.isatty())
    lvl = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(lvl, int):
        lvl = logging.INFO
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer(colors=False)
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
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)
    # kopf logs every handler run at INFO/DEBUG; only its warnings matter to us.
    for noisy in ("kopf", "aiohttp.access", "kubernetes", "urllib3"):
        logging.getLogger(noisy).setLevel(max(lvl, logging.WARNING))
