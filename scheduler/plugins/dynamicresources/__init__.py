"""DynamicResources (upstream plugins/dynamicresources/dynamicresources.go), structured
parameters with the v1.36.3 default features.

PreEnqueue waits for the pod's claims to exist; PreFilter collects the claims, checks their
classes and builds the allocator from the devices in use (stored allocations, the scheduler's
own writes and in-flight allocations); Filter allocates per node and remembers the result;
Score rewards earlier ``firstAvailable`` subrequests (DRAPrioritizedList is GA); Reserve puts
the chosen allocation in flight so the next pod sees the devices taken; PreBind writes
``status.allocation`` (with the finalizer) and ``status.reservedFor`` through the API;
Unreserve and PostFilter undo as upstream.

The allocator's features follow the gates (DRAPrioritizedList, DRAPartitionableDevices,
DRADeviceTaints, DRADeviceBindingConditions with DRAResourceClaimDeviceStatus,
DRAConsumableCapacity); without DRAPrioritizedList a claim with subrequests is unschedulable
and Score is 0. With DRASchedulerFilterTimeout (beta/on) Filter stops searching a node's devices
after ``filterTimeout`` (default 10s) and returns upstream's Error.

Not modelled (all default-off or outside the pod's own claims in v1.36.3): extended resources
backed by DRA (DRAExtendedResource, beta/on: pods asking for an extended resource that a
DeviceClass maps are not turned into a special claim), PodGroup claims, node-allocatable
claims, waiting for binding conditions in PreBind (``bindingTimeout`` is validated and kept).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
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
    pod_claim_refs,
    pod_has_claims,
)
from scheduler.model.labels import NodeSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamicresources.allocator import (
    Aborted,
    AllocationError,
    Allocator,
    AllocatorFeatures,
    FailedOnNode,
)
from scheduler.plugins.dynamicresources.celcache import CelCache
from scheduler.plugins.helper import default_normalize_score

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

log = structlog.get_logger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME


def _unschedulable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


class _State:
    """stateData: shared between the cycle's clones, as upstream."""

    __slots__ = ("allocations", "allocator", "available_on", "claims", "node_allocations", "unavailable")

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.available_on: list[NodeSelector | None] = []
        self.allocations: list[dict[str, Any] | None] = []  # informationForClaim.allocation
        self.allocator: Allocator | None = None
        self.node_allocations: dict[str, list[dict[str, Any]]] = {}
        self.unavailable: set[int] = set()

    def clone(self) -> _State:
        return self

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.allocation is None]


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
        # DynamicResourcesArgs after defaulting (config/dynamicresources.py): Filter gives up on a
        # node after filter_timeout seconds (0: never); binding_timeout bounds PreBind's wait for
        # device binding conditions.
        self.filter_timeout, self.binding_timeout = dra_timeouts(None, f.enable_dra_scheduler_filter_timeout)

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
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        s = _State()
        state.write(STATE_KEY, s)
        if not pod_has_claims(pod.raw):
            return SKIP
        claims = self._pod_claims(pod)
        if isinstance(claims, str):
            return _unschedulable(claims)
        if not claims:
            return SKIP
        to_allocate = 0
        s.available_on = [None] * len(claims)
        s.allocations = [None] * len(claims)
        for i, claim in enumerate(claims):
            if claim.allocation is not None:
                ns = claim.allocation.get("nodeSelector")
                if ns is not None:
                    s.available_on[i] = NodeSelector.parse(ns)
                continue
            to_allocate += 1
            if claim.uid in self.store.in_flight:
                return _unschedulable(f"resource claim {claim.kobj} is in the process of being allocated")
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
            )
        s.claims = claims
        return None

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
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status(Code.ERROR, "not found")
        if not s.claims:
            return None
        unavailable: list[int] = []
        for i, claim in enumerate(s.claims):
            sel = s.available_on[i]
            if sel is not None and not sel.matches(node.labels, node.name):
                unavailable.append(i)
                continue
            if claim.allocation is None:
                continue
            if _binding_failed(claim):
                unavailable.append(i)
        allocations: list[dict[str, Any]] | None = None
        if s.allocator is not None:
            claims = [s.claims[i] for i in s.to_allocate()]
            # DRASchedulerFilterTimeout: the search for this node stops after filter_timeout.
            deadline = time.monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
            try:
                result = s.allocator.allocate(node.name, node.labels, claims, deadline=deadline)
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
            s.node_allocations[node.name] = allocations
        return None

    # -- PostFilter ----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = self._state(state)
        if s is None:
            return None, Status(Code.ERROR, "not found")
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, "no new claims to deallocate")
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            if not claim.reserved_for or (
                len(claim.reserved_for) == 1 and str(claim.reserved_for[0].get("uid") or "") == pod.uid
            ):
                self._deallocate(claim)
                return None, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
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
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # PostFilter is synchronous here; the write runs on the loop (errors are logged and
        # the next attempt sees the claim as it is).
        task = loop.create_task(self._write_status(api, raw))
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def _write_status(self, api: Any, raw: dict[str, Any]) -> None:
        try:
            await api.update_resource_claim_status(raw)
        except Exception as exc:
            meta = raw.get("metadata") or {}
            log.warning(
                "claim_deallocation_failed", claim=f"{meta.get('namespace')}/{meta.get('name')}", error=str(exc)
            )

    # -- Score ---------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if not self.features.enable_dra_prioritized_list:
            return 0
        s = self._state(state)
        if s is None or not s.claims:
            return 0
        allocs = s.node_allocations.get(node.name)
        if allocs is None:
            return 0
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
        allocs = s.node_allocations.get(node_name)
        if not allocs:
            return Status(Code.ERROR, "claim allocation not found for node")
        if len(allocs) != len(idx):
            return Status(
                Code.ERROR,
                f"internal error, have {len(allocs)} allocations, {len(idx)} claims to allocate, "
                f"want {len(idx)} claims",
            )
        for k, i in enumerate(idx):
            s.allocations[i] = allocs[k]
            self.store.signal_pending(s.claims[i].with_allocation(allocs[k]))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = self._state(state)
        if s is None or not s.claims:
            return
        api = self.api
        for claim in s.claims:
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
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    continue
                task = loop.create_task(_patch(api, claim, patch))
                _background.add(task)
                task.add_done_callback(_background.discard)

    # -- PreBind -------------------------------------------------------------------------------
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
                s.claims[i] = await self._bind_claim(s, i, pod)
            except Exception as exc:
                return Status(Code.ERROR, str(exc))
        return None

    async def _bind_claim(self, s: _State, i: int, pod: PodInfo) -> ResourceClaim:
        claim = s.claims[i]
        allocation = s.allocations[i]
        binding = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        api = self.api
        try:
            if api is None:
                if (
                    self.handle is not None
                    and self.handle.client is not None
                    and not getattr(self.handle.client, "offline", False)
                ):
                    raise RuntimeError("dynamic resources: no ResourceClaim API client is configured")
                # Offline (simulate): the store stands in for the API.
                new = self._apply_binding(claim, allocation, binding)
                self.store.apply("ResourceClaim", new.raw)
                return self.store.get_claim(claim.namespace, claim.name)
            refresh = False
            for _attempt in range(5):
                if refresh:
                    claim = ResourceClaim(await api.get_resource_claim(claim.namespace, claim.name))
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
                    out = await api.update_resource_claim_status(new.raw)
                except Exception as exc:
                    if getattr(exc, "status", 0) == 409:
                        continue
                    what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                    raise RuntimeError(f"{what} claim {claim.kobj}: {exc}") from exc
                updated = ResourceClaim(out)
                self.store.assume(updated)
                return updated
            raise RuntimeError(f"add reservation to claim {claim.kobj}: conflict")
        finally:
            # Written or failed: the allocation is no longer in flight (the assume cache or
            # the informer has the claim now, or the pod is retried).
            if allocation is not None:
                self.store.remove_pending(claim.uid)

    @staticmethod
    def _apply_binding(
        claim: ResourceClaim, allocation: dict[str, Any] | None, binding: dict[str, Any]
    ) -> ResourceClaim:
        raw = dict(claim.raw)
        status = dict(raw.get("status") or {})
        if allocation is not None:
            status["allocation"] = dict(allocation)
        if status.get("allocation") is None:
            raise RuntimeError(f"claim {claim.kobj} got deallocated elsewhere in the meantime")
        alloc = dict(status["allocation"])
        if "allocationTimestamp" not in alloc:
            import datetime

            alloc["allocationTimestamp"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status["allocation"] = alloc
        status["reservedFor"] = [*list(status.get("reservedFor") or []), binding]
        raw["status"] = status
        if allocation is not None:
            meta = dict(raw.get("metadata") or {})
            fins = list(meta.get("finalizers") or [])
            if FINALIZER not in fins:
                meta["finalizers"] = [*fins, FINALIZER]
            raw["metadata"] = meta
        return ResourceClaim(raw)

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


_background: set[asyncio.Task[None]] = set()


async def _patch(api: Any, claim: ResourceClaim, patch: dict[str, Any]) -> None:
    try:
        await api.patch_resource_claim_status(claim.namespace, claim.name, patch)
    except Exception as exc:
        log.warning("claim_unreserve_failed", claim=claim.key, error=str(exc))


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


def _binding_failed(claim: ResourceClaim) -> bool:
    """isClaimReadyForBinding's error case: a binding failure condition is true. (The timeout
    case needs the binding timeout clock and is not modelled.)"""
    alloc = claim.allocation or {}
    statuses = (claim.raw.get("status") or {}).get("devices") or []
    for r in (alloc.get("devices") or {}).get("results") or []:
        if not r.get("bindingConditions"):
            continue
        for st in statuses:
            if (st.get("driver"), st.get("pool"), st.get("device")) != (
                r.get("driver"),
                r.get("pool"),
                r.get("device"),
            ):
                continue
            if st.get("shareID") != r.get("shareID"):
                continue
            for cond in st.get("conditions") or []:
                if cond.get("type") in (r.get("bindingFailureConditions") or []) and cond.get("status") == "True":
                    return True
    return False
