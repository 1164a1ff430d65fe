"""Name -> plugin class: the in-tree list plus out-of-tree plugins from the
``scheduler.plugins`` entry-point group (each entry point names a Plugin subclass)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import structlog

from scheduler.framework.interface import Plugin

log = structlog.get_logger(__name__)

GROUP = "scheduler.plugins"

# Plugin name -> "module:Class". Order is irrelevant here; profiles define order.
IN_TREE: dict[str, str] = {
    "PrioritySort": "scheduler.plugins.queuesort:PrioritySort",
    "SchedulingGates": "scheduler.plugins.schedulinggates:SchedulingGates",
    "NodeUnschedulable": "scheduler.plugins.nodeunschedulable:NodeUnschedulable",
    "NodeName": "scheduler.plugins.nodename:NodeName",
    "TaintToleration": "scheduler.plugins.tainttoleration:TaintToleration",
    "NodeAffinity": "scheduler.plugins.nodeaffinity:NodeAffinity",
    "NodePorts": "scheduler.plugins.nodeports:NodePorts",
    "NodeResourcesFit": "scheduler.plugins.noderesources.fit:Fit",
    "NodeResourcesBalancedAllocation": "scheduler.plugins.noderesources.balanced_allocation:BalancedAllocation",
    "ImageLocality": "scheduler.plugins.imagelocality:ImageLocality",
    "InterPodAffinity": "scheduler.plugins.interpodaffinity:InterPodAffinity",
    "PodTopologySpread": "scheduler.plugins.podtopologyspread:PodTopologySpread",
    "DefaultBinder": "scheduler.plugins.defaultbinder:DefaultBinder",
    "NodeDeclaredFeatures": "scheduler.plugins.nodedeclaredfeatures:NodeDeclaredFeatures",
    "VolumeRestrictions": "scheduler.plugins.volumerestrictions:VolumeRestrictions",
    "NodeVolumeLimits": "scheduler.plugins.nodevolumelimits:NodeVolumeLimits",
    "VolumeBinding": "scheduler.plugins.volumebinding:VolumeBinding",
    "VolumeZone": "scheduler.plugins.volumezone:VolumeZone",
    "DefaultPreemption": "scheduler.plugins.defaultpreemption:DefaultPreemption",
    "DynamicResources": "scheduler.plugins.dynamicresources:DynamicResources",
}

# Upstream plugins of the default profile that this project does not implement yet.
NOT_AVAILABLE: tuple[str, ...] = (
)


def _load(target: str) -> type[Plugin]:
    mod, _, cls = target.partition(":")
    obj = getattr(importlib.import_module(mod), cls)
    if not (isinstance(obj, type) and issubclass(obj, Plugin)):
        raise TypeError(f"{target} is not a Plugin subclass")
    return obj


def in_tree_registry() -> dict[str, type[Plugin]]:
    out: dict[str, type[Plugin]] = {}
    for name, target in IN_TREE.items():
        try:
            out[name] = _load(target)
        except ImportError:
            # Lets the tree work while a plugin package is still being written.
            continue
    return out


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
    reg = in_tree_registry()
    for name, cls in out_of_tree_registry(eps).items():
        if name in reg:
            log.warning("plugin_name_shadowed", plugin=name)
            continue
        reg[name] = cls
    return reg
