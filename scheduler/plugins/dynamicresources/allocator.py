"""The structured-parameters allocator (upstream k8s.io/dynamic-resource-allocation/structured,
the "incubating" variant that v1.36.3 picks with its default features: admin access,
prioritized list, partitionable devices, device taints, binding conditions and consumable
capacity all on). ``AllocatorFeatures`` turns each off as its gates do (upstream would then
pick its "stable" variant, a subset of "incubating" that behaves the same for what is left).

``Allocator(...)`` is built once per PreFilter from the allocated devices and the slices;
``allocate(node_name, labels, claims)`` runs per node in Filter. It returns one allocation
result (a ``status.allocation`` dict) per claim, ``None`` when the claims do not fit on the
node, and raises ``AllocationError`` for what upstream reports as an error (a broken claim or
class, a CEL error), ``FailedOnNode`` for ErrFailedAllocationOnNode.

As upstream, the search is here and its parts sit beside it: pools.py (which slices a node
sees), constraint.py (matchAttribute, distinctAttribute) and consumable_capacity.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.model.dra import (
    ALLOCATION_RESULTS_MAX,
    Device,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    SubRequest,
)
from scheduler.plugins.dynamicresources.celcache import CelCache
from scheduler.plugins.dynamicresources.celerror import CelError
from scheduler.plugins.dynamicresources.constraint import Constraint
from scheduler.plugins.dynamicresources.consumable_capacity import (
    consumed_capacity,
    render_consumed,
    request_fits,
    requested_capacity,
)
from scheduler.plugins.dynamicresources.pools import DeviceID, Pool, gather_pools, node_matches

# A node's pools by (node name, its labels): read-only once built (the allocator copies what it
# changes), so one list serves every pod's Filter on that node until a slice changes.
PoolsCache = dict[tuple[str, tuple[tuple[str, str], ...]], list[Pool]]
# Past this many entries (nodes whose labels keep changing) the cache starts over.
POOLS_CACHE_MAX = 50_000


class AllocationError(Exception):
    pass


class FailedOnNode(AllocationError):
    """ErrFailedAllocationOnNode: the node cannot be used, others may."""


class Aborted(AllocationError):
    """The search passed its deadline (upstream: the Filter context's DRASchedulerFilterTimeout)."""


class _MaxSizeExceeded(Exception):
    pass


class _RequestData:
    __slots__ = ("all_devices", "cls", "num_devices", "parent", "request", "selected_sub")

    def __init__(self, request: SubRequest, parent: str | None) -> None:
        self.request = request
        self.parent = parent  # name of the request holding this subrequest
        self.cls: DeviceClass | None = None
        self.num_devices = 0
        self.selected_sub = 0
        self.all_devices: list[tuple[DeviceID, Device, ResourceSlice, Pool]] = []

    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent is not None else self.request.name


class _Result:
    __slots__ = ("admin", "consumed", "device", "did", "parent", "request", "share_id", "slice", "sub")

    def __init__(
        self, request: SubRequest, parent: str | None, did: DeviceID, device: Device, sl: ResourceSlice
    ) -> None:
        self.request = request
        self.parent = parent
        self.did = did
        self.device = device
        self.slice = sl
        self.admin: bool | None = None
        self.share_id: str | None = None
        self.consumed: dict[str, str] | None = None
        self.sub = request

    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass(frozen=True, slots=True)
class AllocatorFeatures:
    """structured.Features as dynamicresources.AllocatorFeatures fills it from the gates
    (AdminAccess is locked on)."""

    prioritized_list: bool = True  # DRAPrioritizedList
    partitionable_devices: bool = True  # DRAPartitionableDevices
    device_taints: bool = True  # DRADeviceTaints
    device_binding_and_status: bool = True  # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus
    consumable_capacity: bool = True  # DRAConsumableCapacity


DEFAULT_ALLOCATOR_FEATURES = AllocatorFeatures()


class Allocator:
    def __init__(
        self,
        allocated: set[DeviceID],
        aggregated_capacity: Mapping[DeviceID, Mapping[str, Any]],
        class_lookup: Callable[[str], DeviceClass | None],
        slices: Sequence[ResourceSlice],
        cel_cache: CelCache,
        new_share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        features: AllocatorFeatures = DEFAULT_ALLOCATOR_FEATURES,
        pools_cache: PoolsCache | None = None,
    ) -> None:
        """``pools_cache``: each node's pools, kept by the caller for as long as ``slices``
        and ``features`` stay the same (they are all the pools depend on besides the node)."""
        self.features = features
        self.pools_cache = pools_cache
        self.allocated = allocated
        self.aggregated: dict[DeviceID, dict[str, Fraction]] = {
            d: {n: q.exact for n, q in caps.items()} for d, caps in aggregated_capacity.items()
        }
        self.class_lookup = class_lookup
        self.cel_cache = cel_cache
        self.new_share_id = new_share_id
        self.all_slices = list(slices)
        self.on_node: dict[str, list[ResourceSlice]] = {}
        self.shared: list[ResourceSlice] = []
        for s in self.all_slices:
            if not s.node_name or s.shared_counters:
                self.shared.append(s)
            else:
                self.on_node.setdefault(s.node_name, []).append(s)
        self._available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}

    def allocate(
        self, node_name: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim],
        deadline: float | None = None,
    ) -> list[dict[str, Any]] | None:
        """``deadline``: a time.monotonic() value past which the search raises Aborted."""
        return _Run(self, node_name, labels, claims, deadline).run()

    def pools_of(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        """The pools an allocation for this node searches (kept in ``pools_cache``)."""
        cache = self.pools_cache
        key = (node_name, tuple(labels.items()))
        pools = cache.get(key) if cache is not None else None
        if pools is None:
            slices_for_node = self.on_node.get(node_name, []) + self.shared
            pools = gather_pools(
                slices_for_node, node_name, labels, self.all_slices, self.features.partitionable_devices
            )
            if cache is not None:
                if len(cache) >= POOLS_CACHE_MAX:
                    cache.clear()
                cache[key] = pools
        return pools


class _Run:
    """One Allocate call (upstream's per-call ``allocator``)."""

    def __init__(
        self, a: Allocator, node_name: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim],
        deadline: float | None = None,
    ) -> None:
        self.a = a
        self.deadline = deadline
        self.node_name = node_name
        self.labels = labels
        self.claims = list(claims)
        self.pools: list[Pool] = []
        self.match_cache: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.constraints: list[list[Constraint]] = []
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]

    # -- set-up ----------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]] | None:
        f = self.a.features
        self.pools = self.a.pools_of(self.node_name, self.labels)
        for ci, claim in enumerate(self.claims):
            min_per_claim = 0
            for ri, req in enumerate(claim.requests):
                if not f.prioritized_list and req.first_available:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {req.name}: has subrequests, but the DRAPrioritizedList "
                        "feature is disabled"
                    )
                if not f.consumable_capacity:
                    if req.exactly is not None and req.exactly.capacity is not None:
                        raise AllocationError(
                            f"claim {claim.kobj}, request {req.name}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled"
                        )
                    for sub in req.first_available:
                        if sub.capacity is not None:
                            raise AllocationError(
                                f"claim {claim.kobj}, subrequest {sub.name}: has capacity requests, but the "
                                "DRAConsumableCapacity feature is disabled"
                            )
                if req.first_available:
                    min_req = None
                    for si, sub in enumerate(req.first_available):
                        rd = self._validate(ci, ri, si, sub, req.name)
                        self.request_data[(ci, ri, si)] = rd
                        min_req = rd.num_devices if min_req is None else min(min_req, rd.num_devices)
                    min_per_claim += min_req or 0
                else:
                    if req.exactly is None:
                        raise AllocationError(
                            f"claim {claim.kobj}, request {req.name}: missing device class name "
                            "(unsupported request type?)"
                        )
                    rd = self._validate(ci, ri, 0, req.exactly, None)
                    self.request_data[(ci, ri, 0)] = rd
                    min_per_claim += rd.num_devices
            if min_per_claim > ALLOCATION_RESULTS_MAX:
                raise AllocationError(
                    f"claim {claim.kobj}: number of requested devices {min_per_claim} exceeds the "
                    f"claim limit of {ALLOCATION_RESULTS_MAX}"
                )
            cons: list[Constraint] = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute is not None:
                    cons.append(Constraint(c.requests, c.match_attribute, False))
                elif c.distinct_attribute is not None:
                    cons.append(Constraint(c.requests, c.distinct_attribute, True))
                else:
                    raise AllocationError(
                        f"claim {claim.kobj}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(cons)
        self.match_cache = {}
        try:
            done = self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceeded:
            done = False
        if not done:
            for p in self.pools:
                if p.invalid:
                    raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(ci) for ci in range(len(self.claims))]

    def _validate(self, ci: int, ri: int, si: int, req: SubRequest, parent: str | None) -> _RequestData:
        claim = self.claims[ci]
        rd = _RequestData(req, parent)
        for i, sel in enumerate(req.selectors):
            if sel is None:
                raise AllocationError(
                    f"claim {claim.kobj}, request {req.name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not req.device_class_name:
            raise AllocationError(
                f"claim {claim.kobj}, request {req.name}: missing device class name (unsupported request type?)"
            )
        cls = self.a.class_lookup(req.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {claim.kobj}, request {req.name}: could not retrieve device class {req.device_class_name}: "
                f'deviceclass.resource.k8s.io "{req.device_class_name}" not found'
            )
        rd.cls = cls
        if req.allocation_mode == "ExactCount":
            rd.num_devices = req.count
        elif req.allocation_mode == "All":
            for p in self.pools:
                if p.incomplete:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {req.name}: asks for all devices, but resource "
                        f"pool {p.pool_id} is currently being updated"
                    )
                if p.invalid:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {req.name}: asks for all devices, but resource "
                        f"pool {p.pool_id} is currently invalid"
                    )
                for sl in p.targeting:
                    for di in range(len(sl.devices)):
                        if self._selectable((ci, ri, si), rd, sl, di):
                            dev = sl.devices[di]
                            did = (sl.driver, sl.pool, dev.name)
                            ok = not self.a.features.consumable_capacity or self._capacity_ok(rd.request, did, dev)
                            if ok:
                                rd.all_devices.append((did, dev, sl, p))
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(
                f"claim {claim.kobj}, request {req.name}: unsupported count mode {req.allocation_mode}"
            )
        return rd

    # -- the search ------------------------------------------------------------------------
    def _allocate_one(
        self, ci: int, ri: int, si: int, di: int, allocate_sub: bool, start: tuple[int, int, int]
    ) -> bool:
        # Checked on every step of the search, as upstream's allocateOne checks its context.
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise Aborted("filter operation aborted: context deadline exceeded")
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        rd = self.request_data[(ci, ri, si)]
        if not allocate_sub and rd.parent is not None:
            all_exceeded = True
            sub = 0
            while True:
                if (ci, ri, sub) not in self.request_data:
                    if all_exceeded:
                        raise _MaxSizeExceeded
                    return False
                try:
                    ok = self._allocate_one(ci, ri, sub, di, True, (0, 0, 0))
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.request_data[(ci, ri, 0)].selected_sub = sub
                    return True
                sub += 1
        req = rd.request
        do_all = req.allocation_mode == "All"
        if do_all and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[ci]) + rd.num_devices - di > ALLOCATION_RESULTS_MAX:
            raise _MaxSizeExceeded
        admin = bool(req.admin_access)
        if do_all:
            did, dev, sl, pool = rd.all_devices[di]
            ok, undo = self._allocate_device(ci, ri, si, did, dev, sl, pool, True)
            if not ok:
                return False
            done = False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, allocate_sub, (0, 0, 0))
            finally:
                if not done:
                    undo()
            return done
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            s_start = start[1] if pi == start[0] else 0
            for sli in range(s_start, len(pool.targeting)):
                sl = pool.targeting[sli]
                d_start = start[2] if (pi == start[0] and sli == start[1]) else 0
                for dvi in range(d_start, len(sl.devices)):
                    dev = sl.devices[dvi]
                    did = (pool.driver, pool.name, dev.name)
                    if admin and ci in self.allocating.get(did, ()):
                        continue
                    if not admin and self._in_use(did):
                        continue
                    if not self._selectable((ci, ri, si), rd, sl, dvi):
                        continue
                    if self.a.features.consumable_capacity and not self._capacity_ok(req, did, dev):
                        continue
                    ok, undo = self._allocate_device(ci, ri, si, did, dev, sl, pool, False)
                    if not ok:
                        continue
                    done = False
                    try:
                        done = self._allocate_one(ci, ri, si, di + 1, allocate_sub, (pi, sli, dvi + 1))
                    finally:
                        if not done:
                            undo()
                    if done:
                        return True
        return False

    def _in_use(self, did: DeviceID) -> bool:
        return did in self.a.allocated or bool(self.allocating.get(did))

    def _selectable(self, key: tuple[int, int, int], rd: _RequestData, sl: ResourceSlice, di: int) -> bool:
        dev = sl.devices[di]
        if not self.a.features.device_binding_and_status and dev.binding_conditions:
            return False  # devices with binding conditions need the feature
        did = (sl.driver, sl.pool, dev.name)
        mk = (did, *key)
        cached = self.match_cache.get(mk)
        if cached is not None:
            return cached
        ok = True
        if (
            (rd.cls is not None and not self._selectors_match(key[0], dev, did, rd.cls, rd.cls.selectors))
            or not self._selectors_match(key[0], dev, did, None, rd.request.selectors)
            or (
                sl.per_device_node_selection
                and not node_matches(self.node_name, self.labels, dev.node_name, dev.all_nodes, dev.node_selector)
            )
        ):
            ok = False
        self.match_cache[mk] = ok
        return ok

    def _selectors_match(
        self, ci: int, dev: Device, did: DeviceID, cls: DeviceClass | None, selectors: Sequence[str | None]
    ) -> bool:
        for i, sel in enumerate(selectors):
            expr = self.a.cel_cache.get_or_compile(sel or "")
            where = f"class {cls.name}" if cls is not None else f"claim {self.claims[ci].kobj}"
            if expr.error is not None:
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {expr.error}")
            try:
                matches = expr.device_matches(did[0], dev)
            except CelError as exc:
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {exc}") from None
            if not matches:
                return False
        return True

    def _capacity_ok(self, req: SubRequest, did: DeviceID, dev: Device) -> bool:
        return request_fits(req, dev, self.a.aggregated.get(did), self.allocating_capacity.get(did))

    def _allocate_device(
        self, ci: int, ri: int, si: int, did: DeviceID, dev: Device, sl: ResourceSlice, pool: Pool, must: bool
    ) -> tuple[bool, Callable[[], None]]:
        claim = self.claims[ci]
        rd = self.request_data[(ci, ri, si)]
        req = rd.request
        admin = bool(req.admin_access)
        f = self.a.features
        multi = dev.allow_multiple_allocations and f.consumable_capacity
        if not multi and admin and ci in self.allocating.get(did, ()):
            return False, _noop
        if not admin and self._in_use(did):
            return False, _noop
        if not f.partitionable_devices and dev.consumes_counters:
            return False, _noop
        skip_counters = multi and (did in self.a.aggregated or did in self.allocating_capacity)
        counters_reserved = False
        if not skip_counters and dev.consumes_counters:
            if not self._check_counters(pool, dev):
                return False, _noop
            counters_reserved = True
        base, sub = (rd.parent, req.name) if rd.parent is not None else (req.name, "")
        added = 0
        marked = False
        capacity_added: dict[str, Fraction] | None = None
        n_results = len(self.results[ci])

        def rollback() -> None:
            del self.results[ci][n_results:]
            if capacity_added is not None:
                cur = self.allocating_capacity.get(did, {})
                for n, q in capacity_added.items():
                    cur[n] = cur.get(n, Fraction(0)) - q
                if all(v == 0 for v in cur.values()):
                    self.allocating_capacity.pop(did, None)
            if marked:
                self.allocating[did].discard(ci)
            for i in range(added - 1, -1, -1):
                self.constraints[ci][i].remove(base, sub)
            if counters_reserved:
                self._release_counters(pool, dev)

        if f.device_taints and _taint_prevents(dev, req):
            rollback()
            return False, _noop
        for c in self.constraints[ci]:
            if not c.add(base, sub, dev, did):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {req.name}: cannot add device {did[0]}/{did[1]}/{did[2]} "
                        "because a claim constraint would not be satisfied"
                    )
                return False, _noop
            added += 1
        if not multi:
            self.allocating.setdefault(did, set()).add(ci)
            marked = True
        if f.consumable_capacity and not self._capacity_ok(req, did, dev):
            rollback()
            return False, _noop
        result = _Result(req, rd.parent, did, dev, sl)
        if multi:
            wanted = requested_capacity(req) or {}
            consumed = {n: consumed_capacity(dev, n, wanted) for n in dev.capacity}
            cur = self.allocating_capacity.setdefault(did, {})
            for n, q in consumed.items():
                cur[n] = cur.get(n, Fraction(0)) + q
            capacity_added = consumed
            result.share_id = self.a.new_share_id()
            if consumed:
                result.consumed = {n: render_consumed(req, dev, n, q) for n, q in consumed.items()}
        if admin:
            result.admin = True
        self.results[ci].append(result)
        return True, rollback

    def _check_counters(self, pool: Pool, dev: Device) -> bool:
        avail = self.a._available_counters.get(pool.name)
        if avail is None:
            avail = {cs: dict(c) for cs, c in pool.counter_sets.items()}
            for sl in [*pool.targeting, *pool.not_targeting]:
                for d in sl.devices:
                    if (sl.driver, sl.pool, d.name) not in self.a.allocated:
                        continue
                    for cs, counters in d.consumes_counters:
                        cur = avail.get(cs)
                        if cur is None:
                            continue
                        for n, q in counters.items():
                            if n in cur:
                                cur[n] -= q.exact
            self.a._available_counters[pool.name] = avail
        consumed = self.consumed_counters.setdefault(pool.name, {})
        for cs, dev_counters in dev.consumes_counters:
            cur = consumed.setdefault(cs, {})
            for n, q in dev_counters.items():
                cur[n] = cur.get(n, Fraction(0)) + q.exact
        for cs, avail_counters in avail.items():
            used = consumed.get(cs, {})
            for n, v in avail_counters.items():
                if v < used.get(n, Fraction(0)):
                    self._release_counters(pool, dev)
                    return False
        return True

    def _release_counters(self, pool: Pool, dev: Device) -> None:
        consumed = self.consumed_counters.get(pool.name, {})
        for cs, counters in dev.consumes_counters:
            cur = consumed.get(cs, {})
            for n, q in counters.items():
                cur[n] = cur.get(n, Fraction(0)) - q.exact

    # -- results -----------------------------------------------------------------------------
    def _result(self, ci: int) -> dict[str, Any]:
        claim = self.claims[ci]
        results: list[dict[str, Any]] = []
        for r in self.results[ci]:
            out: dict[str, Any] = {
                "request": r.request_name(),
                "driver": r.did[0],
                "pool": r.did[1],
                "device": r.did[2],
            }
            if r.admin is not None:
                out["adminAccess"] = r.admin
            if r.request.tolerations_raw:
                out["tolerations"] = r.request.tolerations_raw
            if r.device.binding_conditions:
                out["bindingConditions"] = list(r.device.binding_conditions)
            if r.device.binding_failure_conditions:
                out["bindingFailureConditions"] = list(r.device.binding_failure_conditions)
            if r.share_id is not None:
                out["shareID"] = r.share_id
            if r.consumed:
                out["consumedCapacity"] = r.consumed
            results.append(out)
        config: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(claim.requests)):
            rd = self.request_data[(ci, ri, 0)]
            if rd.parent is not None:
                rd = self.request_data[(ci, ri, rd.selected_sub)]
            cls = rd.cls
            if cls is None:
                continue
            rng = class_ranges.get(cls.name)
            if rng is not None:
                for i in range(*rng):
                    config[i]["requests"].append(rd.request_name())
                continue
            begin = len(config)
            for c in cls.config:
                entry = {"source": "FromClass", "requests": [rd.request_name()]}
                entry.update({k: v for k, v in c.items()})
                config.append(entry)
            class_ranges[cls.name] = (begin, len(config))
        for c in claim.config:
            reqs = [str(x) for x in c.get("requests") or []]
            body = {k: v for k, v in c.items() if k != "requests"}
            if not reqs:
                config.append({"source": "FromClaim", **body})
                continue
            for ri, req in enumerate(claim.requests):
                if req.name in reqs:
                    config.append({"source": "FromClaim", "requests": reqs, **body})
                    continue
                rd = self.request_data[(ci, ri, 0)]
                if rd.parent is None:
                    continue
                sub = req.first_available[rd.selected_sub]
                if f"{req.name}/{sub.name}" in reqs:
                    config.append({"source": "FromClaim", "requests": reqs, **body})
        devices: dict[str, Any] = {"results": results}
        if config:
            devices["config"] = config
        alloc: dict[str, Any] = {"devices": devices}
        ns = self._node_selector(self.results[ci])
        if ns is not None:
            alloc["nodeSelector"] = ns
        return alloc

    def _node_selector(self, results: list[_Result]) -> dict[str, Any] | None:
        fields: list[dict[str, Any]] = []
        exprs: list[dict[str, Any]] = []
        for r in results:
            sl = r.slice
            if sl.per_device_node_selection:
                name, sel_raw = r.device.node_name, _raw_selector(sl, r.device)
            else:
                name, sel_raw = sl.node_name, (sl.raw.get("spec") or {}).get("nodeSelector")
            if name or r.device.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [self.node_name]}]}
                    ]
                }
            if sel_raw is not None:
                terms = sel_raw.get("nodeSelectorTerms") or []
                if len(terms) == 1:
                    _add_reqs(terms[0].get("matchFields") or [], fields)
                    _add_reqs(terms[0].get("matchExpressions") or [], exprs)
                elif len(terms) > 1:
                    raise AllocationError(
                        f"create NodeSelector for claim {self.claims[0].name}: unsupported "
                        f"ResourceSlice.NodeSelector with {len(terms)} terms"
                    )
        if fields or exprs:
            term: dict[str, Any] = {}
            if exprs:
                term["matchExpressions"] = exprs
            if fields:
                term["matchFields"] = fields
            return {"nodeSelectorTerms": [term]}
        return None


def _raw_selector(sl: ResourceSlice, dev: Device) -> Any:
    for d in (sl.raw.get("spec") or {}).get("devices") or []:
        if isinstance(d, Mapping) and d.get("name") == dev.name:
            return d.get("nodeSelector")
    return None


def _add_reqs(src: list[Any], dst: list[dict[str, Any]]) -> None:
    for r in src:
        vals = set(r.get("values") or [])
        if not any(
            e.get("key") == r.get("key")
            and e.get("operator") == r.get("operator")
            and set(e.get("values") or []) == vals
            for e in dst
        ):
            dst.append(dict(r))


def _taint_prevents(dev: Device, req: SubRequest) -> bool:
    for t in dev.taints:
        if t.effect in ("NoExecute", "NoSchedule") and not any(tol.tolerates(t) for tol in req.tolerations):
            return True
    return False


def _noop() -> None:
    return None
