"""Status: the error behind an Error status travels with it (upstream Status.err, AsStatus)."""

from __future__ import annotations

from scheduler.framework.status import Code, Status, as_status


def test_as_status_keeps_the_exception() -> None:
    exc = TimeoutError("request timed out")
    s = as_status(exc)
    assert (s.code, s.message, s.err) == (Code.ERROR, "request timed out", exc)


def test_with_plugin_keeps_the_exception() -> None:
    exc = ValueError("bad")
    s = as_status(exc).with_plugin("P")
    assert (s.plugin, s.err) == ("P", exc)


def test_err_does_not_change_equality() -> None:
    # Statuses compare by code and reasons, as before the error rode along.
    assert as_status(ValueError("x")) == Status(Code.ERROR, "x")
