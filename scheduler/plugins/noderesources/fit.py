"""NodeResourcesFit (upstream noderesources/fit.go + apis/config validation of NodeResourcesFitArgs).

Filter: the node must have room for one more pod and for every resource the pod requests
(quantity > 0, ignored extended resources excepted). A resource the pod asks for more of than
the node's whole allocatable makes the status UnschedulableAndUnresolvable (preemption cannot
help); otherwise Unschedulable. Reasons accumulate: pods, cpu, memory, ephemeral-storage,
then scalar resources. With DRAExtendedResource (beta/on) an extended resource a DeviceClass
maps is left to DynamicResources on a node that does not advertise it (draextended.py), and a
DeviceClass added or changed may make a pod schedulable.

Score: LeastAllocated / MostAllocated / RequestedToCapacityRatio over the configured resources
(see resource_allocation.py); a configured resource backed by DRA counts the node's devices of
its class. No NormalizeScore.

PlacementScore (TopologyAwareWorkloadScheduling): MostAllocated over the configured resources,
whatever the strategy, with the placement's nodes summed as one node and the group's proposed
pods added: the fuller placement wins. No NormalizePlacementScore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.config.features import DEFAULT_FEATURES, Features
from scheduler.config.pluginargs import is_qualified_name
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.listers import DraStore
from scheduler.framework.signers import RESOURCES_SIGNER, SignFragment
from scheduler.framework.status import Code, Status, StatusError
from scheduler.model.dra import DEVICE_CLASS_PREFIX, DeviceClass
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo, has_pod_level_requests, has_status_resources, pod_resource_inputs
from scheduler.model.podrequests import pod_requests, resource_gates
from scheduler.model.resource import Resource, resource_from_map
from scheduler.plugins.helper import as_node, as_pod
from scheduler.plugins.noderesources.draextended import DraExtendedScorer, DraScoreState, delegated
from scheduler.plugins.noderesources.least_allocated import least_resource_score, least_resource_score_batch
from scheduler.plugins.noderesources.most_allocated import most_resource_score, most_resource_score_batch
from scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    RequestedToCapacityRatioScorer,
    ShapePoint,
)
from scheduler.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    ResourceSpec,
    forbidden,
    invalid,
    is_extended_resource_name,
    is_scalar_resource_name,
    not_supported,
    parse_resources,
    raise_aggregate,
    required,
)

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "NodeResourcesFit"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

TOO_MANY_PODS = "Too many pods"
INSUFFICIENT_CPU = "Insufficient cpu"
INSUFFICIENT_MEMORY = "Insufficient memory"
INSUFFICIENT_EPHEMERAL = "Insufficient ephemeral-storage"
SIDECAR_DISABLED = "Pod has a restartable init container and the SidecarContainers feature is disabled"


# ---------------------------------------------------------------------------------------------
# Args


def _label_name_errors(path: str, value: str) -> list[str]:
    """metav1validation.ValidateLabelName."""
    return [invalid(path, value, m) for m in is_qualified_name(value)]


@dataclass(frozen=True, slots=True)
class FitArgs:
    """config.NodeResourcesFitArgs after v1 defaulting."""

    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] | None = None

    @staticmethod
    def parse(raw: Mapping[str, Any] | None) -> FitArgs:
        raw = raw or {}
        errs: list[str] = []
        ignored = [str(x) for x in raw.get("ignoredResources") or []]
        groups = [str(x) for x in raw.get("ignoredResourceGroups") or []]
        for i, res in enumerate(ignored):
            errs += _label_name_errors(f"ignoredResources[{i}]", res)
        for i, group in enumerate(groups):
            p = f"ignoredResourceGroups[{i}]"
            if "/" in group:
                errs.append(invalid(p, group, "resource group name can't contain '/'"))
            errs += _label_name_errors(p, group)

        ss = raw.get("scoringStrategy")
        shape: tuple[ShapePoint, ...] | None = None
        if ss is None:
            strategy, resources = LEAST_ALLOCATED, DEFAULT_RESOURCES
        else:
            strategy = str(ss.get("type") or "")
            resources = parse_resources(ss.get("resources"), "scoringStrategy.resources")
            if strategy not in SUPPORTED_STRATEGIES:
                errs.append(not_supported("scoringStrategy.type", strategy, SUPPORTED_STRATEGIES))
            for i, r in enumerate(resources):
                if r.weight <= 0 or r.weight > 100:
                    errs.append(
                        invalid(
                            f"scoringStrategy.resources[{i}].weight",
                            r.weight,
                            f"resource weight of {r.name} not in valid range (0, 100]",
                        )
                    )
            rtcr = ss.get("requestedToCapacityRatio")
            if strategy == REQUESTED_TO_CAPACITY_RATIO:
                if rtcr is None:
                    errs.append(
                        required(
                            "scoringStrategy.requestedToCapacityRatio",
                            "must be specified when type is RequestedToCapacityRatio",
                        )
                    )
                else:
                    shape = tuple(
                        ShapePoint(int(p.get("utilization") or 0), int(p.get("score") or 0))
                        for p in rtcr.get("shape") or []
                    )
                    errs += shape_errors(shape, "scoringStrategy.requestedToCapacityRatio.shape")
            elif rtcr is not None:
                errs.append(
                    forbidden(
                        "scoringStrategy.requestedToCapacityRatio",
                        "must be nil when type is not RequestedToCapacityRatio",
                    )
                )
        raise_aggregate(errs)
        return FitArgs(frozenset(ignored), frozenset(groups), strategy, resources, shape)


def shape_errors(shape: Sequence[ShapePoint], path: str) -> list[str]:
    """validateFunctionShape."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs: list[str] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= MAX_UTILIZATION:
            errs.append(
                invalid(f"{path}[{i}].utilization", p.utilization, f"not in valid range [0, {MAX_UTILIZATION}]")
            )
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(invalid(f"{path}[{i}].score", p.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"))
    return errs


# ---------------------------------------------------------------------------------------------
# Cycle state


class _PreFilterState:
    """The pod's request (computePodResourceRequest), with ignored / zero scalars dropped;
    ``dra``: those of its scalars a DeviceClass maps (DRAExtendedResource), left to
    DynamicResources on nodes that do not advertise them."""

    __slots__ = ("cpu", "dra", "empty", "eph", "mem", "scalars")

    def __init__(
        self,
        cpu: int,
        mem: int,
        eph: int,
        scalars: tuple[tuple[str, int], ...],
        empty: bool,
        dra: frozenset[str] = frozenset(),
    ) -> None:
        self.cpu = cpu
        self.mem = mem
        self.eph = eph
        self.scalars = scalars
        self.empty = empty
        self.dra = dra


class _PreScoreState:
    __slots__ = ("dra", "pod_requests")

    def __init__(self, pod_requests: tuple[int, ...], dra: DraScoreState | None = None) -> None:
        self.pod_requests = pod_requests
        self.dra = dra


def spec_requests(pod: PodInfo, pod_level: bool = True) -> Resource:
    """computePodResourceRequest: the pod's requests from its spec alone (containers, pod level
    with the PodLevelResources gate, overhead); reported status resources do not count for the
    pod being placed."""
    if not has_status_resources(pod.raw) and (
        pod_level == resource_gates().pod_level_resources or not has_pod_level_requests(pod.raw)
    ):
        return pod.requests
    return resource_from_map(pod_requests(pod_resource_inputs(pod.raw), use_status=False, pod_level=pod_level))


def sign_resources(pod: PodInfo, pod_level: bool, dra: DraStore | None) -> list[SignFragment] | Status:
    """NodeResourcesFit's and BalancedAllocation's SignPod: the pod's requests as
    computePodResourceRequest counts them; a pod asking for an extended resource that DRA serves
    (``dra``: the DRA objects with DRAExtendedResource, else None) is not signable."""
    r = spec_requests(pod, pod_level)
    if dra is not None and any(q != 0 and delegated(n, None, dra) for n, q in r.scalar.items()):
        return Status(Code.UNSCHEDULABLE, "signature disabled when dra extended resources are used in the cluster")
    value = {
        "MilliCPU": r.milli_cpu,
        "Memory": r.memory,
        "EphemeralStorage": r.ephemeral_storage,
        "AllowedPodNumber": r.allowed_pod_number,
        "ScalarResources": dict(sorted(r.scalar.items())) or None,
    }
    return [(RESOURCES_SIGNER, value)]


def _insufficient(
    req: Resource,
    alloc: Resource,
    requested: Resource,
    num_pods: int,
    s: _PreFilterState,
) -> tuple[list[str], bool]:
    """fitsRequest: the failure reasons, and whether any of them is unresolvable."""
    reasons: list[str] = []
    unresolvable = False
    if num_pods + 1 > alloc.allowed_pod_number:
        reasons.append(TOO_MANY_PODS)
    if s.empty:
        return reasons, unresolvable
    if s.cpu > 0 and s.cpu > alloc.milli_cpu - requested.milli_cpu:
        reasons.append(INSUFFICIENT_CPU)
        unresolvable |= s.cpu > alloc.milli_cpu
    if s.mem > 0 and s.mem > alloc.memory - requested.memory:
        reasons.append(INSUFFICIENT_MEMORY)
        unresolvable |= s.mem > alloc.memory
    if s.eph > 0 and s.eph > alloc.ephemeral_storage - requested.ephemeral_storage:
        reasons.append(INSUFFICIENT_EPHEMERAL)
        unresolvable |= s.eph > alloc.ephemeral_storage
    for name, q in s.scalars:
        a = alloc.scalar.get(name, 0)
        if a <= 0 and name in s.dra:
            continue  # shouldDelegateResourceToDRA: DynamicResources provides it here
        if q > a - requested.scalar.get(name, 0):
            reasons.append("Insufficient " + name)
            unresolvable |= q > a
    return reasons, unresolvable


# ---------------------------------------------------------------------------------------------
# Plugin


class Fit(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PlacementScorePlugin, EnqueueExtensions, SignPlugin
):
    name = NAME

    # Feature gates this plugin reads. SidecarContainers is GA and locked on in current releases;
    # InPlacePodVerticalScaling is on by default; queueing hints are on by default.
    enable_sidecar_containers: bool = True
    enable_in_place_pod_vertical_scaling: bool = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream Fit.SignPod: the pod's requests; none for a pod whose extended resources DRA serves."""
        return sign_resources(pod, self.pod_level, self.dra)

    def __init__(
        self, args: FitArgs | None = None, features: Features = DEFAULT_FEATURES, dra: DraStore | None = None
    ) -> None:
        self.args = args or FitArgs()
        self.features = features
        # The DRA objects (DeviceClasses' extended resource names) with DRAExtendedResource:
        # Filter, Score and SignPod ask whether DRA serves an extended resource.
        self.dra = dra if features.enable_dra_extended_resource else None
        # computePodResourceRequest counts spec.resources only with PodLevelResources.
        self.pod_level = features.enable_pod_level_resources
        a = self.args
        # v1.36.3 NewFit sets the PodLevelResources flag on Fit itself, but the embedded scorer
        # built by getScorer keeps its own flag unset, so scoring sizes the incoming pod from its
        # containers + overhead and ignores spec.resources (the filter does use it). The binary
        # behaves so; pod_level=False reproduces it.
        if a.strategy == LEAST_ALLOCATED:
            self.scorer = ResourceAllocationScorer(
                a.resources, least_resource_score, least_resource_score_batch, False, pod_level=False
            )
        elif a.strategy == MOST_ALLOCATED:
            self.scorer = ResourceAllocationScorer(
                a.resources, most_resource_score, most_resource_score_batch, False, pod_level=False
            )
        elif a.strategy == REQUESTED_TO_CAPACITY_RATIO:
            rtcr = RequestedToCapacityRatioScorer(a.shape or ())
            self.scorer = ResourceAllocationScorer(a.resources, rtcr.score, rtcr.score_batch, False, pod_level=False)
        else:
            raise ValueError(f"scoring strategy {a.strategy} is not supported")
        if self.dra is not None:
            self.scorer.dra = DraExtendedScorer(self.dra)
        # Built only with the gate, as upstream (the placement algorithm runs only then).
        self.placement_scorer: ResourceAllocationScorer | None = None
        if features.enable_topology_aware_workload_scheduling:
            self.placement_scorer = ResourceAllocationScorer(
                a.resources, most_resource_score, most_resource_score_batch, False, pod_level=False
            )

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> Fit:
        dra = handle.listers.dra if handle.features.enable_dynamic_resource_allocation else None
        return cls(FitArgs.parse(args), handle.features, dra)

    # -- PreFilter -----------------------------------------------------------------------------
    def _ignored(self, name: str) -> bool:
        if not is_extended_resource_name(name):
            return False
        a = self.args
        if name in a.ignored_resources:
            return True
        return bool(a.ignored_resource_groups) and name.split("/", 1)[0] in a.ignored_resource_groups

    def compute_state(self, pod: PodInfo, ignore: bool = True) -> _PreFilterState:
        """The pod's request; ``ignore`` False: with the ignored resources too (isFit)."""
        r = spec_requests(pod, self.pod_level)
        scalars = tuple(
            (name, q)
            for name, q in r.scalar.items()
            if q > 0 and is_scalar_resource_name(name) and not (ignore and self._ignored(name))
        )
        # "Empty" as upstream: only the pod count is checked then (ignored scalars still count).
        any_scalar = any(q > 0 and is_scalar_resource_name(n) for n, q in r.scalar.items())
        empty = r.milli_cpu == 0 and r.memory == 0 and r.ephemeral_storage == 0 and not any_scalar
        dra: frozenset[str] = frozenset()
        if self.dra is not None and self.dra.extended:
            dra = frozenset(name for name, _ in scalars if delegated(name, None, self.dra))
        return _PreFilterState(r.milli_cpu, r.memory, r.ephemeral_storage, scalars, empty, dra)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        # No Skip here: even a pod requesting nothing must pass the pod-count check.
        if not self.enable_sidecar_containers and _has_restartable_init_container(pod):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, SIDECAR_DISABLED)
        state.write(PRE_FILTER_KEY, self.compute_state(pod))
        return None

    # -- Filter --------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.read(PRE_FILTER_KEY, _PreFilterState)
        reasons, unres = _insufficient(pod.requests, node.allocatable, node.requested, len(node.pods), s)
        if not reasons:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unres else Code.UNSCHEDULABLE, *reasons)

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        s = state.read(PRE_FILTER_KEY, _PreFilterState)
        cols = snapshot.columns
        idx = np.asarray(idx, dtype=np.intp)
        # num_pods + 1 <= allowed  <=>  num_pods < allowed
        ok = cols.num_pods.take(idx) < cols.alloc_pods.take(idx)
        if s.empty:
            return ok
        # Pass when request <= allocatable - requested, for each resource the pod asks for.
        if s.cpu > 0:
            ok &= cols.alloc_cpu.take(idx) - cols.req_cpu.take(idx) >= s.cpu
        if s.mem > 0:
            ok &= cols.alloc_mem.take(idx) - cols.req_mem.take(idx) >= s.mem
        if s.eph > 0:
            ok &= cols.alloc_eph.take(idx) - cols.req_eph.take(idx) >= s.eph
        for name, q in s.scalars:
            a = cols.scalar_alloc.get(name)
            if name in s.dra:
                # Nodes without it leave it to DynamicResources; nodes with it are checked.
                if a is not None:
                    have = a.take(idx)
                    ok &= (have <= 0) | (have - cols.scalar_req[name].take(idx) >= q)
                continue
            if a is None:
                # No node has it: 0 - 0 < q everywhere.
                ok[:] = False
                return ok
            ok &= a.take(idx) - cols.scalar_req[name].take(idx) >= q
        return ok

    def filter_batch_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> Sequence[Status | None] | None:
        # _insufficient over the columns: each check is a bit of a per-node key (in the order
        # filter lists its reasons) and one Status per distinct key stands for its nodes. When
        # a pod fits one node in thousands, asking filter node by node was most of the cycle.
        cols = snapshot.columns
        if cols.poisoned:
            return None  # a poisoned node's columns say nothing of its NodeInfo
        s = state.read(PRE_FILTER_KEY, _PreFilterState)
        idx = np.asarray(idx, dtype=np.intp)
        reasons: list[str] = [TOO_MANY_PODS]
        key = (cols.num_pods.take(idx) >= cols.alloc_pods.take(idx)).astype(np.int64)
        unres = np.zeros(len(idx), dtype=bool)
        checks: list[tuple[str, int, np.ndarray | None, np.ndarray | None, bool]] = []
        if not s.empty:
            if s.cpu > 0:
                checks.append((INSUFFICIENT_CPU, s.cpu, cols.alloc_cpu, cols.req_cpu, False))
            if s.mem > 0:
                checks.append((INSUFFICIENT_MEMORY, s.mem, cols.alloc_mem, cols.req_mem, False))
            if s.eph > 0:
                checks.append((INSUFFICIENT_EPHEMERAL, s.eph, cols.alloc_eph, cols.req_eph, False))
            for name, q in s.scalars:
                checks.append(("Insufficient " + name, q, cols.scalar_alloc.get(name),
                               cols.scalar_req.get(name), name in s.dra))  # fmt: skip
        for reason, q, alloc_col, req_col, dra in checks:
            a = alloc_col.take(idx) if alloc_col is not None else np.zeros(len(idx), dtype=np.int64)
            r = req_col.take(idx) if req_col is not None else np.zeros(len(idx), dtype=np.int64)
            short = q > a - r
            if dra:
                short &= a > 0  # shouldDelegateResourceToDRA where the node has none
            if len(reasons) >= 62:
                return None  # more checks than key bits: node by node
            key |= short.astype(np.int64) << len(reasons)
            reasons.append(reason)
            unres |= short & (q > a)
        key |= unres.astype(np.int64) << 62
        made: dict[int, Status | None] = {}
        out: list[Status | None] = []
        for k in key.tolist():
            if k not in made:
                bits = [reasons[b] for b in range(len(reasons)) if k >> b & 1]
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if k >> 62 & 1 else Code.UNSCHEDULABLE
                made[k] = Status(code, *bits) if bits else None
            out.append(made[k])
        return out

    # -- Score ---------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, _PreScoreState(self.scorer.pod_requests(pod), self.scorer.dra_pre_score()))
        return None

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> _PreScoreState:
        s = state.get(PRE_SCORE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        # Upstream computes the request on the spot when PreScore did not run.
        return _PreScoreState(self.scorer.pod_requests(pod), self.scorer.dra_pre_score())

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = self._pre_score_state(state, pod)
        return self.scorer.score_node(node, s.pod_requests, s.dra)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray | None:
        s = self._pre_score_state(state, pod)
        if s.dra is not None:
            return None  # devices counted per node
        idx = np.asarray(idx, dtype=np.intp)
        return self.scorer.score_columns(snapshot.columns, idx, s.pod_requests)

    # -- PlacementScore ------------------------------------------------------------------------
    def score_placement(self, state: CycleState, pod_group: PodGroupInfo, assignments: PodGroupAssignments) -> int:
        if self.placement_scorer is None:
            raise StatusError(Status(Code.ERROR, f"{NAME}: placement scoring needs TopologyAwareWorkloadScheduling"))
        pods = [a.pod for a in assignments.proposed_assignments]
        return self.placement_scorer.score_placement(pods, assignments.placement.nodes)

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_action = ActionType.DELETE
        if self.enable_in_place_pod_vertical_scaling:
            pod_action |= ActionType.UPDATE_POD_SCALE_DOWN
        # With queueing hints on (the default) upstream registers only Add | UpdateNodeAllocatable.
        node_action = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
        events = [
            ClusterEventWithHint(ClusterEvent("Pod", pod_action), self._after_pod_event),
            ClusterEventWithHint(ClusterEvent("Node", node_action), self._after_node_change),
        ]
        if self.dra is not None:
            # A pod may wait for a class that maps one of its extended resources.
            events.append(
                ClusterEventWithHint(
                    ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE), self._after_device_class_event
                )
            )
        return events

    def _after_pod_event(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        original, modified = as_pod(old_obj), as_pod(new_obj)
        if modified is None:
            if original is None or (not original.node_name and not original.nominated_node_name):
                return QueueingHint.QUEUE_SKIP  # an unscheduled pod freed nothing
            return QueueingHint.QUEUE
        if not self.enable_in_place_pod_vertical_scaling:
            return QueueingHint.QUEUE_SKIP
        if modified.uid == pod.uid:
            return QueueingHint.QUEUE
        if not modified.node_name or original is None:
            return QueueingHint.QUEUE_SKIP
        want, before, after = pod.requests, original.requests, modified.requests
        for name in ("cpu", "memory", "ephemeral-storage", *want.scalar):
            if want.get(name) != 0 and before.get(name) > after.get(name):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_node_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        original, modified = as_node(old_obj), as_node(new_obj)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        # isFit: the pod on an empty copy of the node, nothing ignored.
        s = self.compute_state(pod, ignore=False)
        reasons, _ = _insufficient(pod.requests, modified.allocatable, Resource(), 0, s)
        if reasons:
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        return (
            QueueingHint.QUEUE
            if _requested_increased(pod, original, modified, self.pod_level, self.dra)
            else QueueingHint.QUEUE_SKIP
        )

    def _after_device_class_event(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        """isSchedulableAfterDeviceClassEvent: a class now maps an extended resource the pod asks
        for (its implicit name only when it is added: a class's name never changes)."""
        if not isinstance(new_obj, DeviceClass) or (old_obj is not None and not isinstance(old_obj, DeviceClass)):
            return QueueingHint.QUEUE  # upstream: an error, and the pod is retried
        old = old_obj
        reqs = pod_requests(pod_resource_inputs(pod.raw), use_status=False)
        if old is not None:
            if (old.extended_resource_name or "") == (new_obj.extended_resource_name or ""):
                return QueueingHint.QUEUE_SKIP
        elif DEVICE_CLASS_PREFIX + new_obj.name in reqs:
            return QueueingHint.QUEUE
        if new_obj.extended_resource_name is not None and new_obj.extended_resource_name in reqs:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _requested_increased(
    pod: PodInfo, original: NodeInfo, modified: NodeInfo, pod_level: bool = True, dra: DraStore | None = None
) -> bool:
    """haveAnyRequestedResourcesIncreased (a resource DynamicResources would provide on the
    modified node counts as more)."""
    old, new, r = original.allocatable, modified.allocatable, spec_requests(pod, pod_level)
    if new.allowed_pod_number > old.allowed_pod_number:
        return True
    if (r.milli_cpu > 0 and new.milli_cpu > old.milli_cpu) or (r.memory > 0 and new.memory > old.memory):
        return True
    if r.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage:
        return True
    return any(
        q > 0 and (new.scalar.get(n, 0) > old.scalar.get(n, 0) or delegated(n, modified, dra))
        for n, q in r.scalar.items()
    )


def _has_restartable_init_container(pod: PodInfo) -> bool:
    spec = pod.raw.get("spec") or {}
    return any(c.get("restartPolicy") == "Always" for c in spec.get("initContainers") or [])
