"""Strict decoding: unknown fields, wrong types and wrong kinds are errors naming the field.

Upstream: sigs.k8s.io/yaml strict decoding of the v1 types, and
pkg/scheduler/apis/config/v1/types.go decodeNestedObjects for plugin args.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, ConfigError, parse_config


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


# ---------------------------------------------------------------------------------------------
# Decoding errors

DECODE_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-top-level-field", doc(foo=1), 'strict decoding error: unknown field "foo"'),
    (
        "unknown-nested-field",
        doc(profiles=[{"plugins": {"filters": {}}}]),
        'strict decoding error: unknown field "profiles[0].plugins.filters"',
    ),
    (
        "unknown-plugin-field",
        doc(profiles=[{"plugins": {"filter": {"enabled": [{"name": "X", "wieght": 1}]}}}]),
        'strict decoding error: unknown field "profiles[0].plugins.filter.enabled[0].wieght"',
    ),
    (
        "wrong-api-version",
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
        'supported values: "kubescheduler.config.k8s.io/v1"',
    ),
    (
        "wrong-kind",
        {"apiVersion": API_VERSION, "kind": "Foo"},
        'kind: Unsupported value: "Foo": supported values: "KubeSchedulerConfiguration"',
    ),
    (
        "missing-api-version",
        {"kind": KIND},
        'apiVersion: Required value: must be "kubescheduler.config.k8s.io/v1"',
    ),
    ("string-parallelism", doc(parallelism="16"), 'parallelism: Invalid value: "16": must be an integer'),
    ("bool-parallelism", doc(parallelism=True), "parallelism: Invalid value: true: must be an integer"),
    ("int32-overflow", doc(parallelism=2**31), "parallelism: Invalid value: 2147483648: out of range"),
    (
        "bad-duration",
        doc(leaderElection={"leaseDuration": "15"}),
        'leaderElection.leaseDuration: Invalid value: "15": time: missing unit in duration "15"',
    ),
    (
        "duration-must-be-string",
        doc(leaderElection={"leaseDuration": 15}),
        "leaderElection.leaseDuration: Invalid value: 15: must be a string",
    ),
    (
        "plugin-without-name",
        doc(profiles=[{"plugins": {"filter": {"enabled": [{"weight": 1}]}}}]),
        "profiles[0].plugins.filter.enabled[0].name: Required value",
    ),
    ("profiles-not-a-list", doc(profiles={"a": 1}), "profiles: Invalid value: object: must be a list"),
    # Fields kube-scheduler v1.36.3's v1 types do not have (checked against the binary:
    # "strict decoding error: unknown field ...").
    (
        "no-top-level-percentage-of-placements",
        doc(percentageOfPlacementsToScore=50),
        'strict decoding error: unknown field "percentageOfPlacementsToScore"',
    ),
    (
        "no-profile-percentage-of-placements",
        doc(profiles=[{"schedulerName": "x", "percentageOfPlacementsToScore": 50}]),
        'strict decoding error: unknown field "profiles[0].percentageOfPlacementsToScore"',
    ),
    (
        "no-placement-feasible-point",
        doc(profiles=[{"plugins": {"placementFeasible": {"enabled": [{"name": "Foo"}]}}}]),
        'strict decoding error: unknown field "profiles[0].plugins.placementFeasible"',
    ),
    (
        "no-pod-group-post-filter-point",
        doc(profiles=[{"plugins": {"podGroupPostFilter": {}}}]),
        'strict decoding error: unknown field "profiles[0].plugins.podGroupPostFilter"',
    ),
    (
        "extender-unknown-field",
        doc(extenders=[{"urlPrefix": "http://x", "filterverb": "f"}]),
        'strict decoding error: unknown field "extenders[0].filterverb"',
    ),
    (
        "extender-tls-unknown-field",
        doc(extenders=[{"tlsConfig": {"caFiles": "x"}}]),
        'strict decoding error: unknown field "extenders[0].tlsConfig.caFiles"',
    ),
    (
        "extender-resource-unknown-field",
        doc(extenders=[{"managedResources": [{"name": "example.com/a", "ignored": True}]}]),
        'strict decoding error: unknown field "extenders[0].managedResources[0].ignored"',
    ),
    (
        "extender-weight-not-int",
        doc(extenders=[{"weight": "2"}]),
        'extenders[0].weight: Invalid value: "2": must be an integer',
    ),
    (
        "extender-timeout-not-duration",
        doc(extenders=[{"httpTimeout": "5"}]),
        'extenders[0].httpTimeout: Invalid value: "5": time: missing unit in duration "5"',
    ),
    (
        "extender-https-not-bool",
        doc(extenders=[{"enableHTTPS": "yes"}]),
        'extenders[0].enableHTTPS: Invalid value: "yes": must be a boolean',
    ),
    # encoding/json's base64 errors, offsets as Go reports them (checked against the binary).
    (
        "extender-cert-data-short",
        doc(extenders=[{"tlsConfig": {"certData": "YWJ"}}]),
        "extenders[0].tlsConfig.certData: illegal base64 data at input byte 0",
    ),
    (
        "extender-ca-data-bad-char",
        doc(extenders=[{"tlsConfig": {"caData": "YW*j"}}]),
        "extenders[0].tlsConfig.caData: illegal base64 data at input byte 2",
    ),
    ("extenders-not-a-list", doc(extenders={"urlPrefix": "x"}), "extenders: Invalid value: object: must be a list"),
]


@pytest.mark.parametrize(("d", "msg"), [c[1:] for c in DECODE_ERRORS], ids=[c[0] for c in DECODE_ERRORS])
def test_decode_errors(d: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(d)
    assert str(ei.value) == msg


def test_integral_float_is_accepted_as_int() -> None:
    # sigs.k8s.io/yaml turns YAML 16.0 into JSON 16, which decodes into an int32.
    assert parse_config(doc(parallelism=16.0)).parallelism == 16


# ---------------------------------------------------------------------------------------------
# Plugin args


def test_plugin_args_pass_through_without_type_meta() -> None:
    args = {
        "apiVersion": API_VERSION,
        "kind": "NodeResourcesFitArgs",
        "scoringStrategy": {"type": "MostAllocated"},
    }
    c = parse_config(
        doc(
            profiles=[
                {
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": args},
                        {"name": "Nope", "args": {"minCandidateNodesPercentage": 5}},  # kept: opaque, by name
                        {"name": "NodeAffinity"},  # no args: the factory's defaults apply
                    ]
                }
            ]
        ),
    )
    assert c.profiles[0].plugin_args == {
        "NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}},
        "Nope": {"minCandidateNodesPercentage": 5},
    }
    assert args["kind"] == "NodeResourcesFitArgs"  # the input is not modified


def test_plugin_args_of_wrong_kind() -> None:
    # v1 types.go decodeNestedObjects: "args for plugin %s were not of type %s, got %s".
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args: args for plugin NodeAffinity"):
        parse_config(
            doc(profiles=[{"pluginConfig": [{"name": "NodeAffinity", "args": {"kind": "InterPodAffinityArgs"}}]}]),
        )


def test_placement_points_are_decoded_and_merged() -> None:
    # v1.36.3 Plugins has placementGenerate and placementScore (types.go); mergePlugins merges
    # them into the (empty) defaults like every other point.
    c = parse_config(
        doc(
            profiles=[
                {
                    "plugins": {
                        "placementGenerate": {"enabled": [{"name": "TopologyPlacementGenerator"}]},
                        "placementScore": {
                            "enabled": [{"name": "PodGroupPodsCount", "weight": 3}],
                            "disabled": [{"name": "X"}],
                        },
                    }
                }
            ]
        )
    )
    plugins = c.profiles[0].plugins
    assert [(e.name, e.weight) for e in plugins["placementGenerate"].enabled] == [("TopologyPlacementGenerator", 0)]
    assert [(e.name, e.weight) for e in plugins["placementScore"].enabled] == [("PodGroupPodsCount", 3)]
    assert plugins["placementScore"].disabled == ("X",)


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        # The v1.36.3 binary's --write-config-to output for each input (apis/config/v1/defaults.go).
        ({}, (True, True, False)),
        ({"enableProfiling": False}, (False, False, False)),
        ({"enableProfiling": False, "enableContentionProfiling": True}, (False, True, False)),
        ({"enableContentionProfiling": False}, (True, False, False)),
        ({"delayCacheUntilActive": True}, (True, True, True)),
    ],
)
def test_debugging_and_delay_cache_fields_are_carried(fields: dict[str, Any], want: tuple[bool, bool, bool]) -> None:
    c = parse_config({"apiVersion": API_VERSION, "kind": KIND, **fields})
    assert (c.enable_profiling, c.enable_contention_profiling, c.delay_cache_until_active) == want


@pytest.mark.parametrize(
    "args",
    [
        # The v1.36.3 binary accepts each (--write-config-to writes them back) and its factories
        # ignore them: these plugins have no args type.
        {"foo": 1},
        {"apiVersion": API_VERSION, "kind": "Foo"},
        {"apiVersion": "v9"},
        [1],
    ],
)
@pytest.mark.parametrize("plugin", ["ImageLocality", "NodeName", "TaintToleration"])
def test_args_of_plugins_without_an_args_type_are_accepted_and_said_to_have_no_effect(plugin: str, args: Any) -> None:
    c = parse_config(doc(profiles=[{"schedulerName": "a", "pluginConfig": [{"name": plugin, "args": args}]}]))
    assert plugin not in c.profiles[0].plugin_args
    assert c.warnings == (f"profiles[0].pluginConfig[0].args: plugin {plugin} takes no arguments, so they have no "
                          "effect (kube-scheduler v1.36.3 ignores them too)",)


def test_args_of_typed_plugins_still_name_their_type() -> None:
    with pytest.raises(ConfigError, match="args for plugin NodeAffinity were not of type NodeAffinityArgs"):
        parse_config(doc(profiles=[{"schedulerName": "a", "pluginConfig": [
            {"name": "NodeAffinity", "args": {"kind": "Foo"}}]}]))
