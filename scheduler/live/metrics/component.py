"""component-base's families that kube-scheduler v1.36.3 exports besides its own: leader
election (client-go's adapter), feature gates, build and compatibility version, the metrics
framework's own counters, the process collector (client_golang's, procfs-based), and the API
client's (``client.py``).

Left out: the Go runtime's ``go_*`` (no Go runtime here), and families that come from the
kube-apiserver libraries kube-scheduler links for its serving (``apiserver_*``,
``aggregator_*``, ``workqueue_*`` of their certificate controllers); docs/operations.md says so.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import itertools
import os
import platform
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from scheduler.live.metrics import client
from scheduler.live.metrics.kit import ALPHA, BETA, Schema, ScrapeFamily, helptext

# The release whose behaviour this scheduler follows, for the version families.
KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH = "1", "36", "3"
# The emulated and minimum compatibility versions the feature gates are resolved at.
EMULATION, MIN_COMPAT = "1.36", "1.35"
# leader-election's name label: kube-scheduler names its elector "kube-scheduler", whatever the Lease.
LEADER_ELECTION_NAME = "kube-scheduler"


# Stability of the component-base families defined here (registered_metrics_total).
STABILITY: dict[str, str] = {
    "leader_election_master_status": ALPHA,
    "leader_election_slowpath_total": ALPHA,
    "kubernetes_feature_enabled": BETA,
    "kubernetes_build_info": BETA,
    "version_info": ALPHA,
    "registered_metrics_total": BETA,
    "disabled_metrics_total": BETA,
    "hidden_metrics_total": BETA,
    "cardinality_enforcement_unexpected_categorizations_total": ALPHA,
}


class ComponentFamilies:
    def __init__(self, registry: CollectorRegistry, scheduler_stability: Mapping[str, str]) -> None:
        self.registry = registry
        self.leader = Gauge(
            "leader_election_master_status",
            helptext(ALPHA, "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
                     "1 indicates master. 'name' is the string used to identify the lease. Please make sure to "
                     "group by name."),
            ["name"], registry=registry,
        )
        self.slowpath = Counter(
            "leader_election_slowpath_total",
            helptext(ALPHA, "Total number of slow path exercised in renewing leader leases. 'name' is the string "
                     "used to identify the lease. Please make sure to group by name."),
            ["name"], registry=registry,
        )
        self.features: list[tuple[str, str, bool]] = []
        registry.register(ScrapeFamily(
            "gauge", "kubernetes_feature_enabled",
            helptext(BETA, "This metric records the data about the stage and enablement of a k8s feature."),
            ["name", "stage"], lambda: [((n, s), 1 if on else 0) for n, s, on in self.features],
        ))
        build = (KUBE_MAJOR, KUBE_MINOR, build_version(), "", "", "", "",
                 platform.python_implementation().lower(), f"{sys.platform}/{_arch()}")
        registry.register(ScrapeFamily(
            "gauge", "kubernetes_build_info",
            helptext(BETA, "A metric with a constant '1' value labeled by major, minor, git version, git commit, git "
                     "tree state, build date, Go version, and compiler from which Kubernetes was built, and platform "
                     "on which it is running."),
            ["major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler",
             "platform"], lambda: [(build, 1)],
        ))
        registry.register(ScrapeFamily(
            "gauge", "version_info",
            helptext(ALPHA, "Provides the compatibility version info of the component. The component label is the "
                     "name of the component, usually kube, but is relevant for aggregated-apiservers."),
            ["binary", "component", "emulation", "min_compat"],
            lambda: [((f"{KUBE_MAJOR}.{KUBE_MINOR}.{KUBE_PATCH}", "kube", EMULATION, MIN_COMPAT), 1)],
        ))
        self.meta = _Meta({**scheduler_stability, **STABILITY, **client.STABILITY})
        registry.register(self.meta)
        registry.register(_Process())
        registry.register(client.REST)

    def leader_status(self, is_leader: bool) -> None:
        self.leader.labels(LEADER_ELECTION_NAME).set(1 if is_leader else 0)

    def leader_slowpath(self) -> None:
        self.slowpath.labels(LEADER_ELECTION_NAME).inc()

    def set_features(self, gates: Iterable[tuple[str, str, bool]]) -> None:
        """(name, stage, enabled) of every feature gate the process knows (FeatureGates.all)."""
        self.features = sorted(gates)


def build_version() -> str:
    """git_version: the Kubernetes release followed, with this scheduler's version as build
    metadata (semver), so dashboards that parse the release still can."""
    try:
        ours = importlib.metadata.version("pyscheduler")
    except importlib.metadata.PackageNotFoundError:
        ours = "unknown"
    return f"v{KUBE_MAJOR}.{KUBE_MINOR}.{KUBE_PATCH}+pyscheduler.{ours}"


def _arch() -> str:
    m = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(m, m)


class _Meta:
    """The metrics framework's own families: registered_metrics_total counts the families
    registered through it (not process_* nor pyscheduler's own) by stability level; nothing is
    ever disabled, hidden or re-categorised here."""

    def __init__(self, stability: Mapping[str, str]) -> None:
        self.levels: dict[str, int] = {}
        self.count(stability)

    def count(self, stability: Mapping[str, str]) -> None:
        """Families registered later (behind a feature gate), by name -> stability level."""
        for level in stability.values():
            self.levels[level] = self.levels.get(level, 0) + 1

    def _families(self) -> list[CounterMetricFamily]:
        reg = CounterMetricFamily("registered_metrics", helptext(
            BETA, "The count of registered metrics broken by stability level and deprecation version."),
            labels=["deprecated_version", "stability_level"])
        return [
            reg,
            CounterMetricFamily("disabled_metrics", helptext(BETA, "The count of disabled metrics.")),
            CounterMetricFamily("hidden_metrics", helptext(BETA, "The count of hidden metrics.")),
            CounterMetricFamily("cardinality_enforcement_unexpected_categorizations", helptext(
                ALPHA, "The count of unexpected categorizations during cardinality enforcement.")),
        ]

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def schema(self) -> list[Schema]:
        labels = {"registered_metrics": ("deprecated_version", "stability_level")}
        return [Schema(f.name + "_total", "counter", f.documentation, labels.get(f.name, ())) for f in self._families()]

    def collect(self) -> Iterator[Metric]:
        fams = self._families()
        for level in sorted(self.levels):
            fams[0].add_metric(["", level], self.levels[level])
        for fam in fams[1:]:
            fam.add_metric([], 0)
        yield from fams


class _Process:
    """client_golang's process collector on Linux procfs: the same nine families and help."""

    _HELP = {
        "process_cpu_seconds_total": ("counter", "Total user and system CPU time spent in seconds."),
        "process_max_fds": ("gauge", "Maximum number of open file descriptors."),
        "process_network_receive_bytes_total": ("counter", "Number of bytes received by the process over the network."),
        "process_network_transmit_bytes_total": ("counter", "Number of bytes sent by the process over the network."),
        "process_open_fds": ("gauge", "Number of open file descriptors."),
        "process_resident_memory_bytes": ("gauge", "Resident memory size in bytes."),
        "process_start_time_seconds": ("gauge", "Start time of the process since unix epoch in seconds."),
        "process_virtual_memory_bytes": ("gauge", "Virtual memory size in bytes."),
        "process_virtual_memory_max_bytes": ("gauge", "Maximum amount of virtual memory available in bytes."),
    }

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self.ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.page = os.sysconf("SC_PAGESIZE") if hasattr(os, "sysconf") else 4096

    def _family(self, name: str, value: float | None = None) -> Metric:
        kind, text = self._HELP[name]
        if kind == "counter":
            return CounterMetricFamily(name.removesuffix("_total"), text, value=value)
        return GaugeMetricFamily(name, text, value=value)

    def describe(self) -> Iterator[Metric]:
        for name in self._HELP:
            yield self._family(name)

    def schema(self) -> list[Schema]:
        return [Schema(name, kind, text, ()) for name, (kind, text) in self._HELP.items()]

    def collect(self) -> Iterator[Metric]:
        values = self.read()
        for name in self._HELP:
            if name in values:
                yield self._family(name, values[name])

    def read(self) -> dict[str, float]:
        """What procfs says now; a file that cannot be read leaves its families out."""
        out: dict[str, float] = {}
        me = self.proc / "self"
        try:
            stat = (me / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            # Fields from the state on (field 3 of proc(5) is index 0 here).
            out["process_cpu_seconds_total"] = (int(fields[11]) + int(fields[12])) / self.ticks
            out["process_virtual_memory_bytes"] = float(fields[20])
            out["process_resident_memory_bytes"] = float(int(fields[21]) * self.page)
            boot = _boot_time(self.proc)
            if boot is not None:
                out["process_start_time_seconds"] = boot + int(fields[19]) / self.ticks
        except (OSError, ValueError, IndexError):
            pass
        with contextlib.suppress(OSError):
            out["process_open_fds"] = float(len(os.listdir(me / "fd")))
        try:
            for line in (me / "limits").read_text().splitlines():
                if line.startswith("Max open files"):
                    out["process_max_fds"] = _limit(line.split()[3])
                elif line.startswith("Max address space"):
                    out["process_virtual_memory_max_bytes"] = _limit(line.split()[3])
        except (OSError, IndexError):
            pass
        try:
            rx, tx = _ip_octets((me / "net" / "netstat").read_text())
            out["process_network_receive_bytes_total"] = rx
            out["process_network_transmit_bytes_total"] = tx
        except (OSError, ValueError):
            pass
        return out


def _limit(text: str) -> float:
    # procfs reads "unlimited" as the largest uint64 (the binary shows 1.8446744073709552e+19).
    return float(2**64 - 1) if text == "unlimited" else float(int(text))


def _boot_time(proc: Path) -> float | None:
    try:
        for line in (proc / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _ip_octets(netstat: str) -> tuple[float, float]:
    """IpExt InOctets and OutOctets of /proc/self/net/netstat (a header line, then values)."""
    lines = netstat.splitlines()
    for head, vals in itertools.pairwise(lines):
        if head.startswith("IpExt:") and vals.startswith("IpExt:"):
            row = dict(zip(head.split()[1:], vals.split()[1:]))
            return float(row.get("InOctets", 0)), float(row.get("OutOctets", 0))
    return 0.0, 0.0
