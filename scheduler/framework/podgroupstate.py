"""The scheduler's runtime view of each pod group (upstream backend/cache/podgroupstate.go): which
of its pods the scheduler knows, and which of them are unscheduled, assumed or assigned.

The cache keeps one ``PodGroupState`` per group (GenericWorkload on); each snapshot holds a copy,
re-copied only when the group's generation moved, which the pod-group cycle changes as it
assumes and forgets pods in the snapshot. GangScheduling's PreEnqueue and Permit, the placement
plugins and the cycle read it through ``PodGroupStates`` (upstream PodGroupStateLister).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from scheduler.model.pod import PodInfo

# One counter for every group, so a group deleted and re-created never reuses a generation.
_generations = itertools.count(1)


class PodGroupStateNotFound(LookupError):
    """No pod of the group is known to the scheduler."""


class PodGroupState:
    __slots__ = ("all_pods", "assigned", "assumed", "generation", "unscheduled")

    def __init__(self) -> None:
        self.generation = 0
        self.all_pods: dict[str, PodInfo] = {}  # uid -> pod, in arrival order
        self.unscheduled: dict[str, None] = {}  # uids neither assumed nor assigned (ordered set)
        self.assumed: dict[str, PodInfo] = {}  # uid -> the assumed copy (its node set)
        self.assigned: dict[str, None] = {}  # uids bound to a node

    def _bump(self) -> None:
        self.generation = next(_generations)

    # -- changes -----------------------------------------------------------------------------
    def add_pod(self, pod: PodInfo) -> None:
        self._bump()
        self.all_pods[pod.uid] = pod
        if pod.node_name:
            self.assigned[pod.uid] = None
        else:
            self.unscheduled[pod.uid] = None

    def update_pod(self, old: PodInfo | None, new: PodInfo) -> None:
        self._bump()
        self.all_pods[new.uid] = new
        if (old is None or not old.node_name) and new.node_name:
            self.assigned[new.uid] = None
            self.unscheduled.pop(new.uid, None)
            self.assumed.pop(new.uid, None)

    def delete_pod(self, uid: str) -> None:
        self._bump()
        self.all_pods.pop(uid, None)
        self.unscheduled.pop(uid, None)
        self.assumed.pop(uid, None)
        self.assigned.pop(uid, None)

    def assume_pod(self, pod: PodInfo) -> None:
        stored = self.all_pods.get(pod.uid)
        if stored is None:  # deleted from the cluster while being scheduled
            return
        self._bump()
        if stored.node_name:
            self.assigned[pod.uid] = None
        else:
            self.assumed[pod.uid] = pod
        self.unscheduled.pop(pod.uid, None)

    def forget_pod(self, uid: str) -> None:
        stored = self.all_pods.get(uid)
        if stored is None:
            return
        self._bump()
        self.assumed.pop(uid, None)
        if stored.node_name:
            self.assigned[uid] = None
        else:
            self.unscheduled[uid] = None

    # -- reads (upstream PodGroupState) ------------------------------------------------------
    def all_pods_count(self) -> int:
        return len(self.all_pods)

    def unscheduled_pods(self) -> dict[str, PodInfo]:
        """name -> pod, as upstream's map for PodActivator.Activate."""
        return {self.all_pods[uid].name: self.all_pods[uid] for uid in self.unscheduled}

    def assumed_pods(self) -> set[str]:
        return set(self.assumed)

    def assigned_pods(self) -> set[str]:
        return set(self.assigned)

    def scheduled_pods(self) -> list[PodInfo]:
        """Assigned then assumed pods (upstream scheduledPods)."""
        return [self.all_pods[uid] for uid in self.assigned] + list(self.assumed.values())

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.assigned)

    def empty(self) -> bool:
        return not self.all_pods

    def clone(self) -> PodGroupState:
        c = PodGroupState()
        c.generation = self.generation
        c.all_pods = dict(self.all_pods)
        c.unscheduled = dict(self.unscheduled)
        c.assumed = dict(self.assumed)
        c.assigned = dict(self.assigned)
        return c


def group_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


class PodGroupStates:
    """Read access to the states of every group (upstream PodGroupStateLister), over the cache's
    live states or a snapshot's copies."""

    __slots__ = ("states",)

    def __init__(self, states: Mapping[str, PodGroupState]) -> None:
        self.states = states

    def get(self, namespace: str, name: str) -> PodGroupState:
        st = self.states.get(group_key(namespace, name))
        if st is None:
            raise PodGroupStateNotFound(f"pod group state not found for pod group {namespace}/{name}")
        return st
