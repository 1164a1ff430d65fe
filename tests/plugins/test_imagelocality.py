"""ImageLocality.

Expected values: upstream imagelocality/image_locality_test.go (TestImageLocalityPriority, all
eight v1.36.3 cases with their node fixtures; TestNormalizedImageName), which builds its
snapshot with cache.NewSnapshot (each node's own sizes). The cache-built image states follow
backend/cache/cache.go addNodeImageStates / removeNodeImageStates and
ImageStateSummary.Snapshot (one size per image name from the first node reporting it; the node
count taken when a node is cloned into the snapshot).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.backend.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import PodInfo
from scheduler.plugins.imagelocality import ImageLocality, normalized_image_name
from scheduler.testing.builders import MakePod, make_node, make_pod
from scheduler.testing.framework import new_snapshot

MB = 1024 * 1024

Images = list[tuple[list[str], int]]

NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []


def pod(images: list[str], init_images: list[str] | None = None, volume_images: list[str] | None = None) -> PodInfo:
    w = MakePod().containers([])
    for img in images:
        w.container(image=img)
    for img in init_images or []:
        w.container(image=img, init=True)
    w.volume(*[{"name": f"v{i}", "image": {"reference": r}} for i, r in enumerate(volume_images or [])])
    return w.info()


def snapshot(*node_images: Images) -> Snapshot:
    """cache.NewSnapshot(nil, nodes): no cache involved."""
    return new_snapshot(make_node(f"node{i + 1}", images=imgs) for i, imgs in enumerate(node_images))


def scores(p: PodInfo, snap: Snapshot, plugin: ImageLocality | None = None) -> list[int]:
    plugin = plugin or ImageLocality(Handle(snap, Listers()))
    state = CycleState()
    per_node = [plugin.score(state, p, n) for n in snap.node_infos]
    assert plugin.score_batch(state, p, snap, np.arange(len(snap))).tolist() == per_node
    return per_node


@pytest.mark.parametrize(
    ("name", "p", "nodes", "want"),
    [
        (
            "two images spread on two nodes, prefer the larger image one",
            pod(["gcr.io/40", "gcr.io/250"]),
            [NODE_40_300_2000, NODE_250_10],
            [0, 5],
        ),
        (
            "two images on one node, prefer this node",
            pod(["gcr.io/40", "gcr.io/300"]),
            [NODE_40_300_2000, NODE_250_10],
            [7, 0],
        ),
        ("if exceed limit, use limit", pod(["gcr.io/10", "gcr.io/4000"]), [NODE_4000_30, NODE_250_10], [100, 0]),
        (
            "if exceed limit, use limit (with node which has no images present)",
            pod(["gcr.io/10", "gcr.io/4000"]),
            [NODE_4000_30, NODE_250_10, NO_IMAGES],
            [66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
            [32, 36, 0],
        ),
        ("pod with multiple small images", pod(["gcr.io/30", "gcr.io/40"]), [NODE_20_30_40, NODE_4000_30], [1, 0]),
        (
            "pod with ImageVolume",
            pod(["gcr.io/30"], volume_images=["gcr.io/300"]),
            [NODE_300_600_900, NODE_4000_30],
            [12, 0],
        ),
        (
            "include InitContainers: two images spread on two nodes, prefer the larger image one",
            pod(["gcr.io/30"], init_images=["gcr.io/300"]),
            [NODE_40_300_2000, NODE_20_30_40],
            [6, 0],
        ),
    ],
)
def test_image_locality_priority(name: str, p: PodInfo, nodes: list[Images], want: list[int]) -> None:
    """image_locality_test.go TestImageLocalityPriority."""
    assert scores(p, snapshot(*nodes)) == want


@pytest.mark.parametrize(
    ("name", "image", "want"),
    [
        ("add :latest postfix 1", "root", "root:latest"),
        ("add :latest postfix 2", "gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("keep it as is 1", "root:tag", "root:tag"),
        ("keep it as is 2", "root@sha256:" + "a" * 64, "root@sha256:" + "a" * 64),
    ],
)
def test_normalized_image_name(name: str, image: str, want: str) -> None:
    """image_locality_test.go TestNormalizedImageName."""
    assert normalized_image_name(image) == want


def test_image_volume_counts_in_sum_not_in_threshold() -> None:
    # One container (max threshold 1000MB); the volume image is normalised like a container
    # image and adds 300MB x 1/1: 100 * (300MB - 23MB) / (1000MB - 23MB) = 28.
    snap = snapshot(NODE_300_600_900)
    assert scores(pod(["busybox"], volume_images=["gcr.io/300"]), snap) == [28]
    # A repeated image counts each time it is listed (upstream loops over every entry).
    assert scores(pod(["gcr.io/300"], volume_images=["gcr.io/300"]), snap) == [59]
    # Volumes without an image source are ignored.
    p = PodInfo(make_pod("p", images=["busybox"], volumes=[{"name": "v", "emptyDir": {}}]))
    assert scores(p, snap) == [0]


# ---------------------------------------------------------------------------------------------
# Image states built by the scheduler cache


def cache_with(*nodes: tuple[str, Images]) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for name, imgs in nodes:
        cache.add_node(make_node(name, images=imgs))
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


def states(snap: Snapshot, image: str) -> list[tuple[int, int] | None]:
    return [(n.image_states or {}).get(image) for n in snap.node_infos]


def test_cache_size_comes_from_first_reporting_node() -> None:
    """cache.go addNodeImageStates: the first node to report a name fixes its size."""
    _, snap = cache_with(("a", [(["img:latest"], 100 * MB)]), ("b", [(["img:latest"], 900 * MB)]))
    assert states(snap, "img:latest") == [(100 * MB, 2), (100 * MB, 2)]
    # Both nodes score with 100MB x 2/2: 100 * (100MB - 23MB) / (1000MB - 23MB) = 7.
    assert scores(pod(["img"]), snap) == [7, 7]
    # NewSnapshot (no cache) would use each node's own size instead.
    own = snapshot([(["img:latest"], 100 * MB)], [(["img:latest"], 900 * MB)])
    assert scores(pod(["img"]), own) == [7, 89]


def test_cache_repeated_name_on_one_node_keeps_first_size() -> None:
    _, snap = cache_with(("a", [(["img:latest"], 50 * MB), (["img:latest", "img:v2"], 70 * MB)]))
    assert states(snap, "img:latest") == [(50 * MB, 1)]
    assert states(snap, "img:v2") == [(70 * MB, 1)]


def test_cache_removed_image_forgets_its_size() -> None:
    """removeNodeImageStates drops a name no node holds any more; a later node sets it anew."""
    cache, snap = cache_with(("a", [(["img:latest"], 100 * MB)]))
    cache.remove_node("a")
    cache.add_node(make_node("b", images=[(["img:latest"], 500 * MB)]))
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [(500 * MB, 1)]
    assert "img:latest" in cache.image_states and cache.image_states["img:latest"].nodes == {"b"}


def test_cache_size_survives_while_any_node_holds_it() -> None:
    cache, snap = cache_with(("a", [(["img:latest"], 100 * MB)]), ("b", [(["img:latest"], 900 * MB)]))
    # a stops reporting the image; b still has it, so the 100MB size stays (b is not re-cloned,
    # so its snapshot still counts 2 holders).
    cache.update_node(make_node("a", images=[]))
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [None, (100 * MB, 2)]
    assert cache.image_states["img:latest"].nodes == {"b"}
    # An update first removes the node's old list: b was the last holder, so the entry goes and
    # b's new report fixes the size again.
    cache.update_node(make_node("b", images=[(["img:latest"], 300 * MB)]))
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [None, (300 * MB, 1)]


def test_cache_node_count_is_taken_when_a_node_is_snapshotted() -> None:
    """UpdateSnapshot re-clones only nodes changed since the last snapshot, and
    ImageStateSummary.Snapshot counts the holders at clone time: an unchanged node keeps the
    count it had, while the node total (the snapshot's list length) is current."""
    cache, snap = cache_with(("a", [(["img:latest"], 2000 * MB)]))
    assert states(snap, "img:latest") == [(2000 * MB, 1)]
    cache.add_node(make_node("b", images=[(["img:latest"], 2000 * MB)]))
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [(2000 * MB, 1), (2000 * MB, 2)]
    plugin = ImageLocality(Handle(snap, Listers()))
    # a: 2000MB x 1/2 = 1000MB -> 100 * (1000MB - 23MB) / (2000MB - 23MB) = 49; b: 2000MB x 2/2 -> 100.
    assert scores(pod(["img", "other"]), snap, plugin) == [49, 100]
    # A pod landing on a re-clones it with the current count.
    cache.assume_pod(PodInfo(make_pod("x", node_name="a")), "a")
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [(2000 * MB, 2), (2000 * MB, 2)]
    assert scores(pod(["img", "other"]), snap, plugin) == [100, 100]
    # Removing b leaves a's count stale at 2 until a changes again (total nodes now 1).
    cache.remove_node("b")
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [(2000 * MB, 2)]
    assert scores(pod(["img", "other"]), snap, plugin) == [100]
    cache.update_node(make_node("a", images=[(["img:latest"], 2000 * MB)]))
    cache.update_snapshot(snap)
    assert states(snap, "img:latest") == [(2000 * MB, 1)]


@pytest.mark.parametrize("seed", range(5))
def test_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"img{i}" for i in range(8)]
    cache = Cache()
    snap = Snapshot()
    plugin = ImageLocality(Handle(snap, Listers()))
    seen: set[int] = set()
    for step in range(6):
        # Nodes arrive, change their images and leave between snapshots.
        for i in rng.sample(range(40), 12):
            if rng.random() < 0.15:
                cache.remove_node(f"n{i}")
                continue
            imgs = [([f"{n}:latest"], rng.randint(1, 1500) * MB) for n in names if rng.random() < 0.3]
            cache.add_node(make_node(f"n{i}", images=imgs))
        cache.update_snapshot(snap)
        for _ in range(10):
            p = pod(
                rng.sample([*names, "other"], rng.randint(1, 3)),
                init_images=rng.sample(names, rng.randint(0, 2)),
                volume_images=rng.sample(names, rng.randint(0, 1)),
            )
            n = len(snap)
            idx = np.array(sorted(rng.sample(range(n), rng.randint(1, n))))
            want = [plugin.score(CycleState(), p, snap.node_infos[i]) for i in idx]
            assert plugin.score_batch(CycleState(), p, snap, idx).tolist() == want, step
            seen.update(want)
    assert len(seen) > 3
