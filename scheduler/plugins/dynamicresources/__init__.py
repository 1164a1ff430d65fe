"""DynamicResources (upstream plugins/dynamicresources/dynamicresources.go), structured
parameters with the v1.36.3 default features.

PreEnqueue waits for the pod's claims to exist; PreFilter collects the claims, checks their
classes and builds the allocator from the devices in use (stored allocations, the scheduler's
own writes and in-flight allocations); Filter allocates per node and remembers the result;
Score rewards earlier ``firstAvailable`` subrequests (DRAPrioritizedList is GA); Reserve puts
the chosen allocation in flight so the next pod sees the devices taken; PreBindPreFlight says
whether PreBind has work (the pod is then nominated first); PreBind writes
``status.allocation`` (with the finalizer) and ``status.reservedFor`` through the API;
Unreserve and PostFilter undo as upstream.

The allocator's features follow the gates (DRAPrioritizedList, DRAPartitionableDevices,
DRADeviceTaints, DRADeviceBindingConditions with DRAResourceClaimDeviceStatus,
DRAConsumableCapacity); without DRAPrioritizedList a claim with subrequests is unschedulable
and Score is 0. With DRASchedulerFilterTimeout (beta/on) Filter stops searching a node's devices
after ``filterTimeout`` (default 10s) and returns upstream's Error.

DRAExtendedResource (beta/on; extended.py): a pod's extended resources that a DeviceClass maps
and a node does not advertise are allocated on that node through one claim per pod, built per
node in Filter, created in PreBind (with the pod's ``status.extendedResourceClaimStatus``) and
deleted when the attempt fails or a stale one is found.

DRADeviceBindingConditions with DRAResourceClaimDeviceStatus (beta/on; bindingconditions.py):
PreBind waits, in the pod's binding task, for the allocated devices' binding conditions (up to
``bindingTimeout``, default 10m); Filter treats a claim whose binding failed or timed out as
unavailable, so PostFilter deallocates it.

Not modelled (default-off in v1.36.3): PodGroup claims (DRAWorkloadResourceClaims),
node-allocatable claims (DRANodeAllocatableResources), DeviceTaintRules.
"""
from __future__ import annotations

import asyncio
import datetime
import random
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from scheduler.config.duration import format_duration_ns, parse_duration_ns
from scheduler.config.dynamicresources import timeouts as dra_timeouts
from scheduler.config.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.listers import ClaimNotFound, DraStore
from scheduler.framework.signers import SignFragment, pod_spec
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.dra import (
    FINALIZER,
    FIRST_AVAILABLE_MAX,
    PodClaimRef,
    ResourceClaim,
    is_dra_extended_resource_name,
    pod_claim_refs,
    pod_has_claims,
)
from scheduler.model.labels import NodeSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamicresources import bindingconditions as bc
from scheduler.plugins.dynamicresources.allocator import (
    Aborted,
    AllocationError,
    Allocator,
    AllocatorFeatures,
    FailedOnNode,
    PoolsCache,
)
from scheduler.plugins.dynamicresources.bindingconditions import (
    BindingFailed,
    claim_ready_for_binding,
    claim_timed_out,
    has_binding_conditions,
)
from scheduler.plugins.dynamicresources.celcache import CelCache
from scheduler.plugins.dynamicresources.extended import (
    create_requests_and_mappings,
    creation_body,
    has_mapped_extended_resource,
    is_special_claim_name,
    pod_scalar_requests,
    special_claim,
    with_requests,
)
from scheduler.plugins.dynamicresources.memo import AllocationMemo, claims_signature
from scheduler.plugins.helper import default_normalize_score

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

log = structlog.get_logger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME
# PreBind looks at the binding conditions this often (wait.PollUntilContextTimeout's interval).
BINDING_POLL_INTERVAL = bc.POLL_INTERVAL
# AssumeExtendedResourceTimeoutDefaultSeconds: how long PreBind waits for the watch to show the
# extended-resource claim it created.
ASSUME_EXTENDED_CLAIM_TIMEOUT = 120.0


def _unschedulable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


# resourceapi.ResourceClaimReservedForMaxSize.
RESERVED_FOR_MAX = 256


class _NodeAllocation:
    """nodeAllocation: what Filter found on a node, for Reserve and PreBind."""

    __slots__ = ("ext_claim", "mappings", "results")

    def __init__(
        self, results: list[dict[str, Any]], ext_claim: ResourceClaim | None, mappings: list[dict[str, str]]
    ) -> None:
        self.results = results  # one allocation per claim to allocate, in claim order
        self.ext_claim = ext_claim  # the node's variant of the extended-resource claim
        self.mappings = mappings  # containerResourceRequestMappings for the pod's status


class _State:
    """stateData: shared between the cycle's clones, as upstream. ``claims`` holds the pod's
    own claims, then (DRAExtendedResource) the claim for its extended resources."""

    __slots__ = (
        "allocations",
        "allocator",
        "available_on",
        "claims",
        "ext_scalars",
        "initial_ext_uid",
        "node_allocations",
        "num_user",
        "signature",
        "unavailable",
    )

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.num_user = 0
        self.initial_ext_uid = ""  # the in-memory claim's temporary uid (in-flight bookkeeping)
        self.ext_scalars: dict[str, int] = {}  # draExtendedResource.podScalarResources
        self.available_on: list[NodeSelector | None] = []
        self.allocations: list[dict[str, Any] | None] = []  # informationForClaim.allocation
        self.allocator: Allocator | None = None
        self.node_allocations: dict[str, _NodeAllocation] = {}
        self.unavailable: set[int] = set()
        # The claims' signature when Filter may use the allocation memo (memo.py), else None.
        self.signature: str | None = None

    def clone(self) -> _State:
        return self

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.allocation is None]

    def ext_claim(self) -> ResourceClaim | None:
        return self.claims[self.num_user] if len(self.claims) > self.num_user else None

    def is_ext(self, i: int) -> bool:
        return i >= self.num_user


def _validate_args(args: Mapping[str, Any], f: Features) -> None:
    """ValidateDynamicResourcesArgs: each timeout only with its gates, and then in range (for
    args that did not come through the configuration, which checks them first with upstream's
    field paths)."""
    errs: list[str] = []
    for key, gated, check, forbidden in (
        (
            "filterTimeout",
            f.enable_dra_scheduler_filter_timeout,
            (lambda ns: ns >= 0, "must be zero or positive"),
            "DRASchedulingFilterTimeout feature gate is disabled",
        ),
        (
            "bindingTimeout",
            f.enable_dra_device_binding_conditions and f.enable_dra_resource_claim_device_status,
            (lambda ns: ns >= 1_000_000_000, "must be at least 1 second"),
            "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
        ),
    ):
        raw = args.get(key)
        if raw is None:
            continue
        try:
            ns = parse_duration_ns(str(raw))
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
        if not gated:
            errs.append(f"{key}: Forbidden: {forbidden}")
        elif not check[0](ns):
            errs.append(f'{key}: Invalid value: "{format_duration_ns(ns)}": {check[1]}')
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    SignPlugin,
):
    name = NAME
    has_normalize = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream DynamicResources.SignPod: a pod with resource claims is not signable."""
        if pod_spec(pod).get("resourceClaims"):
            return Status(Code.UNSCHEDULABLE, "pods with dra resource claims are not signable")
        return []

    def __init__(self, store: DraStore | None = None, handle: Handle | None = None, api: Any = None) -> None:
        self.store = store if store is not None else DraStore()
        self.handle = handle
        self._api = api
        self.cel_cache = CelCache()
        # Each node's pools, for as long as the slices stay the same (DraStore.slices_version).
        self._pools: PoolsCache = {}
        self._pools_version = -1
        self._memo = AllocationMemo()
        f = handle.features if handle is not None else DEFAULT_FEATURES
        self.features = f
        # AllocatorFeatures(fts).
        self.allocator_features = AllocatorFeatures(
            prioritized_list=f.enable_dra_prioritized_list,
            partitionable_devices=f.enable_dra_partitionable_devices,
            device_taints=f.enable_dra_device_taints,
            device_binding_and_status=f.enable_dra_device_binding_conditions
            and f.enable_dra_resource_claim_device_status,
            consumable_capacity=f.enable_dra_consumable_capacity,
        )
        self.binding_conditions = self.allocator_features.device_binding_and_status
        # DynamicResourcesArgs after defaulting (config/dynamicresources.py): Filter gives up on a
        # node after filter_timeout seconds (0: never); binding_timeout bounds PreBind's wait for
        # device binding conditions.
        self.filter_timeout, self.binding_timeout = dra_timeouts(None, f.enable_dra_scheduler_filter_timeout)
        # Seconds between PreBind's looks at the binding conditions, and the longest wait for a
        # created extended-resource claim to show up in the watch (upstream's fixed values).
        self.binding_poll_interval = BINDING_POLL_INTERVAL
        self.assume_timeout = ASSUME_EXTENDED_CLAIM_TIMEOUT

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> DynamicResources:
        for key in dict(args or {}):
            if key not in ("filterTimeout", "bindingTimeout", "apiVersion", "kind"):
                raise ValueError(f'unknown field "{key}"')
        _validate_args(args or {}, handle.features)
        store = getattr(handle.listers, "dra", None)
        pl = cls(store if isinstance(store, DraStore) else DraStore(), handle)
        pl.filter_timeout, pl.binding_timeout = dra_timeouts(args, pl.features.enable_dra_scheduler_filter_timeout)
        return pl

    @property
    def api(self) -> Any:
        if self._api is not None:
            return self._api
        api = self.handle.volume_api if self.handle is not None else None
        if api is not None and hasattr(api, "update_resource_claim_status"):
            return api
        return None

    def _offline_api(self) -> Any:
        """The ResourceClaim API, or None offline (simulate, unit tests: the store stands in
        for it). Live without one is an error: writing nothing would bind pods without devices."""
        api = self.api
        live = self.handle is not None and self.handle.client is not None and not getattr(
            self.handle.client, "offline", False
        )
        if api is None and live:
            raise RuntimeError("dynamic resources: no ResourceClaim API client is configured")
        return api

    # -- claims of a pod -----------------------------------------------------------------------
    def _pod_claims(self, pod: PodInfo) -> list[ResourceClaim] | str:
        """foreachPodResourceClaim: the claims, or the first reason they are not usable."""
        out: list[ResourceClaim] = []
        for ref in pod_claim_refs(pod.raw):
            if isinstance(ref, str):
                return ref
            if ref.claim_name is None:
                continue
            try:
                claim = self.store.get_claim(pod.namespace, ref.claim_name)
            except ClaimNotFound as exc:
                return str(exc)
            if claim.deleting:
                return f'resourceclaim "{claim.name}" is being deleted'
            if ref.must_check_owner:
                err = _is_for_pod(pod, claim, ref)
                if err is not None:
                    return err
            out.append(claim)
        return out

    # -- PreEnqueue ----------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod_has_claims(pod.raw):
            return None
        claims = self._pod_claims(pod)
        if isinstance(claims, str):
            return _unschedulable(claims)
        return None

    # -- PreFilter -----------------------------------------------------------------------------
    def _pre_filter_extended(self, pod: PodInfo, s: _State) -> ResourceClaim | None:
        """preFilterExtendedResources: the claim for the pod's extended resources backed by DRA
        (from an earlier attempt, else in memory), or None when the pod has none."""
        cache = self.store.extended
        if not self.features.enable_dra_extended_resource or not cache:
            return None
        if not has_mapped_extended_resource(pod, cache):
            return None
        s.ext_scalars = pod_scalar_requests(pod)
        found = self.store.extended_claim_for(pod.name, pod.uid)
        return found if found is not None else special_claim(pod)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        s = _State()
        state.write(STATE_KEY, s)
        user: list[ResourceClaim] = []
        if pod_has_claims(pod.raw):
            found = self._pod_claims(pod)
            if isinstance(found, str):
                return _unschedulable(found)
            user = found
        ext = self._pre_filter_extended(pod, s)
        claims = [*user, ext] if ext is not None else user
        if not claims:
            return SKIP
        s.num_user = len(user)
        s.initial_ext_uid = ext.uid if ext is not None else ""
        to_allocate = 0
        s.available_on = [None] * len(claims)
        s.allocations = [None] * len(claims)
        for i, claim in enumerate(claims):
            if (
                claim.allocation is not None
                and len(claim.reserved_for) >= RESERVED_FOR_MAX
                and not claim.is_reserved_for(pod.uid)
            ):
                return _unschedulable("resourceclaim in use")
            if claim.allocation is not None:
                ns = claim.allocation.get("nodeSelector")
                if ns is not None:
                    s.available_on[i] = NodeSelector.parse(ns)
                continue
            to_allocate += 1
            if claim.uid in self.store.in_flight:
                return _unschedulable(f"resource claim {claim.kobj} is in the process of being allocated")
            if claim is ext:
                # Its requests depend on the node (Filter); one left from an earlier attempt is
                # checked there too.
                continue
            for req in claim.requests:
                if req.exactly is not None:
                    st = self._validate_class(req.exactly.device_class_name, req.name)
                    if st is not None:
                        return st
                elif req.first_available:
                    if not self.features.enable_dra_prioritized_list:
                        return _unschedulable(
                            f"resource claim {claim.kobj}, request {req.name}: has subrequests, but the "
                            "DRAPrioritizedList feature is disabled"
                        )
                    for sub in req.first_available:
                        st = self._validate_class(sub.device_class_name, f"{req.name}/{sub.name}")
                        if st is not None:
                            return st
                else:
                    return _unschedulable(f"resource claim {claim.kobj}, request {req.name}: unknown request type")
        if to_allocate > 0:
            dedicated, shared, consumed = self.store.allocated_devices()
            if not self.allocator_features.consumable_capacity:
                # ListAllAllocatedDevices: a shared allocation takes its device like any other.
                dedicated = dedicated | {sid[:3] for sid in shared}
                consumed = {}
            s.allocator = Allocator(
                dedicated,
                consumed,
                self.store.get_class,
                self.store.list_slices(),
                self.cel_cache,
                features=self.allocator_features,
                pools_cache=self._pools_cache(),
            )
            basis = (self.store.slices_version, self.store.classes_version)
            # Not with an extended-resource claim (its requests differ per node), nor while
            # devices are shared (answers then depend on what is left of them).
            shares = bool(shared) and self.allocator_features.consumable_capacity
            if self._memo.sync(basis, dedicated, ext is None and not consumed and not shares):
                s.signature = claims_signature([c for c in claims if c.allocation is None])
        s.claims = claims
        return None

    def _pools_cache(self) -> PoolsCache:
        if self._pools_version != self.store.slices_version:
            self._pools = {}
            self._pools_version = self.store.slices_version
        return self._pools

    def _validate_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status(Code.ERROR, f"request {request_name}: unsupported request type")
        if self.store.get_class(class_name) is None:
            return _unschedulable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def _state(self, state: CycleState) -> _State | None:
        s = state.get(STATE_KEY)
        return s if isinstance(s, _State) else None

    # -- Filter --------------------------------------------------------------------------------
    def _filter_extended(
        self, s: _State, pod: PodInfo, node: NodeInfo
    ) -> tuple[ResourceClaim | None, list[dict[str, str]], Status | None]:
        """filterExtendedResources: the node's variant of the extended-resource claim (requests
        for what the node does not advertise), None when DRA has nothing to do here."""
        ext = s.ext_claim()
        if ext is None:
            return None, [], None
        if ext.requests:
            # Left from an earlier attempt: PostFilter deletes it and the pod starts over.
            return None, [], _unschedulable("cannot schedule extended resource claim")
        cache = self.store.extended
        wanted: dict[str, int] = {}
        for name, q in s.ext_scalars.items():
            if q == 0 or not is_dra_extended_resource_name(name):
                continue
            allocatable = node.allocatable.scalar.get(name)
            if cache.get_device_class(name) is not None and not allocatable:
                wanted[name] = q  # the node has no device plugin for it: DRA provides it
            elif allocatable is None:
                return None, [], _unschedulable("cannot fit resource")
        if s.num_user == 0 and not wanted:
            return None, [], None  # all from device plugins: NodeResourcesFit's business
        if ext.allocation is not None:
            return None, [], None
        requests, mappings = create_requests_and_mappings(pod.raw, wanted, cache)
        return with_requests(ext, requests), mappings, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status(Code.ERROR, "not found")
        if not s.claims:
            return None
        node_ext, mappings, st = self._filter_extended(s, pod, node)
        if st is not None:
            return st
        if node_ext is None and s.num_user == 0:
            return None
        unavailable: list[int] = []
        now = time.time()
        for i, claim in enumerate(s.claims):
            sel = s.available_on[i]
            if sel is not None and not sel.matches(node.labels, node.name):
                unavailable.append(i)
                continue
            if claim.allocation is None:
                continue
            if self.binding_conditions:
                # Binding failed or timed out: PostFilter may free the devices for another try.
                try:
                    ready = claim_ready_for_binding(claim)
                except BindingFailed:
                    unavailable.append(i)
                else:
                    if not ready and claim_timed_out(claim, self.binding_timeout, now):
                        unavailable.append(i)
        allocations: list[dict[str, Any]] | None = None
        if s.allocator is not None:
            ext_index = s.num_user
            claims = [
                node_ext if (i == ext_index and node_ext is not None) else s.claims[i] for i in s.to_allocate()
            ]
            # DRASchedulerFilterTimeout: the search for this node stops after filter_timeout.
            deadline = time.monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
            try:
                result = self._allocate(s, s.allocator, node, claims, deadline)
            except Aborted:
                # An Error, not Unschedulable: the pod retries after backoff, as upstream (a timeout
                # may be transient), rather than waiting in unschedulablePods for a cluster event.
                return Status(Code.ERROR, f"node {node.name}: timed out trying to allocate devices")
            except FailedOnNode as exc:
                return _unschedulable(str(exc))
            except AllocationError as exc:
                return Status(Code.ERROR, str(exc))
            if result is None or len(result) != len(claims):
                return _unschedulable("cannot allocate all claims")
            allocations = result
        if unavailable:
            s.unavailable.update(unavailable)
            return _unschedulable("resourceclaim not available on the node")
        if allocations is not None:
            s.node_allocations[node.name] = _NodeAllocation(allocations, node_ext, mappings)
        return None

    def _allocate(
        self, s: _State, allocator: Allocator, node: NodeInfo, claims: list[ResourceClaim], deadline: float | None
    ) -> list[dict[str, Any]] | None:
        """Allocator.Allocate for the node, or its answer from the memo (see memo.py)."""
        sig = s.signature
        if sig is None:
            return allocator.allocate(node.name, node.labels, claims, deadline=deadline)
        hit = self._memo.get(node.name, sig, node.labels)
        if hit is not None:
            return hit.answer
        result = allocator.allocate(node.name, node.labels, claims, deadline=deadline)
        self._memo.put(node.name, sig, node.labels, allocator.pools_of(node.name, node.labels), result)
        return result

    # -- PostFilter ----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = self._state(state)
        if s is None:
            return None, Status(Code.ERROR, "not found")
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, "no new claims to deallocate")
        ext = s.ext_claim()
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            if s.is_ext(i):
                if not is_special_claim_name(claim.name):
                    break  # deleted below
                continue
            if not claim.reserved_for or (
                len(claim.reserved_for) == 1 and str(claim.reserved_for[0].get("uid") or "") == pod.uid
            ):
                self._deallocate(claim)
                return None, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        if ext is not None and not is_special_claim_name(ext.name):
            # The pod's extended-resource claim from an earlier attempt is of no use any more
            # (perhaps allocated for a node that does not fit now): delete it, start over.
            self._delete_claim(ext)
            return None, Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
        return None, Status(Code.UNSCHEDULABLE, "still not schedulable")

    def _deallocate(self, claim: ResourceClaim) -> None:
        raw = dict(claim.raw)
        status = {
            k: v for k, v in dict(raw.get("status") or {}).items() if k not in ("reservedFor", "allocation", "devices")
        }
        raw["status"] = status
        api = self.api
        if api is None:
            # Offline: the store is the API.
            self.store.apply("ResourceClaim", raw)
            return
        # PostFilter is synchronous here; the write runs on the loop (errors are logged and
        # the next attempt sees the claim as it is).
        self._background(_write_status(api, raw), claim, "claim_deallocation_failed")

    def _background(self, coro: Coroutine[Any, Any, Any], claim: ResourceClaim, event: str) -> None:
        """Run an API write of a synchronous extension point on the loop (errors are logged;
        the next attempt sees the claim as it is)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            log.warning(event, claim=claim.key, error="no event loop")
            return
        task = loop.create_task(_logged(coro, claim, event))
        _background.add(task)
        task.add_done_callback(_background.discard)

    def _delete_claim(self, claim: ResourceClaim) -> None:
        api = self.api
        if api is None:
            self.store.on_event("ResourceClaim", "DELETED", claim.raw)  # offline: the store is the API
            return
        self._background(_delete_claim(api, claim), claim, "claim_delete_failed")

    # -- Score ---------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if not self.features.enable_dra_prioritized_list:
            return 0
        s = self._state(state)
        if s is None or not s.claims:
            return 0
        na = s.node_allocations.get(node.name)
        if na is None:
            return 0
        allocs = na.results
        score = 0
        j = 0
        for claim in s.claims:
            if claim.allocation is not None:
                alloc = claim.allocation
            else:
                if j >= len(allocs):
                    return 0
                alloc = allocs[j]
                j += 1
            subs = {
                str(r.get("request") or "")
                for r in ((alloc.get("devices") or {}).get("results") or [])
                if "/" in str(r.get("request") or "")
            }
            for req in claim.requests:
                if req.exactly is not None:
                    continue
                for k, sub in enumerate(req.first_available):
                    if f"{req.name}/{sub.name}" in subs:
                        score += FIRST_AVAILABLE_MAX - k
        return score

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray | None:
        """All zeros for a pod without claims to allocate (every pod without DRA): the common
        case, without a Python call per node."""
        s = self._state(state)
        if s is None or not s.claims or not s.node_allocations or not self.features.enable_dra_prioritized_list:
            # Score is 0 on every node that Filter did not allocate for (upstream too).
            return np.zeros(len(idx), dtype=np.int64)
        return None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        default_normalize_score(scores)
        return None

    # -- Reserve / Unreserve -------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status(Code.ERROR, "not found")
        idx = s.to_allocate()
        if not idx or s.allocator is None:
            return None
        need_user = any(not s.is_ext(i) for i in idx)
        na = s.node_allocations.get(node_name)
        if na is None or not na.results:
            if not need_user:
                # Only the extended-resource claim, and device plugins provide it on this node.
                return None
            return Status(Code.ERROR, "claim allocation not found for node")
        if len(na.results) != len(idx):
            return Status(
                Code.ERROR,
                f"internal error, have {len(na.results)} allocations, {len(idx)} claims to allocate, "
                f"want {len(idx)} claims",
            )
        for k, i in enumerate(idx):
            s.allocations[i] = na.results[k]
            claim = s.claims[i]
            if s.is_ext(i) and na.ext_claim is not None:
                claim = na.ext_claim  # the node's variant replaces the in-memory claim
            self.store.signal_pending(claim.with_allocation(na.results[k]))
        # From here on only the chosen node's allocation is read (PreBind, Unreserve): the state
        # lives until the binding cycle ends, and every other node's allocation with it.
        s.node_allocations = {node_name: na}
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = self._state(state)
        if s is None or not s.claims:
            return
        api = self.api
        for claim in s.claims[: s.num_user]:
            if self.store.remove_pending(claim.uid):
                self.store.restore(claim.key)
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                if api is None:
                    raw = dict(claim.raw)
                    status = dict(raw.get("status") or {})
                    status["reservedFor"] = [r for r in claim.reserved_for if str(r.get("uid") or "") != pod.uid]
                    raw["status"] = status
                    self.store.apply("ResourceClaim", raw)
                    continue
                patch = {
                    "metadata": {"uid": claim.uid},
                    "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
                }
                self._background(
                    api.patch_resource_claim_status(claim.namespace, claim.name, patch), claim, "claim_unreserve_failed"
                )
        self._unreserve_extended(pod, s)

    def _unreserve_extended(self, pod: PodInfo, s: _State) -> None:
        """unreserveExtendedResourceClaim: forget the in-flight allocation; a claim already
        created for this attempt is deleted."""
        ext = s.ext_claim()
        if ext is None:
            return
        if self.store.remove_pending(s.initial_ext_uid):
            self.store.restore(ext.key)
        if is_special_claim_name(ext.name):
            return
        log.debug("extended_claim_delete", pod=pod.key, claim=ext.key)
        self._delete_claim(ext)

    # -- PreBind -------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
        s = self._state(state)
        if s is None:
            return True, Status(Code.ERROR, "not found")
        if not s.claims:
            return True, Status(Code.SKIP)
        return True, None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status(Code.ERROR, "not found")
        if not s.claims:
            return None
        for i, claim in enumerate(s.claims):
            if claim.is_reserved_for(pod.uid):
                continue
            try:
                s.claims[i] = await self._bind_claim(s, i, pod, node_name)
            except Exception as exc:
                return Status(Code.ERROR, str(exc), err=exc)
        if not self.binding_conditions or not has_binding_conditions(s.claims):
            return None
        return await self._wait_for_binding_conditions(s, pod, node_name)

    async def _wait_for_binding_conditions(self, s: _State, pod: PodInfo, node_name: str) -> Status | None:
        """The devices are allocated; their driver still has to make them usable on the node
        (attach them, say). Wait until every binding condition is True, a failure condition is
        True, or bindingTimeout passes; the scheduling loop goes on meanwhile."""
        if self.handle is not None:
            self.handle.event_recorder.eventf(
                pod, None, "Normal", "BindingConditionsPending", "Scheduling",
                f"waiting for binding conditions for device on node {node_name}",
            )
        start = time.monotonic()
        deadline = start + self.binding_timeout
        label = bc.SUCCESS
        err: Exception | None = None
        while True:
            try:
                if self._pod_ready_for_binding(s):
                    break
            except bc.BindingFailed as exc:
                err, label = exc, bc.FAILED
                break
            except bc.BindingTimeout as exc:
                err, label = exc, bc.TIMEOUT
                break
            except Exception as exc:
                err, label = exc, bc.ERROR
                break
            now = time.monotonic()
            if self.api is None:
                # Offline nothing ever changes a claim while we wait: what the cluster file says
                # is final, so the wait ends as it would when bindingTimeout ran out.
                err, label = bc.BindingTimeout("device binding timeout: context deadline exceeded"), bc.TIMEOUT
                break
            if now + self.binding_poll_interval >= deadline:
                await asyncio.sleep(max(0.0, deadline - now))
                err, label = bc.BindingTimeout("device binding timeout: context deadline exceeded"), bc.TIMEOUT
                break
            await asyncio.sleep(self.binding_poll_interval)
        seconds = time.monotonic() - start
        if self.handle is not None:
            profile = self.handle.profile_name
            for claim in s.claims:
                if claim.allocation is None:
                    continue
                for driver in bc.drivers(claim):
                    self.handle.metrics.binding_conditions_wait(profile, driver, label, seconds)
                for d in bc.binding_status(claim):
                    self.handle.metrics.binding_conditions(profile, d.driver, label)
        devices = bc.status_line(s.claims, label)
        if err is None:
            log.debug("binding_conditions_met", pod=pod.key, node=node_name, devices=devices)
            return None
        log.info("binding_conditions_not_met", pod=pod.key, node=node_name, error=str(err), devices=devices)
        return Status(Code.ERROR, str(err), err=err)

    def _pod_ready_for_binding(self, s: _State) -> bool:
        """isPodReadyForBinding: each claim as the store has it now."""
        for i, claim in enumerate(s.claims):
            current = self.store.get_claim(claim.namespace, claim.name)
            s.claims[i] = current
            if not claim_ready_for_binding(current):
                if claim_timed_out(current, self.binding_timeout, time.time()):
                    raise bc.BindingTimeout(f"device binding timeout: claim={current.name}")
                return False
        return True

    async def _bind_claim(self, s: _State, i: int, pod: PodInfo, node_name: str) -> ResourceClaim:
        """bindClaim: record the allocation (if this attempt made one) and the reservation; for
        the extended-resource claim, create it first and name it in the pod's status."""
        claim = s.claims[i]
        allocation = s.allocations[i]
        is_ext = s.is_ext(i)
        if is_ext and allocation is None and not claim.requests:
            return claim  # device plugins provide the pod's extended resources on this node
        pending_uid = claim.uid
        written: ResourceClaim | None = None
        try:
            if is_ext and is_special_claim_name(claim.name):
                claim = written = await self._create_extended_claim(pod, node_name, s)
                # From now on Unreserve deletes it if the attempt fails.
                s.claims[i] = claim
            claim = written = await self._write_binding(claim, allocation, pod)
            if is_ext:
                await self._patch_pod_extended_status(pod, claim, node_name, s)
            return claim
        finally:
            if written is not None:
                if is_ext:
                    await self._wait_assumed(written)
                else:
                    self.store.assume(written)
            if allocation is not None:
                # Written or failed: the allocation is no longer in flight (the assume cache or
                # the informer has the claim now, or the pod is retried).
                self.store.remove_pending(pending_uid)

    async def _create_extended_claim(self, pod: PodInfo, node_name: str, s: _State) -> ResourceClaim:
        """createExtendedResourceClaimInAPI: the node's variant of the claim, named by the API
        server from ``<pod>-extended-resources-``."""
        na = s.node_allocations.get(node_name)
        if na is None or na.ext_claim is None:
            raise RuntimeError(f"extended resource claim not found for node {node_name}")
        body = creation_body(na.ext_claim)
        api = self._offline_api()
        metrics = self.handle.metrics if self.handle is not None else None
        try:
            if api is None:
                created = self._create_offline(body)
            else:
                created = ResourceClaim(await api.create_resource_claim(pod.namespace, body))
        except Exception as exc:
            if metrics is not None:
                metrics.resource_claim_created("failure")
            raise RuntimeError(f"create claim for extended resources {pod.namespace}/: {exc}") from exc
        if metrics is not None:
            metrics.resource_claim_created("success")
        log.debug("extended_claim_created", pod=pod.key, node=node_name, claim=created.key)
        return created

    def _create_offline(self, body: Mapping[str, Any]) -> ResourceClaim:
        meta = dict(body.get("metadata") or {})
        rng = self.handle.rng if self.handle is not None else random.Random()
        while True:
            name = str(meta.get("generateName") or "") + "".join(rng.choice(_NAME_CHARS) for _ in range(5))
            if self.store.get_claim_or_none(str(meta.get("namespace") or "default"), name) is None:
                break
        meta.update(name=name, uid=str(uuid.UUID(int=rng.getrandbits(128), version=4)), resourceVersion="1")
        raw = {**body, "metadata": meta}
        self.store.apply("ResourceClaim", raw)
        return ResourceClaim(raw)

    async def _write_binding(
        self, claim: ResourceClaim, allocation: dict[str, Any] | None, pod: PodInfo
    ) -> ResourceClaim:
        """The finalizer (a normal update) and then allocation + reservedFor (a status update),
        retried from a fresh read on conflict."""
        binding = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        api = self._offline_api()
        if api is None:
            new = self._apply_binding(claim, allocation, binding)
            self.store.apply("ResourceClaim", new.raw)
            return self.store.get_claim(claim.namespace, claim.name)
        refresh = False
        for _attempt in range(_RETRIES):
            if refresh:
                try:
                    claim = ResourceClaim(await api.get_resource_claim(claim.namespace, claim.name))
                except Exception as exc:
                    raise RuntimeError(f"get updated claim {claim.kobj} after conflict: {exc}") from exc
            refresh = True
            if claim.deleting:
                raise RuntimeError(f"claim {claim.kobj} got deleted in the meantime")
            raw = dict(claim.raw)
            if allocation is not None:
                if claim.allocation is not None:
                    raise RuntimeError(f"claim {claim.kobj} got allocated elsewhere in the meantime")
                if FINALIZER not in claim.finalizers:
                    meta = dict(raw.get("metadata") or {})
                    meta["finalizers"] = [*claim.finalizers, FINALIZER]
                    raw["metadata"] = meta
                    try:
                        raw = dict(await api.update_resource_claim(raw))
                    except Exception as exc:
                        if getattr(exc, "status", 0) == 409:
                            continue
                        raise RuntimeError(f"add finalizer to claim {claim.kobj}: {exc}") from exc
            new = self._apply_binding(ResourceClaim(raw), allocation, binding)
            try:
                return ResourceClaim(await api.update_resource_claim_status(new.raw))
            except Exception as exc:
                if getattr(exc, "status", 0) == 409:
                    continue
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                raise RuntimeError(f"{what} claim {claim.kobj}: {exc}") from exc
        raise RuntimeError(f"add reservation to claim {claim.kobj}: conflict")

    def _apply_binding(
        self, claim: ResourceClaim, allocation: dict[str, Any] | None, binding: dict[str, Any]
    ) -> ResourceClaim:
        raw = dict(claim.raw)
        status = dict(raw.get("status") or {})
        if allocation is not None:
            status["allocation"] = dict(allocation)
        status["reservedFor"] = [*list(status.get("reservedFor") or []), binding]
        if self.binding_conditions:
            # With binding conditions the allocation's time is what bindingTimeout counts from.
            if status.get("allocation") is None:
                raise RuntimeError(f"claim {claim.kobj} got deallocated elsewhere in the meantime")
            alloc = dict(status["allocation"])
            if not alloc.get("allocationTimestamp"):
                alloc["allocationTimestamp"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            status["allocation"] = alloc
        raw["status"] = status
        if allocation is not None:
            meta = dict(raw.get("metadata") or {})
            fins = list(meta.get("finalizers") or [])
            if FINALIZER not in fins:
                meta["finalizers"] = [*fins, FINALIZER]
            raw["metadata"] = meta
        return ResourceClaim(raw)

    async def _wait_assumed(self, claim: ResourceClaim) -> None:
        """waitForExtendedClaimInAssumeCache: a claim just created is assumed once the watch has
        shown it (checked now, then every second, for up to two minutes; not fatal)."""
        deadline = time.monotonic() + self.assume_timeout
        while True:
            if claim.key in self.store.claims:
                self.store.assume(claim)
                return
            if time.monotonic() + 1.0 > deadline:
                log.info("extended_claim_not_assumed", claim=claim.key)
                return
            await asyncio.sleep(1.0)

    async def _patch_pod_extended_status(
        self, pod: PodInfo, claim: ResourceClaim, node_name: str, s: _State
    ) -> None:
        """patchPodExtendedResourceClaimStatus: the pod's status names the claim and which
        container's resource maps to which request (a strategic merge of what changed)."""
        na = s.node_allocations.get(node_name)
        mappings = na.mappings if na is not None else []
        if not mappings:
            raise RuntimeError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        new = {"requestMappings": mappings, "resourceClaimName": claim.name}
        old = (pod.raw.get("status") or {}).get("extendedResourceClaimStatus") or {}
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        api = self.api
        if not changed or api is None or not hasattr(api, "patch_pod_status"):
            return  # nothing new, or offline (no pod object to write to)
        try:
            await api.patch_pod_status(pod.namespace, pod.name, {"status": {"extendedResourceClaimStatus": changed}})
        except Exception as exc:
            raise RuntimeError(f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc}") from exc

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            ClusterEventWithHint(
                ClusterEvent("ResourceClaim", ActionType.ADD | ActionType.UPDATE), self._after_claim_change
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent("ResourceSlice", ActionType.ADD | ActionType.UPDATE)),
        ]

    def _after_claim_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        if not isinstance(new_obj, ResourceClaim):
            return QueueingHint.QUEUE
        old = old_obj if isinstance(old_obj, ResourceClaim) else None
        claims = self._pod_claims(pod)
        if isinstance(claims, str):
            return QueueingHint.QUEUE_SKIP
        if old is not None and old.allocation is not None and new_obj.allocation is None:
            return QueueingHint.QUEUE
        if not any(c.uid == new_obj.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if old.status_equal(new_obj):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_pod_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        new = new_obj if isinstance(new_obj, PodInfo) else None
        if new is None or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        if isinstance(self._pod_claims(new), str):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


# retry.DefaultRetry's five attempts.
_RETRIES = 5
# The API server's generateName suffix alphabet (utilrand.String), for claims created offline.
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"

_background: set[asyncio.Task[None]] = set()


async def _write_status(api: Any, raw: dict[str, Any]) -> None:
    await api.update_resource_claim_status(raw)


async def _delete_claim(api: Any, claim: ResourceClaim) -> None:
    """deleteClaim: drop the delete-protection finalizer (an update, retried from a fresh read
    on conflict), then delete the claim."""
    current = claim
    for attempt in range(_RETRIES):
        if attempt > 0:
            try:
                current = ResourceClaim(await api.get_resource_claim(claim.namespace, claim.name))
            except Exception as exc:
                raise RuntimeError(f"get resourceclaim {claim.namespace}/{claim.name}: {exc}") from exc
        raw = dict(current.raw)
        meta = dict(raw.get("metadata") or {})
        meta["finalizers"] = [f for f in current.finalizers if f != FINALIZER]
        raw["metadata"] = meta
        try:
            await api.update_resource_claim(raw)
            break
        except Exception as exc:
            if getattr(exc, "status", 0) == 409 and attempt + 1 < _RETRIES:
                continue
            raise RuntimeError(f"update resourceclaim {claim.namespace}/{claim.name}: {exc}") from exc
    await api.delete_resource_claim(claim.namespace, claim.name)


async def _logged(coro: Coroutine[Any, Any, Any], claim: ResourceClaim, event: str) -> None:
    try:
        await coro
    except Exception as exc:
        log.warning(event, claim=claim.key, error=str(exc))


def _is_for_pod(pod: PodInfo, claim: ResourceClaim, ref: PodClaimRef) -> str | None:
    if claim.namespace != pod.namespace:
        return (
            f"ResourceClaim {claim.namespace}/{claim.name} is not in the same namespace as Pod "
            f"{pod.namespace}/{pod.name}"
        )
    if claim.controller_uid != pod.uid:
        return (
            f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod {pod.namespace}/{pod.name} "
            "(Pod is not owner)"
        )
    return None
