"""The whole framework's batch (numpy) path equals its per-node reference path.

Random clusters exercise every default plugin; each pending pod's full decision record
(filtered nodes with reasons, every plugin's raw and final score, totals, choice, message)
must be identical with ``Framework.reference_mode`` on and off.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.simulate.simulator import Simulator, attempt_record, build_cluster
from scheduler.testing.builders import make_node, make_pod

ZONES = ["z1", "z2", "z3"]
KEYS = ["disk", "gpu", "team"]
IMAGES = ["nginx:1.25", "redis", "busybox:latest", "registry.k8s.io/pause:3.10"]


def _node(r: random.Random, i: int) -> dict[str, Any]:
    taints = []
    if r.random() < 0.2:
        taints.append(
            {
                "key": r.choice(KEYS),
                "value": r.choice(["a", "b"]),
                "effect": r.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
            }
        )
    images = [([img], r.choice([10, 300, 900]) * 2**20) for img in IMAGES if r.random() < 0.3]
    labels = {k: r.choice(["a", "b"]) for k in KEYS if r.random() < 0.5}
    extra = {"example.com/gpu": str(r.randint(0, 4))} if r.random() < 0.3 else {}
    return make_node(
        f"node-{i}",
        cpu=str(r.choice([1, 2, 4, 8])),
        memory=f"{r.choice([2, 4, 16])}Gi",
        pods=r.choice([3, 10, 110]),
        ephemeral=r.choice([None, "10Gi"]),
        extra=extra,
        labels=labels,
        taints=taints,
        unschedulable=r.random() < 0.05,
        images=images,
        zone=r.choice(ZONES),
    )


def _pod(r: random.Random, i: int, node: str = "") -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if r.random() < 0.8:
        kw["cpu"] = r.choice(["100m", "500m", "1", "1500m", "3"])
    if r.random() < 0.7:
        kw["memory"] = r.choice(["128Mi", "1Gi", "3Gi"])
    if r.random() < 0.15:
        kw.setdefault("requests", {})["example.com/gpu"] = str(r.randint(1, 2))
    if r.random() < 0.1:
        kw.setdefault("requests", {})["ephemeral-storage"] = "1Gi"
    if r.random() < 0.2:
        kw["node_selector"] = {r.choice(KEYS): r.choice(["a", "b"])}
    if r.random() < 0.3:
        kw["tolerations"] = [{"key": r.choice(KEYS), "operator": "Exists"}]
    if r.random() < 0.2:
        kw["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": r.randint(1, 100),
                        "preference": {
                            "matchExpressions": [
                                {
                                    "key": r.choice(KEYS),
                                    "operator": r.choice(["In", "NotIn", "Exists"]),
                                    "values": ["a"],
                                }
                            ]
                        },
                    }
                ]
            }
        }
    if r.random() < 0.1:
        kw["host_ports"] = [r.choice([80, 443])]
    if r.random() < 0.3:
        kw["images"] = [r.choice(IMAGES)]
    app = r.choice(["web", "db", "cache"])
    kw["labels"] = {"app": app}
    if r.random() < 0.2 and not node:
        kw["spread"] = [
            {
                "maxSkew": r.randint(1, 2),
                "topologyKey": r.choice(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
                "whenUnsatisfiable": r.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if r.random() < 0.2:
        term = {
            "labelSelector": {"matchLabels": {"app": r.choice(["web", "db"])}},
            "topologyKey": r.choice(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
        }
        kind = r.choice(["podAffinity", "podAntiAffinity"])
        if r.random() < 0.5:
            kw.setdefault("affinity", {})[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            kw.setdefault("affinity", {})[kind] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": r.randint(1, 100), "podAffinityTerm": term}
                ]
            }
    return make_pod(f"pod-{i}", node_name=node, priority=r.choice([0, 0, 10]), **kw)


def _config(percentage: int) -> Any:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": percentage,
    }
    return parse_config(doc)


def _records(docs: list[dict[str, Any]], reference: bool, percentage: int) -> list[str]:
    sim = Simulator(build_cluster(docs), _config(percentage), seed=3)
    for fw in sim.frameworks.values():
        fw.reference_mode = reference
    return [json.dumps(attempt_record(sim, out), sort_keys=True) for out in sim.attempts()]


@pytest.mark.parametrize("seed", range(12))
def test_batch_equals_reference(seed: int) -> None:
    r = random.Random(seed)
    n_nodes = r.choice([5, 30, 150])
    nodes = [_node(r, i) for i in range(n_nodes)]
    running = [_pod(r, 1000 + i, node=f"node-{r.randrange(n_nodes)}") for i in range(n_nodes)]
    pending = [_pod(r, i) for i in range(40)]
    docs = nodes + running + pending
    percentage = r.choice([0, 30, 100])
    fast = _records(docs, False, percentage)
    ref = _records(docs, True, percentage)
    assert len(fast) == len(ref) >= 40  # preemption adds a retry line per nominated pod
    for a, b in zip(fast, ref):
        assert a == b


@pytest.mark.parametrize("seed", range(4))
def test_tight_spread_batch_statuses_equal_reference(seed: int) -> None:
    # maxSkew 1 over zones (and hostnames): after each placement most nodes fail the spread,
    # and their statuses come from PodTopologySpread's filter_batch_statuses in one call; every
    # record (filtered nodes and reasons among them) must equal the per-node path's. A node
    # without the zone label fails on the label, before any skew.
    r = random.Random(seed)
    nodes = []
    for i in range(60):
        labels = {"topology.kubernetes.io/zone": r.choice(ZONES)} if r.random() < 0.9 else {}
        nodes.append(make_node(f"node-{i}", cpu="8", labels=labels))
    keys = ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    pending = [
        make_pod(f"p-{i}", cpu="100m", labels={"app": "s"}, spread=[
            {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "s"}}}
            for k in keys[: r.choice([1, 2])]
        ])
        for i in range(30)
    ]
    fast = _records(nodes + pending, False, 100)
    ref = _records(nodes + pending, True, 100)
    assert any('"filtered": {"' in rec for rec in fast)  # the case does reject nodes
    assert fast == ref


def _pinned(pod: dict[str, Any], names: list[str]) -> dict[str, Any]:
    # A DaemonSet pod's affinity: NodeAffinity's PreFilterResult leaves only these nodes.
    pod["spec"].setdefault("affinity", {})["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}]
        }
    }
    return pod


@pytest.mark.parametrize("seed", range(8))
def test_few_candidates_equal_the_batch_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Filter over one or two candidate nodes runs the per-node forms (Framework._filter_few);
    # every record must equal the one the batch forms give for the same cycle.
    from scheduler.core import algorithm
    from scheduler.framework import runtime

    r = random.Random(seed)
    n_nodes = r.choice([1, 2, 12])
    nodes = [_node(r, i) for i in range(n_nodes)]
    running = [_pod(r, 1000 + i, node=f"node-{r.randrange(n_nodes)}") for i in range(n_nodes)]
    pending = [_pod(r, i) for i in range(30)]
    if n_nodes > 2:
        pending = [_pinned(p, [f"node-{k}" for k in r.sample(range(n_nodes), r.choice([1, 2]))]) for p in pending]
    docs = nodes + running + pending
    few_calls = [0]
    few = runtime.Framework._filter_few

    def counted(self: runtime.Framework, *args: Any) -> Any:
        few_calls[0] += 1
        return few(self, *args)

    monkeypatch.setattr(runtime.Framework, "_filter_few", counted)
    small = _records(docs, False, 100)
    assert few_calls[0] >= 30
    monkeypatch.setattr(runtime, "SMALL_CHUNK", 0)
    monkeypatch.setattr(algorithm, "SMALL_CHUNK", 0)
    few_calls[0] = 0
    batch = _records(docs, False, 100)
    assert few_calls[0] == 0
    assert small == batch
    assert any('"filtered": {"' in rec for rec in small)  # the cycles do reject nodes
