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


def test_a_shared_status_tagged_for_many_nodes_is_one_object() -> None:
    # A plugin's module-level constant rejecting many nodes: the framework's tagged copy is made
    # once, so a diagnosis over thousands of nodes holds one Status, not one per node.
    shared = Status(Code.UNSCHEDULABLE, "node(s) were unschedulable")
    tagged = [shared.with_plugin("NodeUnschedulable") for _ in range(3)]
    assert tagged[0] is tagged[1] is tagged[2] and tagged[0] is not shared
    assert (tagged[0].plugin, tagged[0].reasons, shared.plugin) == (
        "NodeUnschedulable", ("node(s) were unschedulable",), "")
    # Another plugin gets its own copy; the constant itself never changes.
    other = shared.with_plugin("Other")
    assert other.plugin == "Other" and other is not tagged[0] and shared.plugin == ""
    assert shared.with_plugin("NodeUnschedulable").plugin == "NodeUnschedulable"
