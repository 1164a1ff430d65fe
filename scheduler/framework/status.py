"""Status codes and the Status value every extension point returns (upstream framework/interface.go)."""

from __future__ import annotations

import json
from enum import IntEnum

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = (1 << 63) - 1


class Code(IntEnum):
    """Upstream's status codes, same order so comparisons and logs match."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


def code_string(code: Code) -> str:
    """The code as upstream's Code.String() prints it (metric labels)."""
    return _CODE_NAMES[code]


class Status:
    """Result of a plugin call. Plugins return ``None`` for success, a Status otherwise.

    ``err`` is the exception behind an Error status, if one was raised (upstream Status.err,
    read with AsError): it travels with the status from the plugin to the loop, which tells
    a lost lease or a pod bound elsewhere from a failure by it."""

    __slots__ = ("_tagged", "code", "err", "plugin", "reasons")

    def __init__(self, code: Code, *reasons: str, plugin: str = "", err: BaseException | None = None) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.err = err
        self._tagged: Status | None = None

    @property
    def message(self) -> str:
        # Upstream joins reasons with ", " for Status.Message().
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        # Copy rather than mutate: plugins may return shared module-level Status constants.
        if self.plugin == plugin:
            return self
        # The last copy is kept: a constant rejecting many nodes gives them all one Status,
        # not one each (a cycle's diagnosis, and the decision records, hold them).
        t = self._tagged
        if t is None or t.plugin != plugin:
            t = self._tagged = Status(self.code, *self.reasons, plugin=plugin, err=self.err)
        return t

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin}" if self.plugin else ""
        return f"Status({_CODE_NAMES[self.code]}{plugin}: {self.message!r})"


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


def error(message: str) -> Status:
    return Status(Code.ERROR, message)


SKIP = Status(Code.SKIP)


def go_quote(text: str) -> str:
    """Go's %q for the plain names that appear in upstream messages (double quotes)."""
    return json.dumps(text, ensure_ascii=False)


class StatusError(Exception):
    """Raised by a Score plugin (or a helper) to report a non-success Status from deep code."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status
