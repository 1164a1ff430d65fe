"""The scheduler's view of the cluster: NodeInfos plus assumed pods (upstream backend/cache).

One writer (the watcher, or simulate) mutates the cache; each scheduling cycle calls
``update_snapshot`` which re-clones only the nodes whose info changed since the last call.

An assumed pod stays until the watch shows it bound (confirmed) or its binding fails
(forgotten), or it is deleted. It never expires: kube-scheduler has run with
durationToExpireAssumedPod = 0 since kubernetes#106361, because dropping an assumed pod whose
Binding succeeded while the watch lags frees its resources twice and overcommits the node.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from scheduler.framework.podgroupstate import PodGroupState, PodGroupStates, group_key
from scheduler.framework.snapshot import Snapshot, zone_key
from scheduler.model.kinds import Raw, metadata
from scheduler.model.node import NodeInfo, node_image_entries
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class _ImageState:
    """One image name across the cluster (upstream cache imageStates entry): the size the
    first node reporting it gave, and the nodes reporting it now."""

    size: int
    nodes: set[str]


@dataclass(slots=True)
class _PodState:
    pod: PodInfo
    node: str
    assumed: bool
    binding_finished: bool = False  # Binding returned; waiting for the watch to show it


class Cache:
    def __init__(self, generic_workload: bool = False) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        # Pod-group states, kept only with the GenericWorkload gate on (upstream cache.New).
        self.generic_workload = generic_workload
        self.pod_group_states: dict[str, PodGroupState] = {}
        self.pods: dict[str, _PodState] = {}  # by uid
        # nodeTree: zone -> node names in arrival order; zone order = first arrival.
        self._zones: dict[str, list[str]] = {}
        self._dirty: set[str] = set()  # node names whose pods/usage changed
        self._node_changed: set[str] = set()  # node names whose Node object changed
        self._list_changed = True
        self.image_states: dict[str, _ImageState] = {}

    # -- images ------------------------------------------------------------------------------
    def _add_node_images(self, name: str, raw: Raw) -> None:
        for image, size in node_image_entries(raw):
            st = self.image_states.get(image)
            if st is None:
                # The first report fixes the size while any node still has the image.
                self.image_states[image] = _ImageState(size, {name})
            else:
                st.nodes.add(name)

    def _remove_node_images(self, name: str, raw: Raw | None) -> None:
        for image, _ in node_image_entries(raw):
            st = self.image_states.get(image)
            if st is not None:
                st.nodes.discard(name)
                if not st.nodes:
                    del self.image_states[image]

    def _summarise_images(self, ni: NodeInfo) -> None:
        """The node's image summary as of now (upstream ImageStateSummary.Snapshot, taken when
        the node is cloned into the snapshot); nodes not re-cloned keep their older counts."""
        states = self.image_states
        new = {}
        for image in ni.image_sizes:
            st = states.get(image)
            if st is not None:
                new[image] = (st.size, len(st.nodes))
        # Keep the old object when nothing changed so the snapshot can tell cheaply.
        if new != ni.image_states:
            ni.image_states = new

    # -- nodes -------------------------------------------------------------------------------
    def add_node(self, raw: Raw) -> NodeInfo:
        name = str(metadata(raw).get("name", ""))
        ni = self.nodes.get(name)
        # Upstream re-clones a node into the snapshot whenever its Node object changes.
        self._dirty.add(name)
        if ni is None:
            ni = NodeInfo(raw)
            self.nodes[name] = ni
            self._add_node_images(name, raw)
            self._tree_add(ni)
        else:
            old_zone = zone_key(ni.labels)
            was_present = ni.node_present
            old_raw = ni.raw
            # Parsed first: a bad update raises ObjectError with the node and its images as they were.
            ni.set_node(raw)
            self._remove_node_images(name, old_raw)
            self._add_node_images(name, raw)
            ni.generation += 1
            if not was_present:
                self._tree_add(ni)
            elif zone_key(ni.labels) != old_zone:
                self._tree_remove(name, old_zone)
                self._tree_add(ni)
            else:
                self._node_changed.add(name)
                self._dirty.add(name)
        return ni

    update_node = add_node

    def remove_node(self, name: str) -> None:
        ni = self.nodes.get(name)
        if ni is None or not ni.node_present:
            return
        self._tree_remove(name, zone_key(ni.labels))
        self._remove_node_images(name, ni.raw)
        if ni.pods:
            # Pods still reference the node; keep an imaginary NodeInfo until they go (upstream).
            ni.raw = None
        else:
            del self.nodes[name]

    def _tree_add(self, ni: NodeInfo) -> None:
        self._zones.setdefault(zone_key(ni.labels), []).append(ni.name)
        self._list_changed = True

    def _tree_remove(self, name: str, zone: str) -> None:
        names = self._zones.get(zone)
        if names and name in names:
            names.remove(name)
            if not names:
                del self._zones[zone]
        self._list_changed = True

    def node_names_in_tree_order(self) -> list[str]:
        out: list[str] = []
        lists = list(self._zones.values())
        i = 0
        while True:
            added = False
            for lst in lists:
                if i < len(lst):
                    out.append(lst[i])
                    added = True
            if not added:
                return out
            i += 1

    # -- pods --------------------------------------------------------------------------------
    def _node_for(self, name: str) -> NodeInfo:
        ni = self.nodes.get(name)
        if ni is None:
            ni = NodeInfo(None, name=name)
            self.nodes[name] = ni
        return ni

    def _add_to_node(self, pod: PodInfo, node: str) -> None:
        self._node_for(node).add_pod(pod)
        self._dirty.add(node)

    def _remove_from_node(self, pod: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None:
            return
        ni.remove_pod(pod)
        self._dirty.add(node)
        if not ni.node_present and not ni.pods:
            del self.nodes[node]

    def add_pod(self, pod: PodInfo) -> None:
        """A pod the API server shows bound to a node (confirms an assumed pod).

        A pod that finished (Succeeded/Failed) frees its resources; a terminating pod (deletion
        timestamp set) still holds them until it is gone, as upstream."""
        if pod.terminal:
            self.remove_pod(pod.uid)
            return
        st = self.pods.get(pod.uid)
        if st is not None:
            if st.assumed and st.node != pod.node_name:
                log.warning("assumed_pod_bound_elsewhere", pod=pod.key, assumed=st.node, node=pod.node_name)
            self._remove_from_node(st.pod, st.node)
            self._group_delete(st.pod)
        self.pods[pod.uid] = _PodState(pod, pod.node_name, assumed=False)
        self._add_to_node(pod, pod.node_name)
        self.add_pod_group_member(pod)

    def update_pod(self, pod: PodInfo) -> None:
        self.add_pod(pod)

    def get_pod(self, uid: str) -> PodInfo | None:
        st = self.pods.get(uid)
        return st.pod if st is not None else None

    def node_of(self, uid: str) -> str | None:
        st = self.pods.get(uid)
        return st.node if st is not None else None

    def remove_pod(self, uid: str) -> None:
        st = self.pods.pop(uid, None)
        if st is not None:
            self._remove_from_node(st.pod, st.node)
            self._group_delete(st.pod)

    def assume_pod(self, pod: PodInfo, node: str) -> None:
        if pod.uid in self.pods:
            raise ValueError(f"pod {pod.key} is already in the cache")
        self.pods[pod.uid] = _PodState(pod, node, assumed=True)
        self._add_to_node(pod, node)
        if self._member(pod):
            gs = self._group_of(pod)
            if gs is None:
                gs = self._group_of(pod, create=True)
                assert gs is not None
                gs.all_pods[pod.uid] = pod
            gs.assume_pod(pod)

    def finish_binding(self, uid: str) -> None:
        st = self.pods.get(uid)
        if st is not None and st.assumed:
            st.binding_finished = True

    def confirm_pod(self, uid: str) -> None:
        """The assumed pod is known bound (simulate's stand-in for the watch event)."""
        st = self.pods.get(uid)
        if st is not None:
            st.assumed = False

    def forget_pod(self, uid: str) -> None:
        """The binding failed (or was cancelled): release what the assumption held; the pod is
        unscheduled again in its group."""
        st = self.pods.get(uid)
        if st is not None and st.assumed:
            self._forget(uid)

    def _forget(self, uid: str) -> None:
        st = self.pods.pop(uid)
        self._remove_from_node(st.pod, st.node)
        if self._member(st.pod):
            gs = self._group_of(st.pod)
            if gs is None:
                log.error("pod_group_state_missing_on_forget", pod=st.pod.key)
            else:
                gs.forget_pod(uid)

    def forget_all_assumed(self) -> int:
        """Lease lost: every assumption is void. Returns how many were dropped."""
        uids = [uid for uid, st in self.pods.items() if st.assumed]
        for uid in uids:
            self._forget(uid)
        return len(uids)

    # -- pod groups (upstream cache AddPodGroupMember and friends) ----------------------------
    def _member(self, pod: PodInfo) -> bool:
        return self.generic_workload and pod.scheduling_group is not None

    def _group_of(self, pod: PodInfo, create: bool = False) -> PodGroupState | None:
        key = group_key(pod.namespace, pod.scheduling_group or "")
        gs = self.pod_group_states.get(key)
        if gs is None and create:
            gs = self.pod_group_states[key] = PodGroupState()
        return gs

    def add_pod_group_member(self, pod: PodInfo) -> None:
        """A pod of a group (unscheduled, from the queue's side, or bound) joins its group's state."""
        if self._member(pod):
            gs = self._group_of(pod, create=True)
            assert gs is not None
            gs.add_pod(pod)

    def update_pod_group_member(self, old: PodInfo | None, new: PodInfo) -> None:
        if not self._member(new):
            return
        gs = self._group_of(new)
        if gs is None:
            log.error("pod_group_state_missing_on_update", pod=new.key)
            return
        gs.update_pod(old, new)

    def remove_pod_group_member(self, pod: PodInfo) -> None:
        self._group_delete(pod)

    def _group_delete(self, pod: PodInfo) -> None:
        gs = self._group_of(pod) if self._member(pod) else None
        if gs is None:
            return
        gs.delete_pod(pod.uid)
        if gs.empty():
            del self.pod_group_states[group_key(pod.namespace, pod.scheduling_group or "")]

    def pod_group_state_lister(self) -> PodGroupStates:
        """The live states (upstream PodGroupManager.PodGroupStates)."""
        return PodGroupStates(self.pod_group_states)

    def is_assumed(self, uid: str) -> bool:
        st = self.pods.get(uid)
        return st is not None and st.assumed

    def pod_count(self) -> int:
        return len(self.pods)

    def assumed_pods(self) -> list[PodInfo]:
        return [st.pod for st in self.pods.values() if st.assumed]

    def node_count(self) -> int:
        return sum(1 for ni in self.nodes.values() if ni.node_present)

    def sizes(self) -> dict[str, int]:
        """For scheduler_cache_size (read at scrape time, not on the hot path)."""
        assumed = sum(1 for st in self.pods.values() if st.assumed)
        return {"nodes": self.node_count(), "pods": len(self.pods), "assumed_pods": assumed}

    # -- snapshot ----------------------------------------------------------------------------
    def update_snapshot(self, snap: Snapshot) -> None:
        if snap.placement_idx is not None:
            log.error("update_snapshot_with_placement")
            snap.forget_placement()
        if snap.assumed_pods:
            log.error("snapshot_had_assumed_pods", count=snap.forget_all_assumed())
        if self.generic_workload or snap.pod_group_states:
            self._update_pod_group_snapshot(snap)
        if self._list_changed:
            ordered = []
            for n in self.node_names_in_tree_order():
                info = self.nodes[n]
                if info.image_states is None or n in self._dirty:
                    self._summarise_images(info)
                ordered.append(info.clone())
            snap.set_nodes(ordered)
            self._list_changed = False
        else:
            for name in self._dirty:
                ni = self.nodes.get(name)
                if ni is None or not ni.node_present or name not in snap.node_map:
                    continue
                self._summarise_images(ni)
                snap.replace_node(ni.clone(), name in self._node_changed)
        self._dirty.clear()
        self._node_changed.clear()
        snap.generation += 1

    def _update_pod_group_snapshot(self, snap: Snapshot) -> None:
        """Copy the groups whose generation moved; drop the ones the cache no longer has."""
        copies = snap.pod_group_states
        for key in [k for k in copies if k not in self.pod_group_states]:
            del copies[key]
        for key, gs in self.pod_group_states.items():
            have = copies.get(key)
            if have is None or have.generation != gs.generation:
                copies[key] = gs.clone()
