"""bench/perf_objects.py: the objects scheduler_perf's ops create (test/utils runners.go,
scheduler_perf util.go and dra.go of v1.36.3), the bench's claim allocator, and the plane's
controller list and report table."""

from __future__ import annotations

import pathlib
import random
from typing import Any

import pytest

from bench.live_plane import kcm_controllers
from bench.live_report import incomplete_notes, medians, table
from bench.perf_config import ConfigError
from bench.perf_objects import allocate_claims, base_node, base_pod, csinode, volume_pair
from scheduler.testing.dra_workloads import resource_slice


def test_base_objects() -> None:
    # makeBaseNode / makeBasePod (MakePodSpec).
    node = base_node("node-0-")
    assert node["metadata"] == {"generateName": "node-0-"}
    assert node["status"]["allocatable"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    c = base_pod()["spec"]["containers"][0]
    assert (c["image"], c["ports"], c["resources"]["requests"]) == (
        "registry.k8s.io/pause:3.10.2",
        [{"containerPort": 80}],
        {"cpu": "100m", "memory": "500Mi"},
    )


@pytest.mark.parametrize(
    ("source", "want_source"),
    [
        # CSI: the handle is the (namespaced) volume name; AWS: vol-<i> (getCustomVolumeFactory).
        ({"csi": {"driver": "ebs.csi.aws.com"}}, {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "ns1-vol-4"}}),
        ({"awsElasticBlockStore": {"volumeID": "<volume-id>"}}, {"awsElasticBlockStore": {"volumeID": "vol-4"}}),
    ],
)
def test_volume_pair(source: dict[str, Any], want_source: dict[str, Any]) -> None:
    pv, pvc = volume_pair({"spec": {"capacity": {"storage": "1Gi"}, **source}}, {"spec": {}}, "ns1", 4)
    assert pv["metadata"]["name"] == "ns1-vol-4"
    assert {k: v for k, v in pv["spec"].items() if k in want_source} == want_source
    assert pv["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "ns1", "name": "pvc-4",
                                      "apiVersion": "v1"}  # fmt: skip
    assert (pv["status"], pvc["status"]) == ({"phase": "Bound"}, {"phase": "Bound"})
    assert (pvc["metadata"]["name"], pvc["spec"]["volumeName"]) == ("pvc-4", "ns1-vol-4")


def test_csinode() -> None:
    got = csinode("n1", {"ebs.csi.aws.com": {"count": 39}}, ["kubernetes.io/aws-ebs"])
    assert got["metadata"]["annotations"] == {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
    assert got["spec"]["drivers"] == [{"name": "ebs.csi.aws.com", "allocatable": {"count": 39}, "nodeID": "n1"}]


def test_resource_slice() -> None:
    s = resource_slice("test-driver.cdi.k8s.io", "scheduler-perf-dra-abcde", 2)
    assert s["metadata"]["name"] == "scheduler-perf-dra-abcde"
    assert s["spec"]["pool"] == {"name": "scheduler-perf-dra-abcde", "resourceSliceCount": 1, "generation": 0}
    assert [d["name"] for d in s["spec"]["devices"]] == ["instance-0", "instance-1"]
    assert s["spec"]["devices"][1]["attributes"]["dra.example.com/numa"] == {"int": 1}


CLASS = {"metadata": {"name": "test-class"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "test-driver.cdi.k8s.io"'}}]}}  # fmt: skip


def claim(name: str, cls: str = "test-class", **extra: Any) -> dict[str, Any]:
    req = {"name": "req-0", "exactly": {"deviceClassName": cls, **extra}}
    return {"metadata": {"name": name, "namespace": "init"}, "spec": {"devices": {"requests": [req]}}}


def test_allocate_claims_one_device_each() -> None:
    slices = [resource_slice("test-driver.cdi.k8s.io", n, 1) for n in ("a", "b")]
    got = allocate_claims([claim("c0"), claim("c1")], [CLASS], slices, ["a", "b"], random.Random(1))
    results = [c["status"]["allocation"]["devices"]["results"][0] for c in got]
    assert sorted((r["pool"], r["device"]) for r in results) == [("a", "instance-0"), ("b", "instance-0")]
    terms = got[0]["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms[0]["matchFields"][0]["key"] == "metadata.name"
    with pytest.raises(ConfigError, match="could not allocate claim c2"):
        allocate_claims([claim("c0"), claim("c1"), claim("c2")], [CLASS], slices, ["a", "b"], random.Random(1))


@pytest.mark.parametrize(
    ("claims", "classes", "fragment"),
    [
        ([claim("c0", selectors=[{"cel": {"expression": "true"}}])], [CLASS], "needs more than"),
        ([claim("c0", allocationMode="All")], [CLASS], "needs more than"),
        ([claim("c0")], [{"metadata": {"name": "test-class"}, "spec": {"selectors": []}}], "is not one"),
        ([claim("c0", cls="other")], [CLASS], "DeviceClass other not found"),
    ],
)
def test_allocate_claims_refuses(claims: list[Any], classes: list[Any], fragment: str) -> None:
    slices = [resource_slice("test-driver.cdi.k8s.io", "a", 1)]
    with pytest.raises(ConfigError) as err:
        allocate_claims(claims, classes, slices, ["a"], random.Random(1))
    assert fragment in str(err.value)


def test_kcm_controllers(tmp_path: pathlib.Path) -> None:
    up = tmp_path / "up.sh"
    up.write_text(
        "KCM_CONTROLLERS=a,persistentvolume-binder-controller\nKCM_CONTROLLERS+=,b\n"
        "[[ $X == y ]] || KCM_CONTROLLERS+=,c\nKCM_CONTROLLERS=${PYSCHED_KCM_CONTROLLERS:-$KCM_CONTROLLERS}\n"
    )
    assert kcm_controllers(up) == "a,b,c"
    real = kcm_controllers().split(",")
    assert "node-lifecycle-controller" in real and "persistentvolume-binder-controller" not in real


def rnd(contestant: str, pods: float | None, complete: bool = True, **kw: Any) -> dict[str, Any]:
    return {"contestant": contestant, "pods_per_s": pods, "pods_per_s_to_last_bind": 50.0, "complete": complete,
            "error": None if complete else "op 2 (createPods): timed out", **kw}  # fmt: skip


def test_table_marks_incomplete_and_short_windows() -> None:
    rows = [
        {"workload": "A/w", "scale": 0.5, "size": {"nodes": 10, "pods": 30, "measured_pods": 20},
         "medians": {"kube": medians([rnd("kube", 100.0), rnd("kube", 120.0)]),
                     "ours": medians([rnd("ours", 150.0), rnd("ours", 90.0, complete=False)])}},
        {"workload": "B/w", "scale": 1, "size": {"nodes": 1, "pods": 5, "measured_pods": 0},
         "medians": {"kube": medians([rnd("kube", None)]), "ours": medians([rnd("ours", 80.0)])}},
        # Each contestant lacks a sample in one of its two rounds: rates to the last bind for both.
        {"workload": "C/w", "scale": 1, "size": {"nodes": 1, "pods": 5, "measured_pods": 0},
         "medians": {"kube": medians([rnd("kube", None, pods_per_s_to_last_bind=60.0), rnd("kube", 200.0)]),
                     "ours": medians([rnd("ours", 100.0), rnd("ours", None, pods_per_s_to_last_bind=70.0)])}},
    ]  # fmt: skip
    lines = table(rows, ["kube", "ours"]).splitlines()
    # Medians 110 and 120; ours incomplete in one round: "!".
    assert "| A/w | 0.5 | 10 nodes, 30 pods (20 measured) | 110.0 | 120.0 ! | 1.09x |" in lines[2]
    # kube had no collector sample: both shown as the rate to the last bind, "~".
    assert "| B/w | 1 | 1 nodes, 5 pods | ~50.0 | ~50.0 | 1.00x |" in lines[3]
    assert "| C/w | 1 | 1 nodes, 5 pods | ~55.0 | ~60.0 | 1.09x |" in lines[4]
    assert incomplete_notes(rows) == ["- A/w (pyscheduler): op 2 (createPods): timed out"]
