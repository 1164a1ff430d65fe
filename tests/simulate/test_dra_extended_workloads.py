"""scheduler_perf's extended-resource workloads (v1.36.3) through simulate, at the size of their
"fast" variants: misc SchedulingWithExtendedResource (fast / fast_DRAExtendedResourceEnabled) and
dra/extendedresource ExtendedResource (fast). Upstream's runs expect every pod scheduled."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config.features import DEFAULT_GATES, parse_feature_gates
from scheduler.simulate.simulator import run
from scheduler.testing.dra_workloads import extended_resource, scheduling_with_extended_resource


def _simulate(tmp_path: Path, docs: list[dict[str, Any]], gates: str | None = None) -> list[dict[str, Any]]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    g = parse_feature_gates([gates]) if gates else DEFAULT_GATES
    buf = io.StringIO()
    assert run(str(path), None, 1, "json", stream=buf, gates=g) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


@pytest.mark.parametrize("gates", ["DRAExtendedResource=false", "DRAExtendedResource=true"])
def test_scheduling_with_extended_resource(tmp_path: Path, gates: str) -> None:
    # No DeviceClass: pod i fits only the node advertising foo.com/bar-i, either way.
    recs = _simulate(tmp_path, scheduling_with_extended_resource(10, 1, 10), gates)
    assert {r["pod"]: r["node"] for r in recs} == {
        f"test/test-extended-resource-{i}": f"scheduler-perf-extended-resource-{i}" for i in range(10)
    }
    assert all("claims" not in r for r in recs)


def test_extended_resource_fast(tmp_path: Path) -> None:
    recs = _simulate(tmp_path, extended_resource(10, 1, 1, 10, 10))
    assert [r["node"] for r in recs] == ["scheduler-perf-dra-0"] * 10
    # Each pod got one device through the claim created for it, every device once.
    devices = []
    for r in recs:
        (name, results), = r["claims"].items()
        assert name.startswith(r["pod"] + "-extended-resources-")
        assert [x["request"] for x in results] == ["container-0-request-0"]
        devices.append(results[0]["device"])
    assert sorted(devices) == sorted(f"instance-{d}" for d in range(10))
    # The node without the driver's devices is filtered by DynamicResources, not by Fit.
    assert recs[0]["filtered"] == {"scheduler-perf-0": {"plugin": "DynamicResources",
                                                        "reasons": ["cannot allocate all claims"]}}


def test_extended_resource_without_the_gate_nothing_fits(tmp_path: Path) -> None:
    recs = _simulate(tmp_path, extended_resource(2, 1, 0, 2, 2), "DRAExtendedResource=false")
    assert [r["node"] for r in recs] == [None, None]
    assert "Insufficient example.com/gpu-0" in recs[0]["message"]


def test_more_pods_than_devices(tmp_path: Path) -> None:
    # Two devices, three pods wanting the same class: the third finds none left.
    docs = extended_resource(1, 1, 0, 0, 2)
    docs += [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "test"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu-0": "1"}}}]}}
        for i in range(3)
    ]
    recs = _simulate(tmp_path, docs)
    assert [r["node"] for r in recs] == ["scheduler-perf-dra-0", "scheduler-perf-dra-0", None]
    assert recs[2]["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
