"""Extended resources backed by DRA in NodeResourcesFit and NodeResourcesBalancedAllocation
(upstream noderesources/fit.go shouldDelegateResourceToDRA and resource_allocation.go's DRA
scoring, DRAExtendedResource, beta and on in v1.36.3).

Filter: an extended resource a DeviceClass maps is left to DynamicResources on a node that does
not advertise it (allocatable 0 or absent); a node that does is checked as usual.

Score: a configured scoring resource that a DeviceClass maps and that the node does not
advertise counts the node's devices of that class instead: every device of every ResourceSlice
for the node that the class's CEL selectors accept is capacity, and the allocated or in-flight
ones are in use. Upstream keeps a device's successful selector match and a node's selector
match for the process's lifetime; so does this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from scheduler.framework.listers import DraStore
from scheduler.model.dra import Device, DeviceClass, ResourceSlice, is_dra_extended_resource_name
from scheduler.model.labels import NodeSelector
from scheduler.model.node import NodeInfo
from scheduler.plugins.dynamicresources.celcache import CelCache
from scheduler.plugins.dynamicresources.celerror import CelError
from scheduler.plugins.dynamicresources.pools import node_matches

DeviceID = tuple[str, str, str]


def delegated(name: str, node: NodeInfo | None, store: DraStore | None) -> bool:
    """shouldDelegateResourceToDRA: the node does not advertise ``name`` and a DeviceClass maps
    it (``store`` is None when DRAExtendedResource is off)."""
    if store is None:
        return False
    if node is not None and node.allocatable.scalar.get(name, 0) > 0:
        return False
    return store.extended.get_device_class(name) is not None


class DraScoreState:
    """draPreScoreState: the devices in use and the slices, gathered once per cycle."""

    __slots__ = ("allocated", "slices")

    def __init__(self, allocated: set[DeviceID], slices: Sequence[ResourceSlice]) -> None:
        self.allocated = allocated
        self.slices = slices


class DraExtendedScorer:
    """The DRA side of a resource-allocation scorer: capacity and use of a DRA-backed
    extended resource on a node."""

    __slots__ = ("cel_cache", "device_matches", "node_matches", "store")

    def __init__(self, store: DraStore) -> None:
        self.store = store
        self.cel_cache = CelCache()
        self.device_matches: set[tuple[str, str, str, str]] = set()  # (expression, driver, pool, device)
        self.node_matches: dict[tuple[str, str, bool, NodeSelector], bool] = {}

    def pre_score(self, resources: Iterable[str]) -> DraScoreState | None:
        """getDRAPreScoredParams: None unless some configured resource is backed by DRA."""
        cache = self.store.extended
        if not any(is_dra_extended_resource_name(n) and cache.get_device_class(n) is not None for n in resources):
            return None
        dedicated, shared, consumed = self.store.allocated_devices()
        allocated = dedicated | {sid[:3] for sid in shared} | set(consumed)
        return DraScoreState(allocated, self.store.list_slices())

    def totals(self, node: NodeInfo, resource: str, state: DraScoreState) -> tuple[int, int]:
        """calculateDRAExtendedResourceAllocatableRequest: (devices of the class on the node,
        those in use); (0, 0) when no class maps it or a selector fails."""
        cls = self.store.extended.get_device_class(resource)
        if cls is None:
            return 0, 0
        capacity = used = 0
        try:
            for sl in state.slices:
                for dev in self._node_devices(sl, node):
                    if cls.selectors and not self._class_matches(dev, cls, sl):
                        continue
                    capacity += 1
                    if (sl.driver, sl.pool, dev.name) in state.allocated:
                        used += 1
        except CelError:
            return 0, 0
        return capacity, used

    def _node_devices(self, sl: ResourceSlice, node: NodeInfo) -> list[Device]:
        if sl.per_device_node_selection:
            return [dev for dev in sl.devices if self._device_on_node(dev, node)]
        if not sl.all_nodes and sl.node_name != node.name and sl.node_selector is not None:
            if not self._matches(node, sl.node_name, sl.all_nodes, sl.node_selector):
                return []
        elif not sl.all_nodes and sl.node_name and sl.node_name != node.name:
            return []
        return sl.devices

    def _device_on_node(self, dev: Device, node: NodeInfo) -> bool:
        if dev.all_nodes or (dev.node_name and dev.node_name == node.name):
            return True
        return dev.node_selector is not None and self._matches(node, dev.node_name, dev.all_nodes, dev.node_selector)

    def _matches(self, node: NodeInfo, name: str, all_nodes: bool, selector: NodeSelector) -> bool:
        key = (node.name, name, all_nodes, selector)
        hit = self.node_matches.get(key)
        if hit is None:
            hit = self.node_matches[key] = node_matches(node.name, node.labels, name, all_nodes, selector)
        return hit

    def _class_matches(self, dev: Device, cls: DeviceClass, sl: ResourceSlice) -> bool:
        """deviceMatchesClass: every CEL selector of the class accepts the device (a selector
        without CEL is passed over); a compile or runtime error raises CelError."""
        for expr in cls.selectors:
            if expr is None:
                continue
            key = (expr, sl.driver, sl.pool, dev.name)
            if key in self.device_matches:
                continue
            compiled = self.cel_cache.get_or_compile(expr)
            if compiled.error is not None:
                raise CelError(compiled.error)
            if not compiled.device_matches(sl.driver, dev):
                return False
            self.device_matches.add(key)
        return True
