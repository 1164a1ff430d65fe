"""The KubeSchedulerConfiguration v1 values the rest of the scheduler reads (upstream
apis/config/types.go), after decoding, defaulting and validation.

A profile names its plugins and never holds their classes: the plugin registry and the
extension-point expansion belong to whoever builds frameworks (core/profiles.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.config.features import DEFAULT_GATES, FeatureGates

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

MULTI_POINT = "multiPoint"
# The extension points a profile configures (the v1 Plugins struct), besides multiPoint.
EXTENSION_POINT_NAMES: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    # Pod-group scheduling (kube-scheduler v1.36.3, used with TopologyAwareWorkloadScheduling).
    "placementGenerate",
    "placementScore",
)
PLACEMENT_POINTS: tuple[str, ...] = ("placementGenerate", "placementScore")
# The v1 Plugins struct's JSON order: the pod's points, multiPoint, then the placement ones.
V1_PLUGINS_ORDER: tuple[str, ...] = (
    *(p for p in EXTENSION_POINT_NAMES if p not in PLACEMENT_POINTS),
    "multiPoint",
    *PLACEMENT_POINTS,
)
CONFIG_POINTS: tuple[str, ...] = (MULTI_POINT, *EXTENSION_POINT_NAMES)


class ConfigError(ValueError):
    """A configuration problem; ``str(e)`` is one line naming the offending field."""


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0  # only meaningful at "score", "placementScore" and "multiPoint"; 0 means "not given"
    # Position in the user's enabled list, for error messages; None for a default plugin.
    index: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PluginSet:
    """One extension point's plugins (upstream config.PluginSet)."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Profile:
    scheduler_name: str
    # Per configured extension point (multiPoint included), the default plugins merged in.
    plugins: Mapping[str, PluginSet]
    # Plugin name -> args without apiVersion/kind; the plugin factories default and validate them.
    plugin_args: Mapping[str, dict]
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
class ExtenderTLSConfig:
    """How to reach an extender over TLS (upstream ExtenderTLSConfig); ``*_data`` (PEM bytes,
    base64 in the file) win over the matching ``*_file``."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    """An extended resource an extender manages; ``ignored_by_scheduler`` makes NodeResourcesFit
    skip it (upstream ExtenderManagedResource)."""

    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class Extender:
    """One scheduler extender (upstream config.Extender): an empty verb means the extender does
    not offer that call. ``http_timeout`` in seconds as written: 0 means the 5 s default, a
    negative value no timeout at all (Go's http.Client), both decided when the client is built."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = 0.0
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


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
    # DebuggingConfiguration: /debug/pprof and /debug/flags/v, and with them the block and mutex
    # profiles; defaults true, contention only when profiling is on (v1 defaults.go).
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    # With leader election: watch the cluster only once the Lease is held (a standby keeps no
    # cache; it lists everything after it takes over).
    delay_cache_until_active: bool = False
    # What the file says that has no effect (and upstream accepts): one line each, for the log.
    warnings: tuple[str, ...] = ()
    # --feature-gates (not in the file): what defaults and validation used, and what plugins get.
    feature_gates: FeatureGates = DEFAULT_GATES
    # Shared by every profile, in the file's order (scheduler/extender builds their clients).
    extenders: tuple[Extender, ...] = ()
