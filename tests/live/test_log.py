"""Log output (scheduler/log.py): JSON lines, one per event, from structlog and from the
standard-library loggers of kopf, aiohttp and the kubernetes client alike."""

from __future__ import annotations

import io
import json
import logging
import threading
import time

import structlog

from scheduler.live import log as logconf


def test_events_and_library_records_are_json_lines():
    buf = io.StringIO()
    logconf.configure("INFO", json_output=True, stream=buf)
    try:
        log = structlog.get_logger("scheduler.test")
        log.info("pod_scheduled", pod="prod/web", node="n1")
        log.debug("dropped_at_info")  # below the level: not written
        logging.getLogger("kopf.objects").warning("library %s", "warning")
        logging.getLogger("kopf.objects").info("library info")  # kopf's INFO is noise
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("cycle_crashed", pod="prod/web")
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    assert [(e["event"], e["level"]) for e in lines] == [
        ("pod_scheduled", "info"),
        ("library warning", "warning"),
        ("cycle_crashed", "error"),
    ]
    assert (lines[0]["pod"], lines[0]["node"]) == ("prod/web", "n1")
    assert all(e["timestamp"].endswith("Z") for e in lines)
    assert "ValueError: boom" in lines[2]["exception"]


def test_lines_from_threads_never_interleave():
    # The binding threads log while kopf's loggers write: every line stays whole.
    class SlowStream(io.StringIO):
        def write(self, s: str) -> int:
            n = 0
            for ch in s:  # one character at a time, yielding: an unlocked concurrent write mixes in
                n += super().write(ch)
                time.sleep(0)
            return n

    buf = SlowStream()
    logconf.configure("INFO", json_output=True, stream=buf)
    try:
        log = structlog.get_logger("scheduler.test")

        def ours() -> None:
            for i in range(50):
                log.info("pod_scheduled", pod=f"prod/web-{i}", node="n1")

        def theirs() -> None:
            for i in range(50):
                logging.getLogger("kopf.objects").warning("library warning %d", i)

        threads = [threading.Thread(target=ours), threading.Thread(target=theirs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    assert len(lines) == 100


def test_a_broken_stream_loses_the_line_not_the_caller():
    buf = io.StringIO()
    logconf.configure("INFO", json_output=True, stream=buf)
    try:
        buf.close()
        structlog.get_logger("scheduler.test").info("pod_scheduled", pod="prod/web")
        logging.getLogger("kopf.objects").warning("library warning")
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
