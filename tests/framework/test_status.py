"""Status: the error behind an Error status travels with it (upstream Status.err)."""

from __future__ import annotations

from scheduler.framework.status import Code, Status


def test_with_plugin_keeps_the_error() -> None:
    exc = ValueError("bad")
    s = Status(Code.ERROR, "bad", err=exc).with_plugin("P")
    assert (s.plugin, s.message, s.err) == ("P", "bad", exc)


def test_err_does_not_change_equality() -> None:
    # Statuses compare by code and reasons, as before the error rode along.
    assert Status(Code.ERROR, "x", err=ValueError("x")) == Status(Code.ERROR, "x")
