"""Resource pools as the allocator sees them from one node (upstream structured's
pools_incubating.go): the slices that target the node, grouped by driver and pool at their
newest generation, checked for completeness and for consistent devices and counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from scheduler.model.dra import ResourceSlice
from scheduler.model.labels import NodeSelector

DeviceID = tuple[str, str, str]  # driver, pool, device


def node_matches(
    node_name: str, labels: Mapping[str, str], name_to_match: str, all_nodes: bool, selector: NodeSelector | None
) -> bool:
    if name_to_match:
        return node_name == name_to_match
    if all_nodes:
        return True
    if selector is not None:
        return selector.matches(labels, node_name)
    return False


class Pool:
    __slots__ = (
        "counter_sets",
        "driver",
        "incomplete",
        "invalid",
        "invalid_reason",
        "name",
        "not_targeting",
        "targeting",
    )

    def __init__(self, driver: str, name: str) -> None:
        self.driver = driver
        self.name = name
        self.incomplete = False
        self.invalid = False
        self.invalid_reason = ""
        self.targeting: list[ResourceSlice] = []
        self.not_targeting: list[ResourceSlice] = []
        self.counter_sets: dict[str, dict[str, Fraction]] = {}

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def _build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    all_for_pool: list[ResourceSlice] | None,
    partitionable: bool = True,
) -> Pool:
    p = Pool(driver, name)
    slices = sorted(slices, key=lambda s: s.name)
    if not partitionable:
        # No counter sets without DRAPartitionableDevices: device names are all there is to check.
        device_slices, counter_slices = slices, []
    else:
        device_slices = [s for s in slices if not s.shared_counters]
        counter_slices = [s for s in slices if s.shared_counters]
    seen: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in seen:
                p.invalid, p.invalid_reason = True, f"duplicate device name {d.name}"
                return p
            seen.add(d.name)
    if not partitionable:
        p.targeting = device_slices
        return p
    for s in counter_slices:
        for cs_name, counters in s.shared_counters.items():
            if cs_name in p.counter_sets:
                p.invalid, p.invalid_reason = True, f"duplicate counter set name {cs_name}"
                return p
            p.counter_sets[cs_name] = {n: q.exact for n, q in counters.items()}

    def check(ss: list[ResourceSlice]) -> str | None:
        for s in ss:
            for d in s.devices:
                for cs_name, counters in d.consumes_counters:
                    cs = p.counter_sets.get(cs_name)
                    if cs is None:
                        return f"counter set {cs_name} not found"
                    for n in counters:
                        if n not in cs:
                            return f"counter {n} not found in counter set {cs_name}"
        return None

    err = check(slices)
    if err is not None:
        p.invalid, p.invalid_reason = True, err
        return p
    p.targeting = device_slices
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return p
    names = {s.name for s in slices}
    p.not_targeting = [s for s in all_for_pool if s.name not in names]
    err = check(p.not_targeting)
    if err is not None:
        p.invalid, p.invalid_reason = True, err
        p.targeting, p.not_targeting = [], []
    return p


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node_name: str,
    labels: Mapping[str, str],
    all_slices: Sequence[ResourceSlice],
    partitionable: bool = True,
) -> list[Pool]:
    pools: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices_for_node:
        if not partitionable and (s.per_device_node_selection or s.shared_counters):
            continue  # DRAPartitionableDevices off: such slices do not exist for the allocator
        if s.shared_counters:
            relevant = True
        elif s.node_name or s.all_nodes or s.node_selector is not None:
            relevant = node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
        elif s.per_device_node_selection:
            relevant = any(
                node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector) for d in s.devices
            )
        else:
            continue
        if not relevant:
            continue
        pid = (s.driver, s.pool)
        cur = pools.get(pid)
        if cur is None or s.generation > cur[0].generation:
            pools[pid] = [s]
        elif s.generation == cur[0].generation:
            cur.append(s)
    result: list[Pool] = []
    with_binding: list[Pool] = []
    for (driver, pname), ss in pools.items():
        gen, count = ss[0].generation, ss[0].resource_slice_count
        if len(ss) == count:
            p = _build_pool(driver, pname, ss, None, partitionable)
        else:
            obsolete = False
            all_for_pool: list[ResourceSlice] = []
            for s in all_slices:
                if s.driver != driver or s.pool != pname:
                    continue
                if s.generation == gen:
                    all_for_pool.append(s)
                elif s.generation > gen:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_for_pool) != count:
                p = Pool(driver, pname)
                p.incomplete = True
                result.append(p)
                continue
            p = _build_pool(driver, pname, ss, all_for_pool, partitionable)
        if any(d.binding_conditions is not None for s in p.targeting for d in s.devices):
            with_binding.append(p)
        else:
            result.append(p)
    result.sort(key=lambda p: (p.driver, p.name))
    with_binding.sort(key=lambda p: (p.driver, p.name))
    return result + with_binding
