"""Decisions as text: the one renderer behind ``simulate``'s table and ``explain``'s answer.

``render`` prints what ``simulate`` has always printed for an attempt (the chosen node, the
score table of the best nodes, or the FailedScheduling message and the preemption); with
``detail`` (``explain``) it goes on with every rejecting plugin (node counts, reasons, a few
nodes each), the nodes that fail one plugin only, the binding stages, the timings and where the
record comes from.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from scheduler.core.decision import ERROR, SOURCE_WHAT_IF, Decision

EXAMPLES_SHOWN = 3
NEAR_MISSES_SHOWN = 20


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns two spaces apart, trailing blanks trimmed."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(headers)]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip() for r in [headers, *rows]]


def render(
    d: Decision,
    *,
    top: int | None = 3,
    claims: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
    detail: bool = False,
) -> str:
    """One attempt as text, ending with a blank line. ``top``: score rows shown (None: all
    kept); ``claims``: DRA allocations of the placed pod (simulate)."""
    lines: list[str] = []
    if d.placed:
        lines.append(f"{d.pod} -> {d.node}   (evaluated {d.evaluated}, feasible {d.feasible})")
        for claim, devices in (claims or {}).items():
            names = ", ".join(f"{x['request']}={x['driver']}/{x['pool']}/{x['device']}" for x in devices)
            lines.append(f"  claim {claim}: {names}")
        if d.scored == 0:
            lines.append("  only one feasible node: no scoring")
        elif not d.plugins:
            lines.append("  no score plugins")
        else:
            rows = d.scores if top is None else d.scores[:top]
            lines += table(["NODE", "TOTAL", *d.plugins],
                           [[r.node, str(r.total), *(str(f) for f in r.final)] for r in rows])
            if detail and len(rows) < d.scored:
                lines.append(f"  ({len(rows)} of {d.scored} scored nodes shown, the best first)")
            if detail:
                best = d.scores[0].total
                tied = sum(1 for r in d.scores if r.total == best)
                if tied > 1:
                    lines.append(f"  {tied} nodes tied at {best}: the scheduler picked {d.node} at random among them")
    else:
        word = "error" if detail and d.outcome == ERROR else "unschedulable"
        lines.append(f"{d.pod}: {word}")
        lines.append(f"  {d.message}")
        if d.nominated:
            lines.append(f"  preemption: nominated {d.nominated}, victims {', '.join(d.victims)}")
    if detail:
        lines += _details(d)
    return "\n".join(lines) + "\n\n"


def _details(d: Decision) -> list[str]:
    lines: list[str] = []
    if d.placed and d.nominated:
        lines.append(f"  preemption: nominated {d.nominated}, victims {', '.join(d.victims)}")
    if d.rejections:
        lines.append(f"  rejected {d.filtered_total} of {d.num_nodes} nodes:" if d.placed
                     else "  rejected by:")
        rows: list[list[str]] = []
        for r in d.rejections:
            first = True
            for reason, n in r.reasons.items():
                ex = r.examples.get(reason, [])[:EXAMPLES_SHOWN]
                more = ", ..." if n > len(ex) else ""
                rows.append([r.plugin if first else "", str(r.nodes) if first else "",
                             f"{reason or '(no reason)'} ({n}: {', '.join(ex)}{more})" if ex else f"{reason} ({n})"])
                first = False
        lines += table(["PLUGIN", "NODES", "REASON (NODES)"], rows, "    ")
    if d.near_misses:
        lines.append("  would fit if one plugin's verdict changed (computed now):")
        shown = d.near_misses[:NEAR_MISSES_SHOWN]
        lines += table(["PLUGIN", "NODE", "REASON"], [[m.plugin, m.node, ", ".join(m.reasons)] for m in shown], "    ")
        if len(d.near_misses) > len(shown):
            lines.append(f"    ... and {len(d.near_misses) - len(shown)} more")
    elif not d.placed and d.source == SOURCE_WHAT_IF and d.rejections:
        lines.append("  no node fails one plugin only: every node would need more than one change")
    if d.stages:
        lines.append("  stages: " + ", ".join(f"{k} {v}" for k, v in d.stages.items()))
    if d.timings:
        lines.append("  timings: " + ", ".join(f"{k} {_ms(v)}" for k, v in d.timings.items()))
    lines.append("  " + origin(d))
    return lines


def origin(d: Decision) -> str:
    """Where the record comes from, which attempt it is, and what it keeps."""
    when = _utc(d.time) if d.time else "?"
    if d.source == SOURCE_WHAT_IF:
        head = f"recomputed now (what-if, nothing written) at {when}"
    else:
        head = f"attempt {d.attempt} at {when}, recorded by the scheduler"
    prof = f", profile {d.profile}" if d.profile else ""
    kept = "; compacted: the best nodes and per-plugin counts kept" if d.compact else ""
    return f"{head}{prof}, outcome {d.outcome}{kept}"


def render_history(decisions: Sequence[Decision]) -> str:
    """explain's text: the newest attempt in full, the earlier ones in a line or two each."""
    if not decisions:
        return ""
    out = render(decisions[0], top=None, detail=True)
    if len(decisions) > 1:
        lines = ["earlier attempts:"]
        for d in decisions[1:]:
            what = f"-> {d.node}" if d.placed else d.message
            lines.append(f"  #{d.attempt} at {_utc(d.time)}: {d.outcome} {what}".rstrip())
            if d.nominated:
                lines.append(f"    preemption: nominated {d.nominated}, victims {', '.join(d.victims)}")
        out += "\n".join(lines) + "\n"
    return out


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}ms" if seconds < 10 else f"{seconds:.1f}s"
