"""Everything the scheduler reads from a Pod, parsed once into a slotted ``PodInfo``, and the
bridge from a pod's fields to its resource requests (scheduler.model.podrequests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from operator import attrgetter
from typing import Any

from scheduler.model import podrequests
from scheduler.model.affinity import (
    checked_node_affinity,
    parse_affinity_term,
    parse_spread_constraints,
    parse_weighted_terms,
)
from scheduler.model.kinds import Raw, metadata
from scheduler.model.memo import memoized
from scheduler.model.podrequests import (
    ContainerResources,
    PodResourceInputs,
    ResourceGates,
    StatusResources,
    calculate_resource,
)
from scheduler.model.resource import CPU, MEMORY, is_hugepages, resource_amount, resource_from_map
from scheduler.model.schema import POD, SPREAD_CONSTRAINTS, FieldError, check, object_error
from scheduler.model.storage import POD_VOLUMES
from scheduler.model.taints import checked_tolerations


@dataclass(frozen=True, slots=True)
class HostPort:
    host_ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool


def _parse_time(value: Any) -> float:
    if not value:
        return 0.0
    if type(value) is str:
        # Pods created together share their second: a handful of strings, parsed once each.
        t = _times.get(value)
        if t is None:
            if len(_times) >= _TIMES_MAX:
                _times.clear()
            t = _times[value] = _parse_time_text(value)
        return t
    if isinstance(value, datetime):
        return value.timestamp()
    return _parse_time_text(str(value))


def _parse_time_text(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


_TIMES_MAX = 4096
_times: dict[str, float] = {}


def _container_requests(c: Raw) -> dict[str, int]:
    res = c.get("resources") or {}
    limits = res.get("limits") or {}
    reqs = dict(res.get("requests") or {})
    # API-server defaulting: a resource with a limit but no request requests its limit.
    for k, v in limits.items():
        reqs.setdefault(k, v)
    return {str(k): resource_amount(str(k), v) for k, v in reqs.items()}


@lru_cache(maxsize=4096, typed=True)
def _cached_amount(name: str, value: str | int | float) -> int:
    return resource_amount(name, value)


def _resource_map(raw: Mapping[str, Any] | None) -> dict[str, int]:
    # Running pods repeat their spec amounts in every container status: memoise the conversion.
    out: dict[str, int] = {}
    for k, v in (raw or {}).items():
        name = str(k)
        try:
            out[name] = _cached_amount(name, v)
        except TypeError:  # an unhashable value: let resource_amount report it
            out[name] = resource_amount(name, v)
    return out


def _status_resources(st: Raw) -> StatusResources | None:
    """A container (or pod) status's reported resources; None when it has no ``resources``."""
    res = st.get("resources")
    if res is None:
        return None
    return StatusResources(_resource_map(res.get("requests")), _resource_map(st.get("allocatedResources")))


def pod_resource_inputs(raw: Raw) -> PodResourceInputs:
    """The parts of a Pod that its resource requests are computed from (scheduler.model.podrequests)."""
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    containers = tuple(
        ContainerResources(str(c.get("name", "")), _container_requests(c)) for c in spec.get("containers") or []
    )
    inits = tuple(
        ContainerResources(str(c.get("name", "")), _container_requests(c), c.get("restartPolicy") == "Always")
        for c in spec.get("initContainers") or []
    )
    pod_level = {
        str(k): resource_amount(str(k), v)
        for k, v in ((spec.get("resources") or {}).get("requests") or {}).items()
        if _pod_level_supported(str(k))
    }
    statuses: dict[str, StatusResources | None] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            statuses[str(cs.get("name", ""))] = _status_resources(cs)
    infeasible = False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodResizePending":
            infeasible = cond.get("reason") == "Infeasible"
            break
    return PodResourceInputs(
        containers,
        inits,
        pod_level,
        _resource_map(spec.get("overhead")),
        statuses,
        _status_resources(status),
        infeasible,
    )


# Pods of one workload carry the same container resources too. Without status resources (an
# in-place resize, reported per pod) the requests follow from the spec's resource fields alone,
# so they are kept by those fields' JSON (scheduler.model.memo). The memo's maps are shared:
# read only (resource_from_map copies).
_requests_memo: dict[bytes, tuple[dict[str, int], int, int]] = {}


def set_resource_gates(gates: ResourceGates) -> None:
    """Set the process's PodLevelResources / InPlacePodLevelResourcesVerticalScaling for every
    PodInfo built from now on (upstream reads the global gate in CalculateResource); the
    frameworks' builder calls it with the resolved gates."""
    if gates != podrequests.resource_gates():
        podrequests._gates[0] = gates
        _requests_memo.clear()


def _requests_key(raw: Raw) -> list[Any] | None:
    """What a pod's requests follow from when its status reports no resources; None otherwise."""
    status = raw.get("status") or {}
    if status.get("resources") is not None:
        return None
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("resources") is not None:
                return None
    spec = raw.get("spec") or {}
    return [
        [c.get("resources") for c in spec.get("containers") or []],
        [[c.get("resources"), c.get("restartPolicy")] for c in spec.get("initContainers") or []],
        spec.get("resources"),
        spec.get("overhead"),
    ]


def has_pod_level_requests(raw: Raw) -> bool:
    """resourcehelper.IsPodLevelRequestsSet: spec.resources.requests names cpu, memory or hugepages."""
    reqs = ((raw.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return any(_pod_level_supported(str(k)) for k in reqs)


def has_status_resources(raw: Raw) -> bool:
    """Whether the pod's status reports resources that in-place resize rules would count."""
    status = raw.get("status") or {}
    if status.get("resources") is not None:
        return True
    return any(
        cs.get("resources") is not None
        for key in ("containerStatuses", "initContainerStatuses")
        for cs in status.get(key) or []
    )


def _pod_level_supported(name: str) -> bool:
    return name in (CPU, MEMORY) or is_hugepages(name)


class PodInfo:
    """Everything the scheduler reads from a Pod, computed once from its dict."""

    __slots__ = (
        "affinity_preferred",
        "affinity_required",
        "anti_affinity_preferred",
        "anti_affinity_required",
        "creation_ts",
        "deleting",
        "host_ports",
        "images",
        "init_images",
        "key",
        "labels",
        "name",
        "namespace",
        "node_affinity_preferred",
        "node_affinity_required",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "non0_cpu",
        "non0_mem",
        "owner_refs",
        "phase",
        "preemption_policy",
        "priority",
        "raw",
        "requests",
        "resource_version",
        "scheduler_name",
        "scheduling_gates",
        "scheduling_group",
        "spread_constraints",
        "start_ts",
        "tolerations",
        "uid",
        "volumes",
    )

    def __copy__(self) -> PodInfo:
        # The scheduling cycle copies each pod it assumes: copy.copy's generic path over the
        # slots cost several times this.
        new = PodInfo.__new__(PodInfo)
        for name, value in zip(_POD_SLOTS, _pod_fields(self)):
            setattr(new, name, value)
        return new

    def __init__(self, raw: Raw) -> None:
        try:
            self._parse(raw)
        except Exception as exc:
            # One line naming the pod and the field; the caller decides what to do with it.
            ns = metadata(raw).get("namespace") if isinstance(raw, Mapping) else None
            raise object_error("Pod", raw, POD, exc, "" if ns else "default") from None

    @classmethod
    def updated(cls, prev: PodInfo | None, raw: Raw) -> PodInfo:
        """The pod of an update event, ``prev`` being what was known of it before. A bound pod
        sees two updates that change no parsed input (its binding, its kubelet's status): the
        new PodInfo then takes every parsed field from ``prev`` and reads again only what
        such updates change (node, phase, nomination, start, deletion, status-driven requests)."""
        if prev is None or not _same_parsed_inputs(prev.raw, raw):
            return cls(raw)
        meta = raw.get("metadata") or {}
        status = raw.get("status") or {}
        new = prev.__copy__()
        new.raw = raw
        new.resource_version = str(meta.get("resourceVersion") or "")
        new.deleting = bool(meta.get("deletionTimestamp"))
        new.node_name = str((raw.get("spec") or {}).get("nodeName") or "")
        new.phase = str(status.get("phase") or "")
        new.nominated_node_name = str(status.get("nominatedNodeName") or "")
        new.start_ts = _parse_time(status.get("startTime"))
        # The spec is the same: the requests change only with resources the status reports.
        if has_status_resources(raw) or has_status_resources(prev.raw):
            new._compute_requests(raw)
        return new

    def _parse(self, raw: Raw) -> None:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.raw = raw
        self.name: str = str(meta.get("name", ""))
        self.namespace: str = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = str(meta.get("uid") or self.key)
        self.resource_version: str = str(meta.get("resourceVersion") or "")
        self.labels: dict[str, str] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        self.creation_ts = _parse_time(meta.get("creationTimestamp"))
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.owner_refs = tuple(
            OwnerRef(str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")), bool(o.get("controller")))
            for o in meta.get("ownerReferences") or []
        )
        self.node_name: str = str(spec.get("nodeName") or "")
        self.scheduler_name: str = str(spec.get("schedulerName") or "default-scheduler")
        self.priority: int = int(spec.get("priority") or 0)
        if not -(2**31) <= self.priority < 2**31:
            raise FieldError("spec.priority", f'Invalid value: "{self.priority}": must be a 32-bit integer')
        self.preemption_policy: str = str(spec.get("preemptionPolicy") or "PreemptLowerPriority")
        self.scheduling_gates = tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or [])
        # spec.schedulingGroup.podGroupName: the PodGroup (same namespace) the pod belongs to.
        group = spec.get("schedulingGroup")
        self.scheduling_group: str | None = None
        if group is not None and group.get("podGroupName") is not None:
            self.scheduling_group = str(group["podGroupName"])
        self.phase: str = str(status.get("phase") or "")
        self.nominated_node_name: str = str(status.get("nominatedNodeName") or "")
        self.start_ts = _parse_time(status.get("startTime"))
        # Subtrees where a wrong type would parse quietly into nonsense: checked when present.
        tolerations, affinity = spec.get("tolerations"), spec.get("affinity")
        spread = spec.get("topologySpreadConstraints")
        self.tolerations = checked_tolerations(tolerations)
        self.node_affinity_required, self.node_affinity_preferred = checked_node_affinity(affinity)
        if spread:
            check(spread, SPREAD_CONSTRAINTS, "spec.topologySpreadConstraints")
        self.node_selector: dict[str, str] = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
        volumes = spec.get("volumes")
        if volumes:
            check(volumes, POD_VOLUMES, "spec.volumes")
        self.volumes: tuple[Raw, ...] = tuple(volumes or [])

        containers = spec.get("containers") or []
        init_containers = spec.get("initContainers") or []
        self.images = tuple(str(c.get("image", "")) for c in containers)
        self.init_images = tuple(str(c.get("image", "")) for c in init_containers)
        ports: list[HostPort] = []
        # Upstream schedutil.GetHostPorts: sidecar (restartPolicy Always) init containers first,
        # since they run for the pod's whole life, then the regular containers.
        sidecars = [c for c in init_containers if c.get("restartPolicy") == "Always"]
        for c in (*sidecars, *containers):
            for p in c.get("ports") or []:
                hp = int(p.get("hostPort") or 0)
                if not 0 <= hp <= 65535:
                    raise ValueError(f"hostPort {hp} out of range")  # the schema check names the port
                if hp > 0:
                    ports.append(HostPort(str(p.get("hostIP") or ""), str(p.get("protocol") or "TCP"), hp))
        self.host_ports = tuple(ports)

        self._compute_requests(raw)

        affinity = affinity or {}
        pa = affinity.get("podAffinity") or {}
        paa = affinity.get("podAntiAffinity") or {}
        ns, lbl = self.namespace, self.labels
        self.affinity_required = tuple(
            parse_affinity_term(t, ns, lbl) for t in pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        )
        self.affinity_preferred = parse_weighted_terms(
            pa.get("preferredDuringSchedulingIgnoredDuringExecution"), ns, lbl
        )
        self.anti_affinity_required = tuple(
            parse_affinity_term(t, ns, lbl) for t in paa.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        )
        self.anti_affinity_preferred = parse_weighted_terms(
            paa.get("preferredDuringSchedulingIgnoredDuringExecution"), ns, lbl
        )
        self.spread_constraints = parse_spread_constraints(spread, self.labels)

    def _compute_requests(self, raw: Raw) -> None:
        key = _requests_key(raw)
        if key is None:
            requests, self.non0_cpu, self.non0_mem = calculate_resource(pod_resource_inputs(raw))
        else:
            requests, self.non0_cpu, self.non0_mem = memoized(
                _requests_memo, key, lambda _: calculate_resource(pod_resource_inputs(raw))
            )
        self.requests = resource_from_map(requests)

    # -- helpers used by several plugins -------------------------------------------------------
    @property
    def has_affinity(self) -> bool:
        return bool(
            self.affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )

    @property
    def has_required_anti_affinity(self) -> bool:
        return bool(self.anti_affinity_required)

    @property
    def pod_group_key(self) -> str | None:
        """namespace/name of the pod's PodGroup, if it names one."""
        return None if self.scheduling_group is None else f"{self.namespace}/{self.scheduling_group}"

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def __repr__(self) -> str:
        return f"PodInfo({self.key} node={self.node_name or '-'})"


_POD_SLOTS: tuple[str, ...] = PodInfo.__slots__
def pod_uid(raw: Raw) -> str:
    """The uid PodInfo gives this pod ("" for what is not a pod object at all)."""
    # A decoded watch event is a dict: the ABC check is for the rest.
    meta = raw.get("metadata") if type(raw) is dict or isinstance(raw, Mapping) else None
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return ""
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


# Metadata that parsing reads besides the resource version and deletion.
_PARSED_META = ("name", "namespace", "uid", "labels", "creationTimestamp", "ownerReferences")


def _same_parsed_inputs(old: Any, new: Any) -> bool:
    """Whether ``new`` differs from ``old`` only where ``PodInfo.updated`` reads again: the same
    metadata that parsing reads and the same spec apart from nodeName (compared in C)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if any(om.get(k) != nm.get(k) for k in _PARSED_META):
        return False
    os_, ns_ = old.get("spec"), new.get("spec")
    if not isinstance(os_, dict) or not isinstance(ns_, dict):
        return False
    if os_.get("nodeName") == ns_.get("nodeName"):
        return os_ == ns_
    a, b = dict(os_), dict(ns_)
    a.pop("nodeName", None)
    b.pop("nodeName", None)
    return a == b
_pod_fields = attrgetter(*_POD_SLOTS)
