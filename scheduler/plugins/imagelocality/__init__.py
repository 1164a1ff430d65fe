"""ImageLocality (upstream plugins/imagelocality/image_locality.go).

Favours nodes that already hold the pod's container images (init containers included). Each
image present on the node adds its size scaled by the share of nodes holding it (to avoid
piling pods onto the few nodes that have a big image); the sum is clamped to
[23 MiB, 1000 MiB x number of containers] and mapped linearly onto 0..100.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, ScorePlugin
from scheduler.framework.status import MAX_NODE_SCORE
from scheduler.objects import NodeInfo, PodInfo

if TYPE_CHECKING:
    from scheduler.snapshot import Snapshot

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Append ':latest' when the reference has no tag (a ':' before the last '/' is a port)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    # float64 math as upstream: int64(float64(size) * (float64(numNodes) / float64(total))).
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


def pod_images(pod: PodInfo) -> list[str]:
    return [normalized_image_name(i) for i in (*pod.init_images, *pod.images)]


def sum_image_scores(
    node: NodeInfo, images: list[str], image_num_nodes: Mapping[str, int], total: int
) -> int:
    s = 0
    sizes = node.image_sizes
    for img in images:
        size = sizes.get(img)
        if size is not None:
            s += scaled_image_score(size, image_num_nodes.get(img, 0), total)
    return s


class _ImageIndex:
    """Per snapshot image set: for each image, the node positions holding it and its sizes.

    Keyed on the snapshot's ``image_num_nodes`` dict, which the snapshot replaces whenever any
    node's image list changes (and on every node-list rebuild).
    """

    __slots__ = ("counts", "entries", "n")

    def __init__(self, counts: Mapping[str, int], n: int) -> None:
        self.counts = counts
        self.n = n
        self.entries: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, snapshot: Snapshot, image: str) -> tuple[np.ndarray, np.ndarray]:
        e = self.entries.get(image)
        if e is None:
            pos: list[int] = []
            sizes: list[int] = []
            for i, ni in enumerate(snapshot.node_infos):
                size = ni.image_sizes.get(image)
                if size is not None:
                    pos.append(i)
                    sizes.append(size)
            e = (np.array(pos, dtype=np.intp), np.array(sizes, dtype=np.int64))
            self.entries[image] = e
        return e


class ImageLocality(ScorePlugin):
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        self._index: _ImageIndex | None = None

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> ImageLocality:
        return cls(handle)

    def _snapshot(self) -> Snapshot:
        if self.handle is None:
            raise RuntimeError("ImageLocality needs a handle with a snapshot")
        return self.handle.snapshot

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        snap = self._snapshot()
        images = pod_images(pod)
        total = len(snap.node_infos)
        s = sum_image_scores(node, images, snap.image_num_nodes, total)
        return calculate_priority(s, len(pod.init_images) + len(pod.images))

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.intp)
        counts = snapshot.image_num_nodes
        images = [img for img in pod_images(pod) if img in counts]
        if not images:
            # None of the pod's images is on any node: every sum is 0, below the minimum -> 0.
            return np.zeros(len(idx), dtype=np.int64)
        total = len(snapshot.node_infos)
        index = self._index
        if index is None or index.counts is not counts or index.n != total:
            index = self._index = _ImageIndex(counts, total)
        sums = np.zeros(total, dtype=np.int64)
        for img in images:
            pos, sizes = index.get(snapshot, img)
            spread = float(counts[img]) / float(total)
            # int64(float64(size) * spread): truncation toward zero, all values positive.
            sums[pos] += (sizes.astype(np.float64) * spread).astype(np.int64)
        s = sums.take(idx)
        max_threshold = MAX_CONTAINER_THRESHOLD * (len(pod.init_images) + len(pod.images))
        np.clip(s, MIN_THRESHOLD, max_threshold, out=s)
        return MAX_NODE_SCORE * (s - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
