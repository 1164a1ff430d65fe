"""Pods nominated to nodes by preemption (upstream backend/queue/nominator.go).

A nominated pod waits for its victims to go; meanwhile Filter counts it on its nominated
node for every pod of lower or equal priority (``Framework.run_filter_with_nominated_pods``),
so they cannot take the room it made. The queue keeps this up to date as pods are added,
updated, fail, get assumed or deleted; it stores the latest version of each pod.
"""

from __future__ import annotations

from scheduler.model.pod import PodInfo

# Nominating modes (upstream NominatingMode): override sets or clears, noop keeps the pod's own.
OVERRIDE = "override"
NOOP = "noop"


class PodNominator:
    __slots__ = ("_by_node", "_node_of")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: PodInfo, mode: str = NOOP, node: str = "") -> None:
        """Upstream addNominatedPod: ``noop`` uses the pod's status.nominatedNodeName."""
        self.delete(pod.uid)
        name = node if mode == OVERRIDE else pod.nominated_node_name
        if not name or pod.node_name:
            return  # nothing to hold, or already bound
        self._node_of[pod.uid] = name
        self._by_node.setdefault(name, {})[pod.uid] = pod

    def update(self, old: PodInfo | None, new: PodInfo) -> None:
        """Upstream UpdateNominatedPod: an update that carries no nomination keeps the one the
        scheduler made (the status patch may not have arrived yet)."""
        kept = self._node_of.get(new.uid)
        self.delete(new.uid)
        if (old is None or not old.nominated_node_name) and not new.nominated_node_name and kept:
            self.add(new, OVERRIDE, kept)
        else:
            self.add(new, NOOP)

    def refresh(self, pod: PodInfo) -> None:
        """A newer version of a nominated pod (priority, requests): keep its nomination."""
        node = self._node_of.get(pod.uid)
        if node is not None:
            self._by_node[node][pod.uid] = pod

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[node]

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        pods = self._by_node.get(node)
        return list(pods.values()) if pods else []

    def nominated_nodes(self) -> dict[str, dict[str, PodInfo]]:
        return self._by_node

    def __len__(self) -> int:
        return len(self._node_of)
