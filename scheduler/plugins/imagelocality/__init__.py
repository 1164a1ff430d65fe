"""ImageLocality (upstream plugins/imagelocality/image_locality.go).

Favours nodes that already hold the pod's images: init containers, containers and image
volumes (spec.volumes[].image.reference). Each image present on the node adds its size scaled
by the share of nodes holding it (to avoid piling pods onto the few nodes that have a big
image); the sum is clamped to [23 MiB, 1000 MiB x number of containers] and mapped linearly
onto 0..100.

Size and node count come from the node's ``image_states`` (the scheduler cache's summary: one
size per image name, from the node that reported it first), not from the node's own report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, ScorePlugin, SignPlugin
from scheduler.framework.signers import IMAGE_NAMES_SIGNER, SignFragment
from scheduler.framework.status import MAX_NODE_SCORE, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

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
    """Normalised names in upstream's order; a repeated image counts every time."""
    out = [normalized_image_name(i) for i in (*pod.init_images, *pod.images)]
    for v in pod.volumes:
        image = v.get("image")
        if isinstance(image, Mapping):
            out.append(normalized_image_name(str(image.get("reference") or "")))
    return out


def num_containers(pod: PodInfo) -> int:
    # Image volumes add to the sum but not to the threshold.
    return len(pod.init_images) + len(pod.images)


def sum_image_scores(node: NodeInfo, images: list[str], total: int) -> int:
    s = 0
    states = node.image_states or {}
    for img in images:
        st = states.get(img)
        if st is not None:
            s += scaled_image_score(st[0], st[1], total)
    return s


class _ImageIndex:
    """Per snapshot image set: for each image, the node positions holding it and their scaled
    scores. Valid while the snapshot's ``image_epoch`` and node count stay the same."""

    __slots__ = ("entries", "epoch", "n", "snapshot")

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.epoch = snapshot.image_epoch
        self.n = len(snapshot.node_infos)
        self.entries: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def valid_for(self, snapshot: Snapshot) -> bool:
        return self.snapshot is snapshot and self.epoch == snapshot.image_epoch and self.n == len(snapshot.node_infos)

    def get(self, image: str) -> tuple[np.ndarray, np.ndarray]:
        e = self.entries.get(image)
        if e is None:
            pos: list[int] = []
            scores: list[int] = []
            total = self.n
            for i, ni in enumerate(self.snapshot.node_infos):
                st = (ni.image_states or {}).get(image)
                if st is not None:
                    pos.append(i)
                    scores.append(scaled_image_score(st[0], st[1], total))
            e = (np.array(pos, dtype=np.intp), np.array(scores, dtype=np.int64))
            self.entries[image] = e
        return e


class ImageLocality(ScorePlugin, SignPlugin):
    name = NAME

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream ImageLocality.SignPod: the containers' and init containers' images, normalized."""
        names = {normalized_image_name(i) for i in (*pod.init_images, *pod.images)}
        return [(IMAGE_NAMES_SIGNER, sorted(names))]

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
        s = sum_image_scores(node, pod_images(pod), len(snap.node_infos))
        return calculate_priority(s, num_containers(pod))

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.intp)
        index = self._index
        if index is None or not index.valid_for(snapshot):
            index = self._index = _ImageIndex(snapshot)
        sums = np.zeros(index.n, dtype=np.int64)
        any_image = False
        for img in pod_images(pod):
            pos, scores = index.get(img)
            if len(pos):
                any_image = True
                sums[pos] += scores  # positions within one image are distinct
        if not any_image:
            # None of the pod's images is on any node: every sum is 0, below the minimum -> 0.
            return np.zeros(len(idx), dtype=np.int64)
        s = sums.take(idx)
        max_threshold = MAX_CONTAINER_THRESHOLD * num_containers(pod)
        # Clamp in upstream's order (not np.clip): with no containers max < min, and upstream
        # then lets a sum at or above the minimum through to the max branch.
        s = np.where(s < MIN_THRESHOLD, MIN_THRESHOLD, np.where(s > max_threshold, max_threshold, s))
        return MAX_NODE_SCORE * (s - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
