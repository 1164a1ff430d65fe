"""OpportunisticBatching through `simulate`: the same decisions with the gate on and off when pods
go one per node (what KEP-5598 promises), the hint taken in place of a full pass, and nothing
batched under the default profile, whose system-default spreading leaves every pod unsignable
(upstream PodTopologySpread.SignPod)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.config.features import FeatureGates
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod

# Spreading with no default constraints: the only change that makes pods signable.
NO_DEFAULT_SPREAD = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{
        "schedulerName": "default-scheduler",
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
    }],
}


def _docs(pods: int, *, port: int | None = 8080, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    # Distinct sizes: NodeResourcesFit and BalancedAllocation rank the nodes without ties.
    nodes = [make_node(f"n{i}", cpu=str(2 + i), memory=f"{8 + 2 * i}Gi") for i in range(6)]
    ports = [port] if port is not None else None
    return nodes + [
        make_pod(f"web-{k}", cpu="500m", memory="1Gi", host_ports=ports, labels=labels or {"app": "web"},
                 creation=f"2024-01-01T00:00:{k:02d}Z")
        for k in range(pods)
    ]


def _run(docs: list[dict[str, Any]], doc: dict[str, Any], batching: bool) -> tuple[list[tuple[str, Any, int]], int]:
    cfg = parse_config(doc, FeatureGates({"OpportunisticBatching": batching}))
    sim = Simulator(build_cluster(docs), cfg, seed=7)
    got = [(o.pod.name, o.node, o.result.evaluated_nodes if o.result else 0) for o in sim.attempts()]
    fw = sim.frameworks["default-scheduler"]
    return got, fw.batch.batched_pods if fw.batch is not None else 0


def test_same_decisions_with_the_gate_on_and_off_one_pod_per_node() -> None:
    docs = _docs(7)
    on, batched = _run(docs, NO_DEFAULT_SPREAD, True)
    off, none = _run(docs, NO_DEFAULT_SPREAD, False)
    assert [(n, node) for n, node, _ in on] == [(n, node) for n, node, _ in off]
    # Six nodes, one host port each: the seventh pod fits nowhere.
    assert [node for _, node, _ in on][:6] == ["n5", "n4", "n3", "n2", "n1", "n0"] and on[6][1] is None
    # With the gate the first pod scores all six nodes, the next five take the runner-up alone.
    assert [ev for _, _, ev in on][:6] == [6, 1, 1, 1, 1, 1]
    assert [ev for _, _, ev in off][:6] == [6] * 6  # the full nodes count as evaluated
    assert (batched, none) == (5, 0)


@pytest.mark.parametrize(
    ("doc", "port", "labels"),
    [
        # The default profile: PodTopologySpread's system defaults make no pod signable.
        ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}, 8080, None),
        # Pods that share a node: the previous node still fits (node_not_full), no hint.
        (NO_DEFAULT_SPREAD, None, None),
    ],
)
def test_nothing_is_batched_when_upstream_would_not(doc: dict[str, Any], port: int | None,
                                                     labels: dict[str, str] | None) -> None:
    docs = _docs(4, port=port, labels=labels)
    on, batched = _run(docs, doc, True)
    off, _ = _run(docs, doc, False)
    assert on == off
    assert batched == 0
