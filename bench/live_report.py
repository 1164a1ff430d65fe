"""The live benchmark's summaries: medians per contestant, the comparison table, and the py-spy
profile of ours (--format raw: "frame;frame;... count" per line)."""

from __future__ import annotations

import pathlib
import statistics
from collections import Counter
from typing import Any

from bench.live_contestants import CONTESTANTS

ROOT = pathlib.Path(__file__).resolve().parent.parent


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


COLUMNS = [
    ("pods_per_s", "pods/s", "{:.0f}"),
    ("pods_per_s_10_90", "pods/s 10-90%", "{:.0f}"),
    ("first_bind_s", "first bind s", "{:.2f}"),
    ("cpu_s_per_1000", "CPU-s/1000 pods", "{:.2f}"),
    ("apiserver_cpu_s", "apiserver CPU-s", "{:.1f}"),
    ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
]


def medians(results: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for col, _, _ in COLUMNS:
        # Failed runs (timeout, crash) are listed in the JSON but not in the medians.
        vals = [r[col] for r in results if r["status"] == "ok" and r.get(col) is not None]
        out[col] = statistics.median(vals) if vals else None
    out["rounds_ok"] = sum(r["status"] == "ok" for r in results)
    return out


def table(wl: str, meta: str, med: dict[str, dict[str, float | None]]) -> str:
    lines = [f"{wl}  ({meta})"]
    head = f"  {'':22}" + "".join(f"{h:>17}" for _, h, _ in COLUMNS) + f"{'ok runs':>9}"
    lines.append(head)
    for key, m in med.items():
        cells = "".join(f"{(fmt.format(m[c]) if m[c] is not None else '-'):>17}" for c, _, fmt in COLUMNS)
        lines.append(f"  {CONTESTANTS[key]:22}{cells}{m['rounds_ok']:>9}")
    if "ours" in med:
        for other in ("kube", "bind", "bindev"):
            if other not in med:
                continue
            cells = ""
            for c, _, _ in COLUMNS:
                a, b = med["ours"][c], med[other][c]
                cells += f"{(f'{a / b:.2f}x' if a is not None and b else '-'):>17}"
            lines.append(f"  {'ours/' + CONTESTANTS[other]:22}{cells}")
    return "\n".join(lines)


def print_workload(table_text: str, entry: dict[str, Any]) -> None:
    """The workload's table, then where ours spent its CPU if it was profiled."""
    print(table_text, flush=True)
    if "profile" in entry:
        print("  py-spy self time of ours (% of samples):")
        for fn, p in entry["profile"]["self"]:
            print(f"    {p:5.1f}%  {fn}")
        print("  py-spy inclusive time in scheduler/ (% of samples):")
        for fn, p in entry["profile"]["inclusive_scheduler"]:
            print(f"    {p:5.1f}%  {fn}")
