"""Go durations."""

from __future__ import annotations

import pytest

from scheduler.config.duration import format_go_duration, parse_go_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15), ("1m30s", 90), ("1.5h", 5400), ("500ms", 0.5), ("0", 0), ("-2s", -2), ("1h2m3s", 3723)],
)
def test_parse_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "s", "", "1x", "1m 30s", "--1s"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (-1.5, "-1.5s")],
)
def test_format_go_duration(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text
