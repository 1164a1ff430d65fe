"""VolumeBinding (upstream plugins/volumebinding/volume_binding.go).

PreFilter sorts the pod's claims (missing, lost, being deleted and unbound Immediate claims
stop it); Filter finds, per node, PVs for the unbound WaitForFirstConsumer claims or checks
that they can be provisioned there; Reserve assumes the choice in the binder's assume cache so
the next pod sees it; PreBind writes it through an injected ``VolumeAPI``.

Score: only with the StorageCapacityScoring gate (alpha, off by default) is there a scorer:
the args' utilization shape (default: emptier is better) over each storage class the pod's
volumes use on the node, statically bound PVs if any, else the CSIStorageCapacity the
provisioned claims would draw on. Without the gate PreScore skips and Score is 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.listers import StorageStore
from scheduler.framework.signers import VOLUMES_SIGNER, SignFragment, volumes_signer
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Code, Status, StatusError, go_quote
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import (
    ANN_MIGRATED_PLUGINS,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    NotFoundError,
    as_pvc,
    as_storage_class,
    ephemeral_owned_by,
)
from scheduler.plugins.noderesources.fit import shape_errors
from scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ShapePoint,
    broken_linear,
    go_round,
)
from scheduler.plugins.volumebinding.binder import PodVolumeClaims, PodVolumes, VolumeAPI, VolumeBinder
from scheduler.plugins.volumebinding.errors import BinderError
from scheduler.plugins.volumebinding.pv_helpers import migrated_node_affinity_ok

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# SetDefaults_VolumeBindingArgs with StorageCapacityScoring: the emptier the better.
DEFAULT_SHAPE: tuple[ShapePoint, ...] = (ShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE), ShapePoint(MAX_UTILIZATION, 0))


class _State:
    """stateData: shared (not copied) between the cycle's clones, as upstream."""

    __slots__ = ("all_bound", "by_node", "claims", "has_static_bindings")

    def __init__(self, claims: PodVolumeClaims | None = None) -> None:
        self.claims = claims
        self.by_node: dict[str, PodVolumes] = {}
        self.all_bound = False
        self.has_static_bindings = False

    def clone(self) -> _State:
        return self


def _parse_args(
    args: Mapping[str, Any] | None, capacity_scoring: bool = False
) -> tuple[float, tuple[ShapePoint, ...] | None]:
    """bindTimeoutSeconds (defaulted) and, with StorageCapacityScoring, the shape (defaulted when
    empty; ValidateVolumeBindingArgsWithOptions); a shape without the gate is refused."""
    args = dict(args or {})
    for key in args:
        if key not in ("bindTimeoutSeconds", "shape", "apiVersion", "kind"):
            raise ValueError(f'unknown field "{key}"')
    timeout = args.get("bindTimeoutSeconds")
    if timeout is None:
        timeout = DEFAULT_BIND_TIMEOUT_SECONDS
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ValueError(f"bindTimeoutSeconds: must be an integer, got {timeout!r}")
    errs = []
    if timeout < 0:
        errs.append(
            f"bindTimeoutSeconds: Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value"
        )
    raw_shape = args.get("shape")
    shape: tuple[ShapePoint, ...] | None = None
    if capacity_scoring:
        if not raw_shape:
            shape = DEFAULT_SHAPE
        else:
            if not isinstance(raw_shape, list) or not all(isinstance(p, Mapping) for p in raw_shape):
                raise ValueError(f"shape: must be a list of utilization/score points, got {raw_shape!r}")
            shape = tuple(ShapePoint(_int_field(p, "utilization"), _int_field(p, "score")) for p in raw_shape)
        errs += shape_errors(shape, "shape")
    elif raw_shape is not None:
        errs.append(
            "shape: Invalid value: "
            + repr(raw_shape)
            + ": unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
        )
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return float(timeout), shape


def _int_field(point: Mapping[str, Any], key: str) -> int:
    v = point.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"shape: {key} must be an integer, got {v!r}")
    return v


class CapacityScorer:
    """buildScorerFunction: the shape (scores scaled to 0..100) over each class's utilization,
    averaged over the classes and rounded half away from zero."""

    __slots__ = ("shape",)

    def __init__(self, shape: Sequence[ShapePoint]) -> None:
        factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.shape = tuple(ShapePoint(p.utilization, p.score * factor) for p in shape)

    def __call__(self, classes: Mapping[str, tuple[int, int]]) -> int:
        if not classes:
            return 0
        total = 0
        for requested, capacity in classes.values():
            if capacity == 0 or requested > capacity:
                total += broken_linear(self.shape, MAX_UTILIZATION)
            else:
                total += broken_linear(self.shape, requested * MAX_UTILIZATION // capacity)
        return go_round(total / len(classes))


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, ReservePlugin, PreScorePlugin, ScorePlugin, PreBindPlugin, EnqueueExtensions
, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream VolumeBinding.SignPod: the volumes."""
        return [(VOLUMES_SIGNER, volumes_signer(pod))]

    def __init__(
        self,
        store: StorageStore | None = None,
        bind_timeout: float = DEFAULT_BIND_TIMEOUT_SECONDS,
        handle: Handle | None = None,
        api: VolumeAPI | None = None,
        node_lookup: Callable[[str], NodeInfo | None] | None = None,
        scorer: CapacityScorer | None = None,
    ) -> None:
        self.store = store if store is not None else StorageStore()
        self.binder = VolumeBinder(self.store, bind_timeout)
        # Only with StorageCapacityScoring (upstream's scorer and fts.EnableStorageCapacityScoring).
        self.scorer = scorer
        self.handle = handle
        self._api = api
        self._node_lookup = node_lookup

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> VolumeBinding:
        timeout, shape = _parse_args(args, handle.features.enable_storage_capacity_scoring)
        scorer = CapacityScorer(shape) if shape is not None else None
        return cls(handle.listers.storage, timeout, handle, scorer=scorer)

    @property
    def api(self) -> VolumeAPI | None:
        """The injected API client: given explicitly, the handle's volume API (the live app),
        or the handle's client when it can write PVs and PVCs. None offline (simulate), where
        PreBind keeps the assumed state."""
        if self._api is not None:
            return self._api
        if self.handle is not None and self.handle.volume_api is not None:
            return self.handle.volume_api  # type: ignore[no-any-return]
        client = self.handle.client if self.handle is not None else None
        if client is not None and hasattr(client, "update_persistent_volume"):
            return client  # type: ignore[return-value]
        return None

    # -- PreFilter ---------------------------------------------------------------------------
    def _has_pvcs(self, pod: PodInfo) -> tuple[bool, str | None]:
        """podHasPVCs: whether the pod has claims, and the first problem with them."""
        has = False
        for vol in pod.volumes:
            src = vol.get("persistentVolumeClaim")
            if src is not None:
                name, ephemeral = str(src.get("claimName") or ""), False
            elif vol.get("ephemeral") is not None:
                name, ephemeral = f"{pod.name}-{vol.get('name', '')}", True
            else:
                continue
            has = True
            try:
                pvc = self.store.get_pvc(pod.namespace, name)
            except NotFoundError as exc:
                if ephemeral:
                    return (
                        has,
                        f"waiting for ephemeral volume controller to create the persistentvolumeclaim {go_quote(name)}",
                    )
                return has, str(exc)
            if pvc.phase == "Lost":
                return has, (
                    f"persistentvolumeclaim {go_quote(pvc.name)} bound to non-existent persistentvolume "
                    f"{go_quote(pvc.volume_name)}"
                )
            if pvc.deleting:
                return has, f"persistentvolumeclaim {go_quote(pvc.name)} is being deleted"
            if ephemeral:
                err = ephemeral_owned_by(pod, pvc)
                if err is not None:
                    return has, err
        return has, None

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        if not pod.volumes:
            state.write(STATE_KEY, _State())
            return SKIP
        has, problem = self._has_pvcs(pod)
        if problem is not None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, problem)
        if not has:
            state.write(STATE_KEY, _State())
            return SKIP
        try:
            claims = self.binder.pod_volume_claims(pod)
        except BinderError as exc:
            return Status(Code.ERROR, str(exc))
        if claims.unbound_immediate:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims))
        return None

    def _state(self, state: CycleState) -> _State | Status:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return Status(Code.ERROR, "not found")  # CycleState.Read's ErrNotFound, as upstream reports it
        return s

    # -- Filter ------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        if s.claims is None:
            return None
        try:
            vols, reasons = self.binder.find_pod_volumes(pod, s.claims, node)
        except BinderError as exc:
            self._stage_failed("predicate")
            return Status(Code.ERROR, str(exc))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        s.by_node[node.name] = vols
        s.has_static_bindings = s.has_static_bindings or bool(vols.static_bindings)
        return None

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        """Fast form for pods whose claims are all bound (the common case once volumes exist):
        only the bound PVs' node affinity decides, and nothing needs remembering per node
        (Reserve then finds all volumes bound, as upstream's empty PodVolumes leads to)."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return None
        if s.claims is None:
            return np.ones(len(idx), dtype=bool)
        if s.claims.unbound_delay:
            return None
        pvs = []
        for pvc in s.claims.bound:
            try:
                pvs.append(self.binder.cache.get_pv(pvc.volume_name))
            except NotFoundError:
                return np.zeros(len(idx), dtype=bool)  # every node: PV missing
        constrained = [pv for pv in pvs if pv.node_affinity is not None or pv.in_tree]
        if not constrained:
            return np.ones(len(idx), dtype=bool)
        csi_nodes = self.store.csi_nodes
        infos = snapshot.node_infos
        out = np.empty(len(idx), dtype=bool)
        for j, i in enumerate(idx.tolist()):
            ni = infos[i]
            csi_node = csi_nodes.get(ni.name)
            out[j] = all(migrated_node_affinity_ok(pv, ni, csi_node) for pv in constrained)
        return out

    # -- PreScore / Score --------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self.scorer is None:
            return SKIP
        s = self._state(state)
        if isinstance(s, Status):
            return s
        # With a scorer the gate is on, so dynamic provisions are scored too.
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if self.scorer is None:
            return 0
        s = self._state(state)
        if isinstance(s, Status):
            raise StatusError(s)
        vols = s.by_node.get(node.name)
        if vols is None:
            return 0
        # storage class -> (requested, capacity) in bytes (Quantity.Value, rounded up).
        classes: dict[str, tuple[int, int]] = {}
        if vols.static_bindings:
            for b in vols.static_bindings:
                cls_name = str((b.pv.raw.get("spec") or {}).get("storageClassName") or "")
                req, cap = classes.get(cls_name, (0, 0))
                classes[cls_name] = (req + (b.pvc.request or 0), cap + (b.pv.capacity or 0))
        else:
            for p in vols.dynamic_provisions:
                if p.capacity is None:
                    continue
                req, _ = classes.get(p.pvc.spec_class, (0, 0))
                # The class's capacity on the node once, however many claims draw on it.
                classes[p.pvc.spec_class] = (req + (p.pvc.request or 0), p.capacity.capacity or 0)
        return self.scorer(classes)

    # -- Reserve / Unreserve -----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        vols = s.by_node.get(node_name)
        if vols is None:
            s.all_bound = True
            return None
        try:
            s.all_bound = self.binder.assume(pod, node_name, vols)
        except (BinderError, NotFoundError) as exc:
            self._stage_failed("assume")
            return Status(Code.ERROR, str(exc))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return
        vols = s.by_node.get(node_name)
        if vols is not None:
            self.binder.revert(vols)

    # -- PreBind -----------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
        """Skip when every claim is bound; PreBind may run beside the others (AllowParallel)."""
        s = self._state(state)
        if isinstance(s, Status):
            return True, s
        if s.all_bound:
            return True, Status(Code.SKIP)
        if node_name not in s.by_node:
            return True, Status(Code.ERROR, f"no pod volume found for node {go_quote(node_name)}")
        return True, None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        if isinstance(s, Status):
            return s
        if s.all_bound:
            return None
        vols = s.by_node.get(node_name)
        if vols is None:
            return Status(Code.ERROR, f"no pod volume found for node {go_quote(node_name)}")
        api = self.api
        if api is None:
            if self.handle is None or getattr(self.handle.client, "offline", False):
                # Offline (simulate, unit tests): the assumed bindings stand in for the API.
                return None
            # Live without a volume API: binding the pod now would leave its claims unbound
            # for good, so fail PreBind (Unreserve reverts, the pod is retried).
            return Status(Code.ERROR, "volume binding: no PersistentVolume API client is configured")
        if self._node_lookup is not None:
            node = self._node_lookup(node_name)
        else:
            node = self.handle.snapshot.get(node_name) if self.handle is not None else None
        try:
            await self.binder.bind(pod, node, vols, api)
        except Exception as exc:  # a binder or API error: report it, the pod goes back to the queue
            self._stage_failed("bind")
            return Status(Code.ERROR, str(exc))
        return None

    def _stage_failed(self, operation: str) -> None:
        """scheduler_volume_scheduling_stage_error_total (upstream volumeBinder's deferred counts)."""
        if self.handle is not None:
            self.handle.metrics.volume_stage_error(operation)

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("StorageClass", ActionType.ADD | ActionType.UPDATE), self._after_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE), self._after_pvc_change
            ),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent("CSINode", ActionType.ADD | ActionType.UPDATE), self._after_csinode_change
            ),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.UPDATE), self._after_csidriver_change),
            ClusterEventWithHint(
                ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE), self._after_capacity_change
            ),
        ]

    def _after_csinode_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.QUEUE
        old = old_obj if isinstance(old_obj, CSINode) else CSINode(old_obj)
        new = new_obj if isinstance(new_obj, CSINode) else CSINode(new_obj)
        if old.annotations.get(ANN_MIGRATED_PLUGINS) != new.annotations.get(ANN_MIGRATED_PLUGINS):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_pvc_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        pvc = as_pvc(new_obj)
        if pvc is None or pvc.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for vol in pod.volumes:
            src = vol.get("persistentVolumeClaim")
            if src is not None:
                name = str(src.get("claimName") or "")
            elif vol.get("ephemeral") is not None:
                name = f"{pod.name}-{vol.get('name', '')}"
            else:
                continue
            if name == pvc.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_class_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old, new = as_storage_class(old_obj), as_storage_class(new_obj)
        if old is None or new is None:
            return QueueingHint.QUEUE
        # Semantic.DeepEqual of allowedTopologies, compared on the raw lists.
        if (old.raw.get("allowedTopologies") or None) != (new.raw.get("allowedTopologies") or None):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_capacity_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.QUEUE
        old = old_obj if isinstance(old_obj, CSIStorageCapacity) else CSIStorageCapacity(old_obj)
        new = new_obj if isinstance(new_obj, CSIStorageCapacity) else CSIStorageCapacity(new_obj)
        before, after = old.volume_limit(), new.volume_limit()
        if after is not None and (before is None or after > before):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_csidriver_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old = old_obj if isinstance(old_obj, CSIDriver) else CSIDriver(old_obj or {})
        new = new_obj if isinstance(new_obj, CSIDriver) else CSIDriver(new_obj or {})
        for vol in pod.volumes:
            csi = vol.get("csi")
            if csi is None or str(csi.get("driver") or "") != new.name:
                continue
            if old.storage_capacity and not new.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
