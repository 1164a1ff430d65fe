"""An out-of-tree Permit plugin that waits for a person: a pod labelled for approval is placed
(its node chosen and held) but not bound until its name appears as "approved" in a ConfigMap
of its namespace; "denied" there rejects it; no answer before the timeout rejects it too.

What it shows of the framework:

* an informer for a kind the scheduler does not watch itself (ConfigMaps), asked for through
  ``handle.shared_informer_factory`` while the plugin is built: the live scheduler lists and
  watches it, ``simulate`` reads it from the cluster file;
* the waiting-pod API: Permit answers WAIT, and the informer's handler lets the pod go with
  ``allow`` (or ``reject``) on ``handle.iterate_over_waiting_pods``;
* a cluster event on that kind (``configmaps.v1.``) with a queueing hint, so a denied pod is
  tried again when its answer changes;
* ``handle.event_recorder`` for an Event that says what the pod waits for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.informers import Lister
from scheduler.framework.interface import EnqueueExtensions, Handle, PermitPlugin
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod
from scheduler.model.pod import PodInfo

NAME = "ApprovalGate"
CONFIGMAPS = "configmaps.v1."  # <plural>.<version>.<group>; the core group is empty
APPROVED, DENIED = "approved", "denied"


@dataclass(frozen=True, slots=True)
class Args:
    config_map: str = "approvals"  # the ConfigMap, in the pod's namespace, that holds the answers
    label: str = "approval.example.com/required"  # pods with this label set to "true" wait
    timeout_seconds: float = 300.0  # how long a pod may wait for its answer (at most 15 minutes)


def parse_args(raw: Mapping[str, Any] | None) -> Args:
    """pluginConfig args: configMap, label, timeoutSeconds (each optional); ValueError otherwise."""
    args = dict(raw or {})
    out = Args()
    config_map = args.pop("configMap", out.config_map)
    label = args.pop("label", out.label)
    timeout = args.pop("timeoutSeconds", out.timeout_seconds)
    if args:
        raise ValueError(f"unknown field(s): {', '.join(sorted(args))}")
    if not isinstance(config_map, str) or not config_map:
        raise ValueError("configMap: Invalid value: must be a ConfigMap name")
    if not isinstance(label, str) or not label:
        raise ValueError("label: Invalid value: must be a label key")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_PERMIT_TIMEOUT:
        raise ValueError(f"timeoutSeconds: Invalid value: {timeout!r}: must be in (0, {int(MAX_PERMIT_TIMEOUT)}]")
    return Args(config_map, label, float(timeout))


class ApprovalGate(PermitPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        # Asked for while being built: the scheduler watches ConfigMaps from its start on.
        informer = handle.shared_informer_factory.for_resource(CONFIGMAPS)
        self.config_maps: Lister = informer.lister()
        informer.add_event_handler(add_func=self._answered, update_func=lambda _old, new: self._answered(new))

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> ApprovalGate:
        return cls(parse_args(args), handle)

    # -- the answer ----------------------------------------------------------------------------
    def needs_approval(self, pod: PodInfo) -> bool:
        return pod.labels.get(self.args.label) == "true"

    def answer(self, pod: PodInfo) -> str:
        """"approved", "denied", or "" while nobody has answered."""
        cm = self.config_maps.get(self.args.config_map, pod.namespace)
        data = (cm or {}).get("data") or {}
        value = data.get(pod.name, "")
        return value if value in (APPROVED, DENIED) else ""

    def denied(self, pod: PodInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, f"denied in ConfigMap {pod.namespace}/{self.args.config_map}")

    # -- Permit --------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        if not self.needs_approval(pod):
            return None, 0.0
        answer = self.answer(pod)
        if answer == APPROVED:
            return None, 0.0
        if answer == DENIED:
            return self.denied(pod), 0.0
        self.handle.event_recorder.eventf(
            pod, None, "Normal", "WaitingForApproval", "Scheduling",
            f"{node_name} is held for the pod until {pod.name} is approved in ConfigMap "
            f"{pod.namespace}/{self.args.config_map}",
        )
        return Status(Code.WAIT, "waiting for approval"), self.args.timeout_seconds

    # -- the informer's handler: answers arrive ------------------------------------------------
    def _answered(self, cm: Mapping[str, Any]) -> None:
        meta = cm.get("metadata") or {}
        if meta.get("name") != self.args.config_map:
            return
        namespace = meta.get("namespace")

        def decide(wp: WaitingPod) -> None:
            pod = wp.pod
            if pod.namespace != namespace or self.name not in wp.get_pending_plugins():
                return
            answer = self.answer(pod)
            if answer == APPROVED:
                wp.allow(self.name)
            elif answer == DENIED:
                wp.reject(self.name, self.denied(pod).message)

        self.handle.iterate_over_waiting_pods(decide)

    # -- requeue: a denied pod is tried again when its answer changes --------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(CONFIGMAPS, ActionType.ADD | ActionType.UPDATE), self._hint)]

    def _hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        meta = (new or {}).get("metadata") or {}
        if meta.get("name") != self.args.config_map or meta.get("namespace") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self.answer(pod) == DENIED else QueueingHint.QUEUE
