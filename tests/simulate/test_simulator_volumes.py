"""`simulate` with storage objects: the volume plugins' reasons show up, and a pod's Reserve
(assumed PV binding) is seen by the next pod."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml

from scheduler.simulate.simulator import run
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.storage import pv, pvc, storage_class


def _lines(tmp_path: Path, docs: list[dict]) -> list[dict]:
    p = tmp_path / "cluster.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(p), None, 1, "json", stream=buf) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _pod(name: str, claim: str, ts: str) -> dict:
    return make_pod(name, creation=ts, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])


def test_local_pvs_steer_pods_and_second_pod_sees_the_first_binding(tmp_path: Path) -> None:
    host = "kubernetes.io/hostname"
    docs = [
        make_node("n1"),
        make_node("n2"),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        pv("pv-n2", cls="local", size="10Gi", affinity={host: ["n2"]}),
        pvc("c1", cls="local", size="5Gi"),
        pvc("c2", cls="local", size="5Gi"),
        _pod("a", "c1", "2024-01-01T00:00:00Z"),
        _pod("b", "c2", "2024-01-01T00:00:01Z"),
    ]
    a, b = _lines(tmp_path, docs)
    assert a["node"] == "n2"
    assert a["filtered"] == {
        "n1": {"plugin": "VolumeBinding", "reasons": ["node(s) didn't find available persistent volumes to bind"]}
    }
    # The only PV is assumed bound to c1 now: nothing is left for c2.
    assert b["node"] is None
    assert {v["plugin"] for v in b["filtered"].values()} == {"VolumeBinding"}
    assert "didn't find available persistent volumes to bind" in b["message"]


def test_missing_claim_and_zone_conflict(tmp_path: Path) -> None:
    docs = [
        make_node("n1", zone="z1"),
        make_node("n2", zone="z2"),
        pv("pv-z2", size="1Gi", labels={"topology.kubernetes.io/zone": "z2"}, claim=("default", "bound")),
        pvc("bound", volume="pv-z2", bound=True),
        _pod("zonal", "bound", "2024-01-01T00:00:00Z"),
        _pod("orphan", "nope", "2024-01-01T00:00:01Z"),
    ]
    zonal, orphan = _lines(tmp_path, docs)
    assert zonal["node"] == "n2"
    assert zonal["filtered"] == {"n1": {"plugin": "VolumeZone", "reasons": ["node(s) had no available volume zone"]}}
    assert orphan["node"] is None
    # The first PreFilter to reject (VolumeRestrictions, upstream order) names the claim.
    assert orphan["filtered"]["n1"] == {
        "plugin": "VolumeRestrictions",
        "reasons": ['persistentvolumeclaim "nope" not found'],
    }
