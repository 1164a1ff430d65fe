"""Cache: assumed pods, confirmation, expiry, finished and terminating pods, snapshots.
Expected behaviour from upstream pkg/scheduler/backend/cache/cache_test.go (test names cited)."""

from __future__ import annotations

import pytest

from scheduler.backend.cache import Cache
from scheduler.core.cycle import assumed_copy
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, pod_info


def cpu_requested(c: Cache, node: str) -> int:
    ni = c.nodes.get(node)
    return ni.requested.milli_cpu if ni is not None else 0


def assume(c: Cache, name: str, node: str, cpu: str = "1") -> PodInfo:
    p = assumed_copy(pod_info(name, cpu=cpu), node)
    c.assume_pod(p, node)
    return p


def test_assume_counts_resources():
    # TestAssumePodScheduled
    c = Cache()
    c.add_node(make_node("n1"))
    assume(c, "a", "n1", "500m")
    assert cpu_requested(c, "n1") == 500
    assert c.is_assumed("uid-default-a")


def test_assume_twice_is_refused():
    c = Cache()
    c.add_node(make_node("n1"))
    assume(c, "a", "n1")
    with pytest.raises(ValueError):
        assume(c, "a", "n1")


@pytest.mark.parametrize(
    ("bound_node", "want_n1", "want_n2"),
    [
        # TestAddPodWillConfirm: the watch shows the pod bound where we assumed it.
        ("n1", 1000, 0),
        # TestAddPodWillReplaceAssumed: bound elsewhere; the real node wins.
        ("n2", 0, 1000),
    ],
)
def test_add_confirms_assumed(bound_node, want_n1, want_n2):
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    assume(c, "a", "n1")
    c.add_pod(pod_info("a", cpu="1", node_name=bound_node))
    assert not c.is_assumed("uid-default-a")
    assert (cpu_requested(c, "n1"), cpu_requested(c, "n2")) == (want_n1, want_n2)


@pytest.mark.parametrize("finished", [False, True])
def test_assumed_pod_holds_until_confirmed_or_forgotten(finished):
    # kube-scheduler runs with durationToExpireAssumedPod = 0 (kubernetes#106361): an assumed
    # pod, binding in flight or done but not yet seen bound by the watch, keeps its resources
    # however long the watch lags; nothing else in the cache can release it.
    c = Cache()
    c.add_node(make_node("n1"))
    assume(c, "a", "n1")
    if finished:
        c.finish_binding("uid-default-a")
    assert c.is_assumed("uid-default-a") and cpu_requested(c, "n1") == 1000
    c.add_pod(pod_info("a", cpu="1", node_name="n1"))  # the watch confirms
    assert not c.is_assumed("uid-default-a") and cpu_requested(c, "n1") == 1000


def test_forget_all_assumed_keeps_confirmed():
    # Lease lost: every assumption goes, pods the watch showed bound stay.
    c = Cache()
    c.add_node(make_node("n1"))
    assume(c, "a", "n1")
    assume(c, "b", "n1")
    c.finish_binding("uid-default-b")
    c.add_pod(pod_info("c", cpu="1", node_name="n1"))
    assert c.forget_all_assumed() == 2
    assert cpu_requested(c, "n1") == 1000 and c.pod_count() == 1


def test_forget_releases():
    # TestForgetPod
    c = Cache()
    c.add_node(make_node("n1"))
    assume(c, "a", "n1")
    c.forget_pod("uid-default-a")
    assert cpu_requested(c, "n1") == 0
    assert c.get_pod("uid-default-a") is None


def test_forget_does_not_remove_confirmed():
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_pod(pod_info("a", cpu="1", node_name="n1"))
    c.forget_pod("uid-default-a")
    assert cpu_requested(c, "n1") == 1000


@pytest.mark.parametrize(
    ("phase", "deleting", "counted"),
    [
        # Pods that finished free their resources; terminating pods still hold them.
        ("Succeeded", False, False),
        ("Failed", False, False),
        ("Running", True, True),
        ("Running", False, True),
        (None, False, True),
    ],
)
def test_finished_and_terminating(phase, deleting, counted):
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_pod(pod_info("a", cpu="1", node_name="n1"))
    c.update_pod(pod_info("a", cpu="1", node_name="n1", phase=phase, deleting=deleting))
    assert cpu_requested(c, "n1") == (1000 if counted else 0)


def test_remove_pod():
    # TestRemovePod
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_pod(pod_info("a", cpu="1", node_name="n1"))
    c.remove_pod("uid-default-a")
    assert cpu_requested(c, "n1") == 0


def test_pod_before_node_and_node_removed_with_pods():
    # TestNodeOperators / TestRemoveNode: pods may reference a node the cache does not know yet;
    # a removed node with pods stays as an imaginary NodeInfo until its pods go.
    c = Cache()
    c.add_pod(pod_info("a", cpu="1", node_name="n1"))
    assert cpu_requested(c, "n1") == 1000
    assert c.node_count() == 0
    c.add_node(make_node("n1"))
    assert c.node_count() == 1
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [n.name for n in snap.node_infos] == ["n1"]
    c.remove_node("n1")
    c.update_snapshot(snap)
    assert snap.node_infos == []
    assert "n1" in c.nodes
    c.remove_pod("uid-default-a")
    assert "n1" not in c.nodes


def test_snapshot_copies_only_changed_nodes():
    # TestSchedulerCache_UpdateSnapshot: unchanged nodes keep the same clone.
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    snap = Snapshot()
    c.update_snapshot(snap)
    n1, n2 = snap.node_map["n1"], snap.node_map["n2"]
    c.add_pod(pod_info("a", cpu="1", node_name="n2"))
    c.update_snapshot(snap)
    assert snap.node_map["n1"] is n1
    assert snap.node_map["n2"] is not n2
    assert snap.node_map["n2"].requested.milli_cpu == 1000
    assert n2.requested.milli_cpu == 0  # the previous snapshot's clone was not mutated


def test_cache_size_metric_counts_nodes_pods_and_assumed():
    # kube-scheduler's scheduler_cache_size{type=nodes|pods|assumed_pods} (backend/cache/cache.go
    # updateMetrics): a removed node leaves the count; an assumed pod counts as pod and assumed.
    from scheduler.live.metrics import Metrics

    c = Cache()
    m = Metrics()
    m.watch_cache(c.sizes)
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    c.add_pod(pod_info("bound", cpu="1", node_name="n1"))
    assume(c, "a", "n2")
    c.remove_node("n2")
    body = m.exposition()[0].decode()
    assert 'scheduler_cache_size{type="nodes"} 1.0' in body
    assert 'scheduler_cache_size{type="pods"} 2.0' in body
    assert 'scheduler_cache_size{type="assumed_pods"} 1.0' in body


@pytest.mark.parametrize("bad_status", [
    [["images", [{"names": ["img:1"], "sizeBytes": 5}]]],  # status as a list (found by tests/fuzz)
    {"allocatable": {"cpu": "-1"}, "images": [{"names": ["other:1"], "sizeBytes": 7}]},
])
def test_refused_node_update_keeps_node_and_images(bad_status):
    # A Node update the model refuses raises ObjectError and changes nothing: before, the
    # node's images were re-indexed from the bad body first, and a refused update lost them.
    from scheduler.model.schema import ObjectError

    c = Cache()
    good = make_node("n1", cpu="2", images=[(["img:1"], 5)])
    c.add_node(good)
    bad = {**good, "status": bad_status}
    with pytest.raises(ObjectError):
        c.add_node(bad)
    assert {k: (s.size, sorted(s.nodes)) for k, s in c.image_states.items()} == {"img:1": (5, ["n1"])}
    assert c.nodes["n1"].raw is good
