"""Strict decoding of a KubeSchedulerConfiguration v1 document (already parsed YAML) into
plain values: unknown fields and wrong types are errors, as sigs.k8s.io/yaml's strict mode
and the v1 types' decoders make them upstream. Leader election and client connection get
their defaults here, where a zero value means "unset" (v1 defaults.go).
"""

from __future__ import annotations

import base64
import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.config import dynamicresources
from scheduler.config.defaults import IN_TREE_PLUGINS
from scheduler.config.duration import parse_duration
from scheduler.config.types import (
    API_VERSION,
    CONFIG_POINTS,
    KIND,
    ClientConnection,
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElection,
    PluginRef,
    PluginSet,
)
from scheduler.model.schema import go_quote

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

# ---------------------------------------------------------------------------------------------
# Messages in field.Error's format (validation.py uses them too)


def fmt_value(value: Any) -> str:
    """Value as field.Error prints it: strings quoted, numbers plain."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {fmt_value(value)}: {detail}"


def required(path: str) -> str:
    return f"{path}: Required value"


def type_name(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "number", float: "number", list: "array"}.get(
        type(value), "object" if isinstance(value, Mapping) else type(value).__name__
    )


# ---------------------------------------------------------------------------------------------
# The decoded document


# The in-tree plugins with an args type of their own (apis/config/register.go). Args of any other
# in-tree plugin are kept undecoded upstream, whatever their shape, and its factory ignores them.
TYPED_ARGS = frozenset({
    "DefaultPreemption", "InterPodAffinity", "NodeResourcesFit", "PodTopologySpread", "VolumeBinding",
    "NodeResourcesBalancedAllocation", "NodeAffinity", "DynamicResources",
})


@dataclass(slots=True)
class RawProfile:
    scheduler_name: str | None
    percentage: int | None
    plugins: dict[str, PluginSet] | None  # None when the profile has no "plugins" at all
    plugin_config: list[tuple[str, Any]]
    # pluginConfig entries kept only for validation (no plugin reads them), with why, per entry.
    ignored: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Document:
    parallelism: int
    percentage_of_nodes_to_score: int
    pod_initial_backoff_seconds: int
    pod_max_backoff_seconds: int
    leader_election: LeaderElection
    client_connection: ClientConnection
    profiles: list[RawProfile]
    extenders: list[Extender] = field(default_factory=list)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False


def _check_keys(path: str, obj: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in obj:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            # sigs.k8s.io/json: fmt.Errorf("unknown field %q", key)
            raise ConfigError(f"strict decoding error: unknown field {go_quote(where)}")


def _mapping(path: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: Invalid value: {type_name(value)}: must be an object")
    return value


def _list(path: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: Invalid value: {type_name(value)}: must be a list")
    return value


def _int(path: str, value: Any, bounds: tuple[int, int] = _INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: Invalid value: {fmt_value(value)}: must be an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ConfigError(f"{path}: Invalid value: {value}: must be an integer")
        value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{path}: Invalid value: {value}: out of range")
    return value


def _float(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{path}: Invalid value: {fmt_value(value)}: must be a number")
    return float(value)


def _str(path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: Invalid value: {fmt_value(value)}: must be a string")
    return value


def _bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: Invalid value: {fmt_value(value)}: must be a boolean")
    return value


def _duration(path: str, value: Any) -> float:
    text = _str(path, value)
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: Invalid value: {fmt_value(text)}: {exc}") from None


def _decode_plugin_set(path: str, raw: Any) -> PluginSet:
    if raw is None:
        return PluginSet()
    obj = _mapping(path, raw)
    _check_keys(path, obj, ("enabled", "disabled"))
    enabled: list[PluginRef] = []
    disabled: list[str] = []
    for key in ("enabled", "disabled"):
        for i, item in enumerate(_list(f"{path}.{key}", obj.get(key))):
            ipath = f"{path}.{key}[{i}]"
            p = _mapping(ipath, item)
            _check_keys(ipath, p, ("name", "weight"))
            if p.get("name") is None:
                raise ConfigError(required(f"{ipath}.name"))
            name = _str(f"{ipath}.name", p["name"])
            weight = 0 if p.get("weight") is None else _int(f"{ipath}.weight", p["weight"])
            if key == "enabled":
                enabled.append(PluginRef(name, weight, i))
            else:
                disabled.append(name)
    return PluginSet(tuple(enabled), tuple(disabled))


def _decode_profile(path: str, raw: Any) -> RawProfile:
    obj = _mapping(path, raw)
    _check_keys(
        path,
        obj,
        (
            "schedulerName",
            "percentageOfNodesToScore",
            "plugins",
            "pluginConfig",
        ),
    )
    name = None if obj.get("schedulerName") is None else _str(f"{path}.schedulerName", obj["schedulerName"])
    pct = obj.get("percentageOfNodesToScore")
    pct = None if pct is None else _int(f"{path}.percentageOfNodesToScore", pct)
    plugins: dict[str, PluginSet] | None = None
    if obj.get("plugins") is not None:
        ppath = f"{path}.plugins"
        pobj = _mapping(ppath, obj["plugins"])
        _check_keys(ppath, pobj, CONFIG_POINTS)
        plugins = {p: _decode_plugin_set(f"{ppath}.{p}", pobj.get(p)) for p in CONFIG_POINTS}
    configs: list[tuple[str, Any]] = []
    ignored: dict[str, str] = {}
    for i, item in enumerate(_list(f"{path}.pluginConfig", obj.get("pluginConfig"))):
        cpath = f"{path}.pluginConfig[{i}]"
        c = _mapping(cpath, item)
        _check_keys(cpath, c, ("name", "args"))
        cname = _str(f"{cpath}.name", c.get("name", ""))
        args = c.get("args")
        if args is not None and cname in IN_TREE_PLUGINS and cname not in TYPED_ARGS:
            # Accepted in any shape, as upstream; said once at start, since nothing reads it.
            ignored[cname] = (f"{cpath}.args: plugin {cname} takes no arguments, so they have no effect "
                              "(kube-scheduler v1.36.3 ignores them too)")
            configs.append((cname, copy.deepcopy(args)))
            continue
        configs.append((cname, None if args is None else _decode_args(f"{cpath}.args", cname, args)))
    return RawProfile(name, pct, plugins, configs, ignored)


def _decode_args(path: str, plugin: str, raw: Any) -> dict:
    args = dict(_mapping(path, raw))
    api_version = args.pop("apiVersion", None)
    kind = args.pop("kind", None)
    # In-tree args are typed upstream (<Plugin>Args in the v1 group); a different type is refused.
    # Out-of-tree args are opaque to the scheduler, so they pass through unchecked.
    if plugin in IN_TREE_PLUGINS:
        want = f"{plugin}Args"
        if (kind is not None and kind != want) or (api_version is not None and api_version != API_VERSION):
            got = f"{kind or want}.{api_version or API_VERSION}"
            raise ConfigError(f"{path}: args for plugin {plugin} were not of type {want}.{API_VERSION}, got {got}")
    if plugin == dynamicresources.NAME:
        return dynamicresources.decode_args(path.removesuffix(".args"), args)
    return copy.deepcopy(args)


# ---------------------------------------------------------------------------------------------
# Extenders (v1 Extender, ExtenderTLSConfig, ExtenderManagedResource; no defaults in v1)

_EXTENDER_KEYS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_KEYS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _base64(path: str, value: Any) -> bytes:
    """A []byte field: standard base64 with padding, as encoding/json reads it (CR and LF
    skipped); a bad input names the offset Go's decoder stops at."""
    text = _str(path, value).encode()
    offset = _base64_error_offset(text)
    if offset is not None:
        raise ConfigError(f"{path}: illegal base64 data at input byte {offset}")
    return base64.b64decode(bytes(c for c in text if c not in b"\r\n"))


def _base64_error_offset(src: bytes) -> int | None:
    """Where Go's base64.StdEncoding.Decode fails on ``src`` (its decodeQuantum, step by step);
    None when the input decodes."""
    si, n = 0, len(src)
    newline = (ord("\n"), ord("\r"))
    while True:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return si - j  # a short final quantum: padding is required
            c = src[si]
            si += 1
            if c in _B64:
                j += 1
                continue
            if c in newline:
                continue
            if c != ord("="):
                return si - 1
            if j < 2:
                return si - 1
            if j == 2:
                while si < n and src[si] in newline:
                    si += 1
                if si == n:
                    return n
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < n and src[si] in newline:
                si += 1
            return si if si < n else None


def _opt(path: str, obj: Mapping[str, Any], key: str, conv: Callable[[str, Any], Any], default: Any) -> Any:
    """An optional member: ``default`` when absent or null, else checked by ``conv``."""
    v = obj.get(key)
    return default if v is None else conv(f"{path}.{key}", v)


def _decode_tls(path: str, raw: Any) -> ExtenderTLSConfig | None:
    if raw is None:
        return None
    obj = _mapping(path, raw)
    _check_keys(path, obj, _TLS_KEYS)
    return ExtenderTLSConfig(
        insecure=_opt(path, obj, "insecure", _bool, False),
        server_name=_opt(path, obj, "serverName", _str, ""),
        cert_file=_opt(path, obj, "certFile", _str, ""),
        key_file=_opt(path, obj, "keyFile", _str, ""),
        ca_file=_opt(path, obj, "caFile", _str, ""),
        cert_data=_opt(path, obj, "certData", _base64, b""),
        key_data=_opt(path, obj, "keyData", _base64, b""),
        ca_data=_opt(path, obj, "caData", _base64, b""),
    )


def _decode_extender(path: str, raw: Any) -> Extender:
    obj = _mapping(path, raw)
    _check_keys(path, obj, _EXTENDER_KEYS)
    resources: list[ExtenderManagedResource] = []
    for j, item in enumerate(_list(f"{path}.managedResources", obj.get("managedResources"))):
        rpath = f"{path}.managedResources[{j}]"
        r = _mapping(rpath, item)
        _check_keys(rpath, r, ("name", "ignoredByScheduler"))
        ignored = _opt(rpath, r, "ignoredByScheduler", _bool, False)
        resources.append(ExtenderManagedResource(_opt(rpath, r, "name", _str, ""), ignored))
    return Extender(
        url_prefix=_opt(path, obj, "urlPrefix", _str, ""),
        filter_verb=_opt(path, obj, "filterVerb", _str, ""),
        preempt_verb=_opt(path, obj, "preemptVerb", _str, ""),
        prioritize_verb=_opt(path, obj, "prioritizeVerb", _str, ""),
        weight=_opt(path, obj, "weight", lambda p, v: _int(p, v, _INT64), 0),
        bind_verb=_opt(path, obj, "bindVerb", _str, ""),
        enable_https=_opt(path, obj, "enableHTTPS", _bool, False),
        tls_config=_decode_tls(f"{path}.tlsConfig", obj.get("tlsConfig")),
        http_timeout=_opt(path, obj, "httpTimeout", _duration, 0.0),
        node_cache_capable=_opt(path, obj, "nodeCacheCapable", _bool, False),
        managed_resources=tuple(resources),
        ignorable=_opt(path, obj, "ignorable", _bool, False),
    )


# ---------------------------------------------------------------------------------------------
# The top level, leader election and client connection

_TOP_KEYS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
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


def decode(doc: Mapping[str, Any] | None) -> Document:
    """The document's values, typed and checked field by field; defaults and cross-field
    validation come after (load.parse_config)."""
    if doc is None:
        doc = {}
    top_obj = _mapping("<root>", doc)

    api_version, kind = top_obj.get("apiVersion"), top_obj.get("kind")
    if not api_version:
        raise ConfigError(f'apiVersion: Required value: must be "{API_VERSION}"')
    if api_version != API_VERSION:
        raise ConfigError(f'apiVersion: Unsupported value: {fmt_value(api_version)}: supported values: "{API_VERSION}"')
    if not kind:
        raise ConfigError(f'kind: Required value: must be "{KIND}"')
    if kind != KIND:
        raise ConfigError(f'kind: Unsupported value: {fmt_value(kind)}: supported values: "{KIND}"')
    _check_keys("", top_obj, _TOP_KEYS)

    def opt_int(key: str, default: int, bounds: tuple[int, int] = _INT32) -> int:
        v = top_obj.get(key)
        return default if v is None else _int(key, v, bounds)

    parallelism = opt_int("parallelism", 16)
    percentage = opt_int("percentageOfNodesToScore", 0)
    initial_backoff = opt_int("podInitialBackoffSeconds", 1, _INT64)
    max_backoff = opt_int("podMaxBackoffSeconds", 10, _INT64)
    flags = {key: None if top_obj.get(key) is None else _bool(key, top_obj[key])
             for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive")}
    # SetDefaults_KubeSchedulerConfiguration: profiling on; contention profiling follows it.
    profiling = True if flags["enableProfiling"] is None else flags["enableProfiling"]
    contention = flags["enableContentionProfiling"]
    contention = profiling if contention is None else contention
    raw_extenders = _list("extenders", top_obj.get("extenders"))
    extenders = [_decode_extender(f"extenders[{i}]", e) for i, e in enumerate(raw_extenders)]
    le = _decode_leader_election(top_obj.get("leaderElection"))
    cc = _decode_client_connection(top_obj.get("clientConnection"))
    profiles = [_decode_profile(f"profiles[{i}]", p) for i, p in enumerate(_list("profiles", top_obj.get("profiles")))]
    return Document(parallelism, percentage, initial_backoff, max_backoff, le, cc, profiles, extenders,
                    enable_profiling=profiling, enable_contention_profiling=contention,
                    delay_cache_until_active=bool(flags["delayCacheUntilActive"]))
