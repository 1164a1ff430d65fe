"""The live benchmark's summaries: medians per workload and contestant, the comparison table,
and the py-spy profile of ours (--format raw: "frame;frame;... count" per line)."""

from __future__ import annotations

import pathlib
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.live_contestants import CONTESTANTS

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The figures of a round that get a median (failed rounds included: a run that left pods
# unbound still has a throughput, and the table marks it).
FIGURES = (
    "pods_per_s",
    "pods_per_s_to_last_bind",
    "first_bind_s",
    "cpu_s_per_1000",
    "apiserver_cpu_s",
    "peak_rss_mb",
)


def summarize_profile(path: pathlib.Path, top: int = 15) -> dict[str, Any]:
    self_t: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, cnt = line.rpartition(" ")
        if not stack or not cnt.isdigit():
            continue
        c = int(cnt)
        total += c
        frames = [f.rsplit(":", 1)[0] + ")" if ":" in f else f for f in stack.split(";")]
        frames = [_short(f) for f in frames]
        self_t[frames[-1]] += c
        for f in set(frames):
            incl[f] += c

    def pct(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(k, round(100.0 * v / total, 1)) for k, v in counter.most_common(top)] if total else []

    ours = Counter({k: v for k, v in incl.items() if "(scheduler/" in k})
    return {"samples": total, "self": pct(self_t), "inclusive": pct(incl), "inclusive_scheduler": pct(ours)}


def _short(frame: str) -> str:
    # "func (/path/to/site-packages/pkg/mod.py)" -> "func (pkg/mod.py)"
    for marker in ("site-packages/", "/lib/python3.11/", str(ROOT) + "/"):
        if marker in frame:
            head, _, tail = frame.partition("(")
            return f"{head}({tail.split(marker, 1)[1]}"
    return frame


def medians(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median of each figure over the rounds that have it (scheduler_perf's pods/s only if every round
    has it); ``complete`` only if every round was."""
    out: dict[str, Any] = {}
    for key in FIGURES:
        vals = [r[key] for r in rounds if r.get(key) is not None]
        out[key] = statistics.median(vals) if vals else None
    if any(r.get("pods_per_s") is None for r in rounds):
        # A round whose window was too short for a collector sample: the median of the others
        # would set one round's figure against the other contestant's (table() then compares
        # the rates to the last bind of every round instead).
        out["pods_per_s"] = None
    out["complete"] = bool(rounds) and all(r.get("complete") for r in rounds)
    out["rounds"] = len(rounds)
    out["errors"] = sorted({r["error"] for r in rounds if r.get("error")})
    return out


def size_text(size: dict[str, int]) -> str:
    text = f"{size['nodes']} nodes, {size['pods']} pods"
    if size.get("measured_pods"):
        text += f" ({size['measured_pods']} measured)"
    return text


def _fmt(v: Any, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def _pair(a: Any, b: Any, fmt: str) -> str:
    return f"{_fmt(a, fmt)} / {_fmt(b, fmt)}"


def table(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> str:
    """Markdown: one line per workload with kube and ours side by side (other contestants'
    pods/s after). ``rows``: {"workload", "scale", "size", "medians": {contestant: medians}}.
    A contestant that left measured pods unbound (or failed) is marked ``!``."""
    others = [k for k in keys if k not in ("kube", "ours")]
    head = ["workload", "scale", "size used", "pods/s kube", "pods/s ours", "ours/kube",
            "CPU-s/1000 pods kube / ours", "peak RSS MB kube / ours", "first bind s kube / ours",
            *[f"pods/s {CONTESTANTS[k]}" for k in others]]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        med = row["medians"]
        k, o = med.get("kube", {}), med.get("ours", {})

        # scheduler_perf's figure where both have it; a window too short for its samples
        # (under two seconds) has only the rate to its last bind, marked "~".
        fig = "pods_per_s" if all(m.get("pods_per_s") for m in med.values()) else "pods_per_s_to_last_bind"
        tilde = "" if fig == "pods_per_s" else "~"

        def pods(m: dict[str, Any], fig: str = fig, tilde: str = tilde) -> str:
            if not m:
                return "n/a"
            mark = "" if m.get("complete") else " !"
            return (tilde + _fmt(m.get(fig), "{:.1f}") if m.get(fig) is not None else "-") + mark

        ratio = f"{o[fig] / k[fig]:.2f}x" if o.get(fig) and k.get(fig) else "-"
        cells = [
            row["workload"],
            f"{row['scale']:g}",
            size_text(row["size"]),
            pods(k),
            pods(o),
            ratio,
            _pair(k.get("cpu_s_per_1000"), o.get("cpu_s_per_1000"), "{:.2f}"),
            _pair(k.get("peak_rss_mb"), o.get("peak_rss_mb"), "{:.0f}"),
            _pair(k.get("first_bind_s"), o.get("first_bind_s"), "{:.2f}"),
            *[pods(med.get(x, {})) for x in others],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def incomplete_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per contestant that left pods unbound or failed, with the error."""
    out = []
    for row in rows:
        for key, m in row["medians"].items():
            if not m.get("complete"):
                errs = "; ".join(m.get("errors") or []) or "measured pods left unbound"
                out.append(f"- {row['workload']} ({CONTESTANTS[key]}): {errs}")
    return out
