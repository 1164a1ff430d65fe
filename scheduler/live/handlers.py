"""Watch events into the cache, the listers and the queue (upstream eventhandlers.go).

The watcher calls one handler per object event. A bound pod goes to the cache (confirming our
own assumption, or counting another scheduler's pod); an unbound pod of one of our profiles
goes to the queue. Every change that may make a waiting pod schedulable moves pods with a
``ClusterEvent``, which the queue matches against what the plugins registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.backend.cache import Cache
from scheduler.backend.queue import SchedulingQueue
from scheduler.framework.events import ActionType, ClusterEvent, assigned_pod_update_action, node_update_action
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.live.kube.recorder import Recorder
from scheduler.model.cluster import NamespaceInfo, SelectorOwner
from scheduler.model.kinds import DRA_KINDS, Raw, metadata
from scheduler.model.pdb import PodDisruptionBudget
from scheduler.model.pod import PodInfo


class EventHandlers:
    """The handlers the watcher calls (its ``Handlers`` protocol). The loop's ``Scheduler``
    extends this class, so both work on one cache, one queue and one view of pending pods."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        cache: Cache,
        listers: Listers,
        queue: SchedulingQueue,
        recorder: Recorder,
    ) -> None:
        self.frameworks = frameworks
        self.cache = cache
        self.listers = listers
        self.queue = queue
        self.recorder = recorder
        # Last seen version of every pending pod of ours, for update diffs.
        self._pending: dict[str, PodInfo] = {}
        # Storage kind -> the actions plugins registered for it (read once from the queue).
        self._registered_actions: dict[str, ActionType] = {}
        # The NodeDeclaredFeatures gate (one set of gates for every profile).
        self._declared_features = all(fw.handle.features.enable_node_declared_features for fw in frameworks.values())

    def on_pod(self, etype: str | None, raw: Raw) -> None:
        if etype == "DELETED":
            self.pod_deleted(raw)
            return
        pod = PodInfo(raw)
        uid = pod.uid
        if pod.node_name:
            self._pending.pop(uid, None)
            self.queue.delete(uid)  # bound: no longer ours to schedule
            old = self.cache.get_pod(uid)
            was_assumed = self.cache.is_assumed(uid)
            if pod.terminal:
                if old is not None:
                    self.cache.remove_pod(uid)
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)
                return
            self.cache.add_pod(pod)
            if old is None or was_assumed:
                self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.ADD), None, pod)
            else:
                action = assigned_pod_update_action(old, pod)
                if action:
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", action), old, pod)
            return
        if pod.scheduler_name not in self.frameworks:
            return
        if pod.terminal:
            self._pending.pop(uid, None)
            self.queue.delete(uid)
            return
        if self.cache.is_assumed(uid):
            # Our own binding is in flight; a stale unbound version must not requeue it.
            prev = self._pending.get(uid)
            if pod.deleting and (prev is None or not prev.deleting):
                self._pending[uid] = pod
                self.assumed_pod_deleted(uid)
            return
        prev = self._pending.get(uid)
        self._pending[uid] = pod
        if prev is None and uid not in self.queue:
            self.queue.add(pod)
        else:
            self.queue.update(prev, pod)

    def pod_deleted(self, raw: Raw) -> None:
        meta = metadata(raw)
        uid = str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}")
        self._pending.pop(uid, None)
        self.queue.delete(uid)
        self.recorder.forget_pod(uid)
        if self.cache.is_assumed(uid):
            self.assumed_pod_deleted(uid)
            return
        old = self.cache.get_pod(uid)
        if old is not None:
            self.cache.remove_pod(uid)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)

    def assumed_pod_deleted(self, uid: str) -> None:
        """An assumed pod is being deleted (upstream handleAssumedPodDeletion): waiting at
        Permit, it is rejected and its binding cycle cleans up; past Permit its room is freed
        here. Either way the others may fit now."""
        old = self.cache.get_pod(uid)
        if old is None:
            return
        fw = next(iter(self.frameworks.values()), None)  # one map of waiting pods for all
        if fw is None or not fw.reject_waiting_pod(uid):
            self.cache.forget_pod(uid)
        self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)

    def on_node(self, etype: str | None, raw: Raw) -> None:
        name = str(metadata(raw).get("name", ""))
        existing = self.cache.nodes.get(name)
        if etype == "DELETED":
            self.cache.remove_node(name)
            return
        old = existing.clone() if existing is not None and existing.node_present else None
        new = self.cache.add_node(raw)
        if old is None:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, new)
            return
        action = node_update_action(old, new, self._declared_features)
        if action:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", action), old, new)

    def on_namespace(self, etype: str | None, raw: Raw) -> None:
        ns = NamespaceInfo.parse(raw)
        if etype == "DELETED":
            self.listers.namespaces.pop(ns.name, None)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.DELETE), ns, None)
            return
        old = self.listers.namespaces.get(ns.name)
        self.listers.namespaces[ns.name] = ns
        if old is None:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.ADD), None, ns)
        elif old.labels != ns.labels:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Namespace", ActionType.UPDATE), old, ns)

    def on_owner(self, kind: str, etype: str | None, raw: Raw) -> None:
        """Services, ReplicaSets, StatefulSets, ReplicationControllers (default spreading's selectors)."""
        raw = dict(raw)
        raw.setdefault("kind", kind)
        o = SelectorOwner.parse(raw)
        key = f"{o.namespace}/{o.name}"
        byname = self.listers.owners.setdefault(kind, {})
        if etype == "DELETED":
            old = byname.pop(key, None)
            self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, ActionType.DELETE), old, None)
            return
        old = byname.get(key)
        byname[key] = o
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, action), old, o)

    def on_storage(self, kind: str, etype: str | None, raw: Raw) -> None:
        """PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
        VolumeAttachments: the volume plugins' store first, then the pods the change may help,
        with the stored (old, new) for the hints (upstream buildEvtResHandler: only for actions
        some plugin registered)."""
        store = self.listers.dra if kind in DRA_KINDS else self.listers.storage
        change = store.on_event(kind, etype, raw)
        if change is None:
            return
        old, new = change
        self._moved_by(kind, old, new)

    def _moved_by(self, kind: str, old: Any, new: Any) -> None:
        """Move the pods an add, update or delete of ``kind`` may help, if some plugin
        registered that action (``old``/``new`` None on the missing side)."""
        action, verb = (
            (ActionType.DELETE, "Delete") if new is None
            else (ActionType.ADD, "Add") if old is None
            else (ActionType.UPDATE, "Update")
        )
        registered = self._registered_actions.get(kind)
        if registered is None:
            registered = self._registered_actions[kind] = self.queue.registered_actions(kind)
        if registered & action:
            self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, action, f"{kind}{verb}"), old, new)

    def on_resource(self, resource: str, etype: str | None, raw: Raw) -> None:
        """An object of a kind plugins named (``<plural>.<version>.<group>``): into its informer
        (the plugins' handlers run there), then the pods the plugins' registered events may help
        (upstream's dynamic-informer handlers)."""
        inf = self.listers.informers.get(resource)
        if inf is None:
            return
        change = inf.on_event(etype, raw)
        if change is None:
            return
        old, new = change
        self._moved_by(resource, old, new)

    def on_pdb(self, etype: str | None, raw: Raw) -> None:
        """PodDisruptionBudgets, for DefaultPreemption (no plugin requeues pods on them)."""
        pdb = PodDisruptionBudget.parse(raw)
        if etype == "DELETED":
            self.listers.pdbs.pop(pdb.key, None)
        else:
            self.listers.pdbs[pdb.key] = pdb
