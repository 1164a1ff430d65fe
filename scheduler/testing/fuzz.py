"""Fuzzing material shared by tests/fuzz (hypothesis) and bench/fuzz.py (atheris): one small
cluster whose pods exercise most plugins (the "world"), well-formed seed objects of every kind
the scheduler reads, and strategies that break them (arbitrary JSON values, type swaps,
removed and added fields, hostile strings and numbers at any path).

The world is small on purpose: each example schedules all of it, and a CI run tries a fixed
number of examples."""

from __future__ import annotations

import contextlib
import copy
import io
import math
import pathlib
import re
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from hypothesis import strategies as st

from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.simulate.simulator import run as simulate
from scheduler.testing.builders import HOSTNAME, ZONE, make_namespace, make_node, make_pod
from scheduler.testing.storage import claim_vol, pv, pvc, storage_class

NS = "fz"
GPU_CLASS = "gpu"
GPU_DRIVER = "gpu.example.com"
CONFIG_API = "kubescheduler.config.k8s.io/v1"


def _named(kind: str, api: str, name: str, ns: str | None = None, **body: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind.lower()}-{name}", "resourceVersion": "1"}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": api, "kind": kind, "metadata": meta, **body}


def _pod(name: str, **kw: Any) -> dict[str, Any]:
    p = make_pod(name, NS, **kw)
    p.setdefault("apiVersion", "v1")
    p.setdefault("kind", "Pod")
    p["metadata"]["resourceVersion"] = "1"
    p["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{len(name):02d}Z"
    return p


def world_nodes() -> list[dict[str, Any]]:
    """Four nodes in two zones; n3 tainted, n2 with GPUs (a ResourceSlice), n1 where pv-local lives."""
    out = []
    for i in range(4):
        n = make_node(f"n{i}", cpu=str(2 + i), memory=f"{4 + 2 * i}Gi", pods=20, zone=f"z{i % 2}",
                      labels={"disk": "ssd" if i % 2 else "hdd"},
                      taints=[{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}] if i == 3 else None,
                      images=[([f"img{i}:1"], 300_000_000)])
        n["apiVersion"] = "v1"
        n["kind"] = "Node"
        n["metadata"]["resourceVersion"] = "1"
        out.append(n)
    return out


def world_objects() -> list[dict[str, Any]]:
    """Everything but nodes and pods: namespace, owner, storage, DRA, PDB."""
    sc = storage_class("local", mode="WaitForFirstConsumer")
    sc.update(apiVersion="storage.k8s.io/v1", metadata={**sc["metadata"], "resourceVersion": "1"})
    vol = pv("pv-local", cls="local", size="5Gi", affinity={HOSTNAME: ["n1"]}, claim=(NS, "data"), phase="Bound")
    vol["apiVersion"] = "v1"
    claim = pvc("data", NS, cls="local", volume="pv-local", size="1Gi", bound=True, phase="Bound")
    claim["apiVersion"] = "v1"
    return [
        make_namespace(NS, {"team": "a"}),
        _named("ReplicaSet", "apps/v1", "web", NS, spec={"selector": {"matchLabels": {"app": "web"}}}),
        _named("Service", "v1", "web", NS, spec={"selector": {"app": "web"}}),
        sc,
        vol,
        claim,
        _named("CSINode", "storage.k8s.io/v1", "n0", spec={"drivers": [
            {"name": "csi.example.com", "nodeID": "n0", "allocatable": {"count": 8}}]}),
        _named("DeviceClass", "resource.k8s.io/v1", GPU_CLASS, spec={
            "selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}),
        _named("ResourceSlice", "resource.k8s.io/v1", "n2-gpu", spec={
            "driver": GPU_DRIVER, "nodeName": "n2",
            "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                         "capacity": {"memory": {"value": "40Gi"}}} for i in range(2)]}),
        _named("ResourceClaim", "resource.k8s.io/v1", "gpu-claim", NS, spec={"devices": {"requests": [
            {"name": "g", "exactly": {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1,
                                      "selectors": [{"cel": {"expression": 'device.attributes["'
                                                    + GPU_DRIVER + '"].model == "a100"'}}]}}]}}),
        _named("ResourceClaimTemplate", "resource.k8s.io/v1", "gpu-template", NS, spec={"spec": {"devices": {
            "requests": [{"name": "g", "exactly": {"deviceClassName": GPU_CLASS}}]}}}),
        _named("PodDisruptionBudget", "policy/v1", "web", NS,
               spec={"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
               status={"disruptionsAllowed": 0}),
    ]


def world_pods() -> list[dict[str, Any]]:
    """Pending pods each leaning on other plugins, and one bound pod the others react to."""
    zone_term = {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}]}
    web = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
    return [
        _pod("bound", cpu="500m", labels={"app": "web"}, node_name="n0", owner=("ReplicaSet", "web")),
        _pod("plain", cpu="1", memory="1Gi"),
        _pod("zone", cpu="500m", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                             zone_term}}),
        _pod("anti", cpu="200m", labels={"app": "web"}, owner=("ReplicaSet", "web"),
             affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [web]}}),
        _pod("near", cpu="200m", affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": web}]}}),
        _pod("spread", cpu="300m", labels={"app": "spread"}, spread=[
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "spread"}}}]),
        _pod("port", cpu="100m", host_ports=[8080]),
        _pod("tolerant", cpu="100m", node_selector={"disk": "ssd"},
             tolerations=[{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]),
        _pod("volume", cpu="100m", volumes=[claim_vol("data")]),
        _pod("gpu", cpu="100m", resourceClaims=[{"name": "g", "resourceClaimName": "gpu-claim"}]),
        _pod("image", cpu="100m", images=["img2:1"], priority=10),
        _pod("huge", cpu="64"),
    ]


def gang_objects() -> list[dict[str, Any]]:
    """A gang (scheduling.k8s.io/v1alpha2 PodGroup, minCount 2, one zone) and its three pods,
    for the workload-aware gates (GANG_GATES)."""
    group = _named("PodGroup", "scheduling.k8s.io/v1alpha2", "gang", NS, spec={
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": ZONE}]},
        "priority": 5})
    pods = [_pod(f"gang-{i}", cpu="300m", schedulingGroup={"podGroupName": "gang"}) for i in range(3)]
    return [group, *pods]


GANG_GATES = FeatureGates({"GenericWorkload": True, "GangScheduling": True,
                           "TopologyAwareWorkloadScheduling": True, "WorkloadAwarePreemption": True})


def seed_objects() -> list[dict[str, Any]]:
    """One well-formed object of every kind the scheduler reads (mutation starts here)."""
    return [*world_nodes(), *world_objects(), *world_pods()]


def small_world() -> bytes:
    """Two nodes and the pods that reach most plugins without volumes or devices, as a file:
    what the config inputs of the coverage-guided run schedule."""
    keep = ("bound", "plain", "anti", "spread", "huge")
    return dump([*world_nodes()[:2], *(p for p in world_pods() if p["metadata"]["name"] in keep)])


def seed_config() -> dict[str, Any]:
    """A KubeSchedulerConfiguration touching most of the decoder: two profiles, plugin sets,
    arguments of several plugins, client and leader-election settings."""
    return {
        "apiVersion": CONFIG_API,
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 8,
        "percentageOfNodesToScore": 50,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "clientConnection": {"qps": 50, "burst": 100, "contentType": "application/json"},
        "leaderElection": {"leaderElect": False, "leaseDuration": "15s", "renewDeadline": "10s",
                           "retryPeriod": "2s", "resourceNamespace": "kube-system", "resourceName": "x"},
        "profiles": [
            {"schedulerName": "default-scheduler",
             "plugins": {"score": {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 2}],
                                   "disabled": [{"name": "ImageLocality"}]}},
             "pluginConfig": [
                 {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                     "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                            {"name": "memory", "weight": 1}]}}},
                 {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": [
                     {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]}},
                 {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 2}},
                 {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 20,
                                                        "minCandidateNodesAbsolute": 10}},
                 {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 30}},
             ]},
            {"schedulerName": "second",
             "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}},
        ],
    }


# ---------------------------------------------------------------------------------------------
# Breaking things

# Values that have broken parsers before: wrong types, out-of-range and overflowing numbers,
# quantities at the edges, strings with line breaks and odd characters.
HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 10**30, 1.5, -0.0,
    math.inf, -math.inf, math.nan, "", " ", "-1", "0", "1E", "1e3", "9223372036854775808", "1Ei", "0.0001m",
    "NaN", "+Inf", "1ki", "lots", "a\nb", "\x00", "é", "a" * 300, "*", "Exists", "In", "DoesNotExist",
    "NoSchedule", "metadata.name", [], {}, [None], [""], [{}], {"": ""}, {"a": None}, [[]],
]

# Field names the scheduler reads: an added field of a known name reaches the parsers.
FIELD_NAMES = [
    "metadata", "spec", "status", "name", "namespace", "uid", "labels", "annotations", "ownerReferences",
    "deletionTimestamp", "resourceVersion", "nodeName", "containers", "initContainers", "resources",
    "requests", "limits", "cpu", "memory", "pods", "ports", "hostPort", "containerPort", "protocol",
    "affinity", "nodeAffinity", "podAffinity", "podAntiAffinity", "tolerations", "taints", "effect",
    "key", "operator", "values", "value", "topologySpreadConstraints", "maxSkew", "minDomains",
    "labelSelector", "matchLabels", "matchExpressions", "matchLabelKeys", "nodeSelector", "volumes",
    "persistentVolumeClaim", "claimName", "ephemeral", "resourceClaims", "resourceClaimName",
    "resourceClaimTemplateName", "overhead", "priority", "schedulerName", "schedulingGates",
    "allocatable", "capacity", "images", "unschedulable", "conditions", "phase", "devices", "driver",
    "pool", "attributes", "selectors", "cel", "expression", "allocation", "reservedFor", "count",
    "allocationMode", "deviceClassName", "exactly", "firstAvailable", "nodeSelectorTerms", "claimRef",
    "storageClassName", "volumeName", "accessModes", "drivers", "allocatable", "profiles", "plugins",
    "pluginConfig", "args", "enabled", "disabled", "weight", "multiPoint", "score", "filter",
    "percentageOfNodesToScore", "parallelism", "extenders", "leaderElection", "clientConnection",
    "scoringStrategy", "shape", "utilization", "defaultConstraints", "addedAffinity",
]


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Arbitrary decoded JSON/YAML (YAML also gives NaN and infinities), hostile values first."""
    scalars = (st.sampled_from(HOSTILE) | st.none() | st.booleans() | st.integers()
               | st.floats() | st.text(max_size=12))
    keys = st.sampled_from(FIELD_NAMES) | st.text(max_size=8)

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3)

    return st.recursive(scalars, nest, max_leaves=max_leaves)


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``obj`` (dict keys and list indexes), the root included."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, (*prefix, i))


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _swap_type(v: Any) -> Any:
    """The same content in the wrong container or scalar type."""
    if isinstance(v, dict):
        return [[k, x] for k, x in v.items()]
    if isinstance(v, list):
        return {str(i): x for i, x in enumerate(v)}
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return [v]
    return {}


MUTATIONS = ("replace", "hostile", "delete", "add", "swap", "wrap", "duplicate")


def mutate(obj: Any, choose: Callable[[int], int], draw_value: Callable[[], Any]) -> Any:
    """One mutation of a deep copy of ``obj`` at a chosen path. ``choose(n)`` picks an index
    below n, ``draw_value()`` an arbitrary value: hypothesis or atheris drives both."""
    out = copy.deepcopy(obj)
    all_paths = list(paths(out))
    path = all_paths[choose(len(all_paths))]
    how = MUTATIONS[choose(len(MUTATIONS))]
    target = _get(out, path)
    if how == "add" and isinstance(target, dict):
        target[FIELD_NAMES[choose(len(FIELD_NAMES))]] = draw_value()
        return out
    if how == "add" and isinstance(target, list):
        target.insert(choose(len(target) + 1), draw_value())
        return out
    if how == "duplicate" and isinstance(target, list) and target:
        target.append(copy.deepcopy(target[choose(len(target))]))
        return out
    if not path:  # the root itself: only a wrong type
        return _swap_type(out) if how == "swap" else draw_value()
    parent = _get(out, path[:-1])
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "hostile":
        parent[last] = HOSTILE[choose(len(HOSTILE))]
    elif how == "swap":
        parent[last] = _swap_type(target)
    elif how == "wrap":
        parent[last] = [target]
    else:
        parent[last] = draw_value()
    return out


@st.composite
def mutated(draw: st.DrawFn, obj: Any, max_mutations: int = 3) -> Any:
    """``obj`` after 1..max_mutations mutations."""
    values = json_values()
    n = draw(st.integers(1, max_mutations))
    for _ in range(n):
        obj = mutate(obj, lambda k: draw(st.integers(0, k - 1)), lambda: draw(values))
    return obj


def identity(raw: Any) -> tuple[str, str]:
    """(kind, name) of a raw object as far as it has them (for messages)."""
    if not isinstance(raw, dict):
        return "?", "?"
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return str(raw.get("kind")), str(name)


# ---------------------------------------------------------------------------------------------
# The file decoders, as ``simulate`` runs them

# The last-resort lines of simulate: an exception no check named (contained, but a finding).
_UNNAMED = re.compile(r"(scheduling failed: |: )[A-Z][A-Za-z]*(Error|Exception): ")


def dump(docs: list[Any]) -> bytes:
    """A multi-document YAML file of ``docs``."""
    return yaml.safe_dump_all(docs, allow_unicode=True).encode()


def simulate_files(cluster: bytes, config: bytes | None = None,
                   gates: FeatureGates = DEFAULT_GATES) -> tuple[int, str, str, str, str]:
    """``pyscheduler simulate --output placements --seed 1`` on these file contents. Returns
    (exit code, stdout, stderr, cluster path, config path)."""
    with tempfile.TemporaryDirectory() as d:
        cpath = str(pathlib.Path(d) / "cluster.yaml")
        pathlib.Path(cpath).write_bytes(cluster)
        fpath = ""
        if config is not None:
            fpath = str(pathlib.Path(d) / "config.yaml")
            pathlib.Path(fpath).write_bytes(config)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = simulate(cpath, fpath or None, 1, "placements", stream=out, gates=gates)
        return rc, out.getvalue(), err.getvalue(), cpath, fpath


def refusal_problem(rc: int, err: str, paths: tuple[str, ...]) -> str | None:
    """What is wrong with how ``simulate`` ended, or None: it exits 0, or 2 with one line that
    names one of its files and the object and field (not a bare exception)."""
    if rc == 0:
        return None
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc != 2:
        return f"exit {rc}: {err[-500:]}"
    errors = [ln for ln in lines if ln.startswith("error: ")]
    if len(errors) != 1 or len(lines) - len(errors) > 1:
        return f"expected one error line, got {lines[:4]}"
    line = errors[0]
    if not any(line.startswith(f"error: {p}: ") for p in paths if p):
        return f"the line names no input file: {line}"
    if _UNNAMED.search(line):
        return f"an exception no check named: {line}"
    return None
