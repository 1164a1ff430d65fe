"""KubeSchedulerConfiguration v1 loading: cases and expected values from upstream tests.

Upstream files cited (kubernetes/kubernetes):
- pkg/scheduler/apis/config/v1/default_plugins_test.go (TestMergePlugins)
- pkg/scheduler/apis/config/v1/defaults_test.go (TestSchedulerDefaults)
- pkg/scheduler/apis/config/testing/defaults/defaults.go (ExpandedPluginsV1)
- pkg/scheduler/apis/config/validation/validation_test.go (TestValidateKubeSchedulerConfigurationV1)
- pkg/scheduler/framework/runtime/framework_test.go (TestNewFrameworkMultiPointExpansion,
  TestNewFrameworkErrors, TestInitFrameworkWithScorePlugins)
- staging/src/k8s.io/component-base/config/validation/validation.go
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import decode as cfg
from scheduler.config.decode import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginRef,
    _Entry,
    _PluginSet,
    default_plugins,
    format_go_duration,
    load_config,
    merge_plugin_set,
    parse_config,
    parse_go_duration,
)
from scheduler.framework import interface as fw
from scheduler.framework.interface import EXTENSION_POINTS

# ---------------------------------------------------------------------------------------------
# Fake registries: stub classes with exactly the upstream extension points, so the tests do not
# depend on which real plugin modules import today.


def _stub(name: str, *bases: type) -> type[fw.Plugin]:
    return type(name, (*bases, fw.Plugin), {"name": name})


# Upstream in-tree plugins of the default profile that this project implements.
UPSTREAM = {
    "SchedulingGates": _stub("SchedulingGates", fw.PreEnqueuePlugin),
    "PrioritySort": _stub("PrioritySort", fw.QueueSortPlugin),
    "NodeUnschedulable": _stub("NodeUnschedulable", fw.FilterPlugin),
    "NodeName": _stub("NodeName", fw.FilterPlugin),
    "TaintToleration": _stub("TaintToleration", fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin),
    "NodeAffinity": _stub(
        "NodeAffinity", fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin
    ),
    "NodePorts": _stub("NodePorts", fw.PreFilterPlugin, fw.FilterPlugin),
    "NodeResourcesFit": _stub(
        "NodeResourcesFit", fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin
    ),
    "PodTopologySpread": _stub(
        "PodTopologySpread", fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin
    ),
    "InterPodAffinity": _stub(
        "InterPodAffinity", fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin
    ),
    "NodeResourcesBalancedAllocation": _stub(
        "NodeResourcesBalancedAllocation", fw.PreScorePlugin, fw.ScorePlugin
    ),
    "ImageLocality": _stub("ImageLocality", fw.ScorePlugin),
    "DefaultBinder": _stub("DefaultBinder", fw.BindPlugin),
    "NodeDeclaredFeatures": _stub("NodeDeclaredFeatures", fw.PreFilterPlugin, fw.FilterPlugin),
    "VolumeRestrictions": _stub("VolumeRestrictions", fw.PreFilterPlugin, fw.FilterPlugin),
    "NodeVolumeLimits": _stub("NodeVolumeLimits", fw.PreFilterPlugin, fw.FilterPlugin),
    "VolumeBinding": _stub(
        "VolumeBinding",
        fw.PreFilterPlugin,
        fw.FilterPlugin,
        fw.ReservePlugin,
        fw.PreScorePlugin,
        fw.ScorePlugin,
        fw.PreBindPlugin,
    ),
    "VolumeZone": _stub("VolumeZone", fw.PreFilterPlugin, fw.FilterPlugin),
    "DefaultPreemption": _stub("DefaultPreemption", fw.PreEnqueuePlugin, fw.PostFilterPlugin),
    "DynamicResources": _stub(
        "DynamicResources",
        fw.PreEnqueuePlugin,
        fw.PreFilterPlugin,
        fw.FilterPlugin,
        fw.PostFilterPlugin,
        fw.ScorePlugin,
        fw.ReservePlugin,
        fw.PreBindPlugin,
    ),
}

# The plugins of framework_test.go: testPlugin implements every point but PreEnqueue;
# scorePlugin1 is PreScore+Score; scoreWithNormalizePlugin1 is Score only.
FRAMEWORK = {
    "TestPlugin": _stub(
        "TestPlugin",
        fw.QueueSortPlugin,
        fw.PreFilterPlugin,
        fw.FilterPlugin,
        fw.PostFilterPlugin,
        fw.PreScorePlugin,
        fw.ScorePlugin,
        fw.ReservePlugin,
        fw.PermitPlugin,
        fw.PreBindPlugin,
        fw.BindPlugin,
        fw.PostBindPlugin,
    ),
    "ScorePlugin1": _stub("ScorePlugin1", fw.PreScorePlugin, fw.ScorePlugin),
    "ScorePlugin2": _stub("ScorePlugin2", fw.PreScorePlugin, fw.ScorePlugin),
    "ScoreWithNormalizePlugin1": _stub("ScoreWithNormalizePlugin1", fw.ScorePlugin),
    "QueueSortPlugin": _stub("QueueSortPlugin", fw.QueueSortPlugin),
    "BindPlugin": _stub("BindPlugin", fw.BindPlugin),
    "FilterOnly": _stub("FilterOnly", fw.FilterPlugin),
    "PermitOnly": _stub("PermitOnly", fw.PermitPlugin),
}

REG = {**UPSTREAM, **FRAMEWORK}


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def names(profile: cfg.Profile, point: str) -> list[str]:
    return [r.name for r in profile.plugins[point]]


def refs(profile: cfg.Profile, point: str) -> list[tuple[str, int]]:
    return [(r.name, r.weight) for r in profile.plugins[point]]


# The framework_test.go profiles carry no defaults; disabling every default multiPoint plugin
# reproduces that starting point on top of the v1 defaulting.
def bare(plugins: dict[str, Any]) -> dict[str, Any]:
    mp = plugins.setdefault("multiPoint", {})
    mp["disabled"] = [{"name": "*"}, *mp.get("disabled", [])]
    return plugins


# ---------------------------------------------------------------------------------------------
# Default plugin list


def test_default_plugins_match_upstream_v1_list() -> None:
    # v1.36.3 default_plugins_test.go TestApplyFeatureGates "Feature gate DynamicResourceAllocation
    # enabled" / "Feature gate NodeDeclaredFeatures enabled" (both gates on by default in v1.36:
    # DynamicResources with weight 2, NodeDeclaredFeatures appended after DefaultBinder).
    assert default_plugins() == [
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
    ]


def test_default_profile_expansion_matches_expanded_plugins_v1() -> None:
    # testing/defaults/defaults.go ExpandedPluginsV1, minus the plugins pyscheduler lacks.
    c = parse_config(doc(), UPSTREAM)
    assert len(c.profiles) == 1
    p = c.profiles[0]
    assert p.scheduler_name == "default-scheduler"
    assert names(p, "preEnqueue") == ["SchedulingGates", "DynamicResources", "DefaultPreemption"]
    assert names(p, "queueSort") == ["PrioritySort"]
    assert names(p, "preFilter") == [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]
    assert names(p, "filter") == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]
    # default_plugins.go applyDynamicResources: DynamicResources goes right before DefaultPreemption.
    assert names(p, "postFilter") == ["DynamicResources", "DefaultPreemption"]
    assert names(p, "preScore") == [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ]
    assert refs(p, "score") == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert names(p, "bind") == ["DefaultBinder"]
    assert names(p, "reserve") == ["VolumeBinding", "DynamicResources"]
    assert names(p, "preBind") == ["VolumeBinding", "DynamicResources"]
    for point in ("permit", "postBind"):
        assert names(p, point) == []
    assert list(p.plugins) == list(EXTENSION_POINTS)
    # Non-score points carry weight 0.
    assert all(r.weight == 0 for pt in EXTENSION_POINTS if pt != "score" for r in p.plugins[pt])


def test_real_registry_default_profile_loads() -> None:
    c = load_config(None)
    assert refs(c.profiles[0], "score")[0] == ("TaintToleration", 3)


# ---------------------------------------------------------------------------------------------
# Top-level defaults (defaults_test.go TestSchedulerDefaults "empty config")


def test_top_level_defaults() -> None:
    c = parse_config(doc(), UPSTREAM)
    assert c.parallelism == 16
    assert c.percentage_of_nodes_to_score == 0
    assert c.pod_initial_backoff_seconds == 1
    assert c.pod_max_backoff_seconds == 10
    assert c.pod_max_in_unschedulable_pods_duration == 300
    assert c.client_connection == cfg.ClientConnection(
        kubeconfig="", qps=50, burst=100, content_type="application/vnd.kubernetes.protobuf"
    )
    assert c.leader_election == cfg.LeaderElection(
        leader_elect=True,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        resource_lock="leases",
        resource_name="kube-scheduler",
        resource_namespace="kube-system",
    )
    assert c.profiles[0].percentage_of_nodes_to_score is None
    assert c.profiles[0].plugin_args == {}


def test_explicit_top_level_values_and_durations() -> None:
    # defaults_test.go "metrics and healthz address with no port" style: explicit values stay.
    c = parse_config(
        doc(
            parallelism=8,
            percentageOfNodesToScore=30,
            podInitialBackoffSeconds=2,
            podMaxBackoffSeconds=20,
            clientConnection={"kubeconfig": "/k", "qps": 12.5, "burst": 7, "contentType": "application/json"},
            leaderElection={
                "leaderElect": False,
                "leaseDuration": "1m30s",
                "renewDeadline": "45s",
                "retryPeriod": "500ms",
                "resourceName": "sched",
                "resourceNamespace": "ns",
            },
        ),
        UPSTREAM,
    )
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (8, 30)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    assert c.client_connection == cfg.ClientConnection("/k", 12.5, 7, "application/json")
    assert c.leader_election == cfg.LeaderElection(False, 90, 45, 0.5, "leases", "sched", "ns")


def test_zero_values_are_defaulted_like_upstream() -> None:
    # defaults.go: QPS 0 / Burst 0 and zero leader-election durations mean "unset".
    c = parse_config(
        doc(
            clientConnection={"qps": 0, "burst": 0},
            leaderElection={"leaseDuration": "0s", "retryPeriod": "0"},
        ),
        UPSTREAM,
    )
    assert (c.client_connection.qps, c.client_connection.burst) == (50, 100)
    assert (c.leader_election.lease_duration, c.leader_election.retry_period) == (15, 2)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15), ("1m30s", 90), ("1.5h", 5400), ("500ms", 0.5), ("0", 0), ("-2s", -2), ("1h2m3s", 3723)],
)
def test_parse_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "s", "", "1x", "1m 30s", "--1s"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (-1.5, "-1.5s")],
)
def test_format_go_duration(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


# ---------------------------------------------------------------------------------------------
# mergePluginSet (default_plugins_test.go TestMergePlugins)


def ps(enabled: list[Any] = (), disabled: list[str] = ()) -> _PluginSet:  # type: ignore[assignment]
    out = _PluginSet()
    for i, e in enumerate(enabled):
        name, weight = (e, None) if isinstance(e, str) else e
        out.enabled.append(_Entry(name, weight, True, i))
    out.disabled.extend(disabled)
    return out


MERGE_CASES = [
    # (case name in TestMergePlugins, default, custom, expected enabled, expected disabled)
    ("AppendCustomPlugin", ps(["D1", "D2"]), ps(["C"]), [("D1", None), ("D2", None), ("C", None)], []),
    (
        "InsertAfterDefaultPlugins2",
        ps(["D1", "D2"]),
        ps(["C", "D2"], ["D2"]),
        [("D1", None), ("C", None), ("D2", None)],
        ["D2"],
    ),
    (
        "InsertBeforeAllPlugins",
        ps(["D1", "D2"]),
        ps(["C", "D1", "D2"], ["*"]),
        [("C", None), ("D1", None), ("D2", None)],
        ["*"],
    ),
    ("ReorderDefaultPlugins", ps(["D1", "D2"]), ps(["D2", "D1"], ["*"]), [("D2", None), ("D1", None)], ["*"]),
    (
        "CustomPluginOverrideDefaultPlugin",
        ps(["P1", "P2", "P3"]),
        ps([("P1", 2), ("P3", 3)]),
        [("P1", 2), ("P2", None), ("P3", 3)],
        [],
    ),
    (
        "OrderPreserveAfterOverride",
        ps(["P1", "P2", "P3"]),
        ps([("P2", 2), ("P1", 1)]),
        [("P1", 1), ("P2", 2), ("P3", None)],
        [],
    ),
    (
        "RepeatedCustomPlugin",
        ps(["P1", "P2", "P3"]),
        ps(["P1", ("P2", 2), "P3", ("P2", 4)]),
        [("P1", None), ("P2", 4), ("P3", None), ("P2", 2)],
        [],
    ),
    (
        "Append disabled Multipoint plugins",
        ps(["D1", "D2"]),
        ps(["C", "C2"], ["D2"]),
        [("D1", None), ("C", None), ("C2", None)],
        ["D2"],
    ),
    ("override default MultiPoint plugins with custom value", ps(["D"]), ps([("D", 5)]), [("D", 5)], []),
    (
        "disabled MultiPoint plugin in default set",
        ps(["D"], ["D2"]),
        ps(["C"]),
        [("D", None), ("C", None)],
        ["D2"],
    ),
    ("multipoint with only disabled gets merged", ps(["D"]), ps([], ["D"]), [], ["D"]),
]


@pytest.mark.parametrize(
    ("default", "custom", "want_enabled", "want_disabled"),
    [c[1:] for c in MERGE_CASES],
    ids=[c[0] for c in MERGE_CASES],
)
def test_merge_plugin_set(
    default: _PluginSet,
    custom: _PluginSet,
    want_enabled: list[tuple[str, int | None]],
    want_disabled: list[str],
) -> None:
    got = merge_plugin_set(default, custom)
    assert [(e.name, e.weight) for e in got.enabled] == want_enabled
    assert got.disabled == want_disabled


# ---------------------------------------------------------------------------------------------
# MultiPoint expansion (framework_test.go TestNewFrameworkMultiPointExpansion). Upstream's
# expected lists include the pod-group points, which pyscheduler does not have.

ALL_BUT_PREENQUEUE = [p for p in EXTENSION_POINTS if p != "preEnqueue"]


def expand(plugins: dict[str, Any]) -> cfg.Profile:
    return parse_config(doc(profiles=[{"schedulerName": "s", "plugins": bare(plugins)}]), REG).profiles[0]


def test_expansion_plugin_expansion() -> None:
    # "plugin expansion": testPlugin weight 5 lands everywhere it implements.
    p = expand({"multiPoint": {"enabled": [{"name": "TestPlugin", "weight": 5}]}})
    for point in ALL_BUT_PREENQUEUE:
        assert names(p, point) == ["TestPlugin"], point
    assert names(p, "preEnqueue") == []
    assert refs(p, "score") == [("TestPlugin", 5)]


def test_expansion_disable_at_some_points() -> None:
    # "disable MultiPoint plugin at some extension points"
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}]},
            "preScore": {"disabled": [{"name": "TestPlugin"}]},
            "score": {"disabled": [{"name": "TestPlugin"}]},
        }
    )
    assert names(p, "preScore") == [] and names(p, "score") == []
    assert names(p, "filter") == ["TestPlugin"] and names(p, "bind") == ["TestPlugin"]


def test_expansion_multiple_plugins() -> None:
    # "Multiple MultiPoint plugins"
    p = expand({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]}})
    assert names(p, "preScore") == ["TestPlugin", "ScorePlugin1"]
    assert refs(p, "score") == [("TestPlugin", 1), ("ScorePlugin1", 1)]
    assert names(p, "filter") == ["TestPlugin"]


def test_expansion_disable_point_with_star() -> None:
    # "disable MultiPoint extension": preScore '*' disabled -> no multiPoint plugin there.
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "preScore": {"disabled": [{"name": "*"}]},
        }
    )
    assert names(p, "preScore") == []
    assert refs(p, "score") == [("TestPlugin", 1), ("ScorePlugin1", 1)]


def test_expansion_specified_extension_takes_precedence() -> None:
    # "Reorder MultiPoint plugins (specified extension takes precedence)"
    p = expand(
        {
            "multiPoint": {
                "enabled": [
                    {"name": "ScoreWithNormalizePlugin1"},
                    {"name": "TestPlugin"},
                    {"name": "ScorePlugin1"},
                ]
            },
            "score": {"enabled": [{"name": "ScorePlugin1"}, {"name": "TestPlugin"}]},
        }
    )
    assert names(p, "preScore") == ["TestPlugin", "ScorePlugin1"]
    assert refs(p, "score") == [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)]


def test_expansion_specified_extension_only_precedes_when_in_multipoint() -> None:
    # "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)"
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [
                    {"name": "ScoreWithNormalizePlugin1"},
                    {"name": "ScorePlugin1"},
                    {"name": "TestPlugin"},
                ]
            },
        }
    )
    assert refs(p, "score") == [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)]


def test_expansion_override_weights() -> None:
    # "Override MultiPoint plugins weights"
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [{"name": "ScorePlugin1", "weight": 5}, {"name": "TestPlugin", "weight": 3}]
            },
        }
    )
    assert refs(p, "score") == [("ScorePlugin1", 5), ("TestPlugin", 3)]


def test_expansion_override_weights_and_extra_explicit_plugin() -> None:
    # "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times"
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [
                    {"name": "ScorePlugin1", "weight": 5},
                    {"name": "ScorePlugin2", "weight": 5},
                    {"name": "TestPlugin", "weight": 3},
                ]
            },
        }
    )
    assert refs(p, "score") == [("ScorePlugin1", 5), ("TestPlugin", 3), ("ScorePlugin2", 5)]
    assert names(p, "preScore") == ["TestPlugin", "ScorePlugin1"]


def test_explicit_score_entry_without_weight_gets_one_not_multipoint_weight() -> None:
    # framework.go getScoreWeights: Score.Enabled is read before MultiPoint.Enabled, and an unset
    # weight becomes 1 — so re-listing TaintToleration at score without a weight drops it to 1.
    c = parse_config(
        doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "TaintToleration"}]}}}]), UPSTREAM
    )
    assert refs(c.profiles[0], "score")[0] == ("TaintToleration", 1)


def test_expansion_disable_and_enable_with_star() -> None:
    # "disable and enable MultiPoint plugins with '*'"
    p = expand(
        {
            "multiPoint": {
                "enabled": [{"name": "QueueSortPlugin"}, {"name": "BindPlugin"}, {"name": "ScorePlugin1"}]
            }
        }
    )
    assert names(p, "queueSort") == ["QueueSortPlugin"]
    assert names(p, "bind") == ["BindPlugin"]
    assert names(p, "preScore") == ["ScorePlugin1"]
    assert refs(p, "score") == [("ScorePlugin1", 1)]
    assert names(p, "filter") == []


def test_expansion_disable_and_enable_by_name() -> None:
    # "disable and enable MultiPoint plugin by name": multiPoint enabled wins over multiPoint disabled.
    c = parse_config(
        doc(
            profiles=[
                {
                    "plugins": {
                        "multiPoint": {
                            "enabled": [
                                {"name": "BindPlugin"},
                                {"name": "QueueSortPlugin"},
                                {"name": "ScorePlugin1"},
                            ],
                            "disabled": [{"name": "*"}, {"name": "ScorePlugin1"}],
                        }
                    }
                }
            ]
        ),
        REG,
    )
    p = c.profiles[0]
    assert refs(p, "score") == [("ScorePlugin1", 1)]
    assert names(p, "bind") == ["BindPlugin"]


def test_expansion_double_registration() -> None:
    # "Expect 'already registered' error"
    with pytest.raises(ConfigError, match=r'plugin "TestPlugin" already registered as "PreFilterPlugin"'):
        expand({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}})


def test_default_profile_user_plugin_appended_after_defaults() -> None:
    # mergePluginSet + expansion: a user filter plugin runs after the default filters.
    c = parse_config(doc(profiles=[{"plugins": {"filter": {"enabled": [{"name": "FilterOnly"}]}}}]), REG)
    assert names(c.profiles[0], "filter")[-1] == "FilterOnly"
    assert names(c.profiles[0], "filter")[0] == "NodeUnschedulable"


def test_default_weight_replaced_in_place_through_multipoint() -> None:
    # TestMergePlugins "override default MultiPoint plugins with custom value" on the real defaults.
    c = parse_config(
        doc(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 7}]}}}]),
        UPSTREAM,
    )
    assert refs(c.profiles[0], "score")[-1] == ("ImageLocality", 7)


def test_disable_default_score_plugin() -> None:
    c = parse_config(
        doc(profiles=[{"plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}]), UPSTREAM
    )
    assert "ImageLocality" not in names(c.profiles[0], "score")
    assert "ImageLocality" not in c.profiles[0].plugin_args


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
                        {"name": "Nope", "args": {"minCandidateNodesPercentage": 5}},  # dropped: not enabled
                        {"name": "NodeAffinity"},  # no args: the factory's defaults apply
                    ]
                }
            ]
        ),
        UPSTREAM,
    )
    assert c.profiles[0].plugin_args == {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}}
    assert args["kind"] == "NodeResourcesFitArgs"  # the input is not modified


def test_plugin_args_of_wrong_kind() -> None:
    # v1 types.go decodeNestedObjects: "args for plugin %s were not of type %s, got %s".
    with pytest.raises(
        ConfigError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args: args for plugin NodeAffinity"
    ):
        parse_config(
            doc(
                profiles=[
                    {"pluginConfig": [{"name": "NodeAffinity", "args": {"kind": "InterPodAffinityArgs"}}]}
                ]
            ),
            UPSTREAM,
        )


# ---------------------------------------------------------------------------------------------
# Validation (validation_test.go TestValidateKubeSchedulerConfigurationV1 and component-base)

VALIDATION_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "bad-parallelism-invalid-value",
        doc(parallelism=0),
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
    ),
    (
        "bad-percentage-of-nodes-to-score",
        doc(percentageOfNodesToScore=110),
        "percentageOfNodesToScore: Invalid value: 110: not in valid range [0-100]",
    ),
    (
        "bad-percentage-of-nodes-to-score-negative",
        doc(percentageOfNodesToScore=-1),
        "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
    ),
    (
        "scheduler-name-not-set",
        doc(profiles=[{"schedulerName": "a"}, {}]),
        "profiles[1].schedulerName: Required value",
    ),
    (
        "repeated-scheduler-name",
        doc(profiles=[{"schedulerName": "x"}, {"schedulerName": "x"}]),
        'profiles[1].schedulerName: Duplicate value: "x"',
    ),
    (
        "bad-pod-initial-backoff",
        doc(podInitialBackoffSeconds=0),
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ),
    (
        "bad-pod-max-backoff",
        doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
        "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds",
    ),
    (
        "bad-percentage-of-nodes-to-score-in-profile",
        doc(profiles=[{"percentageOfNodesToScore": 101}]),
        "profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
    ),
    (
        "repeated-plugin-config",
        doc(profiles=[{"pluginConfig": [{"name": "NodeAffinity"}, {"name": "NodeAffinity"}]}]),
        'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
    ),
    (
        "different-queue-sort",
        doc(
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}
                    },
                },
            ]
        ),
        "profiles[1].plugins.queueSort: Invalid value: {enabled: [QueueSortPlugin], disabled: [*]}: "
        "queueSort must be the same for all profiles",
    ),
    (
        "one-queue-sort-plugin-only",
        doc(
            profiles=[
                {"plugins": {"queueSort": {"enabled": [{"name": "QueueSortPlugin"}, {"name": "TestPlugin"}]}}}
            ]
        ),
        "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled",
    ),
    (
        "different-queue-sort-args",
        doc(
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}
                    },
                    "pluginConfig": [{"name": "QueueSortPlugin", "args": {"x": 1}}],
                },
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}
                    },
                    "pluginConfig": [{"name": "QueueSortPlugin", "args": {"x": 2}}],
                },
            ]
        ),
        "profiles[1].pluginConfig.args: Invalid value: {'x': 2}: queueSort must be the same for all profiles",
    ),
    (
        "bad-resource-lock-not-leases",
        doc(leaderElection={"resourceLock": "configmaps"}),
        'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"',
    ),
    (
        # component-base ValidateLeaderElectionConfiguration: the value shown is RenewDeadline.
        "lease-duration-not-above-renew-deadline",
        doc(leaderElection={"leaseDuration": "10s", "renewDeadline": "20s"}),
        "leaderElection.leaseDuration: Invalid value: 20s: must be greater than `RenewDeadline`",
    ),
    (
        "negative-retry-period",
        doc(leaderElection={"retryPeriod": "-1s"}),
        "leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero",
    ),
    (
        "negative-burst",
        doc(clientConnection={"burst": -1}),
        "clientConnection.burst: Invalid value: -1: must be non-negative",
    ),
    (
        "several-errors-aggregate",
        doc(parallelism=-1, percentageOfNodesToScore=101),
        "[parallelism: Invalid value: -1: should be an integer value greater than zero, "
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]]",
    ),
]


@pytest.mark.parametrize(
    ("d", "msg"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
def test_validation_errors(d: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(d, REG)
    assert str(ei.value) == msg
    assert "\n" not in str(ei.value)


def test_leader_election_disabled_skips_its_validation() -> None:
    # component-base: nothing is checked when leaderElect is false.
    c = parse_config(
        doc(leaderElection={"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s"}), REG
    )
    assert c.leader_election.leader_elect is False


def test_valid_multi_profile_config() -> None:
    # validation_test.go "valid config": two profiles sharing the default queue sort.
    c = parse_config(
        doc(
            profiles=[
                {"schedulerName": "me", "percentageOfNodesToScore": 40},
                {"schedulerName": "other", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
            ]
        ),
        UPSTREAM,
    )
    assert [p.scheduler_name for p in c.profiles] == ["me", "other"]
    assert c.profiles[0].percentage_of_nodes_to_score == 40
    assert c.profiles[1].plugins["score"] == ()
    assert c.profiles[0].plugins["score"] != ()


# ---------------------------------------------------------------------------------------------
# Framework construction errors (framework.go NewFramework / updatePluginList)

FRAMEWORK_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    (
        # TestInitFrameworkWithScorePlugins "enabled Score plugin doesn't exist in registry"
        "score-plugin-not-in-registry",
        {"score": {"enabled": [{"name": "notExist"}]}},
        'profiles[0].plugins.score.enabled[0]: ScorePlugin "notExist" does not exist',
    ),
    (
        # TestInitFrameworkWithScorePlugins "enabled Score plugin doesn't extend the ScorePlugin interface"
        "plugin-not-implementing-score",
        {"score": {"enabled": [{"name": "FilterOnly"}]}},
        'profiles[0].plugins.score.enabled[0]: plugin "FilterOnly" does not extend ScorePlugin plugin',
    ),
    (
        # TestNewFrameworkErrors "duplicate plugin name"
        "duplicate-plugin-name",
        {"filter": {"enabled": [{"name": "FilterOnly"}, {"name": "FilterOnly"}]}},
        'profiles[0].plugins.filter.enabled[1]: plugin "FilterOnly" already registered as "FilterPlugin"',
    ),
    (
        "unknown-multipoint-plugin",
        {"multiPoint": {"enabled": [{"name": "Nope"}]}},
        'profiles[0].plugins.multiPoint.enabled[0]: PreFilterPlugin "Nope" does not exist',
    ),
    (
        # NewFramework: exactly one queue sort plugin per profile.
        "two-queue-sort-plugins-via-multipoint",
        {"multiPoint": {"enabled": [{"name": "QueueSortPlugin"}]}},
        "profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name "
        '"default-scheduler", but got 2',
    ),
    (
        "no-bind-plugin",
        {"bind": {"disabled": [{"name": "DefaultBinder"}]}},
        "profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "
        '"default-scheduler"',
    ),
]


@pytest.mark.parametrize(
    ("plugins", "msg"), [c[1:] for c in FRAMEWORK_ERRORS], ids=[c[0] for c in FRAMEWORK_ERRORS]
)
def test_framework_errors(plugins: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(doc(profiles=[{"plugins": plugins}]), REG)
    assert str(ei.value) == msg


def test_default_plugin_missing_from_registry_is_named() -> None:
    reg = dict(UPSTREAM)
    del reg["NodePorts"]
    with pytest.raises(ConfigError, match=r'"NodePorts" does not exist \(a default plugin missing'):
        parse_config(doc(), reg)


def test_score_weight_overflow() -> None:
    # framework.go getScoreWeights: sum(weight * MaxNodeScore) must fit in MaxTotalScore.
    reg = dict(REG)
    for i in range(3):
        reg[f"S{i}"] = _stub(f"S{i}", fw.ScorePlugin)
    plugins = {"score": {"enabled": [{"name": f"S{i}", "weight": 2**31 - 1} for i in range(3)]}}
    # Three int32-max weights do not overflow int64 ...
    parse_config(doc(profiles=[{"plugins": plugins}]), reg)
    old = cfg.MAX_TOTAL_SCORE
    try:
        cfg.MAX_TOTAL_SCORE = 2 * (2**31 - 1) * 100  # ... so shrink the ceiling to reach the check.
        with pytest.raises(ConfigError, match="total score of Score plugins could overflow"):
            parse_config(doc(profiles=[{"plugins": plugins}]), reg)
    finally:
        cfg.MAX_TOTAL_SCORE = old


def test_negative_weight_is_accepted_like_upstream() -> None:
    # Upstream v1 validation has no range check on plugin weights; only 0 is turned into 1.
    c = parse_config(
        doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -2}]}}}]),
        UPSTREAM,
    )
    assert ("ImageLocality", -2) in refs(c.profiles[0], "score")


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
        'leaderElection.leaseDuration: Invalid value: "15": time: invalid duration "15"',
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
    (
        "extenders-unsupported",
        doc(extenders=[{"urlPrefix": "http://x"}]),
        "extenders: Forbidden: scheduler extenders are not supported by pyscheduler",
    ),
]


@pytest.mark.parametrize(("d", "msg"), [c[1:] for c in DECODE_ERRORS], ids=[c[0] for c in DECODE_ERRORS])
def test_decode_errors(d: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(d, REG)
    assert str(ei.value) == msg


def test_integral_float_is_accepted_as_int() -> None:
    # sigs.k8s.io/yaml turns YAML 16.0 into JSON 16, which decodes into an int32.
    assert parse_config(doc(parallelism=16.0), UPSTREAM).parallelism == 16


# ---------------------------------------------------------------------------------------------
# Files


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "sched.yaml"
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_load_config_from_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        leaderElection:
          leaderElect: false
        profiles:
          - schedulerName: bin-packer
            plugins:
              score:
                disabled:
                  - name: NodeResourcesBalancedAllocation
            pluginConfig:
              - name: NodeResourcesFit
                args:
                  scoringStrategy:
                    type: MostAllocated
        """,
    )
    c = load_config(path, UPSTREAM)
    p = c.profiles[0]
    assert p.scheduler_name == "bin-packer"
    assert "NodeResourcesBalancedAllocation" not in names(p, "score")
    assert "NodeResourcesBalancedAllocation" in names(p, "preScore")
    assert p.plugin_args["NodeResourcesFit"] == {"scoringStrategy": {"type": "MostAllocated"}}
    assert c.leader_election.leader_elect is False


def test_load_config_bad_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: [unclosed\nkind: x\n")
    with pytest.raises(ConfigError) as ei:
        load_config(path, UPSTREAM)
    msg = str(ei.value)
    assert msg.startswith(f"{path}: invalid YAML: ")
    assert "line" in msg and "\n" not in msg


def test_load_config_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read config file"):
        load_config(path, UPSTREAM)


def test_load_config_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(path, UPSTREAM)


def test_load_config_none_is_defaults() -> None:
    assert load_config(None, UPSTREAM) == parse_config(doc(), UPSTREAM)


def test_config_objects_are_frozen() -> None:
    c = parse_config(doc(), UPSTREAM)
    with pytest.raises(AttributeError):
        c.parallelism = 3  # type: ignore[misc]
    assert isinstance(c.profiles[0].plugins["score"][0], PluginRef)
