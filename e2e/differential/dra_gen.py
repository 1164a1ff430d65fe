"""DynamicResources in the differential suite: a fake driver's DeviceClass and ResourceSlices on
some of a scenario's nodes, and ResourceClaims for some of its pending pods.

Drawn from a random stream of their own (seeded from the scenario's seed), so turning DRA on
leaves every other draw of a seed as it was. Claims ask for one or two devices, sometimes with
a selector on a device attribute or capacity, sometimes a ``firstAvailable`` list (scored by
DynamicResources), so that nodes without devices, with too few, or with the wrong ones are
rejected and the rest are scored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .generator import MARK, Scenario

Obj = dict[str, Any]
MODELS = ("a100", "h100")


@dataclass
class DraScenario:
    cluster: list[Obj] = field(default_factory=list)  # DeviceClass, ResourceSlices
    claims: dict[str, Obj] = field(default_factory=dict)  # pending pod "ns/name" -> its claim


def add(sc: Scenario, probability: float = 0.5) -> DraScenario:
    """Devices on some schedulable nodes and claims for about *probability* of the pending pods
    (their spec gets ``resourceClaims``)."""
    r = random.Random(sc.seed * 7919 + 11)
    driver = f"{sc.prefix}.dra.example.com"
    cls = f"{sc.prefix}-gpu"
    out = DraScenario()
    out.cluster.append({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": cls, "labels": {MARK: "true"}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    })
    for node in sc.nodes:
        if node["spec"].get("unschedulable") or r.random() < 0.4:
            continue
        name = node["metadata"]["name"]
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {"model": {"string": r.choice(MODELS)}, "index": {"int": i}},
                "capacity": {"memory": {"value": r.choice(("16Gi", "40Gi", "80Gi"))}},
            }
            for i in range(r.randint(1, 3))
        ]
        out.cluster.append({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{sc.prefix}", "labels": {MARK: "true"}},
            "spec": {"driver": driver, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devices},
        })
    for pod in sc.pending_pods:
        if r.random() >= probability:
            continue
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        claim_name = f"{pname}-gpu"
        request = _request(r, cls, driver)
        out.claims[f"{ns}/{pname}"] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": claim_name, "namespace": ns},
            "spec": {"devices": {"requests": [request]}},
        }
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        sc.features["dra-first-available" if "firstAvailable" in request else "dra-claim"] += 1
    return out


def _selectors(r: random.Random, driver: str) -> list[Obj]:
    choice = r.random()
    if choice < 0.3:
        return [{"cel": {"expression": f'device.attributes["{driver}"].model == "{r.choice(MODELS)}"'}}]
    if choice < 0.5:
        q = r.choice(("20Gi", "40Gi"))
        return [{"cel": {"expression": f'device.capacity["{driver}"].memory.compareTo(quantity("{q}")) >= 0'}}]
    return []


def _request(r: random.Random, cls: str, driver: str) -> Obj:
    if r.random() < 0.3:
        subs = []
        for i, count in enumerate(sorted((r.randint(1, 2), r.randint(1, 2)), reverse=True)):
            sub: Obj = {"name": f"s{i}", "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
            sels = _selectors(r, driver)
            if sels:
                sub["selectors"] = sels
            subs.append(sub)
        return {"name": "gpu", "firstAvailable": subs}
    exactly: Obj = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": r.choice((1, 1, 2))}
    sels = _selectors(r, driver)
    if sels:
        exactly["selectors"] = sels
    return {"name": "gpu", "exactly": exactly}
