"""Extension-point protocols (upstream framework/interface.go), as base classes.

A plugin subclasses ``Plugin`` plus one class per extension point it implements; the runtime
and the profile builder (core/profiles.py) read the extension points off the class hierarchy.

Batch forms: a Filter or Score plugin may override ``filter_batch`` / ``score_batch`` to decide
many nodes at once (numpy over the snapshot's columns). They must agree exactly with the
per-node ``filter`` / ``score``; tests check that. The runtime falls back to the per-node form
when a batch method returns ``None``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from scheduler.config.features import DEFAULT_FEATURES, Features
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.extender import Extender
from scheduler.framework.informers import InformerFactory
from scheduler.framework.metrics import NOOP, MetricsRecorder
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import Status
from scheduler.framework.waiting_pods import WaitingPod, WaitingPodsMap
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup

if TYPE_CHECKING:
    from scheduler.framework.listers import Listers
    from scheduler.framework.podgroupstate import PodGroupStates
    from scheduler.framework.snapshot import Snapshot


# ---------------------------------------------------------------------------------------------
# Queue-side types


class QueuedPodInfo:
    """A pod in the scheduling queue with its queue bookkeeping (upstream QueuedPodInfo)."""

    __slots__ = (
        "attempts",
        "backoff_expiration",
        "consecutive_errors_count",
        "flushed",
        "gated",
        "gating_plugin",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod",
        "seq",
        "signature",
        "timestamp",
        "unschedulable_count",
        "unschedulable_plugins",
    )

    def __init__(self, pod: PodInfo, timestamp: float, seq: int = 0) -> None:
        self.pod = pod
        self.timestamp = timestamp  # when the pod was (re)added to the queue
        self.seq = seq  # insertion order: the final, deterministic tie-break
        self.attempts = 0
        # Failed attempts that counted toward backoff: rejections, and errors since the last
        # rejection (upstream UnschedulableCount, ConsecutiveErrorsCount).
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        self.backoff_expiration: float | None = None  # computed once per failed attempt
        self.initial_attempt_timestamp: float | None = None
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gated = False
        self.gating_plugin = ""  # the PreEnqueue plugin that gated it (upstream GatingPlugin)
        # Moved out of unschedulable by the leftover flush since its last failed attempt
        # (upstream WasFlushedFromUnschedulable: scheduler_pod_scheduled_after_flush_total).
        self.flushed = False
        # OpportunisticBatching's pod signature (upstream PodSignature): set by the queue when
        # the pod enters it or is updated there; None = not batchable.
        self.signature: bytes | None = None

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod.key} attempts={self.attempts})"


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the nodes Filter looks at. ``None`` node_names means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return PreFilterResult(None if self.node_names is None else set(self.node_names))
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    """Upstream PostFilterResult/NominatingInfo. ``mode`` "override" sets (or with "" clears)
    the pod's nominated node; "noop" leaves it as it is."""

    nominated_node_name: str = ""
    victims: list[PodInfo] = field(default_factory=list)
    mode: str = "override"


class NodeToStatus:
    """Filter statuses of the rejected nodes, plus the status of nodes never evaluated."""

    __slots__ = ("absent", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[str, Status] = {}
        # Upstream: nodes not in the map count as UnschedulableAndUnresolvable (no reasons).
        self.absent: Status | None = None

    def get(self, node: str) -> Status | None:
        return self.statuses.get(node, self.absent)

    def distinct(self) -> list[tuple[Status, int]]:
        """Each distinct Status object of ``statuses`` with the number of nodes it rejected,
        in first-seen order. Nodes rejected alike mostly share one object, and in runs: an
        identity test per node, where hashing each node's (plugin, reasons) cost ten times as
        much (the FailedScheduling message and the decision records count them per attempt)."""
        seen: dict[int, list[Any]] = {}
        last: Status | None = None
        run = 0
        for s in self.statuses.values():
            if s is last:
                run += 1
                continue
            if last is not None:
                seen[id(last)][1] += run
            if id(s) not in seen:
                seen[id(s)] = [s, 0]
            last, run = s, 1
        if last is not None:
            seen[id(last)][1] += run
        return [(e[0], e[1]) for e in seen.values()]


# ---------------------------------------------------------------------------------------------
# Pod groups and placements (upstream fwk types.go: PodGroupInfo, Placement, PodGroupAssignments)


class PodGroupInfo:
    """A pod group in one pod-group cycle: its name and the pods being scheduled in it, in the
    cycle's order (upstream framework.PodGroupInfo)."""

    __slots__ = ("name", "namespace", "unscheduled_pods")

    def __init__(self, namespace: str, name: str, unscheduled_pods: list[PodInfo] | None = None) -> None:
        self.namespace = namespace
        self.name = name
        self.unscheduled_pods: list[PodInfo] = unscheduled_pods or []

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"PodGroupInfo({self.key} pods={len(self.unscheduled_pods)})"


@dataclass(eq=False, slots=True)
class Placement:
    """The nodes a pod group is tried on (upstream fwk.Placement); compared by identity."""

    name: str
    nodes: list[NodeInfo]


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    pod: PodInfo
    node_name: str


@dataclass(slots=True)
class PodGroupAssignments:
    """Where a placement's cycle put each pod that found a node (upstream PodGroupAssignments)."""

    placement: Placement
    proposed_assignments: list[ProposedAssignment]


@dataclass(slots=True)
class PlacementScore:
    placement: Placement
    score: int


@dataclass(slots=True)
class PlacementPluginScores:
    placement: Placement
    scores: list[tuple[str, int]]  # (plugin, weighted score)
    total_score: int = 0
    randomizer: int = 0


# ---------------------------------------------------------------------------------------------
# Handle


class PodBinder(Protocol):
    """The API write DefaultBinder needs; the live app injects an API client, simulate a fake."""

    async def bind(self, pod: PodInfo, node: str) -> None: ...


class Nominator(Protocol):
    """Pods nominated to nodes by preemption (upstream PodNominator); the queue implements it."""

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]: ...

    def nominated_nodes(self) -> Mapping[str, Any]: ...


class PreemptionActuator(Protocol):
    """Carries out a preemption decision (upstream preemption.Executor): the live app deletes
    the victims through the API (off the scheduling loop with SchedulerAsyncPreemption, else
    before it returns); ``simulate`` removes them at once. An error Status fails the PostFilter."""

    def preempt(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo], plugin: str) -> Status | None: ...

    def is_running(self, uid: str) -> bool: ...

    def attempted(self) -> None:
        """One PostFilter preemption attempt (scheduler_preemption_attempts_total)."""
        ...


# Moves pods to activeQ (upstream PodActivator.Activate): pods keyed by namespace/name.
PodActivator = Callable[[Mapping[str, PodInfo]], None]


class EventSink(Protocol):
    """Where Events go: the live app's Recorder (events.k8s.io, off the scheduling path)."""

    def event(self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str) -> bool: ...


class EventRecorder:
    """A profile's event recorder (upstream Handle.EventRecorder()): Events about pods, reported
    by the profile's scheduler name. Offline (no sink) it drops them."""

    __slots__ = ("controller", "sink")

    def __init__(self, sink: EventSink | None, controller: str) -> None:
        self.sink = sink
        self.controller = controller

    def eventf(self, regarding: PodInfo, related: Any, eventtype: str, reason: str, action: str, note: str) -> None:
        """One Event: ``eventtype`` "Normal" or "Warning", a CamelCase ``reason``, the
        ``action`` taken and a human ``note``. ``related`` is accepted for upstream's shape."""
        if self.sink is not None:
            self.sink.event(regarding, self.controller, eventtype, reason, action, note)


# Reserved CycleState key: pods a plugin wants moved to activeQ once this attempt's scheduling
# cycle succeeds, and again when its binding cycle does (upstream PodsToActivateKey).
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


class PodsToActivate:
    """``pods``: namespace/name -> pod. Shared by the state's clones, as upstream."""

    __slots__ = ("pods",)

    def __init__(self) -> None:
        self.pods: dict[str, PodInfo] = {}

    def clone(self) -> PodsToActivate:
        return self


class Handle:
    """What plugins may use from the framework (upstream framework.Handle), all given when it
    is built (core/profiles.py), the nominator once the queue exists (upstream SetPodNominator):

    * ``snapshot``, ``listers`` (``shared_informer_factory`` among them) and ``nominator``;
    * the waiting pods: ``get_waiting_pod``, ``iterate_over_waiting_pods``, ``reject_waiting_pod``;
    * ``activate`` (the queue), ``event_recorder``, ``client_set`` (the live app's kubernetes
      ApiClient, built at the first use; None offline), ``client`` (the binder), ``volume_api``
      and ``preemption``;
    * ``extenders``: the scheduler extenders, shared by every profile."""

    __slots__ = (
        "_client_set",
        "activator",
        "client",
        "event_recorder",
        "extenders",
        "features",
        "listers",
        "metrics",
        "nominator",
        "parallelism",
        "pod_group_manager",
        "preemption",
        "profile_name",
        "rng",
        "snapshot",
        "volume_api",
        "waiting_pods",
    )

    def __init__(
        self,
        snapshot: Snapshot,
        listers: Listers,
        profile_name: str = "",
        parallelism: int = 16,
        client: PodBinder | None = None,
        *,
        volume_api: Any = None,
        preemption: PreemptionActuator | None = None,
        rng: random.Random | None = None,
        features: Features = DEFAULT_FEATURES,
        waiting_pods: WaitingPodsMap | None = None,
        activator: PodActivator | None = None,
        client_set: Any = None,
        events: EventSink | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        self.snapshot = snapshot
        self.listers = listers
        self.profile_name = profile_name
        self.parallelism = parallelism
        self.client = client
        # PV/PVC writes for VolumeBinding's PreBind (volumebinding.binder.VolumeAPI); None offline.
        self.volume_api = volume_api
        self.nominator: Nominator | None = None
        self.preemption = preemption
        # Preemption's random start offset (upstream rand.Int31n); simulate seeds it.
        self.rng = rng if rng is not None else random.Random()
        # Where the framework and plugins report metrics; the live edge sets its recorder.
        self.metrics: MetricsRecorder = NOOP
        # The feature gates plugins read (upstream feature.Features, given to every factory).
        self.features = features
        # The cache's pod-group states (upstream PodGroupManager), given once the cache exists.
        self.pod_group_manager: PodGroupStates | None = None
        # One map for every profile (the builder passes the same one to each handle).
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPodsMap()
        self.activator = activator
        # Typed Any so the core never imports kubernetes: the live app's ApiClient, None offline;
        # a callable builds it at the first use (the client's models cost memory few plugins need).
        self._client_set = client_set
        self.event_recorder = EventRecorder(events, profile_name)
        # Shared by every profile (upstream Handle.Extenders()), non-ignorable ones first.
        self.extenders: tuple[Extender, ...] = tuple(extenders)

    @property
    def client_set(self) -> Any:
        if callable(self._client_set):
            self._client_set = self._client_set()
        return self._client_set

    @client_set.setter
    def client_set(self, value: Any) -> None:
        self._client_set = value

    @property
    def shared_informer_factory(self) -> InformerFactory:
        return self.listers.informers

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        self.waiting_pods.iterate(callback)

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject a waiting pod (upstream: no plugin, message "removed"); False if none waits."""
        wp = self.waiting_pods.get(uid)
        return wp.reject("", "removed") if wp is not None else False

    def activate(self, pods: Mapping[str, PodInfo]) -> None:
        """Move ``pods`` (namespace/name -> pod) from unschedulable or backoff to activeQ; a pod
        in flight is moved when its attempt ends; others are ignored (upstream Activate)."""
        if self.activator is not None and pods:
            self.activator(pods)


# ---------------------------------------------------------------------------------------------
# Plugins


class Plugin:
    """Base of every plugin. ``name`` is the name used in configuration."""

    name: ClassVar[str] = ""

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> Plugin:
        """Factory: validate ``args`` and build the plugin. No I/O here."""
        if args:
            raise ValueError(f"plugin {cls.name} takes no arguments")
        return cls()


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError

    def sort_key(self, q: QueuedPodInfo) -> Any:
        """Optional heap key equivalent to ``less``; None makes the queue fall back to ``less``."""
        return None


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterResult | Status | None:
        raise NotImplementedError

    # PreFilterExtensions, used when preemption simulates adding/removing pods.
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        return None


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray | None:
        """Optional: a bool mask over ``snapshot.node_infos[idx]`` (True = passes), or None."""
        return None

    def filter_batch_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> Sequence[Status | None] | None:
        """Optional, beside ``filter_batch``: what ``filter`` returns for each node of
        ``snapshot.node_infos[idx]``, nodes ``filter_batch`` rejected, in one call (a plugin
        that rejects most nodes would otherwise be asked again node by node), or None. The
        same Status object may stand for many nodes."""
        return None


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Raw score; raise ``StatusError`` to fail."""
        raise NotImplementedError

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray | None:
        """Optional: int64 scores for ``snapshot.node_infos[idx]``, or None for the per-node form."""
        return None

    # NormalizeScore; ``has_normalize`` tells the runtime whether to call it.
    has_normalize: ClassVar[bool] = False

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        return None


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PlacementGeneratePlugin(Plugin):
    def generate_placements(
        self, state: CycleState, pod_group: PodGroupInfo, parent: Placement
    ) -> list[Placement] | Status:
        """Candidate placements within ``parent`` (may overlap), or a non-success Status."""
        raise NotImplementedError


class PlacementScorePlugin(Plugin):
    def score_placement(self, state: CycleState, pod_group: PodGroupInfo, assignments: PodGroupAssignments) -> int:
        """Raw score of one feasible placement; raise ``StatusError`` to fail."""
        raise NotImplementedError

    # PlacementScoreExtensions; ``has_normalize_placement`` tells the runtime whether to call it.
    has_normalize_placement: ClassVar[bool] = False

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        return None


class PodGroupPostFilterPlugin(Plugin):
    """Called when a pod group cannot be scheduled (upstream framework.PodGroupPostFilterPlugin,
    WorkloadAwarePreemption): ``feasible`` re-runs the pod-group algorithm, without PostFilter,
    on the snapshot the plugin changed."""

    def pod_group_post_filter(
        self, pod_group: PodGroup, pods: list[PodInfo], feasible: Callable[[], Status | None]
    ) -> Status | None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """(None to allow, a WAIT status to make the pod wait, a rejection; the wait's timeout
        in seconds, capped at 15 minutes). A waiting pod is let go through the Handle's
        waiting-pod API: ``handle.get_waiting_pod(uid).allow(self.name)`` or ``.reject(...)``."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
        """Whether PreBind will do anything for the pod on the node (upstream PreBindPreFlight):
        (AllowParallel, status), the status None (it will), SKIP (it will not) or an Error. The
        default says it will, alone."""
        return False, None


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Return None when bound, SKIP to let the next bind plugin try."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class EnqueueExtensions:
    """Mixin: the cluster events that may make a pod this plugin rejected schedulable."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class SignPlugin(Plugin):
    """For a PreFilter, Filter, PreScore or Score plugin that can sign pods for
    OpportunisticBatching (upstream fwk.SignPlugin; scheduler.framework.signers). When one such
    plugin of a profile is not a SignPlugin, that profile signs no pod."""

    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """The pod's fragments; a Status (Unschedulable: refused, Error: failed) makes the pod
        unsignable."""
        raise NotImplementedError


# Extension point names exactly as they appear in KubeSchedulerConfiguration.
EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
}


def extension_points_of(plugin_cls: type) -> list[str]:
    return [point for point, base in EXTENSION_POINTS.items() if issubclass(plugin_cls, base)]
