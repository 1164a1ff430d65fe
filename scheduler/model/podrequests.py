"""A pod's resource requests as kube-scheduler v1.36.3 counts them.

Mirrors component-helpers ``resource.PodRequests`` (with the options the scheduler passes) and
framework ``PodInfo.CalculateResource``, on already-parsed integer resource maps (milli-CPU,
bytes, counts). Which *keys* are present matters, not only their values: upstream adds the
non-zero cpu/memory defaults only where a key is missing, and a zero request is a present key.

Feature gates: PodLevelResources and InPlacePodLevelResourcesVerticalScaling as the process's
gates set them (``ResourceGates``, like upstream's global gate; on by default);
InPlacePodVerticalScaling is GA and locked on; DRANodeAllocatableResources (alpha, off) is not
modelled: status.nodeAllocatableResourceClaimStatuses is not counted.

This module knows no Kubernetes field paths; ``scheduler.model.pod`` parses a pod into
``PodResourceInputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.model.quantity import wrap64

CPU = "cpu"
MEMORY = "memory"

# Scoring-only stand-ins for a container that names no cpu/memory (schedutil).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

NON_MISSING_DEFAULTS: Mapping[str, int] = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}

ResourceMap = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ResourceGates:
    """The gates PodInfo.CalculateResource reads (from the process-wide gate upstream)."""

    pod_level_resources: bool = True  # PodLevelResources
    pod_level_resize: bool = True  # InPlacePodLevelResourcesVerticalScaling


DEFAULT_RESOURCE_GATES = ResourceGates()
# The process's gates: set once, where frameworks are built (scheduler.model.pod.set_resource_gates).
_gates: list[ResourceGates] = [DEFAULT_RESOURCE_GATES]


def resource_gates() -> ResourceGates:
    return _gates[0]


@dataclass(frozen=True, slots=True)
class ContainerResources:
    """A container's spec requests; ``restartable`` marks a sidecar (init, restartPolicy Always)."""

    name: str
    requests: ResourceMap
    restartable: bool = False


@dataclass(frozen=True, slots=True)
class StatusResources:
    """What the kubelet reports for a container (or, at pod level, the pod) whose status carries
    ``resources``: the actuated requests and the allocated resources."""

    actuated: ResourceMap
    allocated: ResourceMap


@dataclass(frozen=True, slots=True)
class PodResourceInputs:
    containers: tuple[ContainerResources, ...]
    init_containers: tuple[ContainerResources, ...]
    # spec.resources.requests restricted to the names pod-level resources support (cpu, memory,
    # hugepages-*); non-empty exactly when upstream IsPodLevelRequestsSet holds.
    pod_level: ResourceMap
    overhead: ResourceMap
    # Container name -> its status resources, or None when that status has no ``resources``
    # (init statuses listed after regular ones win a name clash, as upstream's map build).
    statuses: Mapping[str, StatusResources | None]
    # status.resources / status.allocatedResources at pod level; None without status.resources.
    pod_status: StatusResources | None
    # The PodResizePending condition says Infeasible.
    resize_infeasible: bool

    @property
    def has_status_resources(self) -> bool:
        """Whether any reported resources could change the count (UseStatusResources matters)."""
        return self.pod_status is not None or any(s is not None for s in self.statuses.values())


def _add(acc: dict[str, int], other: ResourceMap) -> None:
    # Sums stay int64 as in Go (values past the range come from quantities like 1E: see quantity.py).
    for k, v in other.items():
        acc[k] = wrap64(acc.get(k, 0) + v)


def _max(acc: dict[str, int], other: ResourceMap) -> None:
    # A key missing from acc is taken even when the other value is zero (maxResourceList).
    for k, v in other.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


def effective_requests(spec: ResourceMap, status: StatusResources, infeasible: bool) -> dict[str, int]:
    """determineEffectiveRequests: the per-resource max of spec, actuated and allocated, except
    that an infeasible resize leaves the spec out (the kubelet will never grant it)."""
    out: dict[str, int] = {} if infeasible else dict(spec)
    _max(out, status.actuated)
    _max(out, status.allocated)
    return out


def _with_non_missing(reqs: ResourceMap, non_missing: ResourceMap) -> dict[str, int]:
    """applyNonMissing: fill only absent keys; an explicit request, even zero, stays."""
    out = dict(reqs)
    for k, v in non_missing.items():
        if k not in reqs:
            out[k] = v
    return out


def aggregate_container_requests(
    inp: PodResourceInputs, *, use_status: bool, non_missing: ResourceMap | None = None
) -> dict[str, int]:
    """AggregateContainerRequests: regular containers and sidecars add up; each init container
    needs itself plus the sidecars started before it; the pod needs the larger of the two."""
    infeasible = inp.resize_infeasible
    reqs: dict[str, int] = {}
    for c in inp.containers:
        r = c.requests
        if use_status:
            st = inp.statuses.get(c.name)
            if st is not None:
                r = effective_requests(r, st, infeasible)
        if non_missing:
            r = _with_non_missing(r, non_missing)
        _add(reqs, r)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in inp.init_containers:
        r = c.requests
        # Only sidecars keep running, so only their status resources count.
        if use_status and c.restartable:
            st = inp.statuses.get(c.name)
            if st is not None:
                r = effective_requests(r, st, infeasible)
        if non_missing:
            r = _with_non_missing(r, non_missing)
        if c.restartable:
            _add(reqs, r)
            _add(sidecars, r)
            need: ResourceMap = sidecars
        else:
            tmp = dict(r)
            _add(tmp, sidecars)
            need = tmp
        _max(init_max, need)
    _max(reqs, init_max)
    return reqs


def pod_requests(
    inp: PodResourceInputs,
    *,
    use_status: bool,
    pod_level: bool = True,
    pod_level_status: bool | None = None,
    non_missing: ResourceMap | None = None,
    exclude_overhead: bool = False,
) -> dict[str, int]:
    """resource.PodRequests. ``use_status`` is UseStatusResources; ``pod_level`` the negation of
    SkipPodLevelResources; ``pod_level_status`` InPlacePodLevelResourcesVerticalScalingEnabled
    (default: as ``use_status``), which lets the pod-level status count too."""
    if pod_level_status is None:
        pod_level_status = use_status
    reqs = aggregate_container_requests(inp, use_status=use_status, non_missing=non_missing)
    if pod_level and inp.pod_level:
        eff = None
        if use_status and pod_level_status and inp.pod_status is not None:
            eff = effective_requests(inp.pod_level, inp.pod_status, inp.resize_infeasible)
        for k, v in inp.pod_level.items():
            # An infeasible resize with nothing reported leaves a present zero, as upstream.
            reqs[k] = eff.get(k, 0) if eff is not None else v
    if not exclude_overhead:
        _add(reqs, inp.overhead)
    return reqs


def calculate_resource(inp: PodResourceInputs, gates: ResourceGates | None = None) -> tuple[dict[str, int], int, int]:
    """PodInfo.CalculateResource: (requests, non-zero milli-CPU, non-zero memory), under
    ``gates`` (default: the process's).

    Without pod-level requests (or without the PodLevelResources gate) every container lacking
    cpu/memory counts the default. With them, a default applies only when the whole pod
    (containers, pod level, overhead) names no cpu (or memory) at all; then each container
    lacking it gets the default.
    """
    g = gates or _gates[0]
    pl, pls = g.pod_level_resources, g.pod_level_resize
    requests = pod_requests(inp, use_status=True, pod_level=pl, pod_level_status=pls)
    if not (pl and inp.pod_level):
        non_missing: ResourceMap = NON_MISSING_DEFAULTS
    else:
        non_missing = {k: v for k, v in NON_MISSING_DEFAULTS.items() if k not in requests}
    non0 = (
        pod_requests(inp, use_status=True, pod_level=pl, pod_level_status=pls, non_missing=non_missing)
        if non_missing
        else requests
    )
    return requests, non0.get(CPU, 0), non0.get(MEMORY, 0)
