"""KubeSchedulerConfiguration v1 (upstream pkg/scheduler/apis/config): its types, decoding,
defaults and validation. It knows plugins by name only; frameworks are built from its
profiles in core/profiles.py."""

from scheduler.config.defaults import default_plugins
from scheduler.config.load import error_line, load_config, load_run_config, parse_config
from scheduler.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    ClientConnection,
    ConfigError,
    LeaderElection,
    PluginRef,
    PluginSet,
    Profile,
    SchedulerConfig,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "ClientConnection",
    "ConfigError",
    "LeaderElection",
    "PluginRef",
    "PluginSet",
    "Profile",
    "SchedulerConfig",
    "default_plugins",
    "error_line",
    "load_config",
    "load_run_config",
    "parse_config",
]
