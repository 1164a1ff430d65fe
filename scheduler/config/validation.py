"""Cross-field validation of a decoded configuration (upstream
apis/config/validation/validation.go ValidateKubeSchedulerConfiguration, and component-base's
leader-election checks): every error is collected, formatted like field.ErrorList."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.config import dynamicresources
from scheduler.config.decode import Document, RawProfile, fmt_value, invalid, required
from scheduler.config.duration import format_duration
from scheduler.config.pluginargs import is_qualified_name
from scheduler.config.types import Extender, LeaderElection, PluginSet


def validate(
    doc: Document,
    merged: Sequence[Mapping[str, PluginSet]],
    gate_enabled: Callable[[str], bool] = dynamicresources.default_gate,
) -> list[str]:
    """Every problem of ``doc``; ``merged`` holds each profile's plugins after defaulting;
    ``gate_enabled`` says which feature gates are on (plugin args depend on some)."""
    le, cc, profiles = doc.leader_election, doc.client_connection, doc.profiles
    errs: list[str] = []
    if cc.burst < 0:
        errs.append(invalid("clientConnection.burst", cc.burst, "must be non-negative"))
    errs.extend(validate_leader_election(le))
    if doc.parallelism <= 0:
        errs.append(invalid("parallelism", doc.parallelism, "should be an integer value greater than zero"))

    seen: dict[str, int] = {}
    for i, prof in enumerate(profiles):
        path = f"profiles[{i}]"
        name = prof.scheduler_name or ""
        if not name:
            errs.append(required(f"{path}.schedulerName"))
        if prof.percentage is not None and not 0 <= prof.percentage <= 100:
            errs.append(invalid(f"{path}.percentageOfNodesToScore", prof.percentage, "not in valid range [0-100]"))
        names_seen: set[str] = set()
        for j, (cname, args) in enumerate(prof.plugin_config):
            if cname in names_seen:
                errs.append(f"{path}.pluginConfig[{j}]: Duplicate value: {fmt_value(cname)}")
            names_seen.add(cname)
            if cname == dynamicresources.NAME and args is not None:
                errs.extend(dynamicresources.validate_args(f"{path}.pluginConfig[{j}].args", args, gate_enabled))
        if name in seen:
            errs.append(f"{path}.schedulerName: Duplicate value: {fmt_value(name)}")
        seen[name] = i
    errs.extend(_validate_common_queue_sort(profiles, merged))

    pct = doc.percentage_of_nodes_to_score
    if not 0 <= pct <= 100:
        errs.append(invalid("percentageOfNodesToScore", pct, "not in valid range [0-100]"))
    initial, maximum = doc.pod_initial_backoff_seconds, doc.pod_max_backoff_seconds
    if initial <= 0:
        errs.append(invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    if maximum < initial:
        errs.append(
            invalid("podMaxBackoffSeconds", maximum, "must be greater than or equal to PodInitialBackoffSeconds")
        )
    errs.extend(validate_extenders(doc.extenders))
    return errs


def validate_extenders(extenders: Sequence[Extender]) -> list[str]:
    """Upstream validateExtenders: a prioritizer needs a positive weight, managed resources are
    distinct extended resource names, and at most one extender binds."""
    errs: list[str] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(invalid(f"{path}.weight", ext.weight, "must have a positive weight applied to it"))
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            rpath = f"{path}.managedResources[{j}].name"
            errs.extend(_extended_resource_name_errors(rpath, res.name))
            if res.name in managed:
                errs.append(invalid(rpath, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
    if binders > 1:
        found = f"found {binders} extenders implementing bind"
        errs.append(invalid("extenders", found, "only one extender can implement bind"))
    return errs


def _json_string(value: str) -> str:
    """A string as field.Error prints a named string type (json.Marshal: HTML characters escaped)."""
    out = json.dumps(value, ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        out = out.replace(ch, esc)
    return out


def _extended_resource_name_errors(path: str, name: str) -> list[str]:
    """Upstream validateExtendedResourceName: a qualified name, outside the kubernetes.io
    namespace, not prefixed "requests.", and still qualified with that prefix (quota's name)."""
    msgs = is_qualified_name(name)
    if msgs:
        return [f"{path}: Invalid value: {_json_string(name)}: {m}" for m in msgs]
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or is_qualified_name("requests." + name):
        return [invalid(path, name, "is an invalid extended resource name")]
    return []



def validate_leader_election(le: LeaderElection) -> list[str]:
    """component-base's ValidateLeaderElectionConfiguration; also run on the leader-election
    flags applied over the configuration."""
    errs: list[str] = []
    if not le.leader_elect:
        return errs
    lp = "leaderElection"
    if le.lease_duration <= 0:
        errs.append(_invalid_d(f"{lp}.leaseDuration", le.lease_duration, "must be greater than zero"))
    if le.renew_deadline <= 0:
        errs.append(_invalid_d(f"{lp}.renewDeadline", le.renew_deadline, "must be greater than zero"))
    if le.retry_period <= 0:
        errs.append(_invalid_d(f"{lp}.retryPeriod", le.retry_period, "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        errs.append(_invalid_d(f"{lp}.leaseDuration", le.renew_deadline, "must be greater than `RenewDeadline`"))
    if not le.resource_lock:
        errs.append(required(f"{lp}.resourceLock"))
    if not le.resource_namespace:
        errs.append(required(f"{lp}.resourceNamespace"))
    if not le.resource_name:
        errs.append(required(f"{lp}.resourceName"))
    if le.resource_lock != "leases":
        errs.append(invalid(f"{lp}.resourceLock", le.resource_lock, 'resourceLock value must be "leases"'))
    return errs


def _invalid_d(path: str, seconds: float, detail: str) -> str:
    return f"{path}: Invalid value: {format_duration(seconds)}: {detail}"


def _queue_sort_key(ps: PluginSet) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    return (tuple((e.name, e.weight) for e in ps.enabled), tuple(ps.disabled))


def _fmt_plugin_set(ps: PluginSet) -> str:
    enabled = ", ".join(e.name if not e.weight else f"{e.name}({e.weight})" for e in ps.enabled)
    return f"{{enabled: [{enabled}], disabled: [{', '.join(ps.disabled)}]}}"


def _validate_common_queue_sort(profiles: list[RawProfile], merged: Sequence[Mapping[str, PluginSet]]) -> list[str]:
    # Upstream compares the merged queueSort sets (multiPoint is not looked at) and the args of
    # the first profile's explicit queueSort plugin.
    errs: list[str] = []
    canon = merged[0]["queueSort"]
    qs_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    qs_args: Any = None
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
