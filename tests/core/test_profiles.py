"""Frameworks from profiles: the checks against the plugin registry, the multiPoint expansion,
score weights, and plugins built with a complete Handle.

Upstream files cited (kubernetes/kubernetes):
- pkg/scheduler/apis/config/testing/defaults/defaults.go (ExpandedPluginsV1)
- pkg/scheduler/framework/runtime/framework_test.go (TestNewFrameworkMultiPointExpansion,
  TestNewFrameworkErrors, TestInitFrameworkWithScorePlugins)
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, ConfigError, PluginRef, PluginSet, Profile, load_config, parse_config
from scheduler.config.features import FeatureGates
from scheduler.config.types import EXTENSION_POINT_NAMES
from scheduler.core import profiles
from scheduler.core.profiles import (
    FrameworkError,
    PluginLists,
    build_frameworks,
    check_profiles,
    new_framework,
    plugin_lists,
)
from scheduler.framework import interface as fw
from scheduler.framework.interface import EXTENSION_POINTS, Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.registry import default_registry

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
    "NodeAffinity": _stub("NodeAffinity", fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin),
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
    "NodeResourcesBalancedAllocation": _stub("NodeResourcesBalancedAllocation", fw.PreScorePlugin, fw.ScorePlugin),
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

# The plugins of framework_test.go: testPlugin implements every point but PreEnqueue (the
# placement points included); scorePlugin1 is PreScore+Score; scoreWithNormalizePlugin1 is
# Score only; placementScorePlugin1 is PlacementScore only.
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
        fw.PlacementGeneratePlugin,
        fw.PlacementScorePlugin,
    ),
    "ScorePlugin1": _stub("ScorePlugin1", fw.PreScorePlugin, fw.ScorePlugin),
    "PlacementScorePlugin1": _stub("PlacementScorePlugin1", fw.PlacementScorePlugin),
    "PlacementGen2": _stub("PlacementGen2", fw.PlacementGeneratePlugin),
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


def lists_of(d: dict[str, Any], reg: dict[str, type[fw.Plugin]] = REG) -> PluginLists:
    """The first profile's plugin lists."""
    return plugin_lists(parse_config(d).profiles[0], reg)


def names(lists: PluginLists, point: str) -> list[str]:
    return [r.name for r in lists[point]]


def refs(lists: PluginLists, point: str) -> list[tuple[str, int]]:
    return [(r.name, r.weight) for r in lists[point]]


# The framework_test.go profiles carry no defaults; disabling every default multiPoint plugin
# reproduces that starting point on top of the v1 defaulting.
def bare(plugins: dict[str, Any]) -> dict[str, Any]:
    mp = plugins.setdefault("multiPoint", {})
    mp["disabled"] = [{"name": "*"}, *mp.get("disabled", [])]
    return plugins


# ---------------------------------------------------------------------------------------------
# The default profile


def test_default_profile_expansion_matches_expanded_plugins_v1() -> None:
    # testing/defaults/defaults.go ExpandedPluginsV1, without the pod-group points.
    p = lists_of(doc(), UPSTREAM)
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


def test_default_profile_with_workload_gates_has_placement_points() -> None:
    # default_plugins.go applyGangScheduling / applyTopologyAwareWorkloadScheduling, expanded:
    # NodeResourcesFit implements PlacementScorePlugin (fit.go ScorePlacement), so multiPoint
    # puts it at placementScore with its weight, before PodGroupPodsCount.
    gates = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True})
    [p] = check_profiles(load_config(None, gates), default_registry())
    assert names(p, "placementGenerate") == ["TopologyPlacementGenerator"]
    assert refs(p, "placementScore") == [("NodeResourcesFit", 1), ("PodGroupPodsCount", 1)]
    assert "GangScheduling" in names(p, "permit")


def test_real_registry_default_profile_loads() -> None:
    [lists] = check_profiles(load_config(None), default_registry())
    assert refs(lists, "score")[0] == ("TaintToleration", 3)


# ---------------------------------------------------------------------------------------------
# MultiPoint expansion (framework_test.go TestNewFrameworkMultiPointExpansion), the pod-group
# points (placementGenerate, placementScore) included.

ALL_BUT_PREENQUEUE = [p for p in EXTENSION_POINTS if p != "preEnqueue"]


def expand(plugins: dict[str, Any]) -> PluginLists:
    return lists_of(doc(profiles=[{"schedulerName": "s", "plugins": bare(plugins)}]))


def test_expansion_plugin_expansion() -> None:
    # "plugin expansion": testPlugin weight 5 lands everywhere it implements.
    p = expand({"multiPoint": {"enabled": [{"name": "TestPlugin", "weight": 5}]}})
    for point in ALL_BUT_PREENQUEUE:
        assert names(p, point) == ["TestPlugin"], point
    assert names(p, "preEnqueue") == []
    assert refs(p, "score") == [("TestPlugin", 5)]
    assert refs(p, "placementScore") == [("TestPlugin", 5)]


def test_expansion_disable_at_some_points() -> None:
    # "disable MultiPoint plugin at some extension points"
    p = expand(
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}]},
            "preScore": {"disabled": [{"name": "TestPlugin"}]},
            "score": {"disabled": [{"name": "TestPlugin"}]},
            "placementScore": {"disabled": [{"name": "TestPlugin"}]},
        }
    )
    assert names(p, "preScore") == [] and names(p, "score") == [] and names(p, "placementScore") == []
    assert names(p, "filter") == ["TestPlugin"] and names(p, "bind") == ["TestPlugin"]
    assert names(p, "placementGenerate") == ["TestPlugin"]


def test_expansion_multiple_plugins() -> None:
    # "Multiple MultiPoint plugins"
    mp = [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}, {"name": "PlacementScorePlugin1"}]
    p = expand({"multiPoint": {"enabled": mp}})
    assert names(p, "preScore") == ["TestPlugin", "ScorePlugin1"]
    assert refs(p, "score") == [("TestPlugin", 1), ("ScorePlugin1", 1)]
    assert names(p, "filter") == ["TestPlugin"]
    assert names(p, "placementGenerate") == ["TestPlugin"]
    assert refs(p, "placementScore") == [("TestPlugin", 1), ("PlacementScorePlugin1", 1)]


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
            "score": {"enabled": [{"name": "ScorePlugin1", "weight": 5}, {"name": "TestPlugin", "weight": 3}]},
            "placementScore": {"enabled": [{"name": "TestPlugin", "weight": 2}]},
        }
    )
    assert refs(p, "score") == [("ScorePlugin1", 5), ("TestPlugin", 3)]
    assert refs(p, "placementScore") == [("TestPlugin", 2)]


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
    c = lists_of(doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "TaintToleration"}]}}}]), UPSTREAM)
    assert refs(c, "score")[0] == ("TaintToleration", 1)


def test_expansion_disable_and_enable_with_star() -> None:
    # "disable and enable MultiPoint plugins with '*'"
    p = expand(
        {
            "multiPoint": {
                "enabled": [
                    {"name": "QueueSortPlugin"},
                    {"name": "BindPlugin"},
                    {"name": "ScorePlugin1"},
                    {"name": "PlacementScorePlugin1"},
                ]
            }
        }
    )
    assert names(p, "queueSort") == ["QueueSortPlugin"]
    assert names(p, "bind") == ["BindPlugin"]
    assert names(p, "preScore") == ["ScorePlugin1"]
    assert refs(p, "score") == [("ScorePlugin1", 1)]
    assert names(p, "filter") == []
    assert names(p, "placementGenerate") == []
    assert refs(p, "placementScore") == [("PlacementScorePlugin1", 1)]


def test_expansion_disable_and_enable_by_name() -> None:
    # "disable and enable MultiPoint plugin by name": multiPoint enabled wins over multiPoint disabled.
    c = lists_of(
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
        )
    )
    p = c
    assert refs(p, "score") == [("ScorePlugin1", 1)]
    assert names(p, "bind") == ["BindPlugin"]


def test_expansion_double_registration() -> None:
    # "Expect 'already registered' error"
    with pytest.raises(ConfigError, match=r'plugin "TestPlugin" already registered as "PreFilterPlugin"'):
        expand({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}})


def test_default_profile_user_plugin_appended_after_defaults() -> None:
    # mergePluginSet + expansion: a user filter plugin runs after the default filters.
    c = lists_of(doc(profiles=[{"plugins": {"filter": {"enabled": [{"name": "FilterOnly"}]}}}]))
    assert names(c, "filter")[-1] == "FilterOnly"
    assert names(c, "filter")[0] == "NodeUnschedulable"


def test_default_weight_replaced_in_place_through_multipoint() -> None:
    # TestMergePlugins "override default MultiPoint plugins with custom value" on the real defaults.
    c = lists_of(
        doc(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 7}]}}}]), UPSTREAM
    )
    assert refs(c, "score")[-1] == ("ImageLocality", 7)


def test_disable_default_score_plugin() -> None:
    c = lists_of(doc(profiles=[{"plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}]), UPSTREAM)
    assert "ImageLocality" not in names(c, "score")


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
        # Checked against the v1.36.3 binary ("PlacementGeneratePlugin \"Foo\" does not exist",
        # "plugin \"GangScheduling\" does not extend PlacementGeneratePlugin plugin").
        "placement-generate-plugin-not-in-registry",
        {"placementGenerate": {"enabled": [{"name": "Foo"}]}},
        'profiles[0].plugins.placementGenerate.enabled[0]: PlacementGeneratePlugin "Foo" does not exist',
    ),
    (
        "plugin-not-implementing-placement-generate",
        {"placementGenerate": {"enabled": [{"name": "FilterOnly"}]}},
        'profiles[0].plugins.placementGenerate.enabled[0]: plugin "FilterOnly" does not extend '
        "PlacementGeneratePlugin plugin",
    ),
    (
        "plugin-not-implementing-placement-score",
        {"placementScore": {"enabled": [{"name": "ScorePlugin1"}]}},
        'profiles[0].plugins.placementScore.enabled[0]: plugin "ScorePlugin1" does not extend '
        "PlacementScorePlugin plugin",
    ),
    (
        # NewFramework: "at most one placement generate plugin is allowed".
        "two-placement-generate-plugins",
        {"placementGenerate": {"enabled": [{"name": "TestPlugin"}, {"name": "PlacementGen2"}]}},
        "profiles[0].plugins.placementGenerate: at most one placement generate plugin is allowed for profile "
        'with scheduler name "default-scheduler"',
    ),
    (
        "no-bind-plugin",
        {"bind": {"disabled": [{"name": "DefaultBinder"}]}},
        "profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "
        '"default-scheduler"',
    ),
]


@pytest.mark.parametrize(("plugins", "msg"), [c[1:] for c in FRAMEWORK_ERRORS], ids=[c[0] for c in FRAMEWORK_ERRORS])
def test_framework_errors(plugins: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        lists_of(doc(profiles=[{"plugins": plugins}]))
    assert str(ei.value) == msg


def test_default_plugin_missing_from_registry_is_named() -> None:
    reg = dict(UPSTREAM)
    del reg["NodePorts"]
    with pytest.raises(ConfigError, match=r'"NodePorts" does not exist \(a default plugin missing'):
        lists_of(doc(), reg)


def test_score_weight_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    # framework.go getScoreWeights: sum(weight * MaxNodeScore) must fit in MaxTotalScore.
    reg = dict(REG)
    for i in range(3):
        reg[f"S{i}"] = _stub(f"S{i}", fw.ScorePlugin)
    plugins = {"score": {"enabled": [{"name": f"S{i}", "weight": 2**31 - 1} for i in range(3)]}}
    # Three int32-max weights do not overflow int64 ...
    lists_of(doc(profiles=[{"plugins": plugins}]), reg)
    # ... so shrink the ceiling to reach the check.
    monkeypatch.setattr(profiles, "MAX_TOTAL_SCORE", 2 * (2**31 - 1) * 100)
    with pytest.raises(ConfigError, match="total score of Score plugins could overflow"):
        lists_of(doc(profiles=[{"plugins": plugins}]), reg)


def test_negative_weight_is_accepted_like_upstream() -> None:
    # Upstream v1 validation has no range check on plugin weights; only 0 is turned into 1.
    c = lists_of(
        doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -2}]}}}]), UPSTREAM
    )
    assert ("ImageLocality", -2) in refs(c, "score")


def test_lists_cover_every_extension_point_with_weights_only_at_score() -> None:
    lists = lists_of(doc(), UPSTREAM)
    assert list(lists) == list(EXTENSION_POINTS)
    assert all(r.weight == 0 for pt in EXTENSION_POINTS if pt not in ("score", "placementScore") for r in lists[pt])
    # The config layer names the same points the framework defines.
    assert set(EXTENSION_POINT_NAMES) == set(EXTENSION_POINTS)


# ---------------------------------------------------------------------------------------------
# Building the plugins


class Args(fw.FilterPlugin):
    """Records the args and handle it was built with; refuses {"bad": ...}."""

    name = "Args"
    built: list[tuple[Any, Handle]] = []

    @classmethod
    def new(cls, args: Any, handle: Handle) -> fw.Plugin:
        if args and "bad" in args:
            raise ValueError("bad is not a field")
        cls.built.append((args, handle))
        return cls()


class Unused(fw.FilterPlugin):
    name = "Unused"

    @classmethod
    def new(cls, args: Any, handle: Handle) -> fw.Plugin:
        raise AssertionError("a plugin no extension point runs is never built")


BUILD_REG = {**UPSTREAM, "Args": Args, "Unused": Unused}


@pytest.fixture(autouse=True)
def _forget_builds() -> None:
    Args.built = []


def _build_doc(args: dict[str, Any], **profile: Any) -> dict[str, Any]:
    plugins = {
        "multiPoint": {"enabled": [{"name": "Args"}, {"name": "Unused"}]},
        "filter": {"disabled": [{"name": "Unused"}]},
    }
    return doc(profiles=[{"plugins": plugins, "pluginConfig": [{"name": "Args", "args": args}], **profile}])


def test_first_error_of_any_profile_wins_before_any_plugin_is_built() -> None:
    a = {
        "schedulerName": "a",
        "plugins": {"filter": {"enabled": [{"name": "Args"}]}},
        "pluginConfig": [{"name": "Args", "args": {"bad": True}}],
    }
    b = {"schedulerName": "b", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}
    want = r'^profiles\[1\]\.plugins\.filter\.enabled\[0\]: FilterPlugin "Nope" does not exist$'
    with pytest.raises(ConfigError, match=want):
        build_frameworks(parse_config(doc(profiles=[a, b])), Snapshot(), Listers(), registry=BUILD_REG)
    assert Args.built == []


def test_plugins_are_built_once_with_their_args_and_a_complete_handle() -> None:
    client, volume_api, preemption = object(), object(), object()
    snap, listers = Snapshot(), Listers()
    fws = build_frameworks(
        parse_config(_build_doc({"x": 1})),
        snap,
        listers,
        registry=BUILD_REG,
        client=client,  # type: ignore[arg-type]
        volume_api=volume_api,
        preemption=preemption,  # type: ignore[arg-type]
        seed=7,
    )
    f = fws["default-scheduler"]
    [(args, handle)] = Args.built
    assert args == {"x": 1}
    assert handle is f.handle
    assert (handle.snapshot, handle.listers, handle.client, handle.volume_api, handle.preemption) == (
        snap,
        listers,
        client,
        volume_api,
        preemption,
    )
    assert (handle.profile_name, handle.parallelism) == ("default-scheduler", 16)
    assert handle.rng.random() == random.Random(7).random()
    assert "Unused" not in f.plugins
    assert f.filter_plugins[-1] is f.plugins["Args"]
    assert f.queue_sort is f.plugins["PrioritySort"]
    assert f.weights["TaintToleration"] == 3


def test_observer_factory_is_asked_per_profile() -> None:
    asked: list[str] = []

    def observers(profile: str) -> Any:
        asked.append(profile)
        return None

    d = doc(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}])
    build_frameworks(parse_config(d), Snapshot(), Listers(), registry=UPSTREAM, observers=observers)
    assert asked == ["a", "b"]


def test_refused_args_are_a_framework_error() -> None:
    with pytest.raises(FrameworkError, match=r'^initializing plugin "Args": bad is not a field$'):
        build_frameworks(parse_config(_build_doc({"bad": 1})), Snapshot(), Listers(), registry=BUILD_REG)


@pytest.mark.parametrize(
    ("profile", "want"), [({}, 30), ({"percentageOfNodesToScore": 0}, 0), ({"percentageOfNodesToScore": 5}, 5)]
)
def test_profile_percentage_overrides_the_global_one(profile: dict[str, Any], want: int) -> None:
    d = doc(percentageOfNodesToScore=30, profiles=[{"schedulerName": "s", **profile}])
    [f] = build_frameworks(parse_config(d), Snapshot(), Listers(), registry=UPSTREAM).values()
    assert f.percentage_of_nodes_to_score == want


def test_new_framework_takes_a_profile_made_by_hand() -> None:
    # Tests build profiles with explicit per-point lists; points left out are empty.
    sets = {
        "queueSort": PluginSet((PluginRef("PrioritySort"),)),
        "filter": PluginSet((PluginRef("Args"),)),
        "bind": PluginSet((PluginRef("DefaultBinder"),)),
    }
    f = new_framework(Profile("hand", sets, {}), BUILD_REG, Handle(Snapshot(), Listers()))
    assert [pl.name for pl in f.filter_plugins] == ["Args"]
    assert f.score_plugins == [] and f.profile_name == "hand"
    want = r'^profiles\[0\]\.plugins\.filter\.enabled\[0\]: plugin "DefaultBinder" does not extend FilterPlugin plugin$'
    with pytest.raises(ConfigError, match=want):
        new_framework(
            Profile("hand", {**sets, "filter": PluginSet((PluginRef("DefaultBinder"),))}, {}),
            BUILD_REG,
            Handle(Snapshot(), Listers()),
        )
