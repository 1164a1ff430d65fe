"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) loading, defaulting and validation.

Follows upstream's pipeline in order, so that the same inputs fail at the same step:

1. strict decoding (unknown fields and wrong types are errors),
2. defaulting (``pkg/scheduler/apis/config/v1/defaults.go``), including the merge of each
   profile's plugins into the default multiPoint set (``default_plugins.go`` mergePluginSet),
3. ``ValidateKubeSchedulerConfiguration`` (``apis/config/validation/validation.go``): every error
   is collected and reported together, formatted like ``field.ErrorList``,
4. framework construction per profile (``framework/runtime/framework.go``): per-point plugin
   lists, multiPoint expansion, queueSort/bind counts and score weights; first error wins.

Plugin arguments are passed through untouched (minus apiVersion/kind): the plugin factories
default and validate them, as upstream's per-plugin args validation does.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from scheduler.framework.interface import EXTENSION_POINTS, Plugin, ScorePlugin, extension_points_of
from scheduler.plugins import registry as plugin_registry

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

MAX_NODE_SCORE = 100
MAX_TOTAL_SCORE = 2**63 - 1
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class ConfigError(ValueError):
    """A configuration problem; ``str(e)`` is one line naming the offending field."""


# ---------------------------------------------------------------------------------------------
# Result types


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0  # only meaningful at "score"


@dataclass(frozen=True, slots=True)
class Profile:
    scheduler_name: str
    plugins: dict[str, tuple[PluginRef, ...]]
    plugin_args: dict[str, dict]
    percentage_of_nodes_to_score: int | None = None


@dataclass(frozen=True, slots=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15
    renew_deadline: float = 10
    retry_period: float = 2
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50
    burst: int = 100
    content_type: str = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    profiles: tuple[Profile, ...]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1
    pod_max_backoff_seconds: float = 10
    # Not part of the v1 file format (a kube-scheduler option upstream); kept at its default.
    pod_max_in_unschedulable_pods_duration: float = 300
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    leader_election: LeaderElection = field(default_factory=LeaderElection)


# ---------------------------------------------------------------------------------------------
# Default plugins (default_plugins.go getDefaultPlugins, feature gates at their v1.36 defaults:
# NodeDeclaredFeatures is beta/on, so it is appended last; DynamicResourceAllocation is GA/on,
# so DynamicResources (weight 2) sits just before DefaultPreemption; alpha-gated plugins
# (GangScheduling, TopologyAwareWorkloadScheduling) are off).

_DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),
)

def default_plugins() -> list[tuple[str, int]]:
    """The upstream v1 default multiPoint list, in order, with weights (0 = no weight given)."""
    return list(_DEFAULT_MULTIPOINT)


# Order in which the framework builds its per-point lists (framework.go getExtensionPoints);
# it decides which error is reported first.
_FRAMEWORK_ORDER: tuple[str, ...] = (
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "preScore",
    "score",
    "preBind",
    "bind",
    "postBind",
    "permit",
    "preEnqueue",
    "queueSort",
)
_GO_TYPE = {p: p[0].upper() + p[1:] + "Plugin" for p in _FRAMEWORK_ORDER}
_CONFIG_POINTS: tuple[str, ...] = ("multiPoint", *EXTENSION_POINTS)
# Pod-group extension points of the newest API; accepted by the decoder but only when empty,
# since their feature gates are alpha and off.
_GATED_POINTS: tuple[str, ...] = (
    "placementGenerate",
    "placementScore",
    "placementFeasible",
    "podGroupPostFilter",
)


# ---------------------------------------------------------------------------------------------
# Small helpers: Go-like value formatting and durations


def _fmt(value: Any) -> str:
    """Value as field.Error prints it: strings quoted, numbers plain."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_fmt(value)}: {detail}"


def _required(path: str) -> str:
    return f"{path}: Required value"


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string ("15s", "1m30s", "-1.5h", "0"); ValueError if invalid."""
    s = text.strip()
    sign = 1.0
    if s.startswith(("+", "-")):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def format_go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for a number of seconds."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns, size) + unit
    h, rem = divmod(ns, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    s = _trim(rem, 1_000_000_000) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


# ---------------------------------------------------------------------------------------------
# Strict decoding into plain intermediate structures


@dataclass(slots=True)
class _Entry:
    name: str
    weight: int | None
    user: bool = True  # False for entries that come from the default plugin set
    index: int = -1  # position in the user's list, for messages


@dataclass(slots=True)
class _PluginSet:
    enabled: list[_Entry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _RawProfile:
    scheduler_name: str | None
    percentage: int | None
    plugins: dict[str, _PluginSet] | None  # None when the profile has no "plugins" at all
    plugin_config: list[tuple[str, dict | None]]


def _check_keys(path: str, obj: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in obj:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(f'strict decoding error: unknown field "{where}"')


def _mapping(path: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: Invalid value: {_type_name(value)}: must be an object")
    return value


def _list(path: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: Invalid value: {_type_name(value)}: must be a list")
    return value


def _type_name(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "number", float: "number", list: "array"}.get(
        type(value), "object" if isinstance(value, Mapping) else type(value).__name__
    )


def _int(path: str, value: Any, bounds: tuple[int, int] = _INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: Invalid value: {_fmt(value)}: must be an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ConfigError(f"{path}: Invalid value: {value}: must be an integer")
        value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{path}: Invalid value: {value}: out of range")
    return value


def _float(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{path}: Invalid value: {_fmt(value)}: must be a number")
    return float(value)


def _str(path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: Invalid value: {_fmt(value)}: must be a string")
    return value


def _bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: Invalid value: {_fmt(value)}: must be a boolean")
    return value


def _duration(path: str, value: Any) -> float:
    text = _str(path, value)
    try:
        return parse_go_duration(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: Invalid value: {_fmt(text)}: {exc}") from None


def _decode_plugin_set(path: str, raw: Any) -> _PluginSet:
    if raw is None:
        return _PluginSet()
    obj = _mapping(path, raw)
    _check_keys(path, obj, ("enabled", "disabled"))
    out = _PluginSet()
    for key in ("enabled", "disabled"):
        for i, item in enumerate(_list(f"{path}.{key}", obj.get(key))):
            ipath = f"{path}.{key}[{i}]"
            p = _mapping(ipath, item)
            _check_keys(ipath, p, ("name", "weight"))
            if p.get("name") is None:
                raise ConfigError(_required(f"{ipath}.name"))
            name = _str(f"{ipath}.name", p["name"])
            weight = None if p.get("weight") is None else _int(f"{ipath}.weight", p["weight"])
            if key == "enabled":
                out.enabled.append(_Entry(name, weight, True, i))
            else:
                out.disabled.append(name)
    return out


def _decode_profile(path: str, raw: Any) -> _RawProfile:
    obj = _mapping(path, raw)
    _check_keys(
        path,
        obj,
        (
            "schedulerName",
            "percentageOfNodesToScore",
            "percentageOfPlacementsToScore",
            "plugins",
            "pluginConfig",
        ),
    )
    name = None if obj.get("schedulerName") is None else _str(f"{path}.schedulerName", obj["schedulerName"])
    pct = obj.get("percentageOfNodesToScore")
    pct = None if pct is None else _int(f"{path}.percentageOfNodesToScore", pct)
    if obj.get("percentageOfPlacementsToScore") is not None:
        raise ConfigError(
            f"{path}.percentageOfPlacementsToScore: Forbidden: "
            "requires the TopologyAwareWorkloadScheduling feature gate, which pyscheduler does not enable"
        )
    plugins: dict[str, _PluginSet] | None = None
    if obj.get("plugins") is not None:
        ppath = f"{path}.plugins"
        pobj = _mapping(ppath, obj["plugins"])
        _check_keys(ppath, pobj, (*_CONFIG_POINTS, *_GATED_POINTS))
        plugins = {p: _decode_plugin_set(f"{ppath}.{p}", pobj.get(p)) for p in _CONFIG_POINTS}
        for p in _GATED_POINTS:
            gated = _decode_plugin_set(f"{ppath}.{p}", pobj.get(p))
            if gated.enabled or gated.disabled:
                raise ConfigError(
                    f"{ppath}.{p}: Forbidden: pod group scheduling extension points "
                    "are not supported by pyscheduler"
                )
    configs: list[tuple[str, dict | None]] = []
    for i, item in enumerate(_list(f"{path}.pluginConfig", obj.get("pluginConfig"))):
        cpath = f"{path}.pluginConfig[{i}]"
        c = _mapping(cpath, item)
        _check_keys(cpath, c, ("name", "args"))
        cname = _str(f"{cpath}.name", c.get("name", ""))
        args = c.get("args")
        configs.append((cname, None if args is None else _decode_args(f"{cpath}.args", cname, args)))
    return _RawProfile(name, pct, plugins, configs)


def _decode_args(path: str, plugin: str, raw: Any) -> dict:
    args = dict(_mapping(path, raw))
    api_version = args.pop("apiVersion", None)
    kind = args.pop("kind", None)
    # In-tree args are typed upstream (<Plugin>Args in the v1 group); a different type is refused.
    # Out-of-tree args are opaque to the scheduler, so they pass through unchecked.
    if plugin in plugin_registry.IN_TREE:
        want = f"{plugin}Args"
        if (kind is not None and kind != want) or (api_version is not None and api_version != API_VERSION):
            got = f"{kind or want}.{api_version or API_VERSION}"
            raise ConfigError(
                f"{path}: args for plugin {plugin} were not of type {want}.{API_VERSION}, got {got}"
            )
    return copy.deepcopy(args)


# ---------------------------------------------------------------------------------------------
# Merging (default_plugins.go mergePluginSet)


def merge_plugin_set(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
    """Merge a user plugin set into the default one for one extension point."""
    disabled = [*custom.disabled, *default.disabled]
    disabled_set = set(disabled)
    # A name enabled twice by the user: the later entry is the one that replaces the default.
    by_name = {e.name: (i, e) for i, e in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[_Entry] = []
    if "*" not in disabled_set:
        for d in default.enabled:
            if d.name in disabled_set:
                continue
            if d.name in by_name:
                i, e = by_name[d.name]
                replaced.add(i)
                enabled.append(e)  # in place: keeps the default order
            else:
                enabled.append(d)
    enabled.extend(e for i, e in enumerate(custom.enabled) if i not in replaced)
    return _PluginSet(enabled, disabled)


def _default_plugin_sets() -> dict[str, _PluginSet]:
    sets = {p: _PluginSet() for p in _CONFIG_POINTS}
    sets["multiPoint"] = _PluginSet([_Entry(n, w or None, False) for n, w in _DEFAULT_MULTIPOINT], [])
    return sets


def _merged_plugins(custom: dict[str, _PluginSet] | None) -> dict[str, _PluginSet]:
    defaults = _default_plugin_sets()
    if custom is None:
        return defaults
    return {p: merge_plugin_set(defaults[p], custom[p]) for p in _CONFIG_POINTS}


# ---------------------------------------------------------------------------------------------
# Framework construction (framework.go NewFramework / updatePluginList / expandMultiPointPlugins
# / getScoreWeights), without instantiating any plugin.


def _build_profile_plugins(
    path: str,
    scheduler_name: str,
    merged: dict[str, _PluginSet],
    registry: Mapping[str, type[Plugin]],
) -> dict[str, tuple[PluginRef, ...]]:
    ppath = f"{path}.plugins"
    multipoint = merged["multiPoint"].enabled

    # Per-point lists, as configured explicitly.
    explicit: dict[str, list[str]] = {}
    for point in _FRAMEWORK_ORDER:
        names: list[str] = []
        for i, e in enumerate(merged[point].enabled):
            where = f"{ppath}.{point}.enabled[{i}]"
            cls = registry.get(e.name)
            if cls is None:
                raise ConfigError(f'{where}: {_GO_TYPE[point]} "{e.name}" does not exist')
            if point not in extension_points_of(cls):
                raise ConfigError(f'{where}: plugin "{e.name}" does not extend {_GO_TYPE[point]} plugin')
            if e.name in names:
                raise ConfigError(f'{where}: plugin "{e.name}" already registered as "{_GO_TYPE[point]}"')
            names.append(e.name)
        explicit[point] = names

    # MultiPoint expansion.
    result: dict[str, list[str]] = {}
    for point in _FRAMEWORK_ORDER:
        names = explicit[point]
        disabled = set(merged[point].disabled)
        if not multipoint or "*" in disabled:
            result[point] = list(names)
            continue
        overrides: list[str] = []
        expanded: list[str] = []
        for e in multipoint:
            cls = registry.get(e.name)
            if cls is None:
                where = f"{ppath}.multiPoint" + (f".enabled[{e.index}]" if e.user else "")
                hint = "" if e.user else " (a default plugin missing from the plugin registry)"
                raise ConfigError(f'{where}: {_GO_TYPE[point]} "{e.name}" does not exist{hint}')
            if point not in extension_points_of(cls) or e.name in disabled:
                continue
            if e.name in names:
                # Explicitly configured at this point: the explicit entry wins, multiPoint is ignored.
                overrides.append(e.name)
                continue
            if e.name in expanded:
                raise ConfigError(
                    f'{ppath}.multiPoint: plugin "{e.name}" already registered as "{_GO_TYPE[point]}"'
                )
            expanded.append(e.name)
        # Order: overridden explicit plugins (explicit order), then multiPoint ones, then the rest.
        first = [n for n in names if n in overrides]
        rest = [n for n in names if n not in overrides]
        result[point] = first + expanded + rest

    if len(result["queueSort"]) != 1:
        raise ConfigError(
            f"{ppath}.queueSort: only one queue sort plugin required for profile with scheduler name "
            f'"{scheduler_name}", but got {len(result["queueSort"])}'
        )
    if not result["bind"]:
        raise ConfigError(
            f"{ppath}.bind: at least one bind plugin is needed for profile with scheduler name "
            f'"{scheduler_name}"'
        )

    weights = _score_weights(ppath, [*merged["score"].enabled, *multipoint], registry)
    return {
        point: tuple(PluginRef(n, weights[n] if point == "score" else 0) for n in result[point])
        for point in EXTENSION_POINTS
    }


def _score_weights(ppath: str, entries: list[_Entry], registry: Mapping[str, type[Plugin]]) -> dict[str, int]:
    # Explicit score entries come first, so their weight wins over the multiPoint one; an unset
    # or zero weight becomes 1 (a plugin is disabled explicitly, never by weight).
    weights: dict[str, int] = {}
    total = 0
    for e in entries:
        cls = registry.get(e.name)
        if cls is None or not issubclass(cls, ScorePlugin) or e.name in weights:
            continue
        w = e.weight or 1
        weights[e.name] = w
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(f"{ppath}.score: total score of Score plugins could overflow")
        total += w * MAX_NODE_SCORE
    return weights


# ---------------------------------------------------------------------------------------------
# Validation (validation.go ValidateKubeSchedulerConfiguration + component-base validation)


def _validate(
    top: dict[str, Any],
    le: LeaderElection,
    cc: ClientConnection,
    profiles: list[_RawProfile],
    merged: list[dict[str, _PluginSet]],
) -> list[str]:
    errs: list[str] = []
    if cc.burst < 0:
        errs.append(_invalid("clientConnection.burst", cc.burst, "must be non-negative"))
    if le.leader_elect:
        lp = "leaderElection"
        if le.lease_duration <= 0:
            errs.append(_invalid_d(f"{lp}.leaseDuration", le.lease_duration, "must be greater than zero"))
        if le.renew_deadline <= 0:
            errs.append(_invalid_d(f"{lp}.renewDeadline", le.renew_deadline, "must be greater than zero"))
        if le.retry_period <= 0:
            errs.append(_invalid_d(f"{lp}.retryPeriod", le.retry_period, "must be greater than zero"))
        if le.lease_duration <= le.renew_deadline:
            errs.append(
                _invalid_d(f"{lp}.leaseDuration", le.renew_deadline, "must be greater than `RenewDeadline`")
            )
        if not le.resource_lock:
            errs.append(_required(f"{lp}.resourceLock"))
        if not le.resource_namespace:
            errs.append(_required(f"{lp}.resourceNamespace"))
        if not le.resource_name:
            errs.append(_required(f"{lp}.resourceName"))
        if le.resource_lock != "leases":
            errs.append(
                _invalid(f"{lp}.resourceLock", le.resource_lock, 'resourceLock value must be "leases"')
            )
    if top["parallelism"] <= 0:
        errs.append(
            _invalid("parallelism", top["parallelism"], "should be an integer value greater than zero")
        )

    seen: dict[str, int] = {}
    for i, prof in enumerate(profiles):
        path = f"profiles[{i}]"
        name = prof.scheduler_name or ""
        if not name:
            errs.append(_required(f"{path}.schedulerName"))
        if prof.percentage is not None and not 0 <= prof.percentage <= 100:
            errs.append(
                _invalid(f"{path}.percentageOfNodesToScore", prof.percentage, "not in valid range [0-100]")
            )
        names_seen: set[str] = set()
        for j, (cname, _args) in enumerate(prof.plugin_config):
            if cname in names_seen:
                errs.append(f"{path}.pluginConfig[{j}]: Duplicate value: {_fmt(cname)}")
            names_seen.add(cname)
        if name in seen:
            errs.append(f"{path}.schedulerName: Duplicate value: {_fmt(name)}")
        seen[name] = i
    errs.extend(_validate_common_queue_sort(profiles, merged))

    pct = top["percentageOfNodesToScore"]
    if not 0 <= pct <= 100:
        errs.append(_invalid("percentageOfNodesToScore", pct, "not in valid range [0-100]"))
    initial, maximum = top["podInitialBackoffSeconds"], top["podMaxBackoffSeconds"]
    if initial <= 0:
        errs.append(_invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    if maximum < initial:
        errs.append(
            _invalid(
                "podMaxBackoffSeconds", maximum, "must be greater than or equal to PodInitialBackoffSeconds"
            )
        )
    return errs


def _invalid_d(path: str, seconds: float, detail: str) -> str:
    return f"{path}: Invalid value: {format_go_duration(seconds)}: {detail}"


def _queue_sort_key(ps: _PluginSet) -> tuple:
    return (tuple((e.name, e.weight or 0) for e in ps.enabled), tuple(ps.disabled))


def _fmt_plugin_set(ps: _PluginSet) -> str:
    enabled = ", ".join(e.name if not e.weight else f"{e.name}({e.weight})" for e in ps.enabled)
    return f"{{enabled: [{enabled}], disabled: [{', '.join(ps.disabled)}]}}"


def _validate_common_queue_sort(
    profiles: list[_RawProfile], merged: list[dict[str, _PluginSet]]
) -> list[str]:
    # Upstream compares the merged queueSort sets (multiPoint is not looked at) and the args of
    # the first profile's explicit queueSort plugin.
    errs: list[str] = []
    canon = merged[0]["queueSort"]
    qs_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            _invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    qs_args: dict | None = None
    for cname, args in profiles[0].plugin_config:
        if qs_name and cname == qs_name:
            qs_args = args
    for i in range(1, len(profiles)):
        curr = merged[i]["queueSort"]
        if _queue_sort_key(curr) != _queue_sort_key(canon):
            errs.append(
                f"profiles[{i}].plugins.queueSort: Invalid value: {_fmt_plugin_set(curr)}: "
                "queueSort must be the same for all profiles"
            )
        for cname, args in profiles[i].plugin_config:
            if cname == qs_name and args != qs_args:
                errs.append(
                    f"profiles[{i}].pluginConfig.args: Invalid value: {args}: "
                    "queueSort must be the same for all profiles"
                )
    return errs


# ---------------------------------------------------------------------------------------------
# Entry points

_TOP_KEYS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_LE_KEYS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CC_KEYS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


def _decode_leader_election(raw: Any) -> LeaderElection:
    if raw is None:
        return LeaderElection()
    obj = _mapping("leaderElection", raw)
    _check_keys("leaderElection", obj, _LE_KEYS)

    def dur(key: str, default: float) -> float:
        # Upstream defaults zero durations too (RecommendedDefaultLeaderElectionConfiguration).
        v = obj.get(key)
        d = 0.0 if v is None else _duration(f"leaderElection.{key}", v)
        return default if d == 0 else d

    def text(key: str, default: str) -> str:
        v = obj.get(key)
        s = "" if v is None else _str(f"leaderElection.{key}", v)
        return s or default

    elect = obj.get("leaderElect")
    return LeaderElection(
        leader_elect=True if elect is None else _bool("leaderElection.leaderElect", elect),
        lease_duration=dur("leaseDuration", 15.0),
        renew_deadline=dur("renewDeadline", 10.0),
        retry_period=dur("retryPeriod", 2.0),
        resource_lock=text("resourceLock", "leases"),
        resource_name=text("resourceName", "kube-scheduler"),
        resource_namespace=text("resourceNamespace", "kube-system"),
    )


def _decode_client_connection(raw: Any) -> ClientConnection:
    if raw is None:
        return ClientConnection()
    obj = _mapping("clientConnection", raw)
    _check_keys("clientConnection", obj, _CC_KEYS)
    for key in ("kubeconfig", "acceptContentTypes", "contentType"):
        if obj.get(key) is not None:
            _str(f"clientConnection.{key}", obj[key])
    qps = 0.0 if obj.get("qps") is None else _float("clientConnection.qps", obj["qps"])
    burst = 0 if obj.get("burst") is None else _int("clientConnection.burst", obj["burst"])
    return ClientConnection(
        kubeconfig=obj.get("kubeconfig") or "",
        qps=qps or 50.0,  # zero means "unset" upstream
        burst=burst or 100,
        content_type=obj.get("contentType") or "application/vnd.kubernetes.protobuf",
    )


def parse_config(
    doc: Mapping[str, Any] | None, registry: Mapping[str, type[Plugin]] | None = None
) -> SchedulerConfig:
    """Decode, default and validate a KubeSchedulerConfiguration document (already parsed YAML)."""
    if registry is None:
        registry = plugin_registry.default_registry()
    if doc is None:
        doc = {}
    top_obj = _mapping("<root>", doc)

    api_version, kind = top_obj.get("apiVersion"), top_obj.get("kind")
    if not api_version:
        raise ConfigError(f'apiVersion: Required value: must be "{API_VERSION}"')
    if api_version != API_VERSION:
        raise ConfigError(
            f'apiVersion: Unsupported value: {_fmt(api_version)}: supported values: "{API_VERSION}"'
        )
    if not kind:
        raise ConfigError(f'kind: Required value: must be "{KIND}"')
    if kind != KIND:
        raise ConfigError(f'kind: Unsupported value: {_fmt(kind)}: supported values: "{KIND}"')
    _check_keys("", top_obj, _TOP_KEYS)

    def opt_int(key: str, default: int, bounds: tuple[int, int] = _INT32) -> int:
        v = top_obj.get(key)
        return default if v is None else _int(key, v, bounds)

    top = {
        "parallelism": opt_int("parallelism", 16),
        "percentageOfNodesToScore": opt_int("percentageOfNodesToScore", 0),
        "podInitialBackoffSeconds": opt_int("podInitialBackoffSeconds", 1, _INT64),
        "podMaxBackoffSeconds": opt_int("podMaxBackoffSeconds", 10, _INT64),
    }
    for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        if top_obj.get(key) is not None:
            _bool(key, top_obj[key])
    if top_obj.get("percentageOfPlacementsToScore") is not None:
        raise ConfigError(
            "percentageOfPlacementsToScore: Forbidden: requires the TopologyAwareWorkloadScheduling "
            "feature gate, which pyscheduler does not enable"
        )
    if _list("extenders", top_obj.get("extenders")):
        raise ConfigError("extenders: Forbidden: scheduler extenders are not supported by pyscheduler")
    le = _decode_leader_election(top_obj.get("leaderElection"))
    cc = _decode_client_connection(top_obj.get("clientConnection"))

    profiles = [
        _decode_profile(f"profiles[{i}]", p) for i, p in enumerate(_list("profiles", top_obj.get("profiles")))
    ]
    if not profiles:
        profiles = [_RawProfile(None, None, None, [])]
    # The default name is given only when there is a single profile (defaults.go).
    if len(profiles) == 1 and profiles[0].scheduler_name is None:
        profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    merged = [_merged_plugins(p.plugins) for p in profiles]

    errs = _validate(top, le, cc, profiles, merged)
    if errs:
        # utilerrors.Aggregate formatting: a lone error as is, several as "[a, b]".
        raise ConfigError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")

    built: list[Profile] = []
    for i, (prof, plugins) in enumerate(zip(profiles, merged)):
        name = prof.scheduler_name or ""
        points = _build_profile_plugins(f"profiles[{i}]", name, plugins, registry)
        enabled = {ref.name for refs in points.values() for ref in refs}
        args = {n: a for n, a in prof.plugin_config if a is not None and n in enabled}
        built.append(Profile(name, points, args, prof.percentage))

    return SchedulerConfig(
        profiles=tuple(built),
        parallelism=top["parallelism"],
        percentage_of_nodes_to_score=top["percentageOfNodesToScore"],
        pod_initial_backoff_seconds=float(top["podInitialBackoffSeconds"]),
        pod_max_backoff_seconds=float(top["podMaxBackoffSeconds"]),
        client_connection=cc,
        leader_election=le,
    )


def load_config(path: str | None, registry: Mapping[str, type[Plugin]] | None = None) -> SchedulerConfig:
    """Load a KubeSchedulerConfiguration YAML file; ``None`` gives the upstream defaults."""
    if path is None:
        return parse_config({"apiVersion": API_VERSION, "kind": KIND}, registry)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_yaml_problem(exc)}") from None
    if len(docs) > 1:
        raise ConfigError(f"{path}: expected one YAML document, found {len(docs)}")
    doc = docs[0] if docs else {}
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{path}: invalid config: top level must be a mapping, got {_type_name(doc)}")
    return parse_config(doc, registry)


def error_line(where: str, exc: Exception) -> str:
    """``where: message`` once: file-level errors (unreadable, not UTF-8, bad YAML) already name it."""
    msg = str(exc)
    return msg if msg.startswith(where + ":") else f"{where}: {msg}"


# `pyscheduler run` without --config. kube-scheduler's own defaults (profile "default-scheduler",
# Lease kube-system/kube-scheduler) would make a second scheduler answer for every ordinary pod
# and contend for the real scheduler's Lease; these names are pyscheduler's own (manifests/).
RUN_DEFAULT_SCHEDULER_NAME = "pyscheduler"
RUN_DEFAULT_LEASE_NAMESPACE = "pyscheduler"
RUN_DEFAULT_LEASE_NAME = "pyscheduler"


def load_run_config(path: str | None, registry: Mapping[str, type[Plugin]] | None = None) -> SchedulerConfig:
    """``load_config`` for ``run``: a file as written, or without one pyscheduler's own names."""
    if path is not None:
        return load_config(path, registry)
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "leaderElection": {
            "resourceNamespace": RUN_DEFAULT_LEASE_NAMESPACE,
            "resourceName": RUN_DEFAULT_LEASE_NAME,
        },
        "profiles": [{"schedulerName": RUN_DEFAULT_SCHEDULER_NAME}],
    }
    return parse_config(doc, registry)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "syntax error"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        return problem
    return " ".join(str(exc).split())
