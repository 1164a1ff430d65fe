"""Scheduler extenders as the framework sees them (upstream kube-scheduler framework/extender.go
and the extender/v1 value types): an external process that filters, scores, trims preemption
victims or binds, asked by the scheduling algorithm where upstream asks it.

Only the interface lives here. The algorithm (core/algorithm.py) and preemption call it; the
HTTP client that speaks the extender/v1 JSON protocol is built at the edge (scheduler/extender)
and handed to the frameworks' Handle, so the decision core never does network I/O itself.

Errors are exceptions: whatever an extender method raises is what upstream's ``err`` carries,
``str()`` being its message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

# The range of an extender's scores (extenderv1.MinExtenderPriority, MaxExtenderPriority);
# they are scaled to the framework's 0-100 by MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

# The name put among a pod's rejectors when extenders filtered nodes out (upstream
# framework.ExtenderName): extenders register no events, so the pod moves on any event.
EXTENDER_NAME = "Extender"

# Node name -> why it failed (extenderv1.FailedNodesMap).
FailedNodesMap = dict[str, str]


@dataclass(slots=True)
class Victims:
    """Upstream extenderv1.Victims: the pods to evict (most important first) and how many of
    them violate a PodDisruptionBudget."""

    pods: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class HostPriority:
    """One node's score from an extender (extenderv1.HostPriority); not range-checked, as upstream."""

    host: str
    score: int


@dataclass(frozen=True, slots=True)
class Binding:
    """What an extender binds (the v1.Binding upstream hands it): the pod and the target node."""

    namespace: str
    name: str
    uid: str
    node: str


class NodeInfoLister(Protocol):
    """The snapshot's node lookup (upstream NodeInfoLister.Get); None for an unknown node."""

    def get(self, name: str) -> NodeInfo | None: ...


class Extender(Protocol):
    """Upstream framework.Extender. Filter/Prioritize/ProcessPreemption/Bind raise on failure."""

    def name(self) -> str:
        """What identifies the extender in logs and scores (upstream: its URL prefix)."""
        ...

    def filter(
        self, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], FailedNodesMap, FailedNodesMap]:
        """The nodes that pass, the failed ones and the failed-and-unresolvable ones (the
        latter win for a node in both). An extender without a filter verb passes every node."""
        ...

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        """Scores (0..MAX_EXTENDER_PRIORITY by contract) and the extender's weight."""
        ...

    def bind(self, binding: Binding) -> None: ...

    def is_binder(self) -> bool: ...

    def is_interested(self, pod: PodInfo) -> bool:
        """Whether the pod requests one of the resources the extender manages (always, when it
        manages none)."""
        ...

    def is_prioritizer(self) -> bool: ...

    def is_filter(self) -> bool: ...

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], nodes: NodeInfoLister
    ) -> dict[str, Victims]:
        """The candidate nodes the extender keeps, each with the victims it chose."""
        ...

    def supports_preemption(self) -> bool: ...

    def is_ignorable(self) -> bool:
        """Whether a failing Filter, Bind or ProcessPreemption is skipped instead of failing."""
        ...


def managed_resource_requested(pod: PodInfo, managed: frozenset[str] | set[str]) -> bool:
    """Whether a container or init container of ``pod`` names one of ``managed`` in its
    requests or limits (upstream HTTPExtender.IsInterested's walk; pod-level resources and
    ephemeral containers are not looked at)."""
    spec = pod.raw.get("spec") or {}
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            res = c.get("resources") or {}
            for part in ("requests", "limits"):
                if any(name in managed for name in res.get(part) or ()):
                    return True
    return False
