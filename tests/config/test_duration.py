"""Go durations: the accepted and refused inputs of Go's own tests.

Tables from Go's src/time/time_test.go (go1.26): parseDurationTests, parseDurationErrorTests and
durationTests (TestDurationString); the cases are Go's, in its order.
"""

from __future__ import annotations

import pytest

from scheduler.cli import main
from scheduler.config.duration import format_duration, format_duration_ns, parse_duration, parse_duration_ns

NS, US, MS, S, M, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000

# parseDurationTests
ACCEPTED: list[tuple[str, int]] = [
    # simple
    ("0", 0),
    ("5s", 5 * S),
    ("30s", 30 * S),
    ("1478s", 1478 * S),
    # sign
    ("-5s", -5 * S),
    ("+5s", 5 * S),
    ("-0", 0),
    ("+0", 0),
    # decimal
    ("5.0s", 5 * S),
    ("5.6s", 5 * S + 600 * MS),
    ("5.s", 5 * S),
    (".5s", 500 * MS),
    ("1.0s", 1 * S),
    ("1.00s", 1 * S),
    ("1.004s", 1 * S + 4 * MS),
    ("1.0040s", 1 * S + 4 * MS),
    ("100.00100s", 100 * S + 1 * MS),
    # different units
    ("10ns", 10 * NS),
    ("11us", 11 * US),
    ("12µs", 12 * US),  # U+00B5
    ("12μs", 12 * US),  # U+03BC
    ("13ms", 13 * MS),
    ("14s", 14 * S),
    ("15m", 15 * M),
    ("16h", 16 * H),
    # composite durations
    ("3h30m", 3 * H + 30 * M),
    ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", 1 * H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    # large value
    ("52763797000ns", 52763797000 * NS),
    # more than 9 digits after decimal point, see https://golang.org/issue/6617
    ("0.3333333333333333333h", 20 * M),
    # 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
    ("9007199254740993ns", (1 << 53) + 1),
    # largest duration that can be represented by int64 in nanoseconds
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036s854ms775us808ns", -(1 << 63)),
    # largest negative value
    ("-9223372036854775808ns", -(1 << 63)),
    # largest negative round trip value, see https://golang.org/issue/48629
    ("-2562047h47m16.854775808s", -(1 << 63)),
    # huge string; issue 15011.
    ("0.100000000000000000000h", 6 * M),
    # This value tests the first overflow check in leadingFraction.
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
]


def _raw(b: bytes) -> str:
    """Go's byte strings as Python sees undecodable bytes (argv, os.fsdecode)."""
    return b.decode("utf-8", "surrogateescape")


# parseDurationErrorTests: the input, and what the error must contain (Go's quoting).
REFUSED: list[tuple[str, str]] = [
    # invalid
    ("", '""'),
    ("3", '"3"'),
    ("-", '"-"'),
    ("s", '"s"'),
    (".", '"."'),
    ("-.", '"-."'),
    (".s", '".s"'),
    ("+.s", '"+.s"'),
    ("1d", '"1d"'),
    (_raw(b"\x85\x85"), '"\\x85\\x85"'),
    (_raw(b"\xffff"), '"\\xffff"'),
    (_raw(b"hello \xffff world"), '"hello \\xffff world"'),
    ("\ufffd", '"\\xef\\xbf\\xbd"'),  # utf8.RuneError
    ("\ufffd hello \ufffd world", '"\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"'),  # utf8.RuneError
    # overflow
    ("9223372036854775810ns", '"9223372036854775810ns"'),
    ("9223372036854775808ns", '"9223372036854775808ns"'),
    ("-9223372036854775809ns", '"-9223372036854775809ns"'),
    ("9223372036854776us", '"9223372036854776us"'),
    ("3000000h", '"3000000h"'),
    ("9223372036854775.808us", '"9223372036854775.808us"'),
    ("9223372036854ms775us808ns", '"9223372036854ms775us808ns"'),
]

# durationTests
STRINGS: list[tuple[str, int]] = [
    ("0s", 0),
    ("1ns", 1 * NS),
    ("1.1µs", 1100 * NS),
    ("2.2ms", 2200 * US),
    ("3.3s", 3300 * MS),
    ("4m5s", 4 * M + 5 * S),
    ("4m5.001s", 4 * M + 5001 * MS),
    ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
    ("8m0.000000001s", 8 * M + 1 * NS),
    ("2562047h47m16.854775807s", (1 << 63) - 1),
    ("-2562047h47m16.854775808s", -(1 << 63)),
]


@pytest.mark.parametrize(("text", "ns"), ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_accepted_like_go(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize(("text", "quoted"), REFUSED, ids=[repr(t) for t, _ in REFUSED])
def test_refused_like_go(text: str, quoted: str) -> None:
    with pytest.raises(ValueError) as ei:
        parse_duration_ns(text)
    assert str(ei.value).startswith("time: ")
    assert quoted in str(ei.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Go's three messages (format.go ParseDuration), as go1.26 prints them.
        ("15", 'time: missing unit in duration "15"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1m 30s", 'time: unknown unit "m " in duration "1m 30s"'),
        (" 15s", 'time: invalid duration " 15s"'),
        ("--1s", 'time: invalid duration "--1s"'),
        ("\u0661s", 'time: invalid duration "\\xd9\\xa1s"'),  # only ASCII digits
    ],
)
def test_error_messages_are_gos(text: str, message: str) -> None:
    with pytest.raises(ValueError) as ei:
        parse_duration(text)
    assert str(ei.value) == message


@pytest.mark.parametrize(("text", "ns"), STRINGS, ids=[t for t, _ in STRINGS])
def test_string_like_go(text: str, ns: int) -> None:
    assert format_duration_ns(ns) == text
    if ns > 0:
        assert format_duration_ns(-ns) == "-" + text
    # TestParseDurationRoundTrip: the string reads back as the same value.
    assert parse_duration_ns(text) == ns


def test_seconds() -> None:
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("-1.5h") == -5400.0
    assert parse_duration("500ms") == 0.5
    assert format_duration(0.5) == "500ms"
    assert format_duration(-1.5) == "-1.5s"
    assert format_duration(3600) == "1h0m0s"


def test_command_line_flags_take_go_durations(capsys: pytest.CaptureFixture[str]) -> None:
    # pflag's DurationVar upstream: whatever ParseDuration takes, and its message otherwise.
    with pytest.raises(SystemExit) as ei:
        main(["run", "--authentication-token-webhook-cache-ttl", "10"])
    assert ei.value.code == 2
    assert 'time: missing unit in duration "10"' in capsys.readouterr().err
