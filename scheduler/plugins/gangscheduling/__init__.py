"""GangScheduling (upstream plugins/gangscheduling/gangscheduling.go, GangScheduling gate).

All-or-nothing for the pods of a PodGroup whose policy is Gang: PreEnqueue keeps them out of
the active queue until the group's PodGroup exists and ``minCount`` of its pods are known;
Permit makes each assumed pod wait (5 minutes) until ``minCount`` pods of the group are
scheduled, and the pod that completes the quorum allows the waiting ones. In the pod-group cycle
Permit counts the snapshot's assumptions; elsewhere the cache's.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, PermitPlugin, PreEnqueuePlugin
from scheduler.framework.podgroupstate import PodGroupStateNotFound, PodGroupStates
from scheduler.framework.status import Code, Status, go_quote, unresolvable
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.model.storage import NotFoundError
from scheduler.plugins.helper import HandlePlugin, as_pod, matching_scheduling_group

NAME = "GangScheduling"
# permitTimeoutDuration: how long gang pods wait at Permit for the quorum.
PERMIT_TIMEOUT = 5 * 60.0
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def waiting_for_pod_group(name: str) -> str:
    # Upstream's text, its "pods's" included.
    return f"waiting for pods's pod group {go_quote(name)} to appear in scheduling queue"


class GangScheduling(HandlePlugin, PreEnqueuePlugin, PermitPlugin, EnqueueExtensions):
    name = NAME

    def _live_states(self) -> PodGroupStates:
        return self.handle.pod_group_manager or PodGroupStates({})

    # -- EnqueueExtensions -------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new pod may be the one that completes the gang's minCount (the scheduling group
            # of a pod never changes, so pod updates do not matter).
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD), self.is_schedulable_after_pod_added),
            # The PodGroup appearing may release its waiting pods (PodGroups are immutable).
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.ADD), self.is_schedulable_after_pod_group_added),
        ]

    @staticmethod
    def is_schedulable_after_pod_added(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        added = as_pod(new_obj)
        if added is None or not matching_scheduling_group(pod, added):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_pod_group_added(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        pg = new_obj if isinstance(new_obj, PodGroup) else PodGroup.parse(new_obj)
        if pod.scheduling_group is None or pod.namespace != pg.namespace or pod.scheduling_group != pg.name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- PreEnqueue --------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        group = pod.scheduling_group
        if group is None:
            return None
        try:
            pg = self.handle.listers.get_pod_group(pod.namespace, group)
        except NotFoundError:
            # Unschedulable until its PodGroup object is created.
            return unresolvable(waiting_for_pod_group(group))
        if pg.gang_min_count is None:
            return None
        try:
            st = self._live_states().get(pod.namespace, group)
        except PodGroupStateNotFound as exc:
            return Status(Code.ERROR, str(exc), err=exc)
        if st.all_pods_count() < pg.gang_min_count:
            return unresolvable(WAITING_FOR_QUORUM)
        return None

    # -- Permit ------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        group = pod.scheduling_group
        if group is None:
            return None, 0.0
        try:
            pg = self.handle.listers.get_pod_group(pod.namespace, group)
        except NotFoundError as exc:
            # The group was removed (or another error): retried when it is added again.
            return Status(Code.ERROR, f"failed to get podGroup {pod.namespace}/{group}: {exc}", err=exc), 0.0
        if pg.gang_min_count is None:
            return None, 0.0
        # The pod-group cycle counts what it assumed in the snapshot; the binding side, the cache.
        lister = (
            self.handle.snapshot.pod_group_state_lister()
            if state.is_pod_group_scheduling_cycle()
            else self._live_states()
        )
        try:
            st = lister.get(pod.namespace, group)
        except PodGroupStateNotFound as exc:
            return Status(Code.ERROR, str(exc), err=exc), 0.0
        if st.scheduled_pods_count() < pg.gang_min_count:
            # Wake the group's unscheduled pods in case they waited for this one.
            self.handle.activate(st.unscheduled_pods())
            return Status(Code.WAIT, WAITING_AT_PERMIT), PERMIT_TIMEOUT
        for uid in st.assumed_pods():
            wp = self.handle.get_waiting_pod(uid)
            if wp is not None:
                wp.allow(NAME)
        return None, 0.0
