"""bench/perf_config.py against kube-scheduler v1.36.3's own scheduler_perf config files.

Expected values are read off the upstream performance-config.yaml files (test names, params,
the op order that ``unrollWorkloadTemplate`` produces); the last tests use small synthetic
workloads for the errors upstream raises (undefined or unused params, unknown fields).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from bench.perf_config import (
    ConfigError,
    Workload,
    apiserver_args,
    default_workloads,
    load_workloads,
    parse_duration,
    perf_dir,
    resolve_ops,
    scaled,
    select_workloads,
    size_of,
    workload_gates,
)

pytestmark = pytest.mark.skipif(
    not perf_dir().is_dir(), reason="k8s.io/kubernetes@v1.36.3 is not in the Go module cache"
)


@pytest.fixture(scope="module")
def workloads() -> list[Workload]:
    return load_workloads()


def by_name(workloads: list[Workload], full: str) -> Workload:
    return next(w for w in workloads if w.full_name == full)


def counts(ops: list[Any]) -> list[tuple[int, str, int | None, str | None]]:
    return [(o.index, o.opcode, o.get("count"), o.get("namespace")) for o in ops]


def test_the_files_have_39_performance_cases(workloads: list[Workload]) -> None:
    defaults = default_workloads(workloads)
    assert len(defaults) == 39
    assert len({w.case for w in workloads if w.performance}) == 39
    assert all(not w.name.endswith(("_QueueingHintsEnabled", "_AsyncAPICallsEnabled")) for w in defaults)


@pytest.mark.parametrize(
    ("case", "name"),
    [
        # The first performance workload without a variant suffix, in file order.
        ("SchedulingBasic", "5000Nodes_10000Pods"),
        ("SchedulingPodAffinity", "5000Nodes"),
        ("Unschedulable", "5kNodes/100Init/10kPods"),
        ("SchedulingWithExtendedResource", "5000pods_5000nodes"),
        ("SteadyStateClusterResourceClaimTemplate", "empty_500nodes"),
        ("NodeDeclaredFeaturesEnabled", "5000Nodes20DeclaredFeatures"),
        ("PreemptionAsync", "5000Nodes"),
    ],
)
def test_default_pick(workloads: list[Workload], case: str, name: str) -> None:
    picks = {w.case: w.name for w in default_workloads(workloads)}
    assert picks[case] == name


def test_scheduling_basic_resolved(workloads: list[Workload]) -> None:
    # misc: initNodes 5000, initPods 1000, measurePods 10000; default pod template pod-default.yaml.
    ops = resolve_ops(by_name(workloads, "SchedulingBasic/5000Nodes_10000Pods"))
    assert counts(ops) == [
        (0, "createNodes", 5000, None),
        (1, "createPods", 1000, None),
        (2, "createPods", 10000, None),
    ]
    assert ops[2].get("collectMetrics") is True
    assert pathlib.Path(ops[1].get("podTemplatePath")) == perf_dir() / "templates" / "pod-default.yaml"
    assert size_of(ops) == {"nodes": 5000, "pods": 11000, "measured_pods": 10000, "namespaces": 0}


def test_pod_sets_unroll_before_numbering(workloads: list[Workload]) -> None:
    # createPodSets with $initNamespaces (100) becomes 100 createPods ops, init-ns-0..99, each
    # with $initPodsPerNamespace (40) pods; the measuring op is then number 103.
    ops = resolve_ops(by_name(workloads, "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes"))
    assert len(ops) == 104
    assert counts(ops[3:5]) == [(3, "createPods", 40, "init-ns-0"), (4, "createPods", 40, "init-ns-1")]
    assert counts(ops[-1:]) == [(103, "createPods", 1000, "measure-ns-0")]
    assert ops[1].opcode == "createNamespaces" and ops[1].get("count") == 100


def test_default_namespace_numbering_matches_delete(workloads: list[Workload]) -> None:
    # SchedulingWhileGated deletes from namespace-3: the createPods at op 3 (no namespace given).
    ops = resolve_ops(by_name(workloads, "SchedulingWhileGated/1Node_10000GatedPods"))
    assert (ops[3].opcode, ops[3].get("namespace"), ops[3].get("count")) == ("createPods", None, 20000)
    assert (ops[4].opcode, ops[4].get("namespace"), ops[4].get("deletePodsPerSecond")) == (
        "deletePods",
        "namespace-3",
        50,
    )


def test_scale_multiplies_param_counts_only(workloads: list[Workload]) -> None:
    ops = resolve_ops(by_name(workloads, "SchedulingBasic/5000Nodes_10000Pods"), 0.02)
    assert [o.get("count") for o in ops] == [100, 20, 200]
    # EventHandlingPodAdd: "count: 2" nodes and "count: 1" pod are written in the template.
    ops = resolve_ops(by_name(workloads, "EventHandlingPodAdd/1000Pods"), 0.02)
    assert [o.get("count") for o in ops if o.opcode in ("createNodes", "createPods")] == [2, 1, 20, 20, 20, 20]
    # SteadyState: the batch of 10 stays; the 500 DRA nodes scale.
    ops = resolve_ops(by_name(workloads, "SteadyStateClusterResourceClaimTemplate/empty_500nodes"), 0.1)
    assert [o.get("count") for o in ops if o.opcode in ("createNodes", "createPods")] == [0, 50, 10]


@pytest.mark.parametrize(("count", "scale", "want"), [(5000, 0.02, 100), (1, 0.02, 1), (0, 0.5, 0), (25, 0.1, 3)])
def test_scaled(count: int, scale: float, want: int) -> None:
    assert scaled(count, scale) == want


def test_steady_state_params(workloads: list[Workload]) -> None:
    # dra: durationParam $duration "10s", maxClaimsPerNodeParam $maxClaimsPerNode 10.
    ops = resolve_ops(by_name(workloads, "SteadyStateClusterResourceClaimTemplate/empty_500nodes"))
    steady = next(o for o in ops if o.get("steadyState"))
    assert (steady.get("count"), steady.get("duration_s"), steady.get("namespace")) == (10, 10.0, "test")
    driver = next(o for o in ops if o.opcode == "createResourceDriver")
    assert (driver.get("maxClaimsPerNode"), driver.get("nodes")) == (10, "scheduler-perf-dra-*")


def test_paths_are_relative_to_the_config_dir(workloads: list[Workload]) -> None:
    ops = resolve_ops(by_name(workloads, "SchedulingWithExtendedResource/5000pods_5000nodes"))
    assert pathlib.Path(ops[1].get("nodeTemplatePath")) == perf_dir() / "misc" / "templates" / (
        "node-with-extended-resource.yaml"
    )


@pytest.mark.parametrize(
    ("text", "want"), [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0)]
)
def test_parse_duration(text: str, want: float) -> None:
    assert parse_duration(text) == want


@pytest.mark.parametrize("text", ["10", "1x", "", "s"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration(text)


def test_gates(workloads: list[Workload]) -> None:
    # SchedulerQueueingHints is locked to true at v1.36: false is left out, and the run says so;
    # OpportunisticBatching goes off as upstream's setupTestCase turns it off.
    g = workload_gates(by_name(workloads, "SchedulingBasic/5000Nodes_10000Pods"))
    assert dict(g.dropped) == {"SchedulerQueueingHints": False}
    assert g.flag() == "OpportunisticBatching=false"
    g = workload_gates(by_name(workloads, "SchedulingWithExtendedResource/5000pods_5000nodes"))
    assert g.flag() == "DRAExtendedResource=false,DynamicResourceAllocation=true,OpportunisticBatching=false"
    assert apiserver_args(g) == [
        "--feature-gates=DRAExtendedResource=false,DynamicResourceAllocation=true,OpportunisticBatching=false",
        "--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
    ]
    g = workload_gates(by_name(workloads, "EventHandlingPodUpdate/1Node_1000Pods"))
    assert g.flag() == "InPlacePodVerticalScaling=true,OpportunisticBatching=false,SchedulerQueueingHints=true"


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (None, 39),
        ("SchedulingBasic/5000Nodes_10000Pods_QueueingHintsEnabled",
         ["SchedulingBasic/5000Nodes_10000Pods_QueueingHintsEnabled"]),
        ("SchedulingBasic", ["SchedulingBasic/5000Nodes_10000Pods"]),
        ("TopologySpreading", ["TopologySpreading/5000Nodes", "PreferredTopologySpreading/5000Nodes",
                               "DefaultTopologySpreading/5000Nodes_10000Pods"]),
        # No default workload contains it: every performance workload that does.
        ("NodeDeclaredFeaturesDisabled", ["SchedulingBasic/5000Nodes_50000Pods_NodeDeclaredFeaturesDisabled"]),
        ("EventHandlingPodAdd,SchedulingBasic",
         ["EventHandlingPodAdd/1000Pods", "SchedulingBasic/5000Nodes_10000Pods"]),
    ],
)  # fmt: skip
def test_select(workloads: list[Workload], spec: str | None, want: Any) -> None:
    got = select_workloads(workloads, spec)
    if isinstance(want, int):
        assert len(got) == want
    else:
        assert [w.full_name for w in got] == want


def test_select_unknown(workloads: list[Workload]) -> None:
    with pytest.raises(ConfigError, match="matches no workload"):
        select_workloads(workloads, "NoSuchCase")


def synthetic(template: list[dict[str, Any]], params: dict[str, Any], gates: dict[str, Any] | None = None) -> Workload:
    return Workload(
        case="Case",
        name="w",
        config_dir=perf_dir() / "misc",
        group="misc",
        labels=("performance",),
        params=params,
        feature_gates=gates or {},
        template=tuple(template),
        default_pod_template=None,
    )


@pytest.mark.parametrize(
    ("template", "params", "gates", "fragment"),
    [
        ([{"opcode": "createPods", "countParam": "$n", "collectMetrics": True}], {}, None, "parameter n is undefined"),
        ([{"opcode": "createPods", "count": 1, "collectMetrics": True}], {"extra": 1}, None, "['extra'] are defined"),
        ([{"opcode": "createPods", "count": 1, "collectMetrics": True, "bogus": 1}], {}, None, "unknown fields"),
        ([{"opcode": "createWidgets"}], {}, None, "unknown opcode"),
        ([{"opcode": "createPods", "count": 1}], {}, None, "no op collects metrics"),
        ([{"opcode": "createPods", "countParam": "$n", "collectMetrics": True}], {"n": "x"}, None, "wrong type"),
        ([{"opcode": "createPods", "count": 1, "collectMetrics": True, "skipWaitToCompletion": True}], {}, None,
         "cannot be true at the same time"),
        ([{"opcode": "createPods", "count": 1, "collectMetrics": True, "podTemplatePath": "nope.yaml"}], {}, None,
         "not found"),
    ],
)  # fmt: skip
def test_errors(template: list[dict[str, Any]], params: dict[str, Any], gates: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_ops(synthetic(template, params, gates))
    assert fragment in str(err.value)


def test_unknown_gate() -> None:
    with pytest.raises(ConfigError, match="unknown feature gate NoSuchGate"):
        workload_gates(synthetic([], {}, {"NoSuchGate": True}))
