"""DynamicResourcesArgs: strict decoding, validation and defaults as kube-scheduler v1.36.3.

Every message below is the v1.36.3 binary's, from
``kube-scheduler --config FILE --write-config-to OUT`` with the same pluginConfig entry
(apis/config/validation/validation_pluginargs.go ValidateDynamicResourcesArgs, its tests in
validation_pluginargs_test.go; apis/config/v1/defaults.go SetDefaults_DynamicResourcesArgs).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, ConfigError, parse_config
from scheduler.config.dynamicresources import timeouts, validate_args


def doc(args: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND,
            "profiles": [{"schedulerName": "a", "pluginConfig": [{"name": "DynamicResources", "args": args}]}]}


P = "profiles[0].pluginConfig[0]"


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ({"filterTimeout": "-1s"}, f'{P}.args.filterTimeout: Invalid value: "-1s": must be zero or positive'),
        ({"bindingTimeout": "500ms"}, f'{P}.args.bindingTimeout: Invalid value: "500ms": must be at least 1 second'),
        # Shown as Go prints the duration, not as written.
        ({"bindingTimeout": "-2000ms"}, f'{P}.args.bindingTimeout: Invalid value: "-2s": must be at least 1 second'),
        ({"bindingTimeout": "-2s", "filterTimeout": "-1s"},
         f'[{P}.args.filterTimeout: Invalid value: "-1s": must be zero or positive, '
         f'{P}.args.bindingTimeout: Invalid value: "-2s": must be at least 1 second]'),
        ({"filterTimeout": "abc"},
         f'decoding .{P}: decoding args for plugin DynamicResources: time: invalid duration "abc"'),
        ({"filterTimeout": 5},
         f"decoding .{P}: decoding args for plugin DynamicResources: json: cannot unmarshal number into Go struct "
         "field DynamicResourcesArgs.filterTimeout of type string"),
        ({"bindingTimeout": True},
         f"decoding .{P}: decoding args for plugin DynamicResources: json: cannot unmarshal bool into Go struct "
         "field DynamicResourcesArgs.bindingTimeout of type string"),
        ({"foo": 1},
         f"strict decoding error: decoding .{P}: strict decoding error: decoding args for plugin DynamicResources: "
         'strict decoding error: unknown field "foo"'),
    ],
)
def test_refused_as_upstream(args: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(doc(args))
    assert str(exc.value) == msg


@pytest.mark.parametrize(
    ("args", "want"),
    [
        # v1.36.3's --write-config-to shows filterTimeout 10s and bindingTimeout 10m0s by default.
        (None, (10.0, 600.0)),
        ({}, (10.0, 600.0)),
        ({"filterTimeout": "0s"}, (0.0, 600.0)),  # zero turns the limit off
        ({"filterTimeout": None, "bindingTimeout": "1s"}, (10.0, 1.0)),
        ({"filterTimeout": "1m30s", "bindingTimeout": "2m"}, (90.0, 120.0)),
    ],
)
def test_accepted_and_defaulted(args: dict[str, Any] | None, want: tuple[float, float]) -> None:
    cfg = parse_config(doc(args))
    assert timeouts(cfg.profiles[0].plugin_args.get("DynamicResources")) == want


@pytest.mark.parametrize(
    ("args", "gates", "want"),
    [
        # validation_pluginargs.go: a field whose gate is off is an error (unlike the REST API).
        ({"filterTimeout": "1s"}, {"DRASchedulerFilterTimeout": False},
         ["x.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"]),
        ({"bindingTimeout": "1s"}, {"DRADeviceBindingConditions": False},
         ["x.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate "
          "is disabled"]),
        ({"bindingTimeout": "1s"}, {"DRAResourceClaimDeviceStatus": False},
         ["x.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate "
          "is disabled"]),
        ({}, {"DRASchedulerFilterTimeout": False, "DRADeviceBindingConditions": False}, []),
        ({"filterTimeout": "-1s"}, {"DRASchedulerFilterTimeout": False},
         ["x.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"]),
    ],
)
def test_gated_fields(args: dict[str, Any], gates: dict[str, bool], want: list[str]) -> None:
    assert validate_args("x", args, lambda g: gates.get(g, True)) == want


def test_without_the_gate_no_filter_timeout() -> None:
    # SetDefaults_DynamicResourcesArgs leaves filterTimeout unset when the gate is off.
    assert timeouts({}, filter_timeout_gate=False) == (0.0, 600.0)
