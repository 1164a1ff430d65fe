"""The SIGUSR2 cache debugger's pure half (upstream backend/cache/debugger: comparer_test.go's
TestCompareNodes/TestComparePods tables, dumper.go's text)."""

from __future__ import annotations

import pytest

from scheduler.backend import debugger
from scheduler.backend.cache import Cache
from scheduler.backend.nominator import PodNominator
from scheduler.framework.interface import QueuedPodInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod


@pytest.mark.parametrize(
    ("actual", "cached", "missed", "redundant"),
    [
        # comparer_test.go TestCompareNodes
        (["foo", "bar"], ["bar", "foo", "foobar"], [], ["foobar"]),
        (["foo", "bar", "foobar"], ["bar", "foo"], ["foobar"], []),
        (["foo", "bar", "foobar"], ["bar", "foobar", "baz"], ["foo"], ["baz"]),
        ([], [], [], []),
        # duplicates count once each, as a sorted merge sees them
        (["a", "a"], ["a"], ["a"], []),
    ],
)
def test_compare_strings(actual, cached, missed, redundant):
    assert debugger.compare_strings(actual, cached) == (missed, redundant)


def _cache() -> Cache:
    c = Cache()
    c.add_node(make_node("n1", cpu="4"))
    c.add_node(make_node("n2", cpu="4"))
    c.add_pod(PodInfo(make_pod("bound", cpu="1", node_name="n1")))
    return c


def test_compare_nodes_and_pods():
    c = _cache()
    assert debugger.compare_nodes(["n1", "n3"], c.nodes) == (["n3"], ["n2"])
    waiting = [QueuedPodInfo(PodInfo(make_pod("waiting")), 0.0)]
    bound_uid, waiting_uid = "uid-default-bound", "uid-default-waiting"
    # The cache's side: pods on cached nodes plus the queue's pending pods (ComparePods).
    assert debugger.compare_pods([bound_uid, waiting_uid], waiting, c.nodes) == ([], [])
    assert debugger.compare_pods([bound_uid, "gone-from-cache"], waiting, c.nodes) == (["gone-from-cache"],
                                                                                      [waiting_uid])


def test_dump_text_as_upstream_prints_it():
    c = _cache()
    nom = PodNominator()
    nom.add(PodInfo(make_pod("pre", phase="Pending")), "override", "n2")
    text = debugger.dump_nodes(c, nom)
    # Each node's text ends its last line; upstream joins them with a blank line between.
    first, second = text.split("\n\n\n")
    assert first.startswith("Node name: n1\nDeleted: false\nRequested Resources: {MilliCPU:1000 ")
    assert "Scheduled Pods(number: 1):\nname: bound, namespace: default, uid: uid-default-bound, phase: " in first
    assert second.endswith("Nominated Pods(number: 1):\nname: pre, namespace: default, uid: uid-default-pre, "
                           "phase: Pending, nominated node: \n")
    assert debugger.queue_summary({"active": 1, "backoff": 2, "unschedulable": 3, "gated": 4}) == (
        "activeQ:1; backoffQ:2; unschedulablePods:7")
    assert debugger.dump_queue([QueuedPodInfo(PodInfo(make_pod("w", phase="Pending")), 0.0)]) == (
        "name: w, namespace: default, uid: uid-default-w, phase: Pending, nominated node: \n")
