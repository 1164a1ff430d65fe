"""What DynamicResources keeps across and within cycles: each node's pools, built once while the
ResourceSlices stay the same (upstream builds them in every Filter call, GatherPools: the answers
must not change), and after Reserve only the chosen node's allocation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamicresources.fixtures import (
    CLAIM_NAME,
    NODE,
    claim,
    cycle,
    device_class,
    node_slice,
    plugin,
    pod_with,
    worker,
)


def _filter(pl: Any, node: Any) -> Any:
    _, pre, filt = cycle(pl, pod_with(claims=(CLAIM_NAME,)), [node])
    assert pre is None
    return filt[node.name]


@pytest.mark.parametrize(
    "change, fits_after",
    [
        pytest.param(("ResourceSlice", node_slice("instance-1", "instance-2")), True, id="slice-updated"),
        pytest.param(("DELETE", f"{NODE}-some-driver"), False, id="slice-deleted"),
    ],
)
def test_pools_are_kept_until_a_slice_changes(change: tuple[str, Any], fits_after: bool) -> None:
    pl, _, _ = plugin(("DeviceClass", device_class()), ("ResourceClaim", claim()),
                      ("ResourceSlice", node_slice("instance-1")))
    node = worker()
    assert _filter(pl, node) is None
    kept = dict(pl._pools)
    assert len(kept) == 1
    # Another cycle on the same node: the same pools, not rebuilt.
    assert _filter(pl, node) is None
    assert pl._pools == kept and all(pl._pools[k] is v for k, v in kept.items())
    # The same node with other labels: pools of their own (node selectors read them).
    relabelled = worker()
    relabelled.labels = {**relabelled.labels, "zone": "b"}
    assert _filter(pl, relabelled) is None and len(pl._pools) == 2
    kind, obj = change
    if kind == "DELETE":
        pl.store.on_event("ResourceSlice", "DELETED", {"metadata": {"name": obj}})
    else:
        pl.store.apply(kind, obj)
    got = _filter(pl, node)
    assert (got is None) == fits_after
    assert all(pl._pools.get(k) is not v for k, v in kept.items())


def test_reserve_keeps_only_the_chosen_nodes_allocation() -> None:
    # Filter allocates on every node; after Reserve only the chosen node's answer is read, and
    # the cycle state (kept until the binding cycle ends) lets the others go.
    pl, _, _ = plugin(("DeviceClass", device_class()), ("ResourceClaim", claim()),
                      ("ResourceSlice", node_slice("instance-1")),
                      ("ResourceSlice", node_slice("instance-1", node="other")))
    nodes = [worker(), worker(name="other")]
    pod = pod_with(claims=(CLAIM_NAME,))
    state, pre, filt = cycle(pl, pod, nodes)
    assert pre is None and filt == {NODE: None, "other": None}
    s = pl._state(state)
    assert s is not None and set(s.node_allocations) == {NODE, "other"}
    assert pl.reserve(state, pod, "other") is None
    assert set(s.node_allocations) == {"other"}
    assert s.allocations[0] is not None
