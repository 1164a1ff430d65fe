"""Log output (scheduler/log.py): JSON lines, one per event, from structlog and from the
standard-library loggers of kopf, aiohttp and the kubernetes client alike."""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import time

import pytest
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


class _Odd:
    def __repr__(self) -> str:
        return "<odd>"


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"pod": "prod/web", "attempts": 2, "nodes": ["n1", "n2"]}, {"pod": "prod/web", "attempts": 2,
                                                                   "nodes": ["n1", "n2"]}),
        ({"value": _Odd()}, {"value": "<odd>"}),  # what JSON cannot hold: its repr, as structlog's
        ({"big": 2**70}, {"big": 2**70}),  # past 64 bits: the standard encoder takes it
    ],
)
def test_json_lines_hold_any_field(fields: dict, want: dict) -> None:
    buf = io.StringIO()
    logconf.configure("INFO", json_output=True, stream=buf)
    try:
        structlog.get_logger("scheduler.test").info("e", **fields)
        [line] = [json.loads(line) for line in buf.getvalue().splitlines()]
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    assert {k: line[k] for k in want} == want


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


# ---------------------------------------------------------------------------------------------
# klog's text layout, verbosity and --vmodule (component-base logs/api, k8s.io/klog/v2)


_KLOG = re.compile(r'^(?P<sev>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d{6} +(?P<pid>\d+) (?P<src>[^ :\]]+):\d+\] (?P<rest>.*)$')


def _text_lines(emit) -> list[str]:
    buf = io.StringIO()
    logconf.configure(json_output=False, stream=buf, v=0, vmodule=[])
    try:
        emit(structlog.get_logger("scheduler.test"))
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    return buf.getvalue().splitlines()


def test_text_format_is_klogs_header_then_quoted_message_and_fields():
    lines = _text_lines(lambda log: (
        log.info("pod_scheduled", pod="prod/web", node="n1", attempts=2, ok=True),
        log.warning("lease_renew_failed", error='say "no"'),
        logging.getLogger("kopf.objects").error("library error"),
    ))
    m = [_KLOG.match(line) for line in lines]
    assert all(m), lines
    assert [x["sev"] for x in m] == ["I", "W", "E"]  # type: ignore[index]
    assert m[0]["src"] == "test_log.py"  # the caller, as klog's file:line  # type: ignore[index]
    assert m[0]["rest"] == '"pod_scheduled" pod="prod/web" node="n1" attempts=2 ok=true'  # type: ignore[index]
    assert m[1]["rest"] == '"lease_renew_failed" error="say \\"no\\""'  # type: ignore[index]
    assert m[2]["rest"] == '"library error"'  # type: ignore[index]


def test_text_format_reads_back_with_the_differential_klog_parser():
    # e2e/differential/kslog.py reads the binary's -v=10 log; ours reads the same way.
    from e2e.differential.kslog import SCORED, parse_line

    lines = _text_lines(lambda log: log.info(SCORED, v=10, pod="ns/p", plugin="NodeResourcesFit", node="n1",
                                             score=75))
    src, msg, kv = parse_line(lines[0])  # type: ignore[misc]
    assert src == "test_log.py"
    assert (msg, kv) == (SCORED, {"pod": "ns/p", "plugin": "NodeResourcesFit", "node": "n1", "score": "75"})


def test_multiline_values_are_indented_blocks():
    lines = _text_lines(lambda log: log.info("Dump of scheduling queue", pods="a\nb\n"))
    assert lines == [lines[0], "\ta", "\tb", " >"]
    assert lines[0].endswith('"Dump of scheduling queue" pods=<')


@pytest.mark.parametrize(
    ("v", "vmodule", "name", "level"),
    [
        (0, [], "schedule_one", 0),
        (3, [], "schedule_one", 3),
        (0, [("schedule_one", 10)], "schedule_one", 10),
        (2, [("schedule*", 10)], "schedule_one", 10),  # a glob, as klog's filepath.Match
        (2, [("loop", 5)], "scheduler.live.loop", 5),  # a module by its base name
        (2, [("scheduler/live/*", 6)], "scheduler.live.loop", 6),  # with a '/', the whole path
        (2, [("other", 6)], "scheduler.live.loop", 2),
        (2, [("sched*", 7), ("schedule_one", 1)], "schedule_one", 7),  # the first match wins
    ],
)
def test_verbosity_per_component(v, vmodule, name, level):
    buf = io.StringIO()
    comp = logconf.verbose(name)
    logconf.configure(json_output=True, stream=buf, v=v, vmodule=vmodule)
    try:
        assert comp.level == level
        assert logconf.verbose(name) is comp
    finally:
        logconf.configure(json_output=True, stream=buf, v=0, vmodule=[])
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    assert comp.level == 0


def test_set_verbosity_at_run_time_reaches_every_handle_and_the_client_libraries():
    buf = io.StringIO()
    comp = logconf.verbose("schedule_one")
    logconf.configure(json_output=True, stream=buf, v=0, vmodule=[])
    try:
        assert logging.getLogger("urllib3").level == logging.WARNING
        logconf.set_verbosity(10)
        assert (comp.level, logconf.verbosity()) == (10, 10)
        assert logging.getLogger("urllib3").level == logging.DEBUG  # V(6): every request
    finally:
        logconf.set_verbosity(0)
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = []
    assert logging.getLogger("urllib3").level == logging.WARNING


@pytest.mark.parametrize(
    ("text", "parsed", "error"),
    [
        ("", [], None),
        ("schedule_one=10,eventhandlers=3", [("schedule_one", 10), ("eventhandlers", 3)], None),
        ("x", None, '"x" does not have the pattern=N format'),
        ("x=a", None, '"x=a" does not have the pattern=N format'),
        ("=3", None, "File pattern must not be empty"),
    ],
)
def test_parse_vmodule(text, parsed, error):
    if error is None:
        assert logconf.parse_vmodule(text) == parsed
    else:
        with pytest.raises(logconf.LoggingError, match=re.escape(error)):
            logconf.parse_vmodule(text)


@pytest.mark.parametrize(
    ("fmt", "vmodule", "error"),
    [
        ("text", [("a", 2)], None),
        ("json", [], None),
        # component-base logs/api/v1 Validate; the binary prints these lines.
        ("json", [("a", 2)], "vmodule: Forbidden: Only supported for text log format"),
        ("foo", [], 'format: Invalid value: "foo": Unsupported log format'),
    ],
)
def test_logging_options_validation(fmt, vmodule, error):
    if error is None:
        logconf.validate(fmt, vmodule)
    else:
        with pytest.raises(logconf.LoggingError) as exc:
            logconf.validate(fmt, vmodule)
        assert str(exc.value) == error


def test_parse_level():
    assert logconf.parse_level("10") == 10
    with pytest.raises(logconf.LoggingError, match=re.escape('strconv.ParseUint: parsing "abc": invalid syntax')):
        logconf.parse_level("abc")
