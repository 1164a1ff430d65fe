"""kube-scheduler v1.36.3's own scheduler_perf workloads, read at run time from its module.

The files are ``test/integration/scheduler_perf/<dir>/performance-config.yaml`` of the module
``k8s.io/kubernetes@v1.36.3`` in the Go module cache (never copied here). Each test case has a
``workloadTemplate`` (ops), ``workloads`` (``params``, ``labels``, ``featureGates``) and optional
``defaultPodTemplatePath``; template paths are relative to the file's directory, as the Go test
runs there. This module turns one workload into the list of ops to run: ``$param`` references
resolved (scheduler_perf.go ``patchParams``: counts are JSON numbers cut to int, durations Go
duration strings), ``createPodSets`` unrolled into one ``createPods`` per namespace before the
ops are numbered (``unrollWorkloadTemplate``), every count that comes from a param multiplied
by the bench's scale, and unknown fields refused as the Go decoder's DisallowUnknownFields does.

Selection: by default one workload labelled ``performance`` per test case, the first whose name
has no ``_QueueingHintsEnabled``/``_AsyncAPICallsEnabled`` suffix (39 test cases in v1.36.3).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from scheduler.config.features import GATES

MODULE_VERSION = "v1.36.3"
PERF_DIR = "test/integration/scheduler_perf"
CONFIG_DIRS = (
    "affinity",
    "misc",
    "topology_spreading",
    "volumes",
    "dra",
    "event_handling",
    "nodedeclaredfeatures",
)
PERFORMANCE = "performance"
VARIANT_SUFFIXES = ("_QueueingHintsEnabled", "_AsyncAPICallsEnabled")

# Fields of each op as the Go structs name them (operations.go, dra.go, update.go).
_COUNTED = ("count", "countParam")
OP_FIELDS: Mapping[str, frozenset[str]] = {
    k: frozenset(("opcode", *v))
    for k, v in {
        "createNodes": (
            *_COUNTED,
            "nodeTemplatePath",
            "nodeAllocatableStrategy",
            "labelNodePrepareStrategy",
            "uniqueNodeLabelStrategy",
        ),
        "createNamespaces": (*_COUNTED, "prefix", "namespaceTemplatePath"),
        "createPods": (
            *_COUNTED,
            "steadyState",
            "steadyStateParam",
            "duration",
            "durationParam",
            "collectMetrics",
            "namespace",
            "podTemplatePath",
            "skipWaitToCompletion",
            "persistentVolumeTemplatePath",
            "persistentVolumeClaimTemplatePath",
        ),
        "createPodSets": (*_COUNTED, "namespacePrefix", "createPodsOp"),
        "deletePods": ("namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"),
        "churn": ("mode", "number", "intervalMilliseconds", "namespace", "templatePaths"),
        "barrier": ("namespaces", "labelSelector", "stageRequirement"),
        "sleep": ("duration", "durationParam"),
        "startCollectingMetrics": ("name", "namespaces", "labelSelector"),
        "stopCollectingMetrics": (),
        "createAny": (*_COUNTED, "namespace", "templatePath"),
        "updateAny": (*_COUNTED, "namespace", "templatePath", "updatePerSecond", "subresources"),
        "createResourceDriver": ("driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes"),
        "allocResourceClaims": ("namespace",),
        "createResourceClaims": (*_COUNTED, "namespace", "templatePath"),
    }.items()
}
# Ops whose count is a number of objects: --scale multiplies the ones taken from the workload's
# params (its size). A count written into the template is structure and stays: the one named
# node, EventHandlingPodAdd's two nodes (one for the pods that avoid the other), the namespaces
# sched-0 and sched-1 that later ops name, a steady state's batch of 10.
SCALED = frozenset(
    ("createNodes", "createNamespaces", "createPods", "createPodSets", "createAny", "updateAny", "createResourceClaims")
)
_PATH_FIELDS = (
    "nodeTemplatePath",
    "namespaceTemplatePath",
    "podTemplatePath",
    "persistentVolumeTemplatePath",
    "persistentVolumeClaimTemplatePath",
    "templatePath",
)
# Params a test's Go hooks read (nodedeclaredfeatures' node update): used, not unused.
HOOK_PARAMS: Mapping[str, tuple[str, ...]] = {"nodedeclaredfeatures": ("numNodeDeclaredFeatures",)}


class ConfigError(ValueError):
    """A test case or workload this bench cannot run as upstream would (named, with the reason)."""


def module_dir() -> pathlib.Path:
    cache = os.environ.get("PYSCHED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyscheduler"
    )
    return pathlib.Path(cache) / "gomod" / "k8s.io" / f"kubernetes@{MODULE_VERSION}"


def perf_dir(root: pathlib.Path | None = None) -> pathlib.Path:
    return (root or module_dir()) / PERF_DIR


@dataclasses.dataclass(frozen=True)
class Workload:
    """One workload of one test case, as written upstream (params unresolved)."""

    case: str
    name: str
    config_dir: pathlib.Path
    group: str  # the config directory's name (affinity, misc, ...)
    labels: tuple[str, ...]
    params: Mapping[str, Any]
    feature_gates: Mapping[str, bool]  # the test case's, overridden by the workload's
    template: tuple[Mapping[str, Any], ...]
    default_pod_template: str | None
    threshold: Any = None

    @property
    def full_name(self) -> str:
        return f"{self.case}/{self.name}"

    @property
    def performance(self) -> bool:
        return PERFORMANCE in self.labels


@dataclasses.dataclass(frozen=True)
class Op:
    """One op after params, unrolling and scale: ``index`` is its position in the unrolled
    list (default namespaces ``namespace-<index>`` and node names ``node-<index>-`` use it)."""

    index: int
    opcode: str
    spec: Mapping[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.spec.get(key, default)


def load_workloads(root: pathlib.Path | None = None, dirs: Sequence[str] = CONFIG_DIRS) -> list[Workload]:
    """Every workload of the given config directories, in file order."""
    out: list[Workload] = []
    seen: set[str] = set()
    for d in dirs:
        cdir = perf_dir(root) / d
        path = cdir / "performance-config.yaml"
        if not path.is_file():
            raise ConfigError(f"{path}: not found (is k8s.io/kubernetes@{MODULE_VERSION} in the Go module cache?)")
        cases = yaml.safe_load(path.read_text())
        if not isinstance(cases, list):
            raise ConfigError(f"{path}: expected a list of test cases")
        for tc in cases:
            name = tc["name"]
            if name in seen:
                raise ConfigError(f"{path}: test case {name} is not unique")
            seen.add(name)
            for w in tc.get("workloads") or []:
                gates = {**(tc.get("featureGates") or {}), **(w.get("featureGates") or {})}
                out.append(
                    Workload(
                        case=name,
                        name=w["name"],
                        config_dir=cdir,
                        group=d,
                        labels=tuple(tc.get("labels") or ()) + tuple(w.get("labels") or ()),
                        params=dict(w.get("params") or {}),
                        feature_gates=gates,
                        template=tuple(tc.get("workloadTemplate") or ()),
                        default_pod_template=tc.get("defaultPodTemplatePath"),
                        threshold=w.get("threshold"),
                    )
                )
    return out


def default_workloads(workloads: Iterable[Workload]) -> list[Workload]:
    """One performance workload per test case: the first without a variant suffix."""
    out: list[Workload] = []
    cases: set[str] = set()
    for w in workloads:
        if w.case in cases or not w.performance or any(s in w.name for s in VARIANT_SUFFIXES):
            continue
        cases.add(w.case)
        out.append(w)
    return out


def select_workloads(workloads: Sequence[Workload], spec: str | None) -> list[Workload]:
    """``spec``: comma-separated full names (any workload) or substrings. A substring picks the
    default workloads whose full name contains it; if none does, every performance workload
    whose full name contains it. No spec: the default workloads."""
    defaults = default_workloads(workloads)
    if not spec:
        return defaults
    out: list[Workload] = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        exact = [w for w in workloads if w.full_name == entry]
        hits = exact or [w for w in defaults if entry in w.full_name]
        hits = hits or [w for w in workloads if w.performance and entry in w.full_name]
        if not hits:
            raise ConfigError(f"--workloads: {entry!r} matches no workload")
        out.extend(w for w in hits if w not in out)
    return out


# ---- params, unrolling, scale ------------------------------------------------------------------

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds (``"10s"``, ``"1m30s"``, ``"500ms"``)."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ConfigError(f"invalid duration {text!r}")
    return sign * total


class _Params:
    """A workload's params; ``get`` marks a param used (unused ones are an error upstream)."""

    def __init__(self, wl: Workload) -> None:
        self.wl = wl
        self.used: set[str] = set()

    def _raw(self, ref: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(ref, str) or not ref.startswith("$"):
            raise ConfigError(f"{self.wl.full_name}: parameter reference {ref!r} must start with $")
        key = ref[1:]
        self.used.add(key)
        if key not in self.wl.params:
            raise ConfigError(f"{self.wl.full_name}: parameter {key} is undefined")
        v = self.wl.params[key]
        if isinstance(v, bool) != (kind is bool) or not isinstance(v, kind):
            raise ConfigError(f"{self.wl.full_name}: parameter {key} has the wrong type {type(v).__name__}")
        return v

    def count(self, ref: str) -> int:
        # JSON numbers in an ``any`` are float64; the count is int(float64).
        return int(float(self._raw(ref, (int, float))))

    def string(self, ref: str) -> str:
        return str(self._raw(ref, str))

    def flag(self, ref: str) -> bool:
        return bool(self._raw(ref, bool))


def scaled(count: int, scale: float) -> int:
    """``count`` times ``scale``, rounded half up; at least 1 unless the count is 0."""
    if count <= 0:
        return count
    return max(1, int(count * scale + 0.5))


def _check_fields(wl: Workload, raw: Mapping[str, Any]) -> str:
    opcode = str(raw.get("opcode"))
    if opcode not in OP_FIELDS:
        raise ConfigError(f"{wl.full_name}: unknown opcode {opcode!r}")
    unknown = set(raw) - OP_FIELDS[opcode]
    if unknown:
        raise ConfigError(f"{wl.full_name}: {opcode} has unknown fields {sorted(unknown)}")
    return opcode


def _patch(wl: Workload, raw: Mapping[str, Any], params: _Params, scale: float) -> dict[str, Any]:
    """One op with its params resolved and its count scaled (``patchParams`` plus the scale)."""
    opcode = _check_fields(wl, raw)
    spec = {k: v for k, v in raw.items() if k != "opcode"}
    from_param = bool(spec.get("countParam"))
    if from_param:
        spec["count"] = params.count(spec.pop("countParam"))
    if spec.get("maxClaimsPerNodeParam"):
        spec["maxClaimsPerNode"] = params.count(spec.pop("maxClaimsPerNodeParam"))
    if spec.get("durationParam"):
        spec["duration"] = params.string(spec.pop("durationParam"))
    if spec.get("steadyStateParam"):
        spec["steadyState"] = params.flag(spec.pop("steadyStateParam"))
    if "duration" in spec:
        spec["duration_s"] = parse_duration(str(spec["duration"]))
    if "count" in spec and (not isinstance(spec["count"], int) or spec["count"] < 0):
        raise ConfigError(f"{wl.full_name}: {opcode} has invalid count {spec['count']!r}")
    if opcode in SCALED and from_param:
        spec["count"] = scaled(spec["count"], scale)
    for key in _PATH_FIELDS:
        if spec.get(key):
            spec[key] = str(resolve_path(wl, spec[key]))
    if opcode == "churn":
        spec["templatePaths"] = [str(resolve_path(wl, p)) for p in spec.get("templatePaths") or []]
    if opcode == "createPods" and not spec.get("podTemplatePath") and wl.default_pod_template:
        spec["podTemplatePath"] = str(resolve_path(wl, wl.default_pod_template))
    _validate(wl, opcode, spec)
    return spec


def _validate(wl: Workload, opcode: str, spec: Mapping[str, Any]) -> None:
    """isValid(false) of the op, for what the executor relies on."""
    where = f"{wl.full_name}: {opcode}"
    if opcode == "createPods":
        if spec.get("collectMetrics") and spec.get("skipWaitToCompletion"):
            raise ConfigError(f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time")
        if spec.get("steadyState") and spec.get("skipWaitToCompletion"):
            raise ConfigError(f"{where}: skipWaitToCompletion and steadyState cannot be true at the same time")
        if spec.get("steadyState") and spec.get("duration_s", 0) <= 0:
            raise ConfigError(f"{where}: when creating pods in a steady state, the test duration must be > 0")
    if opcode == "churn":
        if spec.get("mode") not in ("create", "recreate"):
            raise ConfigError(f"{where}: invalid mode {spec.get('mode')!r}")
        if spec.get("mode") == "recreate" and not spec.get("number"):
            raise ConfigError(f"{where}: number cannot be 0 when mode is recreate")
        if not spec.get("templatePaths"):
            raise ConfigError(f"{where}: at least one template spec file needs to be specified")
    if opcode == "barrier" and spec.get("stageRequirement", "Scheduled") not in ("", "Scheduled", "Attempted"):
        raise ConfigError(f"{where}: invalid stageRequirement {spec['stageRequirement']!r}")
    if opcode == "startCollectingMetrics" and not spec.get("namespaces"):
        raise ConfigError(f"{where}: namespaces cannot be empty")
    if opcode in ("createAny", "updateAny", "createResourceClaims") and not spec.get("templatePath"):
        raise ConfigError(f"{where}: templatePath must be set")


def resolve_path(wl: Workload, rel: str) -> pathlib.Path:
    p = (wl.config_dir / rel).resolve()
    if not p.is_file():
        raise ConfigError(f"{wl.full_name}: template {rel} not found ({p})")
    return p


def resolve_ops(wl: Workload, scale: float = 1.0) -> list[Op]:
    """The ops ``wl`` runs, numbered as upstream numbers them after unrolling createPodSets."""
    params = _Params(wl)
    ops: list[Op] = []
    for raw in wl.template:
        spec = _patch(wl, raw, params, scale)
        if raw.get("opcode") == "createPodSets":
            inner = spec.get("createPodsOp") or {}
            for i in range(int(spec.get("count", 0))):
                sub = _patch(wl, inner, params, scale)
                sub["namespace"] = f"{spec['namespacePrefix']}-{i}"
                ops.append(Op(len(ops), "createPods", sub))
            continue
        ops.append(Op(len(ops), str(raw["opcode"]), spec))
    params.used.update(HOOK_PARAMS.get(wl.group, ()))
    unused = sorted(set(wl.params) - params.used)
    if unused:
        raise ConfigError(f"{wl.full_name}: the parameters {unused} are defined but unused")
    if not any(o.opcode == "stopCollectingMetrics" or o.get("collectMetrics") for o in ops):
        raise ConfigError(f"{wl.full_name}: no op collects metrics")
    return ops


def size_of(ops: Sequence[Op]) -> dict[str, int]:
    """What the ops create: nodes, pods (steady-state ops count their batch), namespaces."""
    nodes = sum(int(o.get("count", 0)) for o in ops if o.opcode == "createNodes")
    pods = sum(int(o.get("count", 0)) for o in ops if o.opcode == "createPods")
    measured = sum(int(o.get("count", 0)) for o in ops if o.opcode == "createPods" and o.get("collectMetrics"))
    namespaces = sum(int(o.get("count", 0)) for o in ops if o.opcode == "createNamespaces")
    return {"nodes": nodes, "pods": pods, "measured_pods": measured, "namespaces": namespaces}


# ---- feature gates -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Gates:
    """The gates both schedulers get, and the ones left out.

    Upstream sets the workload's gates on the one process that runs API server and scheduler.
    ``SchedulerQueueingHints`` is locked to true at v1.36; for ``false`` upstream emulates
    version 1.33, which neither the binary's ``--feature-gates`` nor ours accepts at 1.36, so
    a gate set away from its locked default is left out (``dropped``) and the run says so.
    Upstream also turns ``OpportunisticBatching`` off unless the workload sets it (at the
    emulated 1.33 it does not exist): so does this.
    """

    used: Mapping[str, bool]
    dropped: Mapping[str, bool]

    def flag(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self.used.items()))


def workload_gates(wl: Workload) -> Gates:
    used: dict[str, bool] = {}
    dropped: dict[str, bool] = {}
    for name, value in wl.feature_gates.items():
        spec = GATES.get(name)
        if spec is None:
            raise ConfigError(f"{wl.full_name}: unknown feature gate {name}")
        if not isinstance(value, bool):
            raise ConfigError(f"{wl.full_name}: feature gate {name} has non-boolean value {value!r}")
        if spec.locked and spec.default != value:
            dropped[name] = value
        else:
            used[name] = value
    used.setdefault("OpportunisticBatching", False)
    return Gates(used, dropped)


def apiserver_args(gates: Gates) -> list[str]:
    """kube-apiserver flags for a workload's gates (upstream's API server runs with the same
    gates; its DRA setup also serves resource.k8s.io's older versions)."""
    args = [f"--feature-gates={gates.flag()}"] if gates.used else []
    if gates.used.get("DynamicResourceAllocation"):
        args.append("--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true")
    return args
