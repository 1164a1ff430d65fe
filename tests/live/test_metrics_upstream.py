"""Every metric family kube-scheduler v1.36.3 registers by default, read from the release's own
source in the Go module cache when the test runs (pkg/scheduler/metrics/metrics.go's
metricsList and the Register() blocks whose gate is on by default, the volume binder's
metrics.go, metrics/resources/resources.go), must be ours with the same name, type, label
names, help text (the stability level in front, as component-base writes it) and buckets.

Without the module cache the test skips, except under CI=true, where it fails: the parity it
guards must not pass silently.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from scheduler.config.features import DEFAULT_GATES
from scheduler.live.metrics import Metrics
from scheduler.live.metrics.kit import Schema, exponential_buckets, schema
from scheduler.live.metrics.resources import FAMILIES as RESOURCE_FAMILIES

GOMOD = Path(os.environ.get("PYSCHED_CACHE", Path.home() / ".cache" / "pyscheduler")) / "gomod"
K8S = GOMOD / "k8s.io" / "kubernetes@v1.36.3"
METRICS_GO = K8S / "pkg/scheduler/metrics/metrics.go"
VOLUME_GO = K8S / "pkg/scheduler/framework/plugins/volumebinding/metrics/metrics.go"
RESOURCES_GO = K8S / "pkg/scheduler/metrics/resources/resources.go"


def _source(path: Path) -> str:
    if not path.exists():
        msg = f"{path} missing: the Go module cache holds kube-scheduler v1.36.3's source (e2e/controlplane/build.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return path.read_text()


@dataclass
class GoMetric:
    var: str
    name: str
    type: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...]


_NEW = re.compile(
    r"(\w+)\s*=\s*metrics\.New(Counter|Gauge|Histogram)(Vec)?\(\s*&metrics\.\w+Opts\{(?P<body>.*?)\n\s*\}\s*,?"
    r"(?:\s*\[\]string\{(?P<labels>[^}]*)\})?",
    re.S,
)


def _go_string(expr: str) -> str:
    """A Go string expression: literals joined with +."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', expr)
    return "".join(ast.literal_eval(f'"{p}"') for p in parts)


def _field(body: str, name: str) -> str | None:
    m = re.search(rf"^\s*{name}:\s*(.*?),\s*(?://.*)?$", body, re.M | re.S)
    if m is None:
        return None
    # A Help made of several literals joined with + spans lines up to the next field.
    if name == "Help":
        m2 = re.search(r"^\s*Help:\s*(.*?),\s*\n\s*(?:\w+:|$)", body, re.M | re.S)
        if m2 is not None:
            return m2.group(1)
    return m.group(1)


def _buckets(expr: str | None) -> tuple[float, ...]:
    if expr is None:
        return ()
    m = re.match(r"metrics\.ExponentialBuckets\(([^,]+),\s*([^,]+),\s*(\d+)\)", expr.strip())
    if m is not None:
        return tuple(exponential_buckets(float(m.group(1)), float(m.group(2)), int(m.group(3))))
    raise AssertionError(f"buckets not understood: {expr}")


def parse_metrics(src: str) -> dict[str, GoMetric]:
    """Variable name -> metric, for every metrics.New... in ``src``."""
    subsystems = dict(re.findall(r'(\w+Subsystem)\s*=\s*"([^"]+)"', src))
    out: dict[str, GoMetric] = {}
    for m in _NEW.finditer(src):
        var, kind, body = m.group(1), m.group(2).lower(), m.group("body")
        sub = _field(body, "Subsystem")
        name = _go_string(_field(body, "Name") or "")
        if sub:
            name = f"{subsystems.get(sub.strip(), sub.strip())}_{name}"
        level = (_field(body, "StabilityLevel") or "metrics.ALPHA").strip().split(".")[-1]
        labels = tuple(re.findall(r'"([^"]+)"', m.group("labels") or ""))
        help_text = f"[{level}] {_go_string(_field(body, 'Help') or '')}"
        out[var] = GoMetric(var, name, kind, help_text, labels, _buckets(_field(body, "Buckets")))
    return out


def registered_by_default(src: str) -> list[str]:
    """The variables Register() registers with the gates at their v1.36.3 defaults."""
    listed = re.search(r"metricsList = \[\]metrics\.Registerable\{(.*?)\}", src, re.S)
    assert listed is not None, "metricsList not found"
    names = re.findall(r"(\w+),", listed.group(1))
    for gate, block in re.findall(
        r"DefaultFeatureGate\.Enabled\(features\.(\w+)\)\s*\{\s*RegisterMetrics\((.*?)\)\s*\}", src, re.S
    ):
        if DEFAULT_GATES.enabled(gate):
            names += re.findall(r"(\w+)", block)
    return names


def upstream() -> list[GoMetric]:
    src = _source(METRICS_GO)
    defined = parse_metrics(src)
    out = [defined[v] for v in registered_by_default(src)]
    out += list(parse_metrics(_source(VOLUME_GO)).values())  # RegisterVolumeSchedulingMetrics: all
    return out


@pytest.fixture(scope="module")
def ours() -> dict[str, Schema]:
    return schema(Metrics().registry)


def test_the_source_is_read() -> None:
    """The parser finds what v1.36.3 has: the 22 always-registered families and the gated ones."""
    got = {m.name for m in upstream()}
    assert len(got) >= 30
    assert {"scheduler_schedule_attempts_total", "scheduler_unschedulable_pods", "scheduler_inflight_events",
            "scheduler_volume_scheduling_stage_error_total"} <= got
    # Off by default in v1.36.3 (SchedulerAsyncAPICalls, GenericWorkload): not expected.
    assert "scheduler_async_api_call_execution_total" not in got
    assert "scheduler_podgroup_schedule_attempts_total" not in got


def test_every_default_family_is_ours(ours: dict[str, Schema]) -> None:
    missing = sorted(m.name for m in upstream() if m.name not in ours)
    assert not missing, f"kube-scheduler v1.36.3 registers these and we do not: {missing}"


@pytest.mark.parametrize("field", ["type", "labels", "help", "buckets"])
def test_every_family_matches(ours: dict[str, Schema], field: str) -> None:
    wrong = []
    for m in upstream():
        o = ours.get(m.name)
        if o is None:
            continue  # reported by test_every_default_family_is_ours
        want, got = getattr(m, field), getattr(o, field)
        if want != got:
            wrong.append(f"{m.name}: upstream {want!r}, ours {got!r}")
    assert not wrong, "\n".join(wrong)


def test_resource_metrics_are_upstreams() -> None:
    """/metrics/resources: the two descriptors of resources.go, same names and help."""
    src = _source(RESOURCES_GO)
    found = re.findall(r'metrics\.NewDesc\("(\w+)",\s*"((?:[^"\\]|\\.)*)",\s*\[\]string\{([^}]*)\},\s*nil,\s*'
                       r"metrics\.(\w+)", src)
    assert len(found) == 2
    for name, text, labels, level in found:
        assert RESOURCE_FAMILIES[name] == f"[{level}] {text}"
        assert re.findall(r'"(\w+)"', labels) == ["namespace", "pod", "node", "scheduler", "priority", "resource",
                                                  "unit"]
