"""Defaults: the default plugin set, the top-level and leader-election defaults, and the merge
of a profile's plugins into the default set.

Upstream files cited (kubernetes/kubernetes):
- pkg/scheduler/apis/config/v1/default_plugins_test.go (TestApplyFeatureGates, TestMergePlugins)
- pkg/scheduler/apis/config/v1/defaults_test.go (TestSchedulerDefaults)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.config import (
    API_VERSION,
    KIND,
    ClientConnection,
    LeaderElection,
    PluginRef,
    PluginSet,
    default_plugins,
    parse_config,
)
from scheduler.config.defaults import merge_plugin_set
from scheduler.config.features import FeatureGates
from scheduler.config.types import EXTENSION_POINT_NAMES


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


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


@pytest.mark.parametrize(
    ("gates", "extra"),
    [
        # default_plugins_test.go TestApplyFeatureGates: GangScheduling appends GangScheduling;
        # TopologyAwareWorkloadScheduling appends TopologyPlacementGenerator and
        # PodGroupPodsCount (weight 1). Checked against the binary's --write-config-to.
        ({}, []),
        ({"GenericWorkload": True}, []),
        ({"GenericWorkload": True, "GangScheduling": True}, [("GangScheduling", 0)]),
        (
            {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True},
            [("TopologyPlacementGenerator", 0), ("PodGroupPodsCount", 1)],
        ),
        (
            {"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True},
            [("GangScheduling", 0), ("TopologyPlacementGenerator", 0), ("PodGroupPodsCount", 1)],
        ),
    ],
)
def test_gated_default_plugins(gates: dict[str, bool], extra: list[tuple[str, int]]) -> None:
    fg = FeatureGates(gates)
    assert default_plugins(fg) == default_plugins() + extra
    mp = parse_config(doc(), fg).profiles[0].plugins["multiPoint"]
    assert [(e.name, e.weight) for e in mp.enabled] == default_plugins() + extra


# ---------------------------------------------------------------------------------------------
# Top-level defaults (defaults_test.go TestSchedulerDefaults "empty config")


def test_top_level_defaults() -> None:
    c = parse_config(doc())
    assert c.parallelism == 16
    assert c.percentage_of_nodes_to_score == 0
    assert c.pod_initial_backoff_seconds == 1
    assert c.pod_max_backoff_seconds == 10
    assert c.pod_max_in_unschedulable_pods_duration == 300
    assert c.client_connection == ClientConnection(
        kubeconfig="", qps=50, burst=100, content_type="application/vnd.kubernetes.protobuf"
    )
    assert c.leader_election == LeaderElection(
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
    )
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (8, 30)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    assert c.client_connection == ClientConnection("/k", 12.5, 7, "application/json")
    assert c.leader_election == LeaderElection(False, 90, 45, 0.5, "leases", "sched", "ns")


def test_zero_values_are_defaulted_like_upstream() -> None:
    # defaults.go: QPS 0 / Burst 0 and zero leader-election durations mean "unset".
    c = parse_config(
        doc(
            clientConnection={"qps": 0, "burst": 0},
            leaderElection={"leaseDuration": "0s", "retryPeriod": "0"},
        ),
    )
    assert (c.client_connection.qps, c.client_connection.burst) == (50, 100)
    assert (c.leader_election.lease_duration, c.leader_election.retry_period) == (15, 2)


# ---------------------------------------------------------------------------------------------
# mergePluginSet (default_plugins_test.go TestMergePlugins)


def ps(enabled: Sequence[str | tuple[str, int]] = (), disabled: Sequence[str] = ()) -> PluginSet:
    refs = (PluginRef(e, 0, i) if isinstance(e, str) else PluginRef(*e, i) for i, e in enumerate(enabled))
    return PluginSet(tuple(refs), tuple(disabled))


MERGE_CASES = [
    # (case name in TestMergePlugins, default, custom, expected enabled, expected disabled)
    ("AppendCustomPlugin", ps(["D1", "D2"]), ps(["C"]), [("D1", 0), ("D2", 0), ("C", 0)], []),
    (
        "InsertAfterDefaultPlugins2",
        ps(["D1", "D2"]),
        ps(["C", "D2"], ["D2"]),
        [("D1", 0), ("C", 0), ("D2", 0)],
        ["D2"],
    ),
    (
        "InsertBeforeAllPlugins",
        ps(["D1", "D2"]),
        ps(["C", "D1", "D2"], ["*"]),
        [("C", 0), ("D1", 0), ("D2", 0)],
        ["*"],
    ),
    ("ReorderDefaultPlugins", ps(["D1", "D2"]), ps(["D2", "D1"], ["*"]), [("D2", 0), ("D1", 0)], ["*"]),
    (
        "CustomPluginOverrideDefaultPlugin",
        ps(["P1", "P2", "P3"]),
        ps([("P1", 2), ("P3", 3)]),
        [("P1", 2), ("P2", 0), ("P3", 3)],
        [],
    ),
    (
        "OrderPreserveAfterOverride",
        ps(["P1", "P2", "P3"]),
        ps([("P2", 2), ("P1", 1)]),
        [("P1", 1), ("P2", 2), ("P3", 0)],
        [],
    ),
    (
        "RepeatedCustomPlugin",
        ps(["P1", "P2", "P3"]),
        ps(["P1", ("P2", 2), "P3", ("P2", 4)]),
        [("P1", 0), ("P2", 4), ("P3", 0), ("P2", 2)],
        [],
    ),
    (
        "Append disabled Multipoint plugins",
        ps(["D1", "D2"]),
        ps(["C", "C2"], ["D2"]),
        [("D1", 0), ("C", 0), ("C2", 0)],
        ["D2"],
    ),
    ("override default MultiPoint plugins with custom value", ps(["D"]), ps([("D", 5)]), [("D", 5)], []),
    (
        "disabled MultiPoint plugin in default set",
        ps(["D"], ["D2"]),
        ps(["C"]),
        [("D", 0), ("C", 0)],
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
    default: PluginSet,
    custom: PluginSet,
    want_enabled: list[tuple[str, int]],
    want_disabled: list[str],
) -> None:
    got = merge_plugin_set(default, custom)
    assert [(e.name, e.weight) for e in got.enabled] == want_enabled
    assert list(got.disabled) == want_disabled


def test_profile_holds_the_merged_plugin_sets() -> None:
    # The profile keeps each point's set after mergePluginSet; multiPoint entries the user gave
    # remember their position (for messages), default ones do not.
    plugins = {
        "multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 7}]},
        "score": {"disabled": [{"name": "ImageLocality"}]},
    }
    p = parse_config(doc(profiles=[{"plugins": plugins}])).profiles[0]
    assert list(p.plugins) == ["multiPoint", *EXTENSION_POINT_NAMES]
    mp = p.plugins["multiPoint"].enabled
    tail = [("ImageLocality", 7), ("DefaultBinder", 0), ("NodeDeclaredFeatures", 0)]
    assert [(r.name, r.weight) for r in mp[-3:]] == tail
    assert (mp[-3].index, mp[0].index) == (0, None)
    assert p.plugins["score"] == PluginSet((), ("ImageLocality",))
    # No "plugins" at all: the default set as is.
    d = parse_config(doc()).profiles[0].plugins
    assert [(r.name, r.weight) for r in d["multiPoint"].enabled] == default_plugins()
    assert all(d[pt] == PluginSet() for pt in EXTENSION_POINT_NAMES)
