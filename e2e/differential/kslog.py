"""kube-scheduler's klog text output, read back as decisions.

One structured line looks like::

    I1123 08:09:10.123456   4242 schedule_one.go:982] "Plugin scored node for pod" pod="ns/p1"
        plugin="NodeResourcesFit" node="n1" score=75

(one line in the log).

The message and string values are Go-quoted; other values are bare tokens. Per attempt the
binary (v1.36.3, schedule_one.go) logs, in order: one "Plugin scored node for pod" per scored
node and plugin (the weighted score, i.e. normalised score times the plugin weight), one
"Extender scored node for pod" per prioritizing extender and node it answered for (its own
score), one "Calculated node's final score for pod" per node (the sum, extenders included),
then either "Successfully bound pod to node" (binding cycle) or "Unable to schedule pod; no
fit; waiting" with the fit error.
A single feasible node is not scored at all.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

_HEADER = re.compile(r"^[IWEF]\d{4} \S+\s+\d+ (?P<src>[^:\]]+):\d+\] (?P<rest>.*)$")
_KEY = re.compile(r"\s*([A-Za-z_][\w.-]*)=")

SCORED = "Plugin scored node for pod"
EXT_SCORED = "Extender scored node for pod"
FINAL = "Calculated node's final score for pod"
BOUND = "Successfully bound pod to node"
NO_FIT = "Unable to schedule pod; no fit; waiting"
ATTEMPT = "Attempting to schedule pod"
# Not a fit error: the binary retries; the attempt still ends here (its err is the message).
ERROR = "Error scheduling pod; retrying"


def _go_string(s: str, i: int) -> tuple[str, int]:
    """Decode the Go-quoted string starting at s[i] == '"'; return it and the index after it."""
    j = i + 1
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            body = s[i : j + 1]
            try:
                return str(json.loads(body)), j + 1
            except ValueError:
                # Go's \x.. escapes are not JSON; keep the text as written.
                return body[1:-1], j + 1
        j += 1
    raise ValueError("unterminated string")


def parse_line(line: str) -> tuple[str, str, dict[str, str]] | None:
    """(source file, message, key/value pairs) of one structured klog line, or None."""
    m = _HEADER.match(line)
    if not m:
        return None
    rest = m.group("rest")
    if not rest.startswith('"'):
        return None
    try:
        msg, i = _go_string(rest, 0)
    except ValueError:
        return None
    kv: dict[str, str] = {}
    while i < len(rest):
        km = _KEY.match(rest, i)
        if not km:
            break
        i = km.end()
        if i < len(rest) and rest[i] == '"':
            try:
                val, i = _go_string(rest, i)
            except ValueError:
                break
        else:
            j = rest.find(" ", i)
            j = len(rest) if j < 0 else j
            val, i = rest[i:j], j
        kv[km.group(1)] = val
    return m.group("src"), msg, kv


@dataclass
class Attempt:
    """What the binary logged for one scheduling attempt of one pod."""

    pod: str
    # node -> plugin -> weighted score
    plugin_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    # node -> extender -> the score it answered (before its weight and the x10 scaling)
    extender_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    node: str | None = None
    evaluated: int | None = None
    feasible: int | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.node is not None or self.error is not None


class LogReader:
    """Incremental reader of the binary's log: attempts per pod, first attempt first."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""
        self.attempts: dict[str, list[Attempt]] = {}
        self._open: dict[str, Attempt] = {}

    def poll(self) -> None:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        for line in lines:
            self._feed(line)

    def _current(self, pod: str) -> Attempt:
        a = self._open.get(pod)
        if a is None:
            a = Attempt(pod)
            self._open[pod] = a
            self.attempts.setdefault(pod, []).append(a)
        return a

    def _feed(self, line: str) -> None:
        parsed = parse_line(line)
        if parsed is None:
            return
        _src, msg, kv = parsed
        pod = kv.get("pod")
        if pod is None:
            return
        if msg == ATTEMPT:
            # A new attempt starts: the previous one of this pod (if any) is closed.
            self._open.pop(pod, None)
            self._current(pod)
        elif msg == SCORED:
            a = self._current(pod)
            a.plugin_scores.setdefault(kv["node"], {})[kv["plugin"]] = int(kv["score"])
        elif msg == EXT_SCORED:
            a = self._current(pod)
            a.extender_scores.setdefault(kv["node"], {})[kv["extender"]] = int(kv["score"])
        elif msg == FINAL:
            self._current(pod).totals[kv["node"]] = int(kv["score"])
        elif msg == BOUND:
            a = self._current(pod)
            a.node = kv.get("node")
            a.evaluated = _int(kv.get("evaluatedNodes"))
            a.feasible = _int(kv.get("feasibleNodes"))
            self._open.pop(pod, None)
        elif msg == ERROR:
            a = self._current(pod)
            a.error = "error: " + kv.get("err", "")
            self._open.pop(pod, None)
        elif msg == NO_FIT:
            a = self._current(pod)
            a.error = kv.get("err", "")
            self._open.pop(pod, None)

    def first_done(self, pod: str) -> Attempt | None:
        self.poll()
        for a in self.attempts.get(pod, []):
            if a.done:
                return a
        return None

    def all_attempts(self, pod: str) -> list[Attempt]:
        self.poll()
        return list(self.attempts.get(pod, []))


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
