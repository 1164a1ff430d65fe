"""ImageLocality.

Expected values: upstream imagelocality/image_locality_test.go (TestImageLocalityPriority node
fixtures node403002000 / node25010, TestNormalizedImageName), with the scores of the current
image_locality.go (spread = nodes having the image / all nodes; max threshold = 1000MB x number
of containers incl. init containers).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.objects import NodeInfo, PodInfo
from scheduler.plugins.imagelocality import ImageLocality, normalized_image_name
from scheduler.snapshot import Listers, Snapshot
from tests.builders import make_node, make_pod

MB = 1024 * 1024

NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]


def pod(images: list[str], init_images: list[str] | None = None) -> PodInfo:
    cs = [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]
    ics = [{"name": f"i{i}", "image": img} for i, img in enumerate(init_images or [])]
    return PodInfo(make_pod("p", containers=cs, init_containers=ics))


def snapshot(*node_images: list[tuple[list[str], int]] | None) -> Snapshot:
    infos = [NodeInfo(make_node(f"machine{i + 1}", images=imgs)) for i, imgs in enumerate(node_images)]
    snap = Snapshot()
    snap.set_nodes(infos)
    return snap


def scores(p: PodInfo, snap: Snapshot) -> list[int]:
    plugin = ImageLocality(Handle(snap, Listers()))
    state = CycleState()
    per_node = [plugin.score(state, p, n) for n in snap.node_infos]
    assert plugin.score_batch(state, p, snap, np.arange(len(snap))).tolist() == per_node
    return per_node


@pytest.mark.parametrize(
    ("name", "p", "nodes", "want"),
    [
        # node1: 40MB x 1/2 = 20MB < 23MB -> 0; node2: 100 * (250MB/2 - 23MB) / (2000MB - 23MB) = 5
        (
            "two images spread on two nodes, prefer the larger image one",
            pod(["gcr.io/40", "gcr.io/250"]),
            [NODE_40_300_2000, NODE_250_10],
            [0, 5],
        ),
        # node1: 100 * ((40MB + 300MB)/2 - 23MB) / (2000MB - 23MB) = 7
        (
            "two images on one node, prefer this node",
            pod(["gcr.io/40", "gcr.io/300"]),
            [NODE_40_300_2000, NODE_250_10],
            [7, 0],
        ),
        # node1: 100 * (2000MB/2 - 23MB) / (2000MB - 23MB) = 49; node2: 10MB/2 < 23MB -> 0
        (
            "if exceed limit, use limit",
            pod(["gcr.io/10", "gcr.io/2000"]),
            [NODE_40_300_2000, NODE_250_10],
            [49, 0],
        ),
        # three nodes: 2000MB/3 -> 100 * (666.67MB - 23MB) / 1977MB = 32
        (
            "if exceed limit, use limit (with node which has no images present)",
            pod(["gcr.io/10", "gcr.io/2000"]),
            [NODE_40_300_2000, NODE_250_10, None],
            [32, 0, 0],
        ),
        # init containers count, in both the sum and the max threshold (3 containers -> 3000MB)
        (
            "pod with init containers",
            pod(["gcr.io/300"], init_images=["gcr.io/2000", "gcr.io/40"]),
            [NODE_40_300_2000, NODE_250_10],
            [38, 0],
        ),
        ("image on no node", pod(["nginx"]), [NODE_40_300_2000, NODE_250_10], [0, 0]),
    ],
)
def test_image_locality_priority(name: str, p: PodInfo, nodes: list, want: list[int]) -> None:
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


@pytest.mark.parametrize("seed", range(5))
def test_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"img{i}" for i in range(8)]
    nodes = []
    for _ in range(40):
        imgs = [([f"{n}:latest"], rng.randint(1, 1500) * MB) for n in names if rng.random() < 0.3]
        nodes.append(imgs or None)
    snap = snapshot(*nodes)
    seen: set[int] = set()
    for _ in range(30):
        p = pod(
            rng.sample([*names, "other"], rng.randint(1, 3)), init_images=rng.sample(names, rng.randint(0, 2))
        )
        idx = np.array(sorted(rng.sample(range(40), rng.randint(1, 40))))
        plugin = ImageLocality(Handle(snap, Listers()))
        want = [plugin.score(CycleState(), p, snap.node_infos[i]) for i in idx]
        assert plugin.score_batch(CycleState(), p, snap, idx).tolist() == want
        seen.update(want)
    assert len(seen) > 3


def test_batch_index_follows_snapshot_changes() -> None:
    """The batch form caches image positions per snapshot image set; a node update must not go stale."""
    snap = snapshot(NODE_40_300_2000, NODE_250_10)
    plugin = ImageLocality(Handle(snap, Listers()))
    p = pod(["gcr.io/10", "gcr.io/2000"])
    assert plugin.score_batch(CycleState(), p, snap, np.arange(2)).tolist() == [49, 0]
    # machine2 now also has the 2000MB image: spread 2/2 -> both nodes at the max.
    snap.replace_node(
        NodeInfo(make_node("machine2", images=[*NODE_250_10, (["gcr.io/2000:latest"], 2000 * MB)])), True
    )
    want = [plugin.score(CycleState(), p, n) for n in snap.node_infos]
    assert want == [100, 100]
    assert plugin.score_batch(CycleState(), p, snap, np.arange(2)).tolist() == want
