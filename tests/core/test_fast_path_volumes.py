"""The volume plugins' batch forms equal their per-node forms: random clusters with PVs,
PVCs, StorageClasses and CSINodes, full decision records compared with
``Framework.reference_mode`` on and off (as tests/test_fast_path.py does for the rest)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.simulate.simulator import Simulator, attempt_record, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.storage import pv, pvc, storage_class

ZONES = ["z1", "z2", "z3"]
DRIVER = "ebs.csi.aws.com"


def _cluster(r: random.Random) -> list[dict[str, Any]]:
    n = r.choice([5, 30, 120])
    docs: list[dict[str, Any]] = [storage_class("wait", provisioner=DRIVER), storage_class("local", provisioner="")]
    for i in range(n):
        docs.append(make_node(f"node-{i}", zone=r.choice(ZONES)))
        if r.random() < 0.7:
            driver: dict[str, Any] = {"name": DRIVER, "nodeID": f"node-{i}"}
            if r.random() < 0.8:
                driver["allocatable"] = {"count": r.randint(0, 3)}
            docs.append({"kind": "CSINode", "metadata": {"name": f"node-{i}"}, "spec": {"drivers": [driver]}})
    claims = []
    for j in range(60):
        name = f"c{j}"
        kind = r.random()
        if kind < 0.5:
            affinity = {"kubernetes.io/hostname": [f"node-{r.randrange(n)}"]} if r.random() < 0.3 else None
            labels = {"topology.kubernetes.io/zone": r.choice(ZONES)} if r.random() < 0.5 else None
            docs.append(
                pv(
                    f"pv{j}",
                    cls="wait",
                    claim=("default", name),
                    affinity=affinity,
                    labels=labels,
                    csi=(DRIVER, f"h{j}"),
                )
            )
            docs.append(pvc(name, cls="wait", volume=f"pv{j}", bound=True))
        elif kind < 0.8:
            docs.append(pvc(name, cls=r.choice(["wait", "local"]), size="1Gi"))
            if r.random() < 0.5:
                docs.append(
                    pv(
                        f"spv{j}",
                        cls="local",
                        size="2Gi",
                        affinity={"kubernetes.io/hostname": [f"node-{r.randrange(n)}"]},
                    )
                )
        # else: the claim does not exist
        claims.append(name)
    running = r.choice([0.0, 0.5])  # also clusters where no pod uses a volume yet
    for k in range(n):
        if r.random() < running:
            vols = [{"name": "v", "persistentVolumeClaim": {"claimName": r.choice(claims)}}]
            docs.append(make_pod(f"run-{k}", node_name=f"node-{r.randrange(n)}", volumes=vols))
    for k in range(30):
        vols = [
            {"name": f"v{m}", "persistentVolumeClaim": {"claimName": r.choice(claims)}} for m in range(r.randint(0, 2))
        ]
        docs.append(make_pod(f"pod-{k}", cpu="100m", volumes=vols))
    return docs


def _records(docs: list[dict[str, Any]], reference: bool) -> list[str]:
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    sim = Simulator(build_cluster(docs), parse_config(doc), seed=3)
    for fw in sim.frameworks.values():
        fw.reference_mode = reference
    return [json.dumps(attempt_record(sim, out), sort_keys=True) for out in sim.attempts()]


@pytest.mark.parametrize("seed", range(8))
def test_volume_batch_equals_reference(seed: int) -> None:
    docs = _cluster(random.Random(seed))
    fast = _records(docs, False)
    ref = _records(docs, True)
    assert len(fast) == 30
    for a, b in zip(fast, ref, strict=True):
        assert a == b
    # The clusters exercise the volume plugins' rejections, not just passes.
    assert any('"plugin": "Volume' in a or '"plugin": "NodeVolumeLimits"' in a for a in fast)
