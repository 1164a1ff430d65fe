"""Each node's last allocation answer, reused while nothing it was worked out from has changed.

An allocation for one node depends on the node (name, labels), its pools (the slices), the
device classes, the devices already in use in those pools and the claims' specs. Pods made from
one ResourceClaimTemplate ask the same on every node, and between two of them only the pools
of the node the first one took change: the other nodes' answers are the same as before, and
working them out again was most of a claim-template pod's cycle.

Kept only where the answer is a plain function of those inputs: no capacity consumed on shared
devices (the answer depends on how much is left) and no share id in the answer (a fresh one is
drawn per allocation).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.model.dra import ResourceClaim
from scheduler.plugins.dynamicresources.pools import DeviceID, Pool

Answer = list[dict[str, Any]] | None


def claims_signature(claims: Sequence[ResourceClaim]) -> str:
    """What of the claims an allocation reads: their specs (names only show in errors, and
    errors are not kept)."""
    return json.dumps([c.raw.get("spec") for c in claims], sort_keys=True, separators=(",", ":"))


class _Entry:
    __slots__ = ("answer", "labels", "pools", "signature")

    def __init__(self, signature: str, labels: Mapping[str, str], pools: frozenset[tuple[str, str]], answer: Answer):
        self.signature = signature
        self.labels = labels
        self.pools = pools
        self.answer = answer


class AllocationMemo:
    __slots__ = ("_allocated", "_basis", "_entries")

    def __init__(self) -> None:
        self._basis: tuple[int, int] | None = None
        self._allocated: set[DeviceID] | None = None
        self._entries: dict[str, _Entry] = {}

    def sync(self, basis: tuple[int, int], allocated: set[DeviceID], usable: bool) -> bool:
        """Before a pod's Filter calls: ``basis`` is (slices version, classes version),
        ``allocated`` the devices in use. Drops the answers of nodes whose pools hold a device
        that went into or out of use; returns whether answers may be kept for this pod."""
        if not usable or basis != self._basis:
            self._entries.clear()
            self._allocated = None
            self._basis = basis if usable else None
            if not usable:
                return False
        prev = self._allocated
        if prev is None:
            self._entries.clear()
        elif prev is not allocated:
            changed = prev ^ allocated
            if changed:
                pools = {d[:2] for d in changed}
                stale = [name for name, e in self._entries.items() if not e.pools.isdisjoint(pools)]
                for name in stale:
                    del self._entries[name]
        self._allocated = allocated
        return True

    def get(self, node_name: str, signature: str, labels: Mapping[str, str]) -> _Entry | None:
        e = self._entries.get(node_name)
        if e is None or e.signature != signature or (e.labels is not labels and e.labels != labels):
            return None
        return e

    def put(self, node_name: str, signature: str, labels: Mapping[str, str], pools: list[Pool], answer: Answer) -> None:
        if answer is not None and any("shareID" in r for a in answer for r in a["devices"]["results"]):
            return
        ids = frozenset((p.driver, p.name) for p in pools)
        self._entries[node_name] = _Entry(signature, labels, ids, answer)
