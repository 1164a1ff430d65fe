"""DynamicResourcesArgs (kube-scheduler config/v1 types.go): decoding, defaults and validation
with v1.36.3's messages.

    filterTimeout   how long Filter may search devices for one node (DRASchedulerFilterTimeout);
                    0 turns the limit off; default 10s when the gate is on
    bindingTimeout  how long PreBind waits for device binding conditions
                    (DRADeviceBindingConditions and DRAResourceClaimDeviceStatus); at least 1s;
                    default 10m when both gates are on

Upstream decodes the args strictly (apis/config/v1, sigs.k8s.io/json), defaults them
(SetDefaults_DynamicResourcesArgs) and validates them with ValidateDynamicResourcesArgs
(validation_pluginargs.go), which, unlike the REST API, refuses a field whose gate is off. The
decoded args keep Go duration strings, so the plugin and ``--write-config-to`` style output see
what upstream would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.config.duration import format_duration_ns, parse_duration_ns
from scheduler.config.features import DEFAULT_GATES
from scheduler.config.types import ConfigError

NAME = "DynamicResources"
FIELDS = ("filterTimeout", "bindingTimeout")
FILTER_TIMEOUT_DEFAULT = "10s"  # DynamicResourcesFilterTimeoutDefault
BINDING_TIMEOUT_DEFAULT = "10m0s"  # DynamicResourcesBindingTimeoutDefault

FILTER_TIMEOUT_GATE = "DRASchedulerFilterTimeout"
BINDING_TIMEOUT_GATES = ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus")



def default_gate(name: str) -> bool:
    """A gate's state in kube-scheduler v1.36.3 without --feature-gates."""
    return DEFAULT_GATES.enabled(name)


def _json_type(value: Any) -> str:
    """What encoding/json calls a YAML value that does not fit a string field."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def decode_args(config_path: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Strict decoding of ``args`` (apiVersion and kind removed) as upstream decodes the
    pluginConfig entry at ``config_path`` ("profiles[0].pluginConfig[1]"). Each duration is
    checked by Go's rules and kept as written; null means unset."""
    where = f"decoding .{config_path}: decoding args for plugin {NAME}"
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key not in FIELDS:
            raise ConfigError(
                f"strict decoding error: decoding .{config_path}: strict decoding error: decoding args for "
                f'plugin {NAME}: strict decoding error: unknown field "{key}"'
            )
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigError(
                f"{where}: json: cannot unmarshal {_json_type(value)} into Go struct field "
                f"DynamicResourcesArgs.{key} of type string"
            )
        try:
            parse_duration_ns(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        out[key] = value
    return out


def validate_args(path: str, args: Mapping[str, Any], gate_enabled: Callable[[str], bool] = default_gate) -> list[str]:
    """ValidateDynamicResourcesArgs: the errors for the decoded ``args`` at ``path``
    ("profiles[0].pluginConfig[1].args")."""
    errs: list[str] = []
    filter_timeout = args.get("filterTimeout")
    if gate_enabled(FILTER_TIMEOUT_GATE):
        if filter_timeout is not None and parse_duration_ns(filter_timeout) < 0:
            shown = format_duration_ns(parse_duration_ns(filter_timeout))
            errs.append(f'{path}.filterTimeout: Invalid value: "{shown}": must be zero or positive')
    elif filter_timeout is not None:
        # Upstream's message names the gate DRASchedulingFilterTimeout (sic).
        errs.append(f"{path}.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled")
    binding_timeout = args.get("bindingTimeout")
    if all(gate_enabled(g) for g in BINDING_TIMEOUT_GATES):
        if binding_timeout is not None and parse_duration_ns(binding_timeout) < 1_000_000_000:
            shown = format_duration_ns(parse_duration_ns(binding_timeout))
            errs.append(f'{path}.bindingTimeout: Invalid value: "{shown}": must be at least 1 second')
    elif binding_timeout is not None:
        errs.append(
            f"{path}.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
            "feature gate is disabled"
        )
    return errs


def timeouts(args: Mapping[str, Any] | None, filter_timeout_gate: bool = True) -> tuple[float, float]:
    """(filter timeout, binding timeout) in seconds after upstream's defaulting (the filter
    timeout's default needs DRASchedulerFilterTimeout on); a filter timeout of 0 means none."""
    args = args or {}
    filter_timeout = args.get("filterTimeout")
    if filter_timeout is None:
        filter_timeout = FILTER_TIMEOUT_DEFAULT if filter_timeout_gate else "0s"
    binding_timeout = args.get("bindingTimeout") or BINDING_TIMEOUT_DEFAULT
    return parse_duration_ns(filter_timeout) / 1e9, parse_duration_ns(binding_timeout) / 1e9
