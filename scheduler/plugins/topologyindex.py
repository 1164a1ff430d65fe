"""Incremental per-node indexes shared by InterPodAffinity and PodTopologySpread.

Upstream recomputes, for every pod, "how many pods matching X sit in each topology domain" by
walking every pod on every node. Here the per-node part is kept across cycles and only the
nodes the snapshot swapped since the last look are recounted (``Snapshot.node_seq`` /
``label_seq``); the per-domain part is then one ``np.bincount`` per topology key.

The index lives on the snapshot object itself, so it dies with it and is shared by both
plugins. A snapshot without the change-tracking attributes gets a throw-away index per call
(correct, just not fast).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.model.affinity import AffinityTerm
from scheduler.model.labels import LabelSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.taints import find_untolerated_taint

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

_ATTR = "_topology_index"
_MAX_COUNTERS = 256
_MAX_MASKS = 64
_EMPTY = np.zeros(0, dtype=np.int64)

PodPredicate = Callable[[PodInfo], bool]
NodePredicate = Callable[[NodeInfo], bool]


# ---------------------------------------------------------------------------------------------
# Predicates shared by the plugins


def node_matches_required_affinity(pod: PodInfo, node: NodeInfo) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); parse errors count as no match."""
    labels = node.labels
    for k, v in pod.node_selector.items():
        if labels.get(k) != v:
            return False
    req = pod.node_affinity_required
    if req is not None:
        return req.matches(labels, node.name)
    return True


_DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")


def node_taints_tolerated(pod: PodInfo, node: NodeInfo, comparison: bool = False) -> bool:
    """``comparison``: Lt/Gt tolerations (the TaintTolerationComparisonOperators gate)."""
    return find_untolerated_taint(node.taints, pod.tolerations, _DO_NOT_SCHEDULE, comparison) is None


def term_key(all_namespaces: bool, namespaces: frozenset[str], selector: LabelSelector) -> tuple[Any, ...]:
    return (all_namespaces, namespaces, selector)


def term_pred(key: tuple[Any, ...]) -> PodPredicate:
    all_ns, nss, sel = key
    match = sel.matches
    if all_ns:
        return lambda p: match(p.labels)
    return lambda p: p.namespace in nss and match(p.labels)


# ---------------------------------------------------------------------------------------------
# Per-node structures


class DomainMap:
    """Topology key -> per-node domain id (-1 when the node lacks the label)."""

    __slots__ = ("ids", "key", "seq", "values", "vid")

    def __init__(self, key: str) -> None:
        self.key = key
        self.ids = _EMPTY
        self.values: list[str] = []
        self.vid: dict[str, int] = {}
        self.seq = -1

    def _id(self, ni: NodeInfo) -> int:
        v = ni.labels.get(self.key)
        if v is None:
            return -1
        i = self.vid.get(v)
        if i is None:
            i = self.vid[v] = len(self.values)
            self.values.append(v)
        return i

    def sync(self, infos: list[NodeInfo], changed: np.ndarray | None) -> None:
        if changed is None:
            self.ids = np.fromiter((self._id(ni) for ni in infos), dtype=np.int64, count=len(infos))
        else:
            for i in changed.tolist():
                self.ids[i] = self._id(infos[i])

    @property
    def size(self) -> int:
        return len(self.values)

    def id_of(self, value: str) -> int:
        return self.vid.get(value, -1)


class NodeMask:
    """A boolean per node (node-affinity / taint inclusion policies), refreshed on Node changes."""

    __slots__ = ("mask", "pred", "seq")

    def __init__(self, pred: NodePredicate) -> None:
        self.pred = pred
        self.mask = np.zeros(0, dtype=bool)
        self.seq = -1

    def sync(self, infos: list[NodeInfo], changed: np.ndarray | None) -> None:
        pred = self.pred
        if changed is None:
            self.mask = np.fromiter((pred(ni) for ni in infos), dtype=bool, count=len(infos))
        else:
            for i in changed.tolist():
                self.mask[i] = pred(infos[i])


class PodCounter:
    """Per node: number of its pods satisfying a predicate."""

    __slots__ = ("counts", "pred", "seq")

    def __init__(self, pred: PodPredicate) -> None:
        self.pred = pred
        self.counts = _EMPTY
        self.seq = -1

    def sync(self, infos: list[NodeInfo], changed: np.ndarray | None) -> None:
        pred = self.pred
        if changed is None:
            self.counts = np.fromiter(
                (sum(1 for p in ni.pods if pred(p)) if ni.pods else 0 for ni in infos),
                dtype=np.int64,
                count=len(infos),
            )
        else:
            counts = self.counts
            for i in changed.tolist():
                counts[i] = sum(1 for p in infos[i].pods if pred(p))


# Kinds of existing-pod terms the term index tracks.
REQ_AFFINITY = 0
REQ_ANTI = 1
PREF_AFFINITY = 2
PREF_ANTI = 3

TermSig = tuple[int, int, AffinityTerm]  # (kind, weight, term)


def _pod_terms(p: PodInfo) -> list[TermSig]:
    out: list[TermSig] = [(REQ_AFFINITY, 1, t) for t in p.affinity_required]
    out.extend((REQ_ANTI, 1, t) for t in p.anti_affinity_required)
    out.extend((PREF_AFFINITY, w.weight, w.term) for w in p.affinity_preferred)
    out.extend((PREF_ANTI, w.weight, w.term) for w in p.anti_affinity_preferred)
    return out


class TermIndex:
    """Existing pods' (anti-)affinity terms grouped by identical term: per node, how many pods
    carry it. The incoming pod is then matched once per distinct term, not once per pod."""

    __slots__ = ("by_kind", "contrib", "counts", "n", "seq")

    def __init__(self) -> None:
        self.counts: dict[TermSig, np.ndarray] = {}
        self.by_kind: dict[int, set[TermSig]] = {
            REQ_AFFINITY: set(),
            REQ_ANTI: set(),
            PREF_AFFINITY: set(),
            PREF_ANTI: set(),
        }
        self.contrib: dict[int, dict[TermSig, int]] = {}
        self.n = 0
        self.seq = -1

    def _node(self, i: int, ni: NodeInfo) -> None:
        old = self.contrib.pop(i, None)
        if old:
            for sig, c in old.items():
                self.counts[sig][i] -= c
        if not ni.pods_with_affinity:
            return
        new: dict[TermSig, int] = {}
        for p in ni.pods_with_affinity:
            for sig in _pod_terms(p):
                new[sig] = new.get(sig, 0) + 1
        for sig, c in new.items():
            arr = self.counts.get(sig)
            if arr is None:
                arr = self.counts[sig] = np.zeros(self.n, dtype=np.int64)
                self.by_kind[sig[0]].add(sig)
            arr[i] += c
        self.contrib[i] = new

    def sync(self, infos: list[NodeInfo], changed: np.ndarray | None) -> None:
        if changed is None:
            self.__init__()  # type: ignore[misc]
            self.n = len(infos)
            for i, ni in enumerate(infos):
                if ni.pods_with_affinity:
                    self._node(i, ni)
        else:
            for i in changed.tolist():
                self._node(i, infos[i])
        # Drop terms no pod carries any more, so the per-pod work stays proportional to live terms.
        if changed is not None and len(changed):
            dead = [sig for sig, arr in self.counts.items() if not arr.any()]
            for sig in dead:
                del self.counts[sig]
                self.by_kind[sig[0]].discard(sig)

    def sigs(self, kind: int) -> set[TermSig]:
        return self.by_kind[kind]


# ---------------------------------------------------------------------------------------------
# The index


class TopologyIndex:
    __slots__ = ("counters", "domains", "epoch", "masks", "n", "terms", "tracked")

    def __init__(self, snap: Snapshot, tracked: bool) -> None:
        self.epoch = getattr(snap, "epoch", -1)
        self.n = len(snap.node_infos)
        self.tracked = tracked
        self.domains: dict[str, DomainMap] = {}
        self.counters: OrderedDict[Hashable, PodCounter] = OrderedDict()
        self.masks: OrderedDict[Hashable, NodeMask] = OrderedDict()
        self.terms = TermIndex()

    @staticmethod
    def of(snap: Snapshot) -> TopologyIndex:
        tracked = hasattr(snap, "node_seq") and len(snap.node_seq) == len(snap.node_infos)
        if not tracked:
            return TopologyIndex(snap, False)
        idx: TopologyIndex | None = snap.__dict__.get(_ATTR)
        if idx is None or idx.epoch != snap.epoch or idx.n != len(snap.node_infos):
            idx = TopologyIndex(snap, True)
            snap.__dict__[_ATTR] = idx
        return idx

    # Each structure remembers the change_seq it was synced at; only newer positions are redone.
    def _changed(self, snap: Snapshot, seq: int, labels: bool) -> np.ndarray | None:
        if seq < 0 or not self.tracked:
            return None
        if snap.change_seq == seq:
            return _EMPTY
        return snap.changed_since(seq, labels)

    def _stamp(self, snap: Snapshot) -> int:
        return snap.change_seq if self.tracked else -1

    def domain(self, snap: Snapshot, key: str) -> DomainMap:
        dm = self.domains.get(key)
        if dm is None:
            dm = self.domains[key] = DomainMap(key)
        if dm.seq != snap.__dict__.get("change_seq", -2) or not self.tracked:
            dm.sync(snap.node_infos, self._changed(snap, dm.seq, True))
            dm.seq = self._stamp(snap)
        return dm

    def node_mask(self, snap: Snapshot, key: Hashable, pred: NodePredicate) -> np.ndarray:
        m = self.masks.get(key)
        if m is None:
            m = NodeMask(pred)
            self.masks[key] = m
            if len(self.masks) > _MAX_MASKS:
                self.masks.popitem(last=False)
        else:
            self.masks.move_to_end(key)
        if m.seq != snap.__dict__.get("change_seq", -2) or not self.tracked:
            m.sync(snap.node_infos, self._changed(snap, m.seq, True))
            m.seq = self._stamp(snap)
        return m.mask

    def pod_counts(self, snap: Snapshot, key: Hashable, make_pred: Callable[[], PodPredicate]) -> np.ndarray:
        c = self.counters.get(key)
        if c is None:
            c = PodCounter(make_pred())
            self.counters[key] = c
            if len(self.counters) > _MAX_COUNTERS:
                self.counters.popitem(last=False)
        else:
            self.counters.move_to_end(key)
        if c.seq != snap.__dict__.get("change_seq", -2) or not self.tracked:
            c.sync(snap.node_infos, self._changed(snap, c.seq, False))
            c.seq = self._stamp(snap)
        return c.counts

    def term_index(self, snap: Snapshot) -> TermIndex:
        t = self.terms
        if t.seq != snap.__dict__.get("change_seq", -2) or not self.tracked:
            t.sync(snap.node_infos, self._changed(snap, t.seq, False))
            t.seq = self._stamp(snap)
        return t


def domain_sums(dm: DomainMap, weights: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """Per domain id: the sum of ``weights`` over nodes (optionally only where ``where``)."""
    ids = dm.ids
    if where is not None:
        sel = where & (ids >= 0)
    else:
        sel = ids >= 0
    if not sel.any():
        return np.zeros(dm.size, dtype=np.int64)
    return np.bincount(ids[sel], weights=weights[sel], minlength=dm.size).astype(np.int64)


def domain_present(dm: DomainMap, where: np.ndarray) -> np.ndarray:
    """Per domain id: whether some node in ``where`` belongs to it."""
    ids = dm.ids[where & (dm.ids >= 0)]
    out = np.zeros(dm.size, dtype=bool)
    out[ids] = True
    return out
