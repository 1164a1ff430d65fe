"""What the live benchmark reads from /proc: CPU seconds and peak RSS of a process tree, the load."""

from __future__ import annotations

import contextlib
import os
import pathlib

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    # Fields after "(comm)": comm may contain spaces and parentheses.
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat_fields(int(d))[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError, IndexError):
            f = _stat_fields(p)
            total += int(f[11]) + int(f[12])  # utime, stime
    return total / CLK_TCK


def hwm_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024.0


def loadavg() -> float:
    return float(pathlib.Path("/proc/loadavg").read_text().split()[0])


def machine_idle_s() -> float:
    """Seconds all CPUs spent idle (and waiting on I/O) since boot: a window's difference says
    whether the machine was saturated."""
    fields = pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(fields[4]) + int(fields[5])) / CLK_TCK


def self_cpu_s() -> float:
    """CPU seconds of this process, every thread."""
    t = os.times()
    return t.user + t.system
