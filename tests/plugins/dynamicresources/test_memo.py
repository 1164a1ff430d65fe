"""The allocation memo (plugins/dynamicresources/memo.py) gives what the allocator gives.

Not an upstream table: upstream runs the allocator on every node in every Filter call, so the
memo must not change a decision. Random clusters of claim pods (claims of a few specs, one spec
shared by many pods as a ResourceClaimTemplate makes them) are scheduled one after another with
and without it, and every attempt's record must be the same."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.plugins.dynamicresources.memo import AllocationMemo
from scheduler.simulate.simulator import Simulator, attempt_record, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.dra_workloads import TEST_DRIVER, resource_slice

SPECS: list[dict[str, Any]] = [
    {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}},
    {"devices": {"requests": [{"name": "two", "exactly": {"deviceClassName": "test-class", "count": 2}}]}},
    {
        "devices": {
            "requests": [
                {
                    "name": "numa",
                    "exactly": {
                        "deviceClassName": "test-class",
                        "selectors": [{"cel": {"expression": 'device.attributes["dra.example.com"].numa < 2'}}],
                    },
                }
            ]
        }
    },
]


def _cluster(r: random.Random) -> list[dict[str, Any]]:
    n = r.choice([3, 8, 20])
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{TEST_DRIVER}"'}}]},
        }
    ]
    for i in range(n):
        docs.append(make_node(f"node-{i}", zone=r.choice(["z1", "z2"])))
        if r.random() < 0.9:
            docs.append(resource_slice(TEST_DRIVER, f"node-{i}", r.randint(0, 4)))
    for k in range(3 * n):
        claims = []
        for m in range(r.choice([1, 1, 1, 2])):
            name = f"c-{k}-{m}"
            spec = r.choices(SPECS, weights=[6, 1, 2])[0]
            docs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                    "spec": spec,
                }
            )
            claims.append({"name": f"r{m}", "resourceClaimName": name})
        pod = make_pod(f"pod-{k}", cpu="10m")
        pod["spec"]["resourceClaims"] = claims
        docs.append(pod)
    return docs


def _records(docs: list[dict[str, Any]]) -> list[str]:
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    sim = Simulator(build_cluster(docs), parse_config(doc), seed=3)
    return [json.dumps(attempt_record(sim, out), sort_keys=True) for out in sim.attempts()]


@pytest.mark.parametrize("seed", range(8))
def test_memo_changes_no_decision(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _cluster(random.Random(seed))
    hits = 0
    get = AllocationMemo.get

    def counting_get(self: AllocationMemo, *args: Any) -> Any:
        nonlocal hits
        e = get(self, *args)
        hits += e is not None
        return e

    monkeypatch.setattr(AllocationMemo, "get", counting_get)
    with_memo = _records(docs)
    assert hits > 0  # the memo answered
    monkeypatch.setattr(AllocationMemo, "sync", lambda self, *args: False)
    without = _records(docs)
    assert len(with_memo) == len(without) > 0
    for a, b in zip(with_memo, without, strict=True):
        assert a == b
    # Pods were placed and pods were turned away for want of devices.
    assert any('"node": "node-' in a for a in with_memo)
    assert any("cannot allocate all claims" in a for a in with_memo)
