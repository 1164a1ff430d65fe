"""The read-only view one scheduling cycle works on, plus its columnar (numpy) form.

Nodes are listed in upstream nodeTree order: zones in the order their first node arrived,
visited round-robin, nodes of a zone in arrival order. That order decides which nodes a
pod's search starts from, so it is part of exactness.
"""

from __future__ import annotations

import bisect
import builtins
import sys
from collections.abc import Callable, Sequence

import numpy as np
import structlog

from scheduler.framework.podgroupstate import PodGroupState, PodGroupStates, group_key
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

_ZONE_LABELS = (
    ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"),
    ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"),
)


def zone_key(labels: dict[str, str]) -> str:
    """utilnode.GetZoneKey: region and zone joined with ':\\x00:'; '' when neither is set."""
    region = labels.get(_ZONE_LABELS[0][1]) or labels.get(_ZONE_LABELS[0][0]) or ""
    zone = labels.get(_ZONE_LABELS[1][1]) or labels.get(_ZONE_LABELS[1][0]) or ""
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone


_HARD_EFFECTS = ("NoSchedule", "NoExecute")
_MAX_POS = sys.maxsize
# Past this many logged changes since the asked seq, changed_since scans the array instead.
_LOG_READ_MAX = 32
_NO_POSITIONS = np.empty(0, dtype=np.int64)
_NO_POSITIONS.flags.writeable = False


def _log_change(log: list[tuple[int, int]], seq: int, pos: int, n_nodes: int) -> None:
    log.append((seq, pos))
    if len(log) > max(64, 2 * n_nodes):
        del log[: len(log) // 2]  # an older seq falls back to scanning the seq array

log = structlog.get_logger(__name__)


# Dense scalar columns kept at once per direction (alloc, req). Names beyond it are rebuilt from
# their sparse values when asked for (O(nodes) zeros plus the few nodes that have them).
DENSE_SCALARS = 32


class ScalarColumns:
    """One int64 column per extended (scalar) resource name, over the snapshot's nodes.

    Stored sparse, {name: {node position: value}}: a cluster may give each node its own resource
    name (scheduler_perf's SchedulingWithExtendedResource does), and dense columns for every name
    would cost names x nodes memory and a per-name write on every node update. A dense column is
    built on first use and then kept up to date in place, for the DENSE_SCALARS names used last.
    A name is known (``get`` answers a column, zeros where absent) once any node listed it."""

    __slots__ = ("_dense", "_values", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self._values: dict[str, dict[int, int]] = {}
        self._dense: dict[str, np.ndarray] = {}  # insertion order = least recently built first

    def know(self, name: str) -> None:
        if name not in self._values:
            self._values[name] = {}

    def set(self, name: str, i: int, value: int) -> None:
        vals = self._values.get(name)
        if vals is None:
            vals = self._values[name] = {}
        if value:
            vals[i] = value
        else:
            vals.pop(i, None)
        col = self._dense.get(name)
        if col is not None:
            col[i] = value

    def get(self, name: str) -> np.ndarray | None:
        """The column of ``name``; None when no node ever listed it."""
        col = self._dense.get(name)
        if col is not None:
            return col
        vals = self._values.get(name)
        if vals is None:
            return None
        col = np.zeros(self.n, dtype=np.int64)
        if vals:
            col[np.fromiter(vals.keys(), dtype=np.intp, count=len(vals))] = np.fromiter(
                vals.values(), dtype=np.int64, count=len(vals)
            )
        if len(self._dense) >= DENSE_SCALARS:
            del self._dense[next(iter(self._dense))]
        self._dense[name] = col
        return col

    def __getitem__(self, name: str) -> np.ndarray:
        col = self.get(name)
        if col is None:
            raise KeyError(name)
        return col

    def __contains__(self, name: object) -> bool:
        return name in self._values


class NodeColumns:
    """Per-node numbers as numpy arrays, indexed like ``Snapshot.node_infos``."""

    __slots__ = (
        "alloc_cpu",
        "alloc_eph",
        "alloc_mem",
        "alloc_pods",
        "has_hard_taint",
        "has_images",
        "has_prefer_taint",
        "n",
        "non0_cpu",
        "non0_mem",
        "num_pods",
        "poisoned",
        "req_cpu",
        "req_eph",
        "req_mem",
        "scalar_alloc",
        "scalar_alloc_names",
        "scalar_req",
        "scalar_req_names",
        "unschedulable",
    )

    def __init__(self, n: int) -> None:
        self.n = n
        self.poisoned = 0  # nodes whose numbers could not be stored (see _poison)
        z = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
        self.alloc_cpu = z()
        self.alloc_mem = z()
        self.alloc_eph = z()
        self.alloc_pods = z()
        self.req_cpu = z()
        self.req_mem = z()
        self.req_eph = z()
        self.num_pods = z()
        self.non0_cpu = z()
        self.non0_mem = z()
        self.unschedulable = np.zeros(n, dtype=bool)
        self.has_hard_taint = np.zeros(n, dtype=bool)
        self.has_prefer_taint = np.zeros(n, dtype=bool)
        self.has_images = np.zeros(n, dtype=bool)
        self.scalar_alloc = ScalarColumns(n)
        self.scalar_req = ScalarColumns(n)
        # The scalar names each node position holds now, to clear the ones it drops.
        self.scalar_alloc_names: list[tuple[str, ...]] = [()] * n
        self.scalar_req_names: list[tuple[str, ...]] = [()] * n

    def set_node(self, i: int, ni: NodeInfo) -> None:
        try:
            self._set_node(i, ni)
        except (OverflowError, ValueError, TypeError) as exc:
            self._poison(i, ni, exc)

    def set_usage(self, i: int, ni: NodeInfo) -> None:
        try:
            self._set_usage(i, ni)
        except (OverflowError, ValueError, TypeError) as exc:
            self._poison(i, ni, exc)

    def _poison(self, i: int, ni: NodeInfo, exc: Exception) -> None:
        """A node whose numbers do not fit the columns: it offers nothing, the others are untouched.

        The model keeps every number inside int64, so this is a last line of defence.
        """
        self.poisoned += 1
        log.error("node_columns_failed", node=ni.name, error=str(exc))
        for col in (self.alloc_cpu, self.alloc_mem, self.alloc_eph, self.alloc_pods):
            col[i] = 0
        self._set_scalars(self.scalar_alloc, self.scalar_alloc_names, i, {})
        self._set_scalars(self.scalar_req, self.scalar_req_names, i, {})
        self.unschedulable[i] = True

    def _set_node(self, i: int, ni: NodeInfo) -> None:
        a = ni.allocatable
        self.alloc_cpu[i] = a.milli_cpu
        self.alloc_mem[i] = a.memory
        self.alloc_eph[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        self._set_usage(i, ni)
        self.unschedulable[i] = ni.unschedulable
        self.has_hard_taint[i] = any(t.effect in _HARD_EFFECTS for t in ni.taints)
        self.has_prefer_taint[i] = any(t.effect == "PreferNoSchedule" for t in ni.taints)
        self.has_images[i] = bool(ni.image_sizes)
        if a.scalar or self.scalar_alloc_names[i]:
            self._set_scalars(self.scalar_alloc, self.scalar_alloc_names, i, a.scalar)

    def _set_usage(self, i: int, ni: NodeInfo) -> None:
        r = ni.requested
        self.req_cpu[i] = r.milli_cpu
        self.req_mem[i] = r.memory
        self.req_eph[i] = r.ephemeral_storage
        self.num_pods[i] = len(ni.pods)
        self.non0_cpu[i] = ni.non0_cpu
        self.non0_mem[i] = ni.non0_mem
        if r.scalar or self.scalar_req_names[i]:
            self._set_scalars(self.scalar_req, self.scalar_req_names, i, r.scalar)

    def _set_scalars(
        self, cols: ScalarColumns, held: list[tuple[str, ...]], i: int, values: dict[str, int]
    ) -> None:
        for name in held[i]:
            if name not in values:
                cols.set(name, i, 0)
        for name, v in values.items():
            # Known on both sides, as a column pair: a requested name no node offers still
            # answers zeros for its allocatable.
            self.scalar_alloc.know(name)
            self.scalar_req.know(name)
            cols.set(name, i, v)
        held[i] = tuple(values)


class Snapshot:
    """Node infos of one cycle (cloned from the cache), in nodeTree order, with columns."""

    def __init__(self) -> None:
        self.node_infos: list[NodeInfo] = []
        self.node_map: dict[str, NodeInfo] = {}
        self.columns = NodeColumns(0)
        self.generation = 0
        # Bumped whenever some node's image_states changes (ImageLocality's batch index).
        self.image_epoch = 0
        self.have_pods_with_affinity: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity: list[NodeInfo] = []
        self._affinity_dirty = True
        # Change tracking for plugins that keep incremental per-node indexes (topology counts):
        # ``epoch`` bumps when the node list is rebuilt; ``node_seq[i]`` / ``label_seq[i]`` hold
        # the ``change_seq`` at which position i's NodeInfo / Node object last changed.
        self.epoch = 0
        self.change_seq = 0
        self.node_seq = np.zeros(0, dtype=np.int64)
        self.label_seq = np.zeros(0, dtype=np.int64)
        # The same changes as a log, (change_seq, position) in order since ``set_nodes``: the
        # few positions changed since a recent seq are found without scanning every node.
        self._node_log: list[tuple[int, int]] = []
        self._label_log: list[tuple[int, int]] = []
        # Workload-aware scheduling (GenericWorkload): copies of the cache's pod-group states;
        # pods the pod-group cycle assumed here (uid -> node, NodeInfo before, NodeInfo after);
        # and the placement the cycle restricts candidate nodes to (snapshot positions).
        self.pod_group_states: dict[str, PodGroupState] = {}
        self.assumed_pods: dict[str, tuple[str, NodeInfo, NodeInfo]] = {}
        self.placement_idx: np.ndarray | None = None
        self._placement_names: frozenset[str] = frozenset()
        self._backup: list[NodeInfo] | None = None

    # -- building ----------------------------------------------------------------------------
    def set_nodes(self, ordered: list[NodeInfo]) -> None:
        """Replace the whole node list (a node was added or removed)."""
        self.node_infos = ordered
        self.node_map = {n.name: n for n in ordered}
        cols = NodeColumns(len(ordered))
        for i, ni in enumerate(ordered):
            ni.index = i
            cols.set_node(i, ni)
        self.columns = cols
        self._rebuild_images()
        self._affinity_dirty = True
        self.epoch += 1
        self.change_seq += 1
        self.node_seq = np.full(len(ordered), self.change_seq, dtype=np.int64)
        self.label_seq = self.node_seq.copy()
        self._node_log = []
        self._label_log = []

    def replace_node(self, ni: NodeInfo, node_changed: bool) -> None:
        """Swap in a fresh clone of one node; only its columns are rewritten."""
        old = self.node_map[ni.name]
        ni.index = old.index
        self.node_infos[ni.index] = ni
        self.node_map[ni.name] = ni
        if node_changed:
            self.columns.set_node(ni.index, ni)
        else:
            self.columns.set_usage(ni.index, ni)
        if ni.image_states is None:
            # Not from a cache: count over the current list, like _rebuild_images.
            ni.image_states = {
                name: (size, sum(1 for n in self.node_infos if name in n.image_sizes))
                for name, size in ni.image_sizes.items()
            }
        if ni.image_states is not old.image_states and ni.image_states != old.image_states:
            self.image_epoch += 1
        if old.pods_with_affinity or ni.pods_with_affinity:
            self._affinity_dirty = True
        self.change_seq += 1
        self.node_seq[ni.index] = self.change_seq
        _log_change(self._node_log, self.change_seq, ni.index, len(self.node_infos))
        if node_changed:
            self.label_seq[ni.index] = self.change_seq
            _log_change(self._label_log, self.change_seq, ni.index, len(self.node_infos))

    def changed_since(self, seq: int, labels: bool = False) -> np.ndarray:
        """Positions whose NodeInfo (``labels``: Node object) changed after ``seq``, in order."""
        log = self._label_log if labels else self._node_log
        if log and log[0][0] <= seq + 1:
            k = bisect.bisect_right(log, (seq, _MAX_POS))
            if len(log) - k <= _LOG_READ_MAX:
                return np.array(sorted({i for _, i in log[k:]}), dtype=np.int64)
        elif seq >= self.change_seq:
            return _NO_POSITIONS
        # Many changes since (or older than the log): one pass over the seq array is cheaper.
        return np.flatnonzero((self.label_seq if labels else self.node_seq) > seq)

    def _rebuild_images(self) -> None:
        """Nodes that did not come through a cache get upstream NewSnapshot's image states:
        each node's own sizes, counted over the nodes of this list."""
        self.image_epoch += 1
        missing = [ni for ni in self.node_infos if ni.image_states is None]
        if not missing:
            return
        holders: dict[str, set[str]] = {}
        for ni in self.node_infos:
            for name in ni.image_sizes:
                holders.setdefault(name, set()).add(ni.name)
        for ni in missing:
            ni.image_states = {name: (size, len(holders[name])) for name, size in ni.image_sizes.items()}

    def _refresh_affinity_lists(self) -> None:
        if self._affinity_dirty:
            self.have_pods_with_affinity = [n for n in self.node_infos if n.pods_with_affinity]
            self.have_pods_with_required_anti_affinity = [
                n for n in self.node_infos if n.pods_with_required_anti_affinity
            ]
            self._affinity_dirty = False

    # -- reading (upstream NodeInfoLister) ---------------------------------------------------
    def list(self) -> list[NodeInfo]:
        return self.node_infos

    def get(self, name: str) -> NodeInfo | None:
        return self.node_map.get(name)

    def nodes_with_affinity_pods(self) -> builtins.list[NodeInfo]:
        self._refresh_affinity_lists()
        return self.have_pods_with_affinity

    def nodes_with_required_anti_affinity_pods(self) -> builtins.list[NodeInfo]:
        self._refresh_affinity_lists()
        return self.have_pods_with_required_anti_affinity

    def __len__(self) -> int:
        return len(self.node_infos)

    # -- pod-group cycle (upstream Snapshot AssumePod, ForgetPod, AssumePlacement, Backup) -----
    def pod_group_state_lister(self) -> PodGroupStates:
        return PodGroupStates(self.pod_group_states)

    def assume_pod(self, pod: PodInfo, node: str, in_group: bool) -> None:
        """Count ``pod`` (already carrying ``node``) on its node in this snapshot only, for the
        rest of the pod-group cycle; ``in_group``: also mark it assumed in its group's state."""
        old = self.node_map.get(node)
        if old is None:
            raise ValueError(f'nodeinfo not found for node name "{node}"')
        new = old.clone()
        new.add_pod(pod)
        new.generation = old.generation  # a snapshot-only change, as upstream keeps it
        self.replace_node(new, False)
        self.assumed_pods[pod.uid] = (node, old, new)
        if in_group and pod.scheduling_group is not None:
            st = self.pod_group_states.get(group_key(pod.namespace, pod.scheduling_group))
            if st is not None:
                st.assume_pod(pod)

    def forget_pod(self, pod: PodInfo, in_group: bool) -> None:
        entry = self.assumed_pods.pop(pod.uid, None)
        if entry is None:
            raise ValueError(f'assumed pod "{pod.key}" not found in the snapshot')
        node, before, after = entry
        current = self.node_map.get(node)
        if current is after:
            self.replace_node(before, False)  # nothing else changed the node since
        elif current is not None:
            ni = current.clone()
            ni.remove_pod(pod)
            ni.generation = current.generation
            self.replace_node(ni, False)
        if in_group and pod.scheduling_group is not None:
            st = self.pod_group_states.get(group_key(pod.namespace, pod.scheduling_group))
            if st is not None:
                st.forget_pod(pod.uid)

    def forget_all_assumed(self) -> int:
        """Safety net before a sync: assumptions a cycle left behind are dropped."""
        n = len(self.assumed_pods)
        for uid in list(self.assumed_pods):
            node, before, _ = self.assumed_pods.pop(uid)
            if node in self.node_map:
                self.replace_node(before, False)
        return n

    def assume_placement(self, nodes: Sequence[NodeInfo]) -> None:
        """Limit the candidate nodes to ``nodes`` (all nodes: no limit, as upstream)."""
        if len(nodes) == len(self.node_infos):
            self.forget_placement()
            return
        idx: list[int] = []
        for ni in nodes:
            current = self.node_map.get(ni.name)
            if current is None:
                self.forget_placement()
                raise ValueError(f"node {ni.name} in placement is not present in snapshot")
            idx.append(current.index)
        self.placement_idx = np.array(idx, dtype=np.int64)
        self._placement_names = frozenset(ni.name for ni in nodes)

    def forget_placement(self) -> None:
        self.placement_idx = None
        self._placement_names = frozenset()

    def num_nodes_in_placement(self) -> int:
        return len(self.node_infos) if self.placement_idx is None else len(self.placement_idx)

    def in_placement(self, name: str) -> bool:
        return self.placement_idx is None or name in self._placement_names

    def backup(self) -> Callable[[], None]:
        """Clone every node so preemption can remove pods from them; the returned function puts
        the originals back (upstream BackupSnapshot; backups do not stack)."""
        if self._backup is not None:
            raise ValueError("cannot stack backups")
        self._backup = list(self.node_infos)
        for ni in self._backup:
            self.replace_node(ni.clone(), False)

        def restore() -> None:
            saved, self._backup = self._backup, None
            for ni in saved or ():
                if ni.name in self.node_map:
                    self.replace_node(ni, False)

        return restore
