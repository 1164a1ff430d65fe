"""Shared builders for the workload-aware scheduling tests: PodGroups (upstream st.MakePodGroup),
pods of a group, and a handle over a GenericWorkload cache and its snapshot."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.backend.cache import Cache
from scheduler.config.features import FeatureGates
from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import PodInfo
from scheduler.model.podgroup import PodGroup
from scheduler.testing.builders import make_pod

# Every workload-aware scheduling gate on.
ALL_ON = FeatureGates(
    {
        "GenericWorkload": True,
        "GangScheduling": True,
        "TopologyAwareWorkloadScheduling": True,
        "WorkloadAwarePreemption": True,
    }
)


def make_pod_group(
    name: str = "pg",
    namespace: str = "default",
    *,
    min_count: int | None = None,
    basic: bool = False,
    topology: str | None = None,
    disruption_mode: str | None = None,
    priority: int | None = None,
    uid: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    generation: int | None = None,
) -> dict[str, Any]:
    """A scheduling.k8s.io/v1alpha2 PodGroup: gang with ``min_count``, or basic."""
    policy: dict[str, Any] = {"basic": {}} if basic or min_count is None else {"gang": {"minCount": min_count}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if disruption_mode is not None:
        spec["disruptionMode"] = disruption_mode
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"pg-uid-{namespace}-{name}"}
    if generation is not None:
        meta["generation"] = generation
    raw: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
    }
    if conditions is not None:
        raw["status"] = {"conditions": conditions}
    return raw


def group_pod(name: str, group: str, namespace: str = "default", **kw: Any) -> dict[str, Any]:
    """A pod of PodGroup ``group`` (spec.schedulingGroup.podGroupName)."""
    kw.setdefault("uid", name)
    return make_pod(name, namespace, schedulingGroup={"podGroupName": group}, **kw)


class FakeWaitingPod:
    """Records the plugins that allowed it (stands in for the runtime's waiting pod)."""

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.allowed: list[str] = []

    def allow(self, plugin: str) -> None:
        self.allowed.append(plugin)


class Env:
    """A GenericWorkload cache, its snapshot, listers with the PodGroups, and a handle over them."""

    def __init__(
        self,
        nodes: Iterable[Mapping[str, Any]] = (),
        groups: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.cache = Cache(generic_workload=True)
        self.snapshot = Snapshot()
        self.listers = Listers()
        for n in nodes:
            self.cache.add_node(n)
        for g in groups:
            pg = PodGroup.parse(g)
            self.listers.pod_groups[pg.key] = pg
        self.handle = Handle(self.snapshot, self.listers, "default-scheduler")
        self.handle.features = ALL_ON.features()
        self.handle.pod_group_manager = self.cache.pod_group_state_lister()
        self.activated: list[PodInfo] = []
        self.handle.activator = lambda pods: self.activated.extend(pods.values())
        self.waiting: dict[str, FakeWaitingPod] = {}
        self.handle.waiting_pods = self.waiting

    def pending(self, raw: Mapping[str, Any]) -> PodInfo:
        """An unscheduled pod the queue side has seen (upstream AddPodGroupMember)."""
        pod = PodInfo(raw)
        self.cache.add_pod_group_member(pod)
        return pod

    def bound(self, raw: Mapping[str, Any]) -> PodInfo:
        pod = PodInfo(raw)
        self.cache.add_pod(pod)
        return pod

    def sync(self) -> Snapshot:
        self.cache.update_snapshot(self.snapshot)
        return self.snapshot
