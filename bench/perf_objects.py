"""The objects scheduler_perf's ops create, built as its Go code builds them.

Each builder names the upstream function it follows (test/integration/scheduler_perf and
test/utils of k8s.io/kubernetes v1.36.3). Template files are rendered with
bench/perf_template.py and decoded as YAML; ``RestMapper`` maps an apiVersion and kind to its
REST collection through the API server's discovery, as upstream's dynamic client does.
"""

from __future__ import annotations

import copy
import functools
import json
import pathlib
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from bench.live_http import Kube
from bench.perf_config import ConfigError
from bench.perf_template import has_actions, render

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Loader = yaml.SafeLoader

Obj = dict[str, Any]

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"  # imageutils.GetE2EImage(imageutils.Pause)
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand alphanums


def rand_suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(_RAND_ALPHABET) for _ in range(n))


def base_node(prefix: str) -> Obj:
    """makeBaseNode: 110 pods, 4 CPUs, 32Gi, Ready."""
    res = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {
            "capacity": dict(res),
            "allocatable": dict(res),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def base_pod() -> Obj:
    """makeBasePod with testutils.MakePodSpec: one pause container, 100m and 500Mi, port 80."""
    res = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": PAUSE_IMAGE,
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": dict(res), "requests": dict(res)},
                }
            ]
        },
    }


class Template:
    """A template file: rendered per (index, count) if it has actions, else decoded once."""

    def __init__(self, path: str | pathlib.Path) -> None:
        self.path = str(path)
        self.text = pathlib.Path(path).read_text()
        self.dynamic = has_actions(self.text)
        self._static: Obj | None = None

    def _decode(self, text: str) -> Obj:
        obj = yaml.load(text, Loader=_Loader)
        if not isinstance(obj, dict):
            raise ConfigError(f"{self.path}: expected one object, got {type(obj).__name__}")
        return obj

    def object(self, index: int = 0, count: int = 1) -> Obj:
        if self.dynamic:
            return self._decode(render(self.text, {"Index": index, "Count": count}))
        if self._static is None:
            self._static = self._decode(self.text)
        return copy.deepcopy(self._static)


@functools.lru_cache(maxsize=256)
def template(path: str) -> Template:
    return Template(path)


class Fixed:
    """A template-like source of one fixed object (upstream's StaticNodeTemplate/StaticPodTemplate)."""

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self.dynamic = False

    def object(self, index: int = 0, count: int = 1) -> Obj:
        return copy.deepcopy(self.obj)


def body(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class RestMapper:
    """apiVersion + kind -> (collection path prefix, resource, namespaced), from discovery."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._cache: dict[tuple[str, str], tuple[str, str, bool]] = {}

    def mapping(self, api_version: str, kind: str) -> tuple[str, str, bool]:
        key = (api_version, kind)
        if key not in self._cache:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            doc = self.kube.request("GET", base, ok=(200, 404)) or {}
            for r in doc.get("resources") or []:
                if r.get("kind") == kind and "/" not in r.get("name", ""):
                    self._cache[key] = (base, r["name"], bool(r.get("namespaced")))
                    break
            else:
                raise ConfigError(f"the API server serves no {kind} in {api_version}")
        return self._cache[key]

    def collection(self, obj: Mapping[str, Any], namespace: str, what: str) -> str:
        """The collection path of ``obj`` in ``namespace`` ('' = cluster):
        upstream refuses a namespace for a cluster-scoped kind and none for a namespaced one."""
        base, resource, namespaced = self.mapping(str(obj.get("apiVersion")), str(obj.get("kind")))
        if namespace and not namespaced:
            raise ConfigError(f"namespace {namespace!r} set for {what}, but {obj.get('kind')} is cluster-scoped")
        if not namespace and namespaced:
            raise ConfigError(f"namespace not set for {what}, but {obj.get('kind')} is namespaced")
        return f"{base}/namespaces/{namespace}/{resource}" if namespace else f"{base}/{resource}"


def csinode(node: str, drivers: Mapping[str, Any], migrated: Sequence[str]) -> Obj:
    """NodeAllocatableStrategy.createCSINode."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node, "annotations": {MIGRATED_PLUGINS_ANNOTATION: ",".join(migrated)}},
        "spec": {
            "drivers": [
                {"name": d, "allocatable": alloc, "nodeID": node} for d, alloc in (drivers or {}).items()
            ]
        },
    }



def volume_pair(pv_tmpl: Obj, pvc_tmpl: Obj, namespace: str, i: int) -> tuple[Obj, Obj]:
    """CreatePodWithPersistentVolume with bindVolume (and getCustomVolumeFactory): claim pvc-<i>
    bound to volume <namespace>-vol-<i>, both with phase Bound (set through /status)."""
    pvc_name = f"pvc-{i}"
    pv = copy.deepcopy(pv_tmpl)
    pv.setdefault("metadata", {})["name"] = f"{namespace}-vol-{i}"
    spec = pv.setdefault("spec", {})
    if spec.get("csi") is not None:
        spec["csi"]["volumeHandle"] = pv["metadata"]["name"]
    elif spec.get("awsElasticBlockStore") is not None:
        spec["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
    spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": pvc_name, "apiVersion": "v1"}
    pv["status"] = {"phase": "Bound"}
    pvc = copy.deepcopy(pvc_tmpl)
    pvc.setdefault("metadata", {})["name"] = pvc_name
    pvc.setdefault("spec", {})["volumeName"] = pv["metadata"]["name"]
    pvc["status"] = {"phase": "Bound"}
    return pv, pvc


# ---- allocResourceClaims -----------------------------------------------------------------------

_DRIVER_SELECTOR = re.compile(r'^\s*device\.driver\s*==\s*"([^"]+)"\s*$')


def _class_driver(dc: Mapping[str, Any]) -> str:
    """The driver a DeviceClass selects; only ``device.driver == "..."`` classes are supported."""
    sels = (dc.get("spec") or {}).get("selectors") or []
    exprs = [(s.get("cel") or {}).get("expression") or "" for s in sels]
    drivers = [m.group(1) for e in exprs if (m := _DRIVER_SELECTOR.match(e))]
    if len(drivers) != 1 or len(sels) != 1:
        raise ConfigError(
            f"allocResourceClaims: DeviceClass {dc['metadata']['name']} is not one 'device.driver == \"X\"' "
            "selector; the bench's allocator supports only that"
        )
    return drivers[0]


def _claim_requests(claim: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    out = []
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        ex = r.get("exactly") or {}
        extra = set(ex) - {"deviceClassName", "allocationMode", "count"}
        if not ex or extra or ex.get("allocationMode", "ExactCount") != "ExactCount" or set(r) - {"name", "exactly"}:
            raise ConfigError(
                f"allocResourceClaims: claim {claim['metadata']['name']} request {r.get('name')} needs more than "
                "'exactly: {deviceClassName, count}', which is all the bench's allocator supports"
            )
        out.append((r["name"], ex["deviceClassName"], int(ex.get("count", 1))))
    return out


def allocate_claims(
    claims: list[Obj], classes: list[Obj], slices: list[Obj], nodes: list[str], rng: random.Random
) -> list[Obj]:
    """allocResourceClaimsOp for the claims it is used with: each unallocated claim, in order,
    gets free devices of its classes' drivers on one node tried in random order. Returns the
    claims with ``status.allocation`` set (to write through /status)."""
    driver_of = {dc["metadata"]["name"]: _class_driver(dc) for dc in classes}
    devices: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (node, driver) -> [(pool, device)]
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("nodeName"):
            key = (spec["nodeName"], spec["driver"])
            devices.setdefault(key, []).extend((spec["pool"]["name"], d["name"]) for d in spec.get("devices") or [])
    taken: set[tuple[str, str, str]] = set()
    for c in claims:
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            taken.add((r["driver"], r["pool"], r["device"]))
    out: list[Obj] = []
    for claim in claims:
        if (claim.get("status") or {}).get("allocation"):
            continue
        reqs = _claim_requests(claim)
        order = list(nodes)
        rng.shuffle(order)
        for node in order:
            results, picked = [], set()
            for name, cls, count in reqs:
                if cls not in driver_of:
                    raise ConfigError(f"allocResourceClaims: DeviceClass {cls} not found")
                drv = driver_of[cls]
                free = [
                    (p, d)
                    for p, d in devices.get((node, drv), [])
                    if (drv, p, d) not in taken and (drv, p, d) not in picked
                ][:count]
                if len(free) < count:
                    break
                for p, d in free:
                    picked.add((drv, p, d))
                    results.append({"request": name, "driver": drv, "pool": p, "device": d})
            else:
                taken |= picked
                claim = copy.deepcopy(claim)
                claim.setdefault("status", {})["allocation"] = {
                    "devices": {"results": results},
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                        ]
                    },
                }
                out.append(claim)
                break
        else:
            raise ConfigError(f"allocResourceClaims: could not allocate claim {claim['metadata']['name']}")
    return out
