"""TopologyPlacementGenerator (upstream plugins/topologyaware/topology_placement.go,
TopologyAwareWorkloadScheduling gate).

A PlacementGenerate plugin: for a PodGroup with a topology constraint, one placement per value
of the constraint's key among the parent placement's nodes (nodes without the label are in
none); once some of the group's pods are scheduled, only their domain. Without a constraint the
parent placement is the only one.
"""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Placement, PlacementGeneratePlugin, PodGroupInfo
from scheduler.framework.podgroupstate import PodGroupStateNotFound
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.storage import NotFoundError
from scheduler.plugins.helper import HandlePlugin

NAME = "TopologyPlacementGenerator"


class TopologyPlacement(HandlePlugin, PlacementGeneratePlugin):
    name = NAME

    def generate_placements(
        self, state: CycleState, pod_group: PodGroupInfo, parent: Placement
    ) -> list[Placement] | Status:
        try:
            pg = self.handle.listers.get_pod_group(pod_group.namespace, pod_group.name)
        except NotFoundError as exc:
            return Status(Code.ERROR, str(exc), err=exc)
        if not pg.topology_keys:
            return [parent]
        # The API allows one topology constraint.
        key = pg.topology_keys[0]
        try:
            scheduled = self.handle.snapshot.pod_group_state_lister().get(pod_group.namespace, pod_group.name)
        except PodGroupStateNotFound as exc:
            return Status(Code.ERROR, str(exc), err=exc)
        required: str | None = None
        pods = scheduled.scheduled_pods()
        if pods:
            try:
                required = self._domain_of(key, pods)
            except ValueError as exc:
                return Status(Code.ERROR, f"cannot determine domain for already scheduled pods: {exc}", err=exc)
        per_domain: dict[str, list[NodeInfo]] = {}
        for ni in parent.nodes:
            domain = ni.labels.get(key)
            if domain is not None and (required is None or domain == required):
                per_domain.setdefault(domain, []).append(ni)
        return [Placement(domain, nodes) for domain, nodes in per_domain.items() if nodes]

    def _domain_of(self, key: str, pods: list[PodInfo]) -> str:
        domain = ""
        for pod in pods:
            ni = self.handle.snapshot.get(pod.node_name)
            if ni is None:
                raise ValueError(f'getting node for pod {pod.key}: nodeinfo not found for node name "{pod.node_name}"')
            d = ni.labels.get(key)
            if d is None:
                raise ValueError(f"no topology domain found for pod {pod.key}")
            if domain and domain != d:
                raise ValueError(f"more than 1 domain found for pod group: {domain}, {d}")
            domain = d
        return domain
