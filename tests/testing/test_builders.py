"""The shared builders: the fluent wrappers and the keyword forms build the same objects, with
upstream's wrapper semantics where the names are upstream's (pkg/scheduler/testing/wrappers.go)."""

from __future__ import annotations

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import MakeNode, MakePod, make_node, make_pod, node_info


def test_fresh_wrappers_build_the_keyword_defaults() -> None:
    assert MakePod().obj() == make_pod()
    assert MakeNode().obj() == make_node()
    assert make_pod()["spec"]["containers"] == [{"name": "c0", "image": "pause"}]
    assert make_node()["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}


def test_fluent_and_keyword_forms_agree() -> None:
    assert MakePod().name("p").namespace("ns").req({"cpu": "1"}).node("n1").obj() == make_pod(
        "p", "ns", cpu="1", node_name="n1"
    )
    got = (
        MakePod().name("web").labels({"app": "a"}).priority(5).toleration({"key": "k", "operator": "Exists"})
        .host_port(80).scheduling_gates(["g"]).owner_reference("ReplicaSet", "rs").terminating().obj()
    )
    assert got == make_pod("web", labels={"app": "a"}, priority=5, tolerations=[{"key": "k", "operator": "Exists"}],
                           host_ports=[80], gates=["g"], owner=("ReplicaSet", "rs"), deleting=True)
    assert MakeNode().name("n1").zone("z1").label("disk", "ssd").unschedulable().obj() == make_node(
        "n1", zone="z1", labels={"disk": "ssd"}, unschedulable=True
    )


def test_req_adds_one_container_per_call_as_upstream() -> None:
    p = MakePod().req({"cpu": "1"}).req({"cpu": "2", "memory": "1Gi"}).init_req({"cpu": "3"}).obj()
    assert [c["name"] for c in p["spec"]["containers"]] == ["c0", "c1"]
    assert p["spec"]["containers"][1]["resources"] == {"requests": {"cpu": "2", "memory": "1Gi"}}
    assert p["spec"]["initContainers"] == [{"name": "i0", "image": "pause", "resources": {"requests": {"cpu": "3"}}}]
    assert MakePod().containers([]).obj()["spec"]["containers"] == []


def test_status_and_volume_fields() -> None:
    p = MakePod().pvc("data").nominated_node_name("n2").start_time("2024-01-01T00:00:00Z").obj()
    assert p["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    assert p["status"] == {"nominatedNodeName": "n2", "startTime": "2024-01-01T00:00:00Z"}


def test_node_capacity_replaces_the_defaults_and_hostname_label_can_go() -> None:
    n = MakeNode().name("n1").capacity({"cpu": "2", "pods": "32"}).no_hostname_label().label("a", "b").obj()
    assert n["status"]["allocatable"] == n["status"]["capacity"] == {"cpu": "2", "pods": "32"}
    assert n["metadata"]["labels"] == {"a": "b"}


def test_info_parses_and_holds_pods() -> None:
    assert isinstance(MakePod().info(), PodInfo)
    ni = MakeNode().name("n1").info(make_pod("a", cpu="1", node_name="n1"), MakePod().name("b").info())
    assert isinstance(ni, NodeInfo)
    assert sorted(p.name for p in ni.pods) == ["a", "b"]
    assert ni.requested.milli_cpu == 1000
    assert node_info(make_node("n1"), make_pod("a", cpu="1")).requested.milli_cpu == 1000
