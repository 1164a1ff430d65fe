"""structlog configuration: JSON lines when stderr is not a TTY, console otherwise.

Configured once, at start-up. Events have fixed snake_case names (``pod_scheduled``,
``pod_unschedulable``, ``bind_failed``); data goes in fields (``pod``, ``node``, ...).
Standard-library loggers (kopf, aiohttp, the kubernetes client) go through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog


def configure(level: str | int = "INFO", json_output: bool | None = None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if json_output is None:
        json_output = not (hasattr(stream, "isatty") and stream.isatty())
    lvl = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(lvl, int):
        lvl = logging.INFO
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
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
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)
    # kopf logs every handler run at INFO/DEBUG; only its warnings matter to us.
    for noisy in ("kopf", "aiohttp.access", "kubernetes", "urllib3"):
        logging.getLogger(noisy).setLevel(max(lvl, logging.WARNING))
