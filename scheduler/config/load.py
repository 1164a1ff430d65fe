"""Loading a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): the pipeline and the
file around it.

Upstream's order, so that the same inputs fail at the same step:

1. strict decoding (decode.py: unknown fields and wrong types are errors),
2. defaulting (defaults.py, v1 defaults.go), including the merge of each profile's plugins
   into the default multiPoint set (default_plugins.go mergePluginSet),
3. ValidateKubeSchedulerConfiguration (validation.py): every error is collected and reported
   together.

The checks against the plugin registry (unknown plugins, extension points, the multiPoint
expansion) come when frameworks are built from the profiles (core/profiles.py), as upstream's
NewFramework does them. Plugin arguments are passed through untouched (minus
apiVersion/kind): the plugin factories default and validate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from scheduler.config.decode import RawProfile, decode, type_name
from scheduler.config.defaults import merged_plugins
from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.config.types import API_VERSION, DEFAULT_SCHEDULER_NAME, KIND, ConfigError, Profile, SchedulerConfig
from scheduler.config.validation import validate

# `pyscheduler run` without --config. kube-scheduler's own defaults (profile "default-scheduler",
# Lease kube-system/kube-scheduler) would make a second scheduler answer for every ordinary pod
# and contend for the real scheduler's Lease; these names are pyscheduler's own (manifests/).
RUN_DEFAULT_SCHEDULER_NAME = "pyscheduler"
RUN_DEFAULT_LEASE_NAMESPACE = "pyscheduler"
RUN_DEFAULT_LEASE_NAME = "pyscheduler"


def parse_config(doc: Mapping[str, Any] | None, gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    """Decode, default and validate a KubeSchedulerConfiguration document (already parsed YAML)
    under the resolved feature ``gates``."""
    d = decode(doc)
    if not d.profiles:
        d.profiles = [RawProfile(None, None, None, [])]
    # The default name is given only when there is a single profile (defaults.go).
    if len(d.profiles) == 1 and d.profiles[0].scheduler_name is None:
        d.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    merged = [merged_plugins(p.plugins, gates) for p in d.profiles]

    errs = validate(d, merged, gates.enabled)
    if errs:
        # utilerrors.Aggregate formatting: a lone error as is, several as "[a, b]".
        raise ConfigError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")

    profiles = tuple(
        Profile(
            prof.scheduler_name or "",
            plugins,
            {n: a for n, a in prof.plugin_config if a is not None and n not in prof.ignored},
            prof.percentage,
        )
        for prof, plugins in zip(d.profiles, merged)
    )
    return SchedulerConfig(
        profiles=profiles,
        parallelism=d.parallelism,
        percentage_of_nodes_to_score=d.percentage_of_nodes_to_score,
        pod_initial_backoff_seconds=float(d.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=float(d.pod_max_backoff_seconds),
        client_connection=d.client_connection,
        leader_election=d.leader_election,
        enable_profiling=d.enable_profiling,
        enable_contention_profiling=d.enable_contention_profiling,
        delay_cache_until_active=d.delay_cache_until_active,
        warnings=tuple(w for prof in d.profiles for w in prof.ignored.values()),
        feature_gates=gates,
        extenders=tuple(d.extenders),
    )


def load_config(path: str | None, gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    """Load a KubeSchedulerConfiguration YAML file; ``None`` gives the upstream defaults."""
    if path is None:
        return parse_config({"apiVersion": API_VERSION, "kind": KIND}, gates)
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
        raise ConfigError(f"{path}: invalid config: top level must be a mapping, got {type_name(doc)}")
    return parse_config(doc, gates)


def error_line(where: str, exc: Exception) -> str:
    """``where: message`` once: file-level errors (unreadable, not UTF-8, bad YAML) already name it."""
    msg = str(exc)
    return msg if msg.startswith(where + ":") else f"{where}: {msg}"


def load_run_config(path: str | None, gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    """``load_config`` for ``run``: a file as written, or without one pyscheduler's own names."""
    if path is not None:
        return load_config(path, gates)
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "leaderElection": {
            "resourceNamespace": RUN_DEFAULT_LEASE_NAMESPACE,
            "resourceName": RUN_DEFAULT_LEASE_NAME,
        },
        "profiles": [{"schedulerName": RUN_DEFAULT_SCHEDULER_NAME}],
    }
    return parse_config(doc, gates)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "syntax error"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        return problem
    return " ".join(str(exc).split())
