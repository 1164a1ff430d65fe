"""Watch events into the cache, the listers and the queue (upstream eventhandlers.go).

The watcher calls one handler per object event. A bound pod goes to the cache (confirming our
own assumption, or counting another scheduler's pod); an unbound pod of one of our profiles
goes to the queue. Every change that may make a waiting pod schedulable moves pods with a
``ClusterEvent``, which the queue matches against what the plugins registered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
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
from scheduler.model.pod import PodInfo, pod_uid
from scheduler.model.podgroup import PodGroup
from scheduler.plugins.dynamicresources import celcache

# Upstream's labels of the pod events whose handlers it times (framework/events.go).
ASSIGNED_ADD, ASSIGNED_UPDATE, ASSIGNED_DELETE = "AssignedPodAdd", "AssignedPodUpdate", "AssignedPodDelete"
UNSCHEDULED_ADD, UNSCHEDULED_UPDATE, UNSCHEDULED_DELETE = (
    "UnschedulablePodAdd", "UnschedulablePodUpdate", "UnschedulablePodDelete")


def _single(ev: ClusterEvent) -> list[ClusterEvent]:
    """Upstream sends one event per changed property: a combined action, one per flag."""
    flags = [ActionType(f) for f in ActionType if f & ev.action and f.bit_count() == 1]
    return [ClusterEvent(ev.resource, f, ev.label) for f in flags] if len(flags) > 1 else [ev]


# Objects holding device selectors (CEL): one the interpreter must evaluate loads it ahead.
_CEL_USERS = frozenset({"DeviceClass", "ResourceClaim"})


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
        # Pending pods of other schedulers, as watched: only /metrics/resources reads them
        # (upstream lists every pod of its informer there).
        self._foreign: dict[str, Raw] = {}
        # Storage kind -> the actions plugins registered for it (read once from the queue).
        self._registered_actions: dict[str, ActionType] = {}
        # Metrics: one watch event handled, as the cluster events (or their labels) it made and
        # the seconds it took (scheduler_event_handling_duration_seconds).
        self.observe_event: Callable[[Iterable[ClusterEvent | str], float], None] | None = None
        # The NodeDeclaredFeatures gate (one set of gates for every profile).
        self._declared_features = all(fw.handle.features.enable_node_declared_features for fw in frameworks.values())
        # GangScheduling gate: every new pending pod may complete a gang (upstream moves pods).
        self._gang = any(fw.handle.features.enable_gang_scheduling for fw in frameworks.values())

    def informer_pods(self) -> list[Raw]:
        """Every pod the pod informer would hold: bound and assumed (the cache), pending ours and
        others' (an assumed pod as last watched, still unbound), for /metrics/resources."""
        out: dict[str, Raw] = dict(self._foreign)
        for uid, pod in self._pending.items():
            out[uid] = pod.raw
        for uid, st in self.cache.pods.items():
            out.setdefault(uid, st.pod.raw)
        return list(out.values())

    def _handled(self, started: float, *events: ClusterEvent | str) -> None:
        if self.observe_event is not None and events:
            self.observe_event(events, time.perf_counter() - started)

    def _move(self, ev: ClusterEvent, old: object, new: object, started: float, *labels: str) -> None:
        """Requeue the pods ``ev`` may help and time the handler under its label(s)."""
        self.queue.move_all_to_active_or_backoff(ev, old, new)
        self._handled(started, *labels, *_single(ev))

    def on_pod(self, etype: str | None, raw: Raw) -> None:
        started = time.perf_counter()
        if etype == "DELETED":
            self.pod_deleted(raw, started)
            return
        # Most updates of a pod (its binding, its kubelet's status) change nothing parsed.
        uid = pod_uid(raw)
        pod = PodInfo.updated(self.cache.get_pod(uid) or self._pending.get(uid), raw)
        if pod.node_name:
            self._pending.pop(uid, None)
            self._foreign.pop(uid, None)
            self.queue.delete(uid)  # bound: no longer ours to schedule
            old = self.cache.get_pod(uid)
            was_assumed = self.cache.is_assumed(uid)
            if pod.terminal:
                if old is not None:
                    self.cache.remove_pod(uid)
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)
                    self._handled(started, ASSIGNED_DELETE)
                return
            self.cache.add_pod(pod)
            if old is None or was_assumed:
                self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.ADD), None, pod)
                self._handled(started, ASSIGNED_ADD)
                return
            action = assigned_pod_update_action(old, pod)
            if action:
                self._move(ClusterEvent("AssignedPod", action), old, pod, started, ASSIGNED_UPDATE)
            else:
                self._handled(started, ASSIGNED_UPDATE)
            return
        if pod.scheduler_name not in self.frameworks:
            if pod.terminal:
                self._foreign.pop(uid, None)
            else:
                self._foreign[uid] = raw
            return
        if pod.terminal:
            self._pending.pop(uid, None)
            self.queue.delete(uid)
            self._handled(started, UNSCHEDULED_DELETE)
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
            # A pod of a PodGroup joins its group's state first (GangScheduling's PreEnqueue counts it).
            self.cache.add_pod_group_member(pod)
            self.queue.add(pod)
            if self._gang:
                self.queue.move_all_to_active_or_backoff(
                    ClusterEvent("UnscheduledPod", ActionType.ADD, "UnschedulablePodAdd"), None, pod
                )
            self._handled(started, UNSCHEDULED_ADD)
        else:
            self.cache.update_pod_group_member(prev, pod)
            self.queue.update(prev, pod)
            self._handled(started, UNSCHEDULED_UPDATE)

    def pod_deleted(self, raw: Raw, started: float | None = None) -> None:
        started = time.perf_counter() if started is None else started
        meta = metadata(raw)
        uid = str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}")
        prev = self._pending.pop(uid, None)
        ours = prev is not None
        if prev is not None:
            self.cache.remove_pod_group_member(prev)
        self._foreign.pop(uid, None)
        self.queue.delete(uid)
        self.recorder.forget_pod(uid)
        if self.cache.is_assumed(uid):
            self.assumed_pod_deleted(uid)
            return
        old = self.cache.get_pod(uid)
        if old is not None:
            self.cache.remove_pod(uid)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("AssignedPod", ActionType.DELETE), old, None)
            self._handled(started, ASSIGNED_DELETE)
        elif ours:
            self._handled(started, UNSCHEDULED_DELETE)

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
        started = time.perf_counter()
        name = str(metadata(raw).get("name", ""))
        existing = self.cache.nodes.get(name)
        if etype == "DELETED":
            self.cache.remove_node(name)
            self._handled(started, ClusterEvent("Node", ActionType.DELETE))
            return
        old = existing.clone() if existing is not None and existing.node_present else None
        new = self.cache.add_node(raw)
        if old is None:
            self._move(ClusterEvent("Node", ActionType.ADD), None, new, started)
            return
        action = node_update_action(old, new, self._declared_features)
        if action:
            self._move(ClusterEvent("Node", action), old, new, started)

    def on_namespace(self, etype: str | None, raw: Raw) -> None:
        started = time.perf_counter()
        ns = NamespaceInfo.parse(raw)
        if etype == "DELETED":
            self.listers.namespaces.pop(ns.name, None)
            self._move(ClusterEvent("Namespace", ActionType.DELETE), ns, None, started)
            return
        old = self.listers.namespaces.get(ns.name)
        self.listers.namespaces[ns.name] = ns
        if old is None:
            self._move(ClusterEvent("Namespace", ActionType.ADD), None, ns, started)
        elif old.labels != ns.labels:
            self._move(ClusterEvent("Namespace", ActionType.UPDATE), old, ns, started)

    def on_owner(self, kind: str, etype: str | None, raw: Raw) -> None:
        """Services, ReplicaSets, StatefulSets, ReplicationControllers (default spreading's selectors)."""
        started = time.perf_counter()
        raw = dict(raw)
        raw.setdefault("kind", kind)
        o = SelectorOwner.parse(raw)
        key = f"{o.namespace}/{o.name}"
        byname = self.listers.owners.setdefault(kind, {})
        if etype == "DELETED":
            old = byname.pop(key, None)
            self._move(ClusterEvent(kind, ActionType.DELETE), old, None, started)
            return
        old = byname.get(key)
        byname[key] = o
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._move(ClusterEvent(kind, action), old, o, started)

    def on_storage(self, kind: str, etype: str | None, raw: Raw) -> None:
        """PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
        VolumeAttachments: the volume plugins' store first, then the pods the change may help,
        with the stored (old, new) for the hints (upstream buildEvtResHandler: only for actions
        some plugin registered)."""
        started = time.perf_counter()
        store = self.listers.dra if kind in DRA_KINDS else self.listers.storage
        change = store.on_event(kind, etype, raw)
        if change is None:
            return
        old, new = change
        if kind in _CEL_USERS and new is not None:
            celcache.preload_for(raw.get("spec"))  # CEL in use: its evaluator loads off the loop, not in a pod's cycle
        self._moved_by(kind, old, new, started)

    def _moved_by(self, kind: str, old: Any, new: Any, started: float, label: str = "") -> None:
        """Move the pods an add, update or delete of ``kind`` may help, if some plugin
        registered that action (``old``/``new`` None on the missing side); ``label``: the
        event's resource as upstream names it in metrics, if not ``kind``."""
        action, verb = (
            (ActionType.DELETE, "Delete") if new is None
            else (ActionType.ADD, "Add") if old is None
            else (ActionType.UPDATE, "Update")
        )
        registered = self._registered_actions.get(kind)
        if registered is None:
            registered = self._registered_actions[kind] = self.queue.registered_actions(kind)
        if registered & action:
            self._move(ClusterEvent(kind, action, f"{label or kind}{verb}"), old, new, started)

    def on_resource(self, resource: str, etype: str | None, raw: Raw) -> None:
        """An object of a kind plugins named (``<plural>.<version>.<group>``): into its informer
        (the plugins' handlers run there), then the pods the plugins' registered events may help
        (upstream's dynamic-informer handlers)."""
        started = time.perf_counter()
        inf = self.listers.informers.get(resource)
        if inf is None:
            return
        change = inf.on_event(etype, raw)
        if change is None:
            return
        old, new = change
        self._moved_by(resource, old, new, started)

    def on_pod_group(self, etype: str | None, raw: Raw) -> None:
        """PodGroups (scheduling.k8s.io/v1alpha2, GenericWorkload): into the lister, then the
        pods the plugins' registered events may help (GangScheduling: a PodGroup added)."""
        started = time.perf_counter()
        pg = PodGroup.parse(raw)
        if etype == "DELETED":
            old = self.listers.pod_groups.pop(pg.key, None)
            self._moved_by("PodGroup", old, None, started, "scheduling.k8s.io/PodGroup")
            return
        old = self.listers.pod_groups.get(pg.key)
        self.listers.pod_groups[pg.key] = pg
        self._moved_by("PodGroup", old, pg, started, "scheduling.k8s.io/PodGroup")

    def on_pdb(self, etype: str | None, raw: Raw) -> None:
        """PodDisruptionBudgets, for DefaultPreemption (no plugin requeues pods on them)."""
        pdb = PodDisruptionBudget.parse(raw)
        if etype == "DELETED":
            self.listers.pdbs.pop(pdb.key, None)
        else:
            self.listers.pdbs[pdb.key] = pdb
