"""Name -> plugin class: the in-tree plugins plus out-of-tree plugins from the
``scheduler.plugins`` entry-point group (each entry point names a Plugin subclass)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import structlog

from scheduler.framework.interface import Plugin
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.defaultpreemption import DefaultPreemption
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.gangscheduling import GangScheduling
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.plugins.noderesources.fit import Fit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler.plugins.podgrouppodscount import PodGroupPodsCount
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.plugins.topologyaware import TopologyPlacement
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumerestrictions import VolumeRestrictions
from scheduler.plugins.volumezone import VolumeZone

log = structlog.get_logger(__name__)

GROUP = "scheduler.plugins"

# Keyed by each class's configuration name. Order is irrelevant here; profiles define order.
IN_TREE: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        PrioritySort,
        SchedulingGates,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        Fit,
        BalancedAllocation,
        ImageLocality,
        InterPodAffinity,
        PodTopologySpread,
        DefaultBinder,
        NodeDeclaredFeatures,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
        DefaultPreemption,
        DynamicResources,
        # Workload-aware scheduling (alpha gates; registered always, as upstream).
        GangScheduling,
        TopologyPlacement,
        PodGroupPodsCount,
    )
}


def out_of_tree_registry(eps: Iterable[EntryPoint] | None = None) -> dict[str, type[Plugin]]:
    """Plugins published by installed distributions (``eps`` lets tests pass their own)."""
    out: dict[str, type[Plugin]] = {}
    for ep in entry_points(group=GROUP) if eps is None else eps:
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party package must not take the scheduler down
            log.error("plugin_load_failed", entry_point=ep.name, error=str(exc))
            continue
        if not (isinstance(cls, type) and issubclass(cls, Plugin)):
            log.error("plugin_load_failed", entry_point=ep.name, error="not a Plugin subclass")
            continue
        out[cls.name or ep.name] = cls
    return out


def default_registry(eps: Iterable[EntryPoint] | None = None) -> dict[str, type[Plugin]]:
    reg = dict(IN_TREE)
    for name, cls in out_of_tree_registry(eps).items():
        if name in reg:
            log.warning("plugin_name_shadowed", plugin=name)
            continue
        reg[name] = cls
    return reg
