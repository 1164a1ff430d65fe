"""Dynamic resource allocation objects (resource.k8s.io/v1): ResourceClaims,
ResourceClaimTemplates, DeviceClasses and ResourceSlices, parsed once from API JSON, and how a
pod names its claims. The store that holds them is scheduler.framework.listers.DraStore.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from scheduler.model.kinds import Raw, as_list, as_map, metadata
from scheduler.model.labels import NodeSelector
from scheduler.model.quantity import Quantity, parse
from scheduler.model.taints import toleration_matches

FINALIZER = "resource.kubernetes.io/delete-protection"
# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler creates for a pod's
# extended resources backed by DRA (DRAExtendedResource).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of every DeviceClass.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# resourceapi.FirstAvailableDeviceRequestMaxSize and AllocationResultsMaxSize.
FIRST_AVAILABLE_MAX = 8
ALLOCATION_RESULTS_MAX = 32


# ---------------------------------------------------------------------------------------------
# Devices and slices


class Attribute:
    """One device attribute: exactly one of int, bool, string, version (a semver string)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.kind = kind  # "int", "bool", "string", "version"
        self.value = value

    @staticmethod
    def parse(raw: Any) -> Attribute | None:
        raw = as_map(raw)
        if raw.get("int") is not None:
            return Attribute("int", int(raw["int"]))
        if raw.get("bool") is not None:
            return Attribute("bool", bool(raw["bool"]))
        if raw.get("string") is not None:
            return Attribute("string", str(raw["string"]))
        if raw.get("version") is not None:
            return Attribute("version", str(raw["version"]))
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attribute) and self.kind == other.kind and self.value == other.value

    def __hash__(self) -> int:
        return hash((self.kind, self.value))

    def __repr__(self) -> str:
        return f"Attribute({self.kind}={self.value!r})"


class DeviceTaint:
    __slots__ = ("effect", "key", "value")

    def __init__(self, raw: Raw) -> None:
        self.key = str(raw.get("key") or "")
        self.value = str(raw.get("value") or "")
        self.effect = str(raw.get("effect") or "")


def _ceil(f: Fraction) -> int:
    return -((-f.numerator) // f.denominator)


class CapacityPolicy:
    """A device capacity's requestPolicy (consumable capacity): how a request is rounded and
    which amounts are allowed (upstream consumable_capacity.go)."""

    __slots__ = ("default", "max", "min", "step", "valid_values")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        d = raw.get("default")
        self.default: Fraction | None = parse(d).exact if d is not None else None
        self.valid_values = [parse(x).exact for x in as_list(raw.get("validValues"))]
        rng = as_map(raw.get("validRange"))
        self.min: Fraction | None = parse(rng["min"]).exact if rng.get("min") is not None else None
        self.max: Fraction | None = parse(rng["max"]).exact if rng.get("max") is not None else None
        self.step: Fraction | None = parse(rng["step"]).exact if rng.get("step") is not None else None

    def consumed(self, requested: Fraction | None, value: Fraction) -> Fraction:
        """calculateConsumedCapacity."""
        if requested is None:
            return self.default if self.default is not None else value
        if self.min is not None:
            if requested < self.min:
                return self.min
            if self.step is None:
                return requested
            step, lo = _ceil(self.step), _ceil(self.min)
            n, mod = divmod(_ceil(requested) - lo, step)
            return Fraction(lo + step * (n + (1 if mod else 0)))
        if self.valid_values:
            for v in self.valid_values:
                if requested <= v:
                    return v
        return requested

    def violated(self, amount: Fraction) -> bool:
        """violatesPolicy."""
        if self.default is not None and amount == self.default:
            return False
        if self.min is not None or self.max is not None or self.step is not None:
            if self.max is not None and amount > self.max:
                return True
            if self.step is not None:
                return (_ceil(amount) - _ceil(self.min or Fraction(0))) % _ceil(self.step) != 0
            return False
        if self.valid_values:
            return amount not in self.valid_values
        return False


class Device:
    __slots__ = (
        "all_nodes",
        "allow_multiple_allocations",
        "attributes",
        "binding_conditions",
        "binding_failure_conditions",
        "binds_to_node",
        "capacity",
        "capacity_policy",
        "cel_results",
        "consumes_counters",
        "name",
        "node_name",
        "node_selector",
        "taints",
    )

    def __init__(self, raw: Raw) -> None:
        self.name = str(raw.get("name") or "")
        self.attributes: dict[str, Attribute] = {}
        for k, v in as_map(raw.get("attributes")).items():
            a = Attribute.parse(v)
            if a is not None:
                self.attributes[str(k)] = a
        self.capacity: dict[str, Quantity] = {}
        self.capacity_policy: dict[str, CapacityPolicy] = {}
        for k, v in as_map(raw.get("capacity")).items():
            self.capacity[str(k)] = parse(as_map(v).get("value", 0))
            policy = as_map(v).get("requestPolicy")
            if isinstance(policy, Mapping):
                self.capacity_policy[str(k)] = CapacityPolicy(policy)
        # [(counterSet, {counter: Quantity})]
        self.consumes_counters: list[tuple[str, dict[str, Quantity]]] = [
            (
                str(c.get("counterSet") or ""),
                {str(n): parse(as_map(v).get("value", 0)) for n, v in as_map(c.get("counters")).items()},
            )
            for c in as_list(raw.get("consumesCounters"))
        ]
        self.node_name = str(raw.get("nodeName") or "")
        self.all_nodes = bool(raw.get("allNodes"))
        self.node_selector = NodeSelector.parse(raw.get("nodeSelector"))
        self.taints = tuple(DeviceTaint(t) for t in as_list(raw.get("taints")))
        self.binding_conditions: list[str] | None = (
            [str(x) for x in raw["bindingConditions"]] if raw.get("bindingConditions") is not None else None
        )
        self.binding_failure_conditions = [str(x) for x in as_list(raw.get("bindingFailureConditions"))]
        self.binds_to_node = bool(raw.get("bindsToNode"))
        self.allow_multiple_allocations = bool(raw.get("allowMultipleAllocations"))
        # Selector results by (expression, driver): a device never changes (a new slice makes
        # new devices), and interpreted CEL per device, node and pod was most of a DRA cycle.
        self.cel_results: dict[tuple[str, str], bool | str] = {}


class ResourceSlice:
    __slots__ = (
        "all_nodes",
        "devices",
        "driver",
        "generation",
        "name",
        "node_name",
        "node_selector",
        "per_device_node_selection",
        "pool",
        "raw",
        "resource_slice_count",
        "shared_counters",
    )

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        self.name = str(metadata(raw).get("name") or "")
        spec = as_map(raw.get("spec"))
        self.driver = str(spec.get("driver") or "")
        pool = as_map(spec.get("pool"))
        self.pool = str(pool.get("name") or "")
        self.generation = int(pool.get("generation") or 0)
        self.resource_slice_count = int(pool.get("resourceSliceCount") or 0)
        self.node_name = str(spec.get("nodeName") or "")
        self.all_nodes = bool(spec.get("allNodes"))
        self.node_selector = NodeSelector.parse(spec.get("nodeSelector"))
        self.per_device_node_selection = bool(spec.get("perDeviceNodeSelection"))
        # {counterSet: {counter: Quantity}}
        self.shared_counters: dict[str, dict[str, Quantity]] = {}
        self._parse_counters(spec)
        self.devices = [Device(d) for d in as_list(spec.get("devices"))]

    def _parse_counters(self, spec: Mapping[str, Any]) -> None:
        for cs in as_list(spec.get("sharedCounters")):
            self.shared_counters[str(cs.get("name") or "")] = {
                str(n): parse(as_map(v).get("value", 0)) for n, v in as_map(cs.get("counters")).items()
            }


# What Go's time.Time{}.UnixNano() gives for a missing creationTimestamp (the zero time
# overflows int64 nanoseconds): every class without one compares equal to the others.
_ZERO_TIME_NANOS = -6795364578871345152


def _unix_nanos(value: Any) -> int:
    if not value:
        return _ZERO_TIME_NANOS
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return _ZERO_TIME_NANOS
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


class DeviceClass:
    __slots__ = ("config", "created", "extended_resource_name", "name", "raw", "selectors")

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        meta = metadata(raw)
        self.name = str(meta.get("name") or "")
        self.created = _unix_nanos(meta.get("creationTimestamp"))
        spec = as_map(raw.get("spec"))
        self.selectors = _selectors(spec.get("selectors"))
        self.config = [dict(c) for c in as_list(spec.get("config"))]
        ern = spec.get("extendedResourceName")
        self.extended_resource_name: str | None = str(ern) if ern is not None else None


class ExtendedResourceCache:
    """Which DeviceClass backs an extended resource name (upstream extendedresourcecache,
    fed by the DeviceClass informer): ``spec.extendedResourceName`` and the implicit
    ``deviceclass.resource.kubernetes.io/<class>``. When two classes claim one name the newer
    class wins, the lower name on a tie; as upstream, a class whose name is taken by a winner is
    not recorded at all (not even its implicit name), and deleting or renaming the winner leaves
    the name unmapped until another class event."""

    __slots__ = ("_by_class", "_by_resource")

    def __init__(self) -> None:
        self._by_resource: dict[str, DeviceClass] = {}
        self._by_class: dict[str, str] = {}

    def get_device_class(self, resource_name: str) -> DeviceClass | None:
        return self._by_resource.get(resource_name)

    def get_extended_resource(self, class_name: str) -> str:
        return self._by_class.get(class_name, "")

    def __bool__(self) -> bool:
        return bool(self._by_resource)

    def on_add(self, cls: DeviceClass) -> None:
        self.on_update(None, cls)

    def on_update(self, old: DeviceClass | None, new: DeviceClass) -> None:
        self._update_resources(new, old)
        if new.extended_resource_name is None:
            self._by_class.pop(new.name, None)
        else:
            self._by_class[new.name] = new.extended_resource_name

    def on_delete(self, cls: DeviceClass) -> None:
        self._by_resource.pop(DEVICE_CLASS_PREFIX + cls.name, None)
        if cls.extended_resource_name is not None:
            self._by_resource.pop(cls.extended_resource_name, None)
        self._by_class.pop(cls.name, None)

    def _update_resources(self, new: DeviceClass, old: DeviceClass | None) -> None:
        ern = new.extended_resource_name
        holder = self._by_resource.get(ern) if ern is not None else None
        if holder is not None:
            if new.created < holder.created:
                return  # the current holder is newer
            if new.created == holder.created and new.name >= holder.name:
                return
        if old is not None:
            self._by_resource.pop(DEVICE_CLASS_PREFIX + old.name, None)
            if old.extended_resource_name is not None:
                self._by_resource.pop(old.extended_resource_name, None)
        if ern is not None:
            self._by_resource[ern] = new
        self._by_resource[DEVICE_CLASS_PREFIX + new.name] = new


def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or a DeviceClass's
    implicit one."""
    return ("/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")) or name.startswith(
        DEVICE_CLASS_PREFIX
    )


def _selectors(raw: Any) -> list[str | None]:
    """CEL expressions of a selector list; None for a selector without ``cel`` (unsupported)."""
    out: list[str | None] = []
    for s in as_list(raw):
        cel = as_map(s).get("cel")
        out.append(str(as_map(cel).get("expression") or "") if cel is not None else None)
    return out


# ---------------------------------------------------------------------------------------------
# Claims


class DeviceToleration:
    """A request's resource.k8s.io DeviceToleration (of device taints, not node taints)."""

    __slots__ = ("effect", "key", "operator", "value")

    def __init__(self, raw: Raw) -> None:
        self.key = str(raw.get("key") or "")
        self.operator = str(raw.get("operator") or "Equal")
        self.value = str(raw.get("value") or "")
        self.effect = str(raw.get("effect") or "")

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint."""
        return toleration_matches(self.key, self.operator, self.value, self.effect, taint)


class SubRequest:
    """The device-picking part of a request: ``exactly`` or one ``firstAvailable`` entry."""

    __slots__ = (
        "admin_access",
        "allocation_mode",
        "capacity",
        "count",
        "device_class_name",
        "name",
        "selectors",
        "tolerations",
        "tolerations_raw",
    )

    def __init__(self, name: str, raw: Raw, admin: bool) -> None:
        self.name = name
        self.device_class_name = str(raw.get("deviceClassName") or "")
        self.selectors = _selectors(raw.get("selectors"))
        # API defaults (ExactCount, count 1) for objects that did not pass the API server.
        self.allocation_mode = str(raw.get("allocationMode") or "ExactCount")
        count = raw.get("count")
        self.count = int(count) if count is not None else (1 if self.allocation_mode == "ExactCount" else 0)
        self.admin_access: bool | None = (
            bool(raw["adminAccess"]) if admin and raw.get("adminAccess") is not None else None
        )
        self.tolerations_raw = [dict(t) for t in as_list(raw.get("tolerations"))]
        self.tolerations = [DeviceToleration(t) for t in self.tolerations_raw]
        self.capacity = raw.get("capacity")


class DeviceRequest:
    __slots__ = ("exactly", "first_available", "name")

    def __init__(self, raw: Raw) -> None:
        self.name = str(raw.get("name") or "")
        ex = raw.get("exactly")
        self.exactly = SubRequest(self.name, ex, True) if isinstance(ex, Mapping) else None
        self.first_available = [
            SubRequest(str(s.get("name") or ""), s, False)
            for s in as_list(raw.get("firstAvailable"))
            if isinstance(s, Mapping)
        ]


class Constraint:
    __slots__ = ("distinct_attribute", "match_attribute", "requests")

    def __init__(self, raw: Raw) -> None:
        self.requests = [str(r) for r in as_list(raw.get("requests"))]
        self.match_attribute = str(raw["matchAttribute"]) if raw.get("matchAttribute") else None
        self.distinct_attribute = str(raw["distinctAttribute"]) if raw.get("distinctAttribute") else None


# One claim's devices: dedicated (driver, pool, device) ids, shared (device, shareID) ids, and
# the capacity it consumes per shared device.
DevicesInUse = tuple[
    frozenset[tuple[str, str, str]],
    frozenset[tuple[str, str, str, str]],
    dict[tuple[str, str, str], dict[str, Quantity]],
]


class ResourceClaim:
    __slots__ = (
        "_in_use",
        "allocation",
        "annotations",
        "config",
        "constraints",
        "controller_name",
        "controller_uid",
        "deleting",
        "finalizers",
        "key",
        "kobj",
        "name",
        "namespace",
        "raw",
        "requests",
        "reserved_for",
        "resource_version",
        "uid",
    )

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        meta = metadata(raw)
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        # klog.KObj as upstream's messages print it (no namespace: the name alone).
        self.kobj = f"{meta['namespace']}/{self.name}" if meta.get("namespace") else self.name
        self.uid = str(meta.get("uid") or self.key)
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.deleting = meta.get("deletionTimestamp") is not None
        self.finalizers = [str(f) for f in as_list(meta.get("finalizers"))]
        self.annotations = {str(k): str(v) for k, v in as_map(meta.get("annotations")).items()}
        self.controller_uid = ""
        self.controller_name = ""
        for ref in as_list(meta.get("ownerReferences")):
            if isinstance(ref, Mapping) and ref.get("controller"):
                self.controller_uid = str(ref.get("uid") or "")
                self.controller_name = str(ref.get("name") or "")
                break
        devices = as_map(as_map(raw.get("spec")).get("devices"))
        self.requests = [DeviceRequest(r) for r in as_list(devices.get("requests")) if isinstance(r, Mapping)]
        self.constraints = [Constraint(c) for c in as_list(devices.get("constraints")) if isinstance(c, Mapping)]
        self.config = [dict(c) for c in as_list(devices.get("config")) if isinstance(c, Mapping)]
        status = as_map(raw.get("status"))
        alloc = status.get("allocation")
        self.allocation: dict[str, Any] | None = dict(alloc) if isinstance(alloc, Mapping) else None
        self.reserved_for: list[dict[str, Any]] = [
            dict(r) for r in as_list(status.get("reservedFor")) if isinstance(r, Mapping)
        ]
        self._in_use: DevicesInUse | None = None

    def devices_in_use(self) -> DevicesInUse:
        """add_allocated of this claim's allocation, read once: a claim object never changes,
        and every PreFilter of a pod with claims sums them over all claims."""
        if self._in_use is None:
            dedicated: set[tuple[str, str, str]] = set()
            shared: set[tuple[str, str, str, str]] = set()
            consumed: dict[tuple[str, str, str], dict[str, Quantity]] = {}
            add_allocated(self.allocation, dedicated, shared, consumed)
            self._in_use = (frozenset(dedicated), frozenset(shared), consumed)
        return self._in_use

    def is_extended_resource_claim(self) -> bool:
        """Created by the scheduler for a pod's extended resources (DRAExtendedResource)."""
        return self.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"

    def is_reserved_for(self, pod_uid: str) -> bool:
        return any(str(r.get("uid") or "") == pod_uid for r in self.reserved_for)

    def with_allocation(self, allocation: dict[str, Any] | None) -> ResourceClaim:
        """A copy with ``status.allocation`` set (and the finalizer, as upstream's Reserve)."""
        raw = dict(self.raw)
        meta = dict(metadata(raw))
        if allocation is not None and FINALIZER not in self.finalizers:
            meta["finalizers"] = [*self.finalizers, FINALIZER]
        raw["metadata"] = meta
        status = dict(as_map(raw.get("status")))
        if allocation is None:
            status.pop("allocation", None)
        else:
            status["allocation"] = allocation
        raw["status"] = status
        return ResourceClaim(raw)

    def status_equal(self, other: ResourceClaim) -> bool:
        return (self.raw.get("status") or {}) == (other.raw.get("status") or {})


class ResourceClaimTemplate:
    __slots__ = ("key", "name", "namespace", "raw")

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        meta = metadata(raw)
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"


# ---------------------------------------------------------------------------------------------
# Pod -> claim names (resourceclaim.Name)


class PodClaimRef:
    __slots__ = ("claim_name", "must_check_owner", "pod_claim_name")

    def __init__(self, pod_claim_name: str, claim_name: str | None, must_check_owner: bool) -> None:
        self.pod_claim_name = pod_claim_name
        self.claim_name = claim_name
        self.must_check_owner = must_check_owner


def pod_claim_refs(pod_raw: Raw) -> Iterator[PodClaimRef | str]:
    """Each ``spec.resourceClaims`` entry resolved to its claim name; a string is the error
    upstream's resourceclaim.Name returns for it."""
    meta = metadata(pod_raw)
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    statuses = as_list(as_map(pod_raw.get("status")).get("resourceClaimStatuses"))
    for pc in as_list(as_map(pod_raw.get("spec")).get("resourceClaims")):
        pc = as_map(pc)
        pc_name = str(pc.get("name") or "")
        if pc.get("resourceClaimName") is not None:
            yield PodClaimRef(pc_name, str(pc["resourceClaimName"]), False)
        elif pc.get("resourceClaimTemplateName") is not None:
            for st in statuses:
                st = as_map(st)
                if str(st.get("name") or "") == pc_name:
                    cn = st.get("resourceClaimName")
                    yield PodClaimRef(pc_name, str(cn) if cn is not None else None, True)
                    break
            else:
                yield f'pod "{ns}/{name}": ResourceClaim not created yet'
        else:
            yield f'pod "{ns}/{name}", spec.resourceClaim "{pc_name}": none of the supported fields are set'


def pod_has_claims(pod_raw: Raw) -> bool:
    return bool(as_list(as_map(pod_raw.get("spec")).get("resourceClaims")))


def add_allocated(
    alloc: Mapping[str, Any] | None,
    dedicated: set[tuple[str, str, str]],
    shared: set[tuple[str, str, str, str]],
    consumed: dict[tuple[str, str, str], dict[str, Quantity]],
) -> None:
    """Add the devices of one claim's ``status.allocation``: dedicated (driver, pool, device)
    ids, shared (device, shareID) ids and the capacity consumed on shared devices."""
    if not alloc:
        return
    for r in as_list(as_map(alloc.get("devices")).get("results")):
        r = as_map(r)
        if r.get("adminAccess"):
            continue
        dev = (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
        if r.get("shareID") is not None:
            shared.add((*dev, str(r["shareID"])))
            cc = r.get("consumedCapacity")
            if cc:
                tot = consumed.setdefault(dev, {})
                for n, q in as_map(cc).items():
                    qq = parse(q)
                    tot[n] = tot[n].add(qq) if n in tot else qq
            continue
        dedicated.add(dev)
