"""The one module that knows Kubernetes field paths.

Raw Pod/Node/Namespace dicts (kopf bodies, YAML documents) become slotted ``PodInfo`` /
``NodeInfo`` objects once; the hot path only reads these.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol, TypeVar

import orjson

from scheduler.model.labels import (
    LabelSelector,
    NodeSelector,
    PreferredSchedulingTerm,
    Requirement,
    parse_preferred_terms,
)
from scheduler.model.podrequests import DEFAULT_MEMORY_REQUEST as DEFAULT_MEMORY_REQUEST  # re-exported
from scheduler.model.podrequests import DEFAULT_MILLI_CPU_REQUEST as DEFAULT_MILLI_CPU_REQUEST  # re-exported
from scheduler.model.podrequests import (
    ContainerResources,
    PodResourceInputs,
    StatusResources,
    calculate_resource,
)
from scheduler.model.quantity import QuantityError, wrap64
from scheduler.model.quantity import parse as parse_quantity
from scheduler.model.schema import AFFINITY, NODE, POD, SPREAD_CONSTRAINTS, TOLERATIONS, FieldError, check, object_error
from scheduler.model.schema import NAMESPACE as NAMESPACE_SCHEMA
from scheduler.model.schema import OWNER as OWNER_SCHEMA
from scheduler.model.storage import POD_VOLUMES

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"

Raw = Mapping[str, Any]


def _is_native(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _bad_value(path: str, message: str) -> ValueError:
    # Without a path (pod maps, converted in bulk) a plain error lets the schema check name the field.
    return FieldError(path, message) if path else QuantityError(message)


# Pods repeat the same few request strings and exact parsing is not cheap: good results only.
_QUANTITY_CACHE: dict[tuple[bool, Any], int] = {}
_QUANTITY_CACHE_MAX = 8192


def _quantity(name: str, value: Any, path: str = "") -> int:
    """Upstream Resource.Add's conversion (MilliValue for cpu, Value otherwise), which never fails
    and wraps or zeroes past int64 (scheduler.model.quantity); refused where the API server refuses."""
    key = (name == CPU, value) if type(value) in (str, int) else None
    if key is not None:
        hit = _QUANTITY_CACHE.get(key)
        if hit is not None:
            return hit
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        raise _bad_value(path, f'Invalid value: "{value}": {exc}') from None
    if q.value < 0:
        raise _bad_value(path, f'Invalid value: "{value}": must be greater than or equal to 0')
    out = q.milli() if name == CPU else q.int_value()
    if key is not None and len(_QUANTITY_CACHE) < _QUANTITY_CACHE_MAX:
        _QUANTITY_CACHE[key] = out
    return out


class Resource:
    """A resource vector in integer base units (milli-CPU, bytes, counts)."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @staticmethod
    def from_list(raw: Mapping[str, Any] | None, path: str = "") -> Resource:
        r = Resource()
        if raw and type(raw) is not dict and not isinstance(raw, Mapping):
            raise FieldError(path, "expected an object of quantities")
        for name, q in (raw or {}).items():
            r.set(str(name), _quantity(str(name), q, f"{path}[{name}]"))
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def add(self, other: Resource, sign: int = 1) -> None:
        # Go int64 sums: wrap instead of growing past what the numpy columns hold.
        self.milli_cpu = wrap64(self.milli_cpu + sign * other.milli_cpu)
        self.memory = wrap64(self.memory + sign * other.memory)
        self.ephemeral_storage = wrap64(self.ephemeral_storage + sign * other.ephemeral_storage)
        self.allowed_pod_number = wrap64(self.allowed_pod_number + sign * other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = wrap64(self.scalar.get(k, 0) + sign * v)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def names(self) -> list[str]:
        return [CPU, MEMORY, EPHEMERAL_STORAGE, *self.scalar]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and (
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            {k: v for k, v in self.scalar.items() if v},
        ) == (
            other.milli_cpu,
            other.memory,
            other.ephemeral_storage,
            other.allowed_pod_number,
            {k: v for k, v in other.scalar.items() if v},
        )

    def __repr__(self) -> str:
        return (
            f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, eph={self.ephemeral_storage}, "
            f"pods={self.allowed_pod_number}, scalar={self.scalar})"
        )


# ---------------------------------------------------------------------------------------------
# Taints and tolerations


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str
    # timeAdded as nanoseconds since the epoch (None when unset). Matching ignores it, but
    # upstream compares whole taints (Semantic.DeepEqual) to detect a taint change.
    time_added: int | None = None


class _TaintLike(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def effect(self) -> str: ...


def toleration_matches(key: str, operator: str, value: str, effect: str, taint: _TaintLike) -> bool:
    """ToleratesTaint, shared by node taints (v1.Toleration) and device taints (DRA's
    DeviceToleration): effect and key must match unless empty; Exists ignores the value."""
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator == "Exists":
        return True
    if operator in ("", "Equal"):
        return value == taint.value
    return False


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" (default) or "Exists"
    value: str
    effect: str  # "" matches every effect
    # Kept only so that comparing tolerations compares what upstream's DeepEqual does.
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint."""
        return toleration_matches(self.key, self.operator, self.value, self.effect, taint)


def tolerates_taint(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


def find_untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], effects: tuple[str, ...]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates (v1helper.FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in effects and not tolerates_taint(tolerations, taint):
            return taint
    return None


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))")


def _rfc3339_ns(value: Any) -> int | None:
    """A metav1.Time as UTC nanoseconds since the epoch (exact, unlike a float); None when unset
    or unreadable."""
    if not value:
        return None
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return calendar.timegm(dt.utctimetuple()) * 10**9 + dt.microsecond * 1000
    m = _RFC3339.fullmatch(str(value).strip())
    if m is None:
        return None
    y, mo, d, h, mi, sec, frac, sign, oh, om = m.groups()
    secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(sec), 0, 0, 0))
    if sign:
        offset = int(oh) * 3600 + int(om) * 60
        secs -= offset if sign == "+" else -offset
    nanos = int((frac or "")[:9].ljust(9, "0"))
    return secs * 10**9 + nanos


def _parse_taints(raw: list[Raw] | None) -> tuple[Taint, ...]:
    return tuple(
        Taint(
            str(t.get("key", "")),
            str(t.get("value", "") or ""),
            str(t.get("effect", "")),
            _rfc3339_ns(t.get("timeAdded")),
        )
        for t in raw or []
    )


# Pods of one workload carry byte-identical tolerations and node affinity (and every pod gets
# the same two default tolerations at admission), so their checked, parsed and immutable forms
# are kept by the JSON of the subtree: a repeat costs one orjson.dumps and a lookup. Bounded:
# cleared when full, so distinct values cannot grow it without limit.
_SUBTREE_MEMO_MAX = 4096
_T = TypeVar("_T")
_tolerations_memo: dict[bytes, tuple[Toleration, ...]] = {}
_node_affinity_memo: dict[bytes, tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]] = {}


def _memoized(memo: dict[bytes, _T], raw: Any, compute: Callable[[Any], _T]) -> _T:
    """``compute(raw)`` (which checks, so it may raise), kept in ``memo`` by raw's JSON."""
    try:
        key = orjson.dumps(raw)
    except TypeError:  # not JSON (a test's or a YAML file's odd value): parse it every time
        return compute(raw)
    hit = memo.get(key)
    if hit is None:
        hit = compute(raw)  # a failed check raises here: bad subtrees are never kept
        if len(memo) >= _SUBTREE_MEMO_MAX:
            memo.clear()
        memo[key] = hit
    return hit


def _check_parse_tolerations(raw: list[Raw]) -> tuple[Toleration, ...]:
    check(raw, TOLERATIONS, "spec.tolerations")
    return _parse_tolerations(raw)


def _check_parse_node_affinity(affinity: Raw) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    check(affinity, AFFINITY, "spec.affinity")
    na = affinity.get("nodeAffinity") or {}
    return (
        NodeSelector.parse(na.get("requiredDuringSchedulingIgnoredDuringExecution")),
        parse_preferred_terms(na.get("preferredDuringSchedulingIgnoredDuringExecution")),
    )


def checked_tolerations(raw: list[Raw] | None) -> tuple[Toleration, ...]:
    """spec.tolerations checked and parsed (raises the check's FieldError)."""
    return _memoized(_tolerations_memo, raw, _check_parse_tolerations) if raw else ()


def checked_node_affinity(
    affinity: Raw | None,
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    """spec.affinity checked whole (pod affinity too), and its node affinity parsed."""
    return _memoized(_node_affinity_memo, affinity, _check_parse_node_affinity) if affinity else (None, ())


def _parse_tolerations(raw: list[Raw] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            str(t.get("key", "") or ""),
            str(t.get("operator", "") or ""),
            str(t.get("value", "") or ""),
            str(t.get("effect", "") or ""),
            int(t["tolerationSeconds"]) if t.get("tolerationSeconds") is not None else None,
        )
        for t in raw or []
    )


# ---------------------------------------------------------------------------------------------
# Pod affinity and topology spread


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A v1.PodAffinityTerm with the selector compiled and match/mismatchLabelKeys folded in.

    ``namespaces`` is the explicit set (the pod's own namespace when both it and the namespace
    selector are empty); ``namespace_selector`` is None when absent.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches_namespace(self, namespace: str, ns_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces:
            return True
        if self.namespace_selector is None:
            return False
        return self.namespace_selector.matches(ns_labels or {})

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        return self.matches_namespace(pod.namespace, ns_labels) and self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


def _parse_affinity_term(raw: Raw, pod_ns: str, pod_labels: Mapping[str, str]) -> AffinityTerm:
    selector = LabelSelector.parse(raw.get("labelSelector"))
    if selector is None:
        # A nil selector matches nothing (upstream: labels.Nothing()).
        from scheduler.model.labels import NOTHING

        selector = NOTHING
    extra: list[Requirement] = []
    # matchLabelKeys / mismatchLabelKeys: only when a selector is set, keys the pod has.
    if raw.get("labelSelector") is not None:
        for key in raw.get("matchLabelKeys") or []:
            if key in pod_labels:
                extra.append(Requirement(key, "In", frozenset([pod_labels[key]])))
        for key in raw.get("mismatchLabelKeys") or []:
            if key in pod_labels:
                extra.append(Requirement(key, "NotIn", frozenset([pod_labels[key]])))
    if extra:
        selector = selector.and_(tuple(extra))
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or [])
    ns_sel = LabelSelector.parse(raw.get("namespaceSelector"))
    if not namespaces and ns_sel is None:
        namespaces = frozenset([pod_ns])
    return AffinityTerm(selector, namespaces, ns_sel, str(raw.get("topologyKey", "")))


def _parse_weighted_terms(
    raw: list[Raw] | None, ns: str, labels: Mapping[str, str]
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(
        WeightedAffinityTerm(int(w.get("weight", 0)), _parse_affinity_term(w.get("podAffinityTerm") or {}, ns, labels))
        for w in raw or []
    )


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector
    min_domains: int | None
    node_affinity_policy: str  # Honor | Ignore (default Honor)
    node_taints_policy: str  # Honor | Ignore (default Ignore)
    match_label_keys: tuple[str, ...]


def _parse_spread_constraints(raw: list[Raw] | None, labels: Mapping[str, str]) -> tuple[TopologySpreadConstraint, ...]:
    out = []
    for c in raw or []:
        sel = LabelSelector.parse(c.get("labelSelector"))
        keys = tuple(str(k) for k in c.get("matchLabelKeys") or [])
        if sel is None:
            from scheduler.model.labels import NOTHING

            sel = NOTHING
        elif keys:
            extra = tuple(Requirement(k, "In", frozenset([labels[k]])) for k in keys if k in labels)
            sel = sel.and_(extra)
        md = c.get("minDomains")
        out.append(
            TopologySpreadConstraint(
                max_skew=int(c.get("maxSkew", 1)),
                topology_key=str(c.get("topologyKey", "")),
                when_unsatisfiable=str(c.get("whenUnsatisfiable", "DoNotSchedule")),
                selector=sel,
                min_domains=int(md) if md is not None else None,
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or "Honor"),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or "Ignore"),
                match_label_keys=keys,
            )
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Pods


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
    if isinstance(value, datetime):
        return value.timestamp()
    text = str(value)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _container_requests(c: Raw) -> dict[str, int]:
    res = c.get("resources") or {}
    limits = res.get("limits") or {}
    reqs = dict(res.get("requests") or {})
    # API-server defaulting: a resource with a limit but no request requests its limit.
    for k, v in limits.items():
        reqs.setdefault(k, v)
    return {str(k): _quantity(str(k), v) for k, v in reqs.items()}


@lru_cache(maxsize=4096, typed=True)
def _cached_quantity(name: str, value: str | int | float) -> int:
    return _quantity(name, value)


def _resource_map(raw: Mapping[str, Any] | None) -> dict[str, int]:
    # Running pods repeat their spec amounts in every container status: memoise the conversion.
    out: dict[str, int] = {}
    for k, v in (raw or {}).items():
        name = str(k)
        try:
            out[name] = _cached_quantity(name, v)
        except TypeError:  # an unhashable value: let _quantity report it
            out[name] = _quantity(name, v)
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
        str(k): _quantity(str(k), v)
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
# so they are kept by those fields' JSON like the subtrees above. The memo's maps are shared:
# read only (resource_from_map copies).
_requests_memo: dict[bytes, tuple[dict[str, int], int, int]] = {}


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


def resource_from_map(reqs: Mapping[str, int]) -> Resource:
    """A request map as a Resource; a "pods" entry is not a request the scheduler sums."""
    out = Resource()
    for k, v in reqs.items():
        out.set(k, v)
    out.allowed_pod_number = 0
    return out


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
        "spread_constraints",
        "start_ts",
        "tolerations",
        "uid",
        "volumes",
    )

    def __init__(self, raw: Raw) -> None:
        try:
            self._parse(raw)
        except Exception as exc:
            # One line naming the pod and the field; the caller decides what to do with it.
            ns = (raw.get("metadata") or {}).get("namespace") if isinstance(raw, Mapping) else None
            raise object_error("Pod", raw, POD, exc, "" if ns else "default") from None

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
            _parse_affinity_term(t, ns, lbl) for t in pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        )
        self.affinity_preferred = _parse_weighted_terms(
            pa.get("preferredDuringSchedulingIgnoredDuringExecution"), ns, lbl
        )
        self.anti_affinity_required = tuple(
            _parse_affinity_term(t, ns, lbl) for t in paa.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        )
        self.anti_affinity_preferred = _parse_weighted_terms(
            paa.get("preferredDuringSchedulingIgnoredDuringExecution"), ns, lbl
        )
        self.spread_constraints = _parse_spread_constraints(spread, self.labels)

    def _compute_requests(self, raw: Raw) -> None:
        key = _requests_key(raw)
        if key is None:
            requests, self.non0_cpu, self.non0_mem = calculate_resource(pod_resource_inputs(raw))
        else:
            requests, self.non0_cpu, self.non0_mem = _memoized(
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
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def __repr__(self) -> str:
        return f"PodInfo({self.key} node={self.node_name or '-'})"


# ---------------------------------------------------------------------------------------------
# Nodes


@dataclass(slots=True)
class ImageState:
    size: int
    num_nodes: int = 0


def node_image_entries(raw: Raw | None) -> list[tuple[str, int]]:
    """(name, sizeBytes) for every name of every status.images entry, in status order."""
    if raw is None:
        return []
    out: list[tuple[str, int]] = []
    for img in (raw.get("status") or {}).get("images") or []:
        size = int(img.get("sizeBytes") or 0)
        out.extend((str(n), size) for n in img.get("names") or [])
    return out


class NodeInfo:
    """A node plus the aggregate of the pods on it (upstream framework.NodeInfo)."""

    __slots__ = (
        "allocatable",
        "declared_features",
        "generation",
        "image_sizes",
        "image_states",
        "index",
        "labels",
        "name",
        "non0_cpu",
        "non0_mem",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "raw",
        "requested",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, raw: Raw | None = None, name: str = "") -> None:
        self.raw: Raw | None = raw
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.requested = Resource()
        self.non0_cpu = 0
        self.non0_mem = 0
        self.used_ports: dict[tuple[str, int], set[str]] = {}
        self.generation = 0
        self.index = -1  # position in the snapshot's node list
        # ImageLocality's view, image name -> (size, number of nodes holding it), as the
        # scheduler cache summarised it when this node was last snapshotted; None until then
        # (a Snapshot built without a cache fills it the way upstream NewSnapshot does).
        self.image_states: dict[str, tuple[int, int]] | None = None
        if raw is None:
            self.name = name
            self.labels: dict[str, str] = {}
            self.taints: tuple[Taint, ...] = ()
            self.unschedulable = False
            self.allocatable = Resource()
            self.image_sizes: dict[str, int] = {}
            self.declared_features: tuple[str, ...] = ()
            return
        self.set_node(raw)

    def set_node(self, raw: Raw) -> None:
        """Take a new Node object; on a bad object raise ObjectError and keep the old one."""
        try:
            meta = raw.get("metadata") or {}
            spec = raw.get("spec") or {}
            status = raw.get("status") or {}
            name = str(meta.get("name", ""))
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            taints = _parse_taints(spec.get("taints"))
            # API-server defaulting: allocatable defaults to capacity.
            alloc = status.get("allocatable")
            path = "status.allocatable"
            if alloc is None:
                alloc, path = status.get("capacity"), "status.capacity"
            allocatable = Resource.from_list(alloc, path)
            # The node's own report, a later entry winning for a repeated name.
            sizes = dict(node_image_entries(raw))
            # status.declaredFeatures as published (the API keeps it sorted and unique); the
            # NodeDeclaredFeatures plugin maps it onto its feature registry.
            declared = tuple(str(f) for f in status.get("declaredFeatures") or ())
            unschedulable = spec.get("unschedulable")
            if not isinstance(unschedulable, bool | None):
                raise FieldError("spec.unschedulable", f"expected a boolean, got {unschedulable!r}")
        except Exception as exc:
            raise object_error("Node", raw, NODE, exc) from None
        self.raw = raw
        self.name = name
        self.labels = labels
        self.taints = taints
        self.unschedulable = bool(unschedulable)
        self.allocatable = allocatable
        self.image_sizes = sizes
        self.declared_features = declared

    @property
    def node_present(self) -> bool:
        return self.raw is not None

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.anti_affinity_required:
            self.pods_with_required_anti_affinity.append(pod)
        self._account(pod, 1)

    def remove_pod(self, pod: PodInfo) -> bool:
        for i, p in enumerate(self.pods):
            if p.uid == pod.uid:
                old = self.pods.pop(i)
                self.pods_with_affinity = [q for q in self.pods_with_affinity if q.uid != pod.uid]
                self.pods_with_required_anti_affinity = [
                    q for q in self.pods_with_required_anti_affinity if q.uid != pod.uid
                ]
                self._account(old, -1)
                return True
        return False

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.requested.add(pod.requests, sign)
        self.non0_cpu = wrap64(self.non0_cpu + sign * pod.non0_cpu)
        self.non0_mem = wrap64(self.non0_mem + sign * pod.non0_mem)
        for hp in pod.host_ports:
            ip = hp.host_ip or "0.0.0.0"
            k = (hp.protocol, hp.port)
            if sign > 0:
                self.used_ports.setdefault(k, set()).add(ip)
            else:
                ips = self.used_ports.get(k)
                if ips is not None:
                    ips.discard(ip)
                    if not ips:
                        del self.used_ports[k]
        self.generation += 1

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.raw = self.raw
        c.name = self.name
        c.labels = self.labels
        c.taints = self.taints
        c.unschedulable = self.unschedulable
        c.allocatable = self.allocatable
        c.image_sizes = self.image_sizes
        c.declared_features = self.declared_features
        c.image_states = self.image_states
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.requested = self.requested.clone()
        c.non0_cpu = self.non0_cpu
        c.non0_mem = self.non0_mem
        c.used_ports = {k: set(v) for k, v in self.used_ports.items()}
        c.generation = self.generation
        c.index = self.index
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name} pods={len(self.pods)})"


@dataclass(slots=True)
class NamespaceInfo:
    name: str
    labels: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(raw: Raw) -> NamespaceInfo:
        try:
            meta = raw.get("metadata") or {}
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            return NamespaceInfo(str(meta.get("name", "")), labels)
        except Exception as exc:
            raise object_error("Namespace", raw, NAMESPACE_SCHEMA, exc) from None


@dataclass(slots=True)
class SelectorOwner:
    """A Service, ReplicaSet, StatefulSet or ReplicationController: what default spreading needs."""

    kind: str
    namespace: str
    name: str
    selector: LabelSelector | None

    @staticmethod
    def parse(raw: Raw) -> SelectorOwner:
        try:
            return SelectorOwner._parse(raw)
        except Exception as exc:
            raise object_error(str(raw.get("kind") or "Object"), raw, OWNER_SCHEMA, exc) from None

    @staticmethod
    def _parse(raw: Raw) -> SelectorOwner:
        meta = raw.get("metadata") or {}
        kind = str(raw.get("kind", ""))
        spec = raw.get("spec") or {}
        sel_raw = spec.get("selector")
        sel: LabelSelector | None
        if kind in ("Service", "ReplicationController"):
            # These use plain map selectors; an empty map selects nothing for spreading.
            sel = LabelSelector.parse({"matchLabels": sel_raw}) if sel_raw else None
        else:
            sel = LabelSelector.parse(sel_raw) if sel_raw is not None else None
        return SelectorOwner(kind, str(meta.get("namespace") or "default"), str(meta.get("name", "")), sel)
