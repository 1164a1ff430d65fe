"""The four alpha gates of workload-aware scheduling, read in one place.

kube-scheduler v1.36.3 puts pod-group scheduling behind GenericWorkload (the PodGroup API, the
pod-group cycle), GangScheduling (the GangScheduling plugin), TopologyAwareWorkloadScheduling
(placements: TopologyPlacementGenerator, PodGroupPodsCount) and WorkloadAwarePreemption
(PodGroup preemption). All four are alpha and off by default.

``workload_features`` turns whatever gate source the caller has into the plugin-facing flags
(upstream plugins/feature.Features field names, snake_case): a mapping of gate name to bool, an
object with ``enabled(name)``, or None for the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
WORKLOAD_GATES = (GENERIC_WORKLOAD, GANG_SCHEDULING, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, WORKLOAD_AWARE_PREEMPTION)


@dataclass(frozen=True, slots=True)
class WorkloadFeatures:
    enable_generic_workload: bool = False
    enable_gang_scheduling: bool = False
    enable_topology_aware_workload_scheduling: bool = False
    enable_workload_aware_preemption: bool = False


def gate_enabled(gates: Any, name: str) -> bool:
    """One gate's value from ``gates`` (see the module docstring); alpha gates default off."""
    if gates is None:
        return False
    if isinstance(gates, WorkloadFeatures):
        return bool(getattr(gates, _FIELD[name]))
    if isinstance(gates, Mapping):
        return bool(gates.get(name, False))
    return bool(gates.enabled(name))


_FIELD = {
    GENERIC_WORKLOAD: "enable_generic_workload",
    GANG_SCHEDULING: "enable_gang_scheduling",
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: "enable_topology_aware_workload_scheduling",
    WORKLOAD_AWARE_PREEMPTION: "enable_workload_aware_preemption",
}


def workload_features(gates: Any) -> WorkloadFeatures:
    if isinstance(gates, WorkloadFeatures):
        return gates
    return WorkloadFeatures(**{field: gate_enabled(gates, gate) for gate, field in _FIELD.items()})


ALL_ON = WorkloadFeatures(True, True, True, True)
