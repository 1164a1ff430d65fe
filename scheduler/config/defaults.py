"""The default plugin set and how a profile's plugins are merged into it (upstream
apis/config/v1/default_plugins.go)."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.config.types import CONFIG_POINTS, MULTI_POINT, PluginRef, PluginSet

# getDefaultPlugins before applyFeatureGates.
_BASE_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)


def default_multipoint(gates: FeatureGates = DEFAULT_GATES) -> tuple[tuple[str, int], ...]:
    """getDefaultPlugins with applyFeatureGates: NodeDeclaredFeatures appended; DynamicResources
    (weight 2) just before DefaultPreemption, so an idle claim is freed before a pod is evicted;
    GangScheduling, then TopologyPlacementGenerator and PodGroupPodsCount (weight 1), appended."""
    out = list(_BASE_MULTIPOINT)
    if gates.enabled("NodeDeclaredFeatures"):
        out.append(("NodeDeclaredFeatures", 0))
    if gates.enabled("DynamicResourceAllocation"):
        out.insert(out.index(("DefaultPreemption", 0)), ("DynamicResources", 2))
    if gates.enabled("GangScheduling"):
        out.append(("GangScheduling", 0))
    if gates.enabled("TopologyAwareWorkloadScheduling"):
        out += [("TopologyPlacementGenerator", 0), ("PodGroupPodsCount", 1)]
    return tuple(out)


# The default set at v1.36.3's default gates.
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = default_multipoint()


# Every in-tree plugin is in the default set once the alpha workload gates are on too (the
# registry's test keeps them equal); their args are typed upstream (<Plugin>Args in the v1
# group), out-of-tree ones are opaque.
IN_TREE_PLUGINS: frozenset[str] = frozenset(
    [name for name, _ in DEFAULT_MULTIPOINT] + ["GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"]
)


def default_plugins(gates: FeatureGates = DEFAULT_GATES) -> list[tuple[str, int]]:
    """The upstream v1 default multiPoint list, in order, with weights (0 = no weight given)."""
    return list(default_multipoint(gates))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Merge a user plugin set into the default one for one extension point (mergePluginSet)."""
    disabled = (*custom.disabled, *default.disabled)
    disabled_set = set(disabled)
    # A name enabled twice by the user: the later entry is the one that replaces the default.
    by_name = {e.name: (i, e) for i, e in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_set:
        for d in default.enabled:
            if d.name in disabled_set:
                continue
            if d.name in by_name:
                i, e = by_name[d.name]
                replaced.add(i)
                enabled.append(e)  # in place: keeps the default order
            else:
                enabled.append(d)
    enabled.extend(e for i, e in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(tuple(enabled), disabled)


def _default_plugin_sets(gates: FeatureGates) -> dict[str, PluginSet]:
    sets = {p: PluginSet() for p in CONFIG_POINTS}
    sets[MULTI_POINT] = PluginSet(tuple(PluginRef(n, w) for n, w in default_multipoint(gates)))
    return sets


def merged_plugins(custom: Mapping[str, PluginSet] | None, gates: FeatureGates = DEFAULT_GATES) -> dict[str, PluginSet]:
    """A profile's plugins with the defaults (under ``gates``) merged in; ``None``: the profile
    gave none."""
    defaults = _default_plugin_sets(gates)
    if custom is None:
        return defaults
    return {p: merge_plugin_set(defaults[p], custom[p]) for p in CONFIG_POINTS}
