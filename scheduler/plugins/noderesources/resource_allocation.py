"""Shared resource-allocation scoring (upstream noderesources/resource_allocation.go).

A scorer turns, for every configured resource, the node's allocatable and the node's requested
amount *plus the incoming pod's request* into one 0..100 score. Fit (Least/Most/RTCR) counts
cpu/memory with the non-zero defaults (100m / 200MiB per container that does not name them);
BalancedAllocation (``use_requested``) counts the actual requests.

The per-node form (``score_node``) is the reference. ``score_columns`` does the same over the
snapshot's numpy columns; every operand is non-negative, so numpy's floor division equals Go's
truncating int64 division.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo, has_pod_level_requests, has_status_resources, pod_resource_inputs
from scheduler.model.podrequests import NON_MISSING_DEFAULTS, pod_requests, resource_gates
from scheduler.model.resource import CPU, EPHEMERAL_STORAGE, MEMORY, Resource, resource_from_map

if TYPE_CHECKING:
    from scheduler.framework.snapshot import NodeColumns
    from scheduler.plugins.noderesources.draextended import DraExtendedScorer, DraScoreState

# Kinds of resource, decided once per configured name.
KIND_CPU = 0
KIND_MEMORY = 1
KIND_EPHEMERAL = 2
KIND_SCALAR = 3  # extended, hugepages-*, *kubernetes.io/*, attachable-volumes-*
KIND_OTHER = 4  # e.g. "pods": never scored (upstream finds no allocatable entry)


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended or prefixed-native (a '/' in the name),
    hugepages-*, or attachable-volumes-*."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: has a domain, not kubernetes.io, not requests.*."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def resource_kind(name: str) -> int:
    if name == CPU:
        return KIND_CPU
    if name == MEMORY:
        return KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return KIND_EPHEMERAL
    if is_scalar_resource_name(name):
        return KIND_SCALAR
    return KIND_OTHER


# ---------------------------------------------------------------------------------------------
# Args helpers (config.ResourceSpec and field-error formatting as in apimachinery field.Error)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def go_value(value: Any) -> str:
    """How field.Error prints a value: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def required(path: str, detail: str) -> str:
    return f"{path}: Required value: {detail}"


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: Any) -> str:
    return f"{path}: Duplicate value: {go_value(value)}"


def not_supported(path: str, value: Any, supported: Sequence[str]) -> str:
    return f"{path}: Unsupported value: {go_value(value)}: supported values: " + ", ".join(
        go_value(s) for s in supported
    )


def raise_aggregate(errs: list[str]) -> None:
    """utilerrors.Aggregate.Error(): one message alone, several as '[a, b]'."""
    if not errs:
        return
    if len(errs) == 1:
        raise ValueError(errs[0])
    raise ValueError("[" + ", ".join(errs) + "]")


def parse_resources(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    """A v1 resources list with v1 defaulting: empty -> cpu+memory, weight 0/unset -> 1."""
    if not raw:
        return DEFAULT_RESOURCES
    if not isinstance(raw, Sequence):
        raise ValueError(f"{path}: Invalid value: expected a list")
    out = []
    for r in raw:
        if not isinstance(r, Mapping):
            raise ValueError(f"{path}: Invalid value: expected a list of {{name, weight}}")
        weight = int(r.get("weight") or 0)
        out.append(ResourceSpec(str(r.get("name", "")), weight if weight != 0 else 1))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The scorer


# scorer(requested, allocated, allocatable, weights) over the resources whose allocatable is
# non-zero; "requested" includes the incoming pod, "allocated" is the node alone. The lists keep
# configured order; entries with allocatable 0 are dropped, as every upstream scorer skips them.
ScoreFn = Callable[[list[int], list[int], list[int], list[int]], int]
# Vectorised form: (requested[k][m], allocated[k][m], allocatable[k][m], present[k][m] or None
# when allocatable is non-zero on every node, weights[k], m) -> int64[m].
BatchScoreFn = Callable[
    [list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray | None], list[int], int], np.ndarray
]


def scorer_pod_requests(
    pod: PodInfo,
    pod_level: bool,
    non_zero: bool,
    use_status: bool | None = None,
    pod_level_status: bool | None = None,
) -> tuple[Resource, int, int]:
    """What calculatePodResourceRequest sees of the incoming pod: (requests, cpu, memory), where
    cpu/memory carry the non-zero defaults per container lacking them when ``non_zero``.

    The scorer's flags: ``pod_level`` (PodLevelResources), ``use_status``
    (InPlacePodVerticalScaling) and ``pod_level_status`` (InPlacePodLevelResourcesVerticalScaling);
    the last two default to ``pod_level``. Upstream's BalancedAllocation sets them from the gates,
    Fit's scorer leaves them all off. PodInfo's own numbers are used whenever they are the same
    thing.
    """
    use_status = pod_level if use_status is None else use_status
    pod_level_status = pod_level if pod_level_status is None else pod_level_status
    g = resource_gates()
    if use_status and pod_level == g.pod_level_resources and pod_level_status == g.pod_level_resize:
        # Same options as CalculateResource's first count; the non-zero variant differs only
        # with pod-level requests counted (CalculateResource then defaults only what the pod lacks).
        if not non_zero or not (pod_level and has_pod_level_requests(pod.raw)):
            return pod.requests, pod.non0_cpu, pod.non0_mem
    elif not has_pod_level_requests(pod.raw) and not has_status_resources(pod.raw):
        return pod.requests, pod.non0_cpu, pod.non0_mem
    inp = pod_resource_inputs(pod.raw)
    reqs = pod_requests(inp, use_status=use_status, pod_level=pod_level, pod_level_status=pod_level_status)
    non0 = pod_requests(
        inp,
        use_status=use_status,
        pod_level=pod_level,
        pod_level_status=pod_level_status,
        non_missing=NON_MISSING_DEFAULTS,
    )
    return resource_from_map(reqs), non0.get(CPU, 0), non0.get(MEMORY, 0)


class ResourceAllocationScorer:
    __slots__ = (
        "batch_fn",
        "dra",
        "kinds",
        "names",
        "pod_level",
        "pod_level_status",
        "resources",
        "score_fn",
        "use_requested",
        "use_status",
        "weights",
    )

    def __init__(
        self,
        resources: Sequence[ResourceSpec],
        score_fn: ScoreFn,
        batch_fn: BatchScoreFn,
        use_requested: bool,
        pod_level: bool = True,
        *,
        use_status: bool | None = None,
        pod_level_status: bool | None = None,
    ) -> None:
        self.resources = tuple(resources)
        self.names = tuple(r.name for r in resources)
        self.weights = tuple(r.weight for r in resources)
        self.kinds = tuple(resource_kind(r.name) for r in resources)
        self.score_fn = score_fn
        self.batch_fn = batch_fn
        self.use_requested = use_requested
        # Whether the incoming pod's spec.resources, its containers' status resources and its
        # pod-level status count (the scorer's own PodLevelResources and in-place resize flags;
        # see Fit for why they are off there). Nodes count as the process's gates say.
        self.pod_level = pod_level
        self.use_status = pod_level if use_status is None else use_status
        self.pod_level_status = pod_level if pod_level_status is None else pod_level_status
        # DRAExtendedResource: scoring resources backed by DRA count a node's devices (set by
        # the plugin when the gate is on).
        self.dra: DraExtendedScorer | None = None

    def dra_pre_score(self) -> DraScoreState | None:
        """getDRAPreScoredParams for the configured resources (None: nothing backed by DRA)."""
        return self.dra.pre_score(self.names) if self.dra is not None else None

    # -- pod side ------------------------------------------------------------------------------
    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """calculatePodResourceRequestList: one request per configured resource."""
        requests, non0_cpu, non0_mem = scorer_pod_requests(
            pod, self.pod_level, not self.use_requested, self.use_status, self.pod_level_status
        )
        out = []
        for name, kind in zip(self.names, self.kinds):
            if kind == KIND_CPU:
                out.append(requests.milli_cpu if self.use_requested else non0_cpu)
            elif kind == KIND_MEMORY:
                out.append(requests.memory if self.use_requested else non0_mem)
            elif kind == KIND_EPHEMERAL:
                out.append(requests.ephemeral_storage)
            elif kind == KIND_SCALAR:
                out.append(requests.scalar.get(name, 0))
            else:
                out.append(requests.get(name))
        return tuple(out)

    @staticmethod
    def is_best_effort(pod_requests: Sequence[int]) -> bool:
        return not any(pod_requests)

    # -- per node (reference) ------------------------------------------------------------------
    def _alloc_req(
        self, node: NodeInfo, i: int, pod_request: int, dra: DraScoreState | None = None
    ) -> tuple[int, int]:
        """calculateResourceAllocatableRequest for resource i: (allocatable, node's allocated)."""
        kind = self.kinds[i]
        if kind == KIND_OTHER or (kind == KIND_SCALAR and pod_request == 0):
            # An extended resource the pod does not ask for is left out of the score; a name that
            # is not a scalar resource (e.g. "pods") never has an allocatable entry upstream.
            return 0, 0
        alloc = node.allocatable
        if kind == KIND_CPU:
            return alloc.milli_cpu, node.requested.milli_cpu if self.use_requested else node.non0_cpu
        if kind == KIND_MEMORY:
            return alloc.memory, node.requested.memory if self.use_requested else node.non0_mem
        if kind == KIND_EPHEMERAL:
            return alloc.ephemeral_storage, node.requested.ephemeral_storage
        name = self.names[i]
        if dra is not None and self.dra is not None and not alloc.scalar.get(name, 0):
            # No device plugin advertises it here: the node's devices of the mapped class count.
            capacity, in_use = self.dra.totals(node, name, dra)
            if capacity > 0:
                return capacity, in_use
        if name in alloc.scalar:
            return alloc.scalar[name], node.requested.scalar.get(name, 0)
        return 0, 0

    def score_node(self, node: NodeInfo, pod_requests: Sequence[int], dra: DraScoreState | None = None) -> int:
        requested: list[int] = []
        allocated: list[int] = []
        allocatable: list[int] = []
        weights: list[int] = []
        for i in range(len(self.names)):
            a, used = self._alloc_req(node, i, pod_requests[i], dra)
            if a == 0:
                continue
            allocatable.append(a)
            allocated.append(used)
            requested.append(used + pod_requests[i])
            weights.append(self.weights[i])
        return self.score_fn(requested, allocated, allocatable, weights)

    # -- placement (TopologyAwareWorkloadScheduling) -------------------------------------------
    def score_placement(self, pods: Sequence[PodInfo], nodes: Sequence[NodeInfo]) -> int:
        """scorePlacement: the placement's nodes taken as one node, its capacity and allocated
        summed, the proposed pods' requests on top."""
        n = len(self.names)
        requested = [0] * n
        for pod in pods:
            for i, r in enumerate(self.pod_requests(pod)):
                requested[i] += r
        allocatable = [0] * n
        allocated = [0] * n
        for node in nodes:
            for i in range(n):
                # Upstream passes the running sum as the pod request: a scalar resource no
                # proposed pod asks for stays 0 and skipped on every node.
                a, used = self._alloc_req(node, i, requested[i])
                if a == 0:
                    continue
                allocatable[i] += a
                allocated[i] += used
                requested[i] += used
        keep = [i for i in range(n) if allocatable[i] != 0]
        return self.score_fn(
            [requested[i] for i in keep],
            [allocated[i] for i in keep],
            [allocatable[i] for i in keep],
            [self.weights[i] for i in keep],
        )

    # -- batch ---------------------------------------------------------------------------------
    def score_columns(self, cols: NodeColumns, idx: np.ndarray, pod_requests: Sequence[int]) -> np.ndarray:
        reqs: list[np.ndarray] = []
        useds: list[np.ndarray] = []
        allocs: list[np.ndarray] = []
        present: list[np.ndarray | None] = []
        weights: list[int] = []
        for i, kind in enumerate(self.kinds):
            pr = pod_requests[i]
            if kind == KIND_CPU:
                a = cols.alloc_cpu.take(idx)
                used = (cols.req_cpu if self.use_requested else cols.non0_cpu).take(idx)
            elif kind == KIND_MEMORY:
                a = cols.alloc_mem.take(idx)
                used = (cols.req_mem if self.use_requested else cols.non0_mem).take(idx)
            elif kind == KIND_EPHEMERAL:
                a = cols.alloc_eph.take(idx)
                used = cols.req_eph.take(idx)
            elif kind == KIND_SCALAR:
                if pr == 0:
                    continue
                col = cols.scalar_alloc.get(self.names[i])
                if col is None:
                    continue  # no node has it: allocatable 0 everywhere, skipped
                a = col.take(idx)
                used = cols.scalar_req[self.names[i]].take(idx)
            else:
                continue
            # None marks "allocatable non-zero on every node", the common case, so the
            # scorers can skip masking.
            nz = a != 0
            p = None if nz.all() else nz
            allocs.append(a)
            useds.append(used)
            reqs.append(used + pr)
            present.append(p)
            weights.append(self.weights[i])
        return self.batch_fn(reqs, useds, allocs, present, weights, len(idx))


def weighted_mean_score(
    per_resource: Callable[[int, int], int], requested: list[int], allocatable: list[int], weights: list[int]
) -> int:
    """Integer weighted mean of per-resource scores (Least/MostAllocated's node score)."""
    node_score = 0
    weight_sum = 0
    for r, a, w in zip(requested, allocatable, weights):
        node_score += per_resource(r, a) * w
        weight_sum += w
    if weight_sum == 0:
        return 0
    return node_score // weight_sum


def safe_divisor(alloc: np.ndarray, present: np.ndarray | None) -> np.ndarray:
    """alloc with zeros replaced by 1 so masked-out lanes divide harmlessly."""
    if present is None:
        return alloc
    return np.where(present, alloc, 1)


def weighted_mean_int(
    scores: list[np.ndarray], present: list[np.ndarray | None], weights: list[int], m: int
) -> np.ndarray:
    """Σ s·w / Σ w over present resources, integer division, 0 when no weight."""
    num = np.zeros(m, dtype=np.int64)
    if all(p is None for p in present):
        # Common case: every node has every resource; the weight sum is one scalar.
        total = sum(weights)
        if total == 0:
            return num
        for s, w in zip(scores, weights):
            num += s * w if w != 1 else s
        return num // total
    den = np.zeros(m, dtype=np.int64)
    for s, p, w in zip(scores, present, weights):
        if p is None:
            num += s * w
            den += w
        else:
            num += np.where(p, s * w, 0)
            den += np.where(p, w, 0)
    out = np.zeros(m, dtype=np.int64)
    np.floor_divide(num, den, out=out, where=den != 0)
    return out
