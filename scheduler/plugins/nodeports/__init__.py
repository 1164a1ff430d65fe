"""NodePorts (upstream plugins/nodeports/node_ports.go, framework HostPortInfo)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreFilterResult, SignPlugin
from scheduler.framework.signers import HOST_PORTS_SIGNER, SignFragment, host_ports_signer
from scheduler.framework.status import SKIP, Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import HostPort, PodInfo
from scheduler.plugins.helper import as_pod

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "NodePorts"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_REJECT = Status(Code.UNSCHEDULABLE, ERR_REASON)
# Only this address is a wildcard to the scheduler ("::" is compared literally, as upstream).
BIND_ALL_HOST_IP = "0.0.0.0"

UsedPorts = Mapping[tuple[str, int], set[str]]


class _PreFilterState:
    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports


def check_conflict(used: UsedPorts, host_ip: str, protocol: str, port: int) -> bool:
    """HostPortInfo.CheckConflict: same protocol+port, and the same IP or either side 0.0.0.0."""
    if port <= 0:
        return False
    ips = used.get((protocol or "TCP", port))
    if not ips:
        return False
    ip = host_ip or BIND_ALL_HOST_IP
    if ip == BIND_ALL_HOST_IP:
        return True
    return BIND_ALL_HOST_IP in ips or ip in ips


def fits_ports(want: Sequence[HostPort], used: UsedPorts) -> bool:
    if not used:
        return True
    return all(not check_conflict(used, hp.host_ip, hp.protocol, hp.port) for hp in want)


def _used_ports_of(pod: PodInfo) -> dict[tuple[str, int], set[str]]:
    # The HostPortInfo a node would hold with only this pod on it.
    used: dict[tuple[str, int], set[str]] = {}
    for hp in pod.host_ports:
        used.setdefault((hp.protocol or "TCP", hp.port), set()).add(hp.host_ip or BIND_ALL_HOST_IP)
    return used


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    """Rejects nodes where a host port the pod asks for is already taken."""

    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream NodePorts.SignPod: the host ports."""
        return [(HOST_PORTS_SIGNER, host_ports_signer(pod))]

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> PreFilterResult | Status | None:
        if not pod.host_ports:
            return SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(pod.host_ports))
        return None

    def _wanted(self, state: CycleState) -> tuple[HostPort, ...]:
        return state.read(PRE_FILTER_KEY, _PreFilterState).ports

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            want = self._wanted(state)
        except StatusError as e:
            return e.status
        return None if fits_ports(want, node.used_ports) else _REJECT

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        try:
            want = self._wanted(state)
        except StatusError:
            return None  # let the per-node form report the error
        infos = snapshot.node_infos
        out = np.ones(len(idx), dtype=bool)
        for j, i in enumerate(np.asarray(idx).tolist()):
            used = infos[i].used_ports
            if used and not fits_ports(want, used):
                out[j] = False
        return out

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so only deletions of assigned pods can free one.
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.DELETE), self._after_pod_deleted),
            # No hint: a new node is always worth a retry.
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
        ]

    @staticmethod
    def _after_pod_deleted(pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        deleted = as_pod(old_obj)
        if deleted is None or (not deleted.node_name and not deleted.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        if not deleted.host_ports:
            return QueueingHint.QUEUE_SKIP
        if fits_ports(pod.host_ports, _used_ports_of(deleted)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
