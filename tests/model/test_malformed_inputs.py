"""Malformed cluster and config files: ``simulate`` exits 2 with one line naming file, object, field.

Each case is run through the CLI entry (scheduler.cli.main); stderr must be exactly one line
that starts with ``error: <file>:`` and contains every expected fragment (the object as
``Kind namespace/name`` and the field path). Messages for values the API server would refuse
follow apimachinery's field-error wording ("Invalid value: ...: must be greater than or equal
to 0", "must be in the range 1-100", from k8s.io/apimachinery validation and
pkg/apis/core/validation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main

NODE_OK: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "good"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def _node(**over: Any) -> dict[str, Any]:
    n: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad"}, "spec": {}, "status": {}}
    for path, value in over.items():
        section, _, key = path.partition("__")
        n[section][key] = value
    return n


def _pod(spec_over: dict[str, Any] | None = None, meta_over: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    spec.update(spec_over or {})
    meta: dict[str, Any] = {"name": "bad", "namespace": "ns1"}
    meta.update(meta_over or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _req(**reqs: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "pause", "resources": {"requests": reqs}}]}


POD = "Pod ns1/bad"
NODE = "Node bad"
NEG = "must be greater than or equal to 0"

# (case id, objects or raw text, fragments that must all appear in the line)
CLUSTER_CASES: list[tuple[str, Any, list[str]]] = [
    # -- the list -------------------------------------------------------------------
    ("taints-string", [_node(spec__taints="NoSchedule")], [NODE, "spec.taints", "expected a list"]),
    ("allocatable-list", [_node(status__allocatable=["cpu", "4"])], [NODE, "status.allocatable", "expected an object"]),
    ("node-labels-string", [{**_node(), "metadata": {"name": "bad", "labels": "a=b"}}],
     [NODE, "metadata.labels", "expected an object"]),
    ("pod-labels-string", [_pod(meta_over={"labels": "a"})], [POD, "metadata.labels", "expected an object"]),
    ("containers-string", [_pod({"containers": "x"})], [POD, "spec.containers", "expected a list"]),
    ("node-selector-terms-string",
     [_pod({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": "x"}}}})],
     [POD, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
      "expected a list"]),
    ("cpu-quantity-garbage", [_pod(_req(cpu="lots"))],
     [POD, "spec.containers[0].resources.requests[cpu]", "quantities must match the regular expression"]),
    ("taint-entry-string", [_node(spec__taints=["a"])], [NODE, "spec.taints[0]", "expected an object"]),
    # -- quantities ---------------------------------------------------------------------------
    ("cpu-negative", [_pod(_req(cpu="-1"))], [POD, "spec.containers[0].resources.requests[cpu]", NEG]),
    ("memory-negative-limit",
     [_pod({"containers": [{"name": "c", "resources": {"limits": {"memory": "-1Gi"}}}]})],
     [POD, "spec.containers[0].resources.limits[memory]", NEG]),
    ("quantity-bad-suffix", [_pod(_req(memory="1ki"))],
     [POD, "requests[memory]", "unable to parse quantity's suffix"]),
    ("quantity-is-list", [_pod(_req(cpu=[1]))], [POD, "requests[cpu]", "Invalid value"]),
    ("quantity-is-bool", [_pod(_req(cpu=True))], [POD, "requests[cpu]", "Invalid value"]),
    ("allocatable-negative", [_node(status__allocatable={"cpu": "-4"})], [NODE, "status.allocatable[cpu]", NEG]),
    ("capacity-garbage", [_node(status__capacity={"memory": "8 GB"})], [NODE, "status.capacity[memory]"]),
    ("init-container-negative",
     [_pod({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "-5m"}}}]})],
     [POD, "spec.initContainers[0].resources.requests[cpu]", NEG]),
    ("overhead-negative", [_pod({"overhead": {"cpu": "-1"}})], [POD, "spec.overhead[cpu]", NEG]),
    ("requests-string", [_pod({"containers": [{"name": "c", "resources": {"requests": "cpu=1"}}]})],
     [POD, "spec.containers[0].resources.requests"]),
    # -- numbers --------------------------------------------------------------------------------
    ("priority-huge", [_pod({"priority": 10**12})], [POD, "spec.priority", "32-bit"]),
    ("priority-string", [_pod({"priority": "high"})], [POD, "spec.priority", "expected an integer"]),
    ("host-port-huge",
     [_pod({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 70000}]}]})],
     [POD, "spec.containers[0].ports[0].hostPort", "between 1 and 65535"]),
    ("preferred-weight-out-of-range",
     [_pod({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 1000, "preference": {}}]}}})],
     [POD, "preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"]),
    ("max-skew-zero",
     [_pod({"topologySpreadConstraints": [
         {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})],
     [POD, "spec.topologySpreadConstraints[0].maxSkew", "must be greater than zero"]),
    ("image-size-string", [_node(status__images=[{"names": ["a"], "sizeBytes": "big"}])],
     [NODE, "status.images[0].sizeBytes", "expected an integer"]),
    # -- wrong types for list/map fields ---------------------------------------------------------
    ("tolerations-map", [_pod({"tolerations": {"key": "a"}})], [POD, "spec.tolerations", "expected a list"]),
    ("node-selector-list", [_pod({"nodeSelector": ["a"]})], [POD, "spec.nodeSelector", "expected an object"]),
    ("match-expression-values-string",
     [_pod({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
         {"topologyKey": "z",
          "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}}]}}})],
     [POD, "labelSelector.matchExpressions[0].values", "expected a list"]),
    ("spread-constraints-map", [_pod({"topologySpreadConstraints": {"maxSkew": 1}})],
     [POD, "spec.topologySpreadConstraints", "expected a list"]),
    ("ports-string", [_pod({"containers": [{"name": "c", "ports": "80"}]})], [POD, "spec.containers[0].ports"]),
    ("scheduling-gates-string", [_pod({"schedulingGates": "wait"})], [POD, "spec.schedulingGates", "expected a list"]),
    ("owner-references-map", [_pod(meta_over={"ownerReferences": {"kind": "ReplicaSet"}})],
     [POD, "metadata.ownerReferences", "expected a list"]),
    ("unschedulable-string", [_node(spec__unschedulable="yes")], [NODE, "spec.unschedulable", "expected a boolean"]),
    ("images-map", [_node(status__images={"names": ["a"]})], [NODE, "status.images"]),
    ("namespace-labels-list",
     [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "labels": ["a"]}}],
     ["Namespace ns1", "metadata.labels", "expected an object"]),
    ("pvc-spec-string",
     [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "ns1"},
       "spec": "x"}],
     ["PersistentVolumeClaim ns1/c", "spec", "expected an object"]),
    ("pod-spec-list",
     [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "ns1"}, "spec": ["x"]}],
     [POD, "spec", "expected an object"]),
    ("metadata-name-list", [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ["x"]}}],
     ["Pod", "metadata.name", "expected a string"]),
    # -- the file itself --------------------------------------------------------------------------
    ("not-utf8", b"kind: Node\nmetadata: {name: \xff}\n", ["not UTF-8 text", "offset"]),
    ("bad-yaml", "kind: Node\nmetadata: {name: [\n", ["not valid YAML"]),
    ("document-scalar", "just a string\n", ["document 0", "expected a Kubernetes object"]),
    ("no-kind", "metadata: {name: x}\n", ["document 0", "object has no kind"]),
]


def _write(path: Path, content: Any) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(yaml.safe_dump_all(content))
    return str(path)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    return lines[0]


@pytest.mark.parametrize(("content", "fragments"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES])
def test_bad_cluster_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, fragments: list[str]
) -> None:
    if isinstance(content, list):
        content = [NODE_OK, *content]
    path = _write(tmp_path / "cluster.yaml", content)
    assert main(["simulate", "--cluster", path]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"error: {path}: "), line
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"


CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
CONFIG_CASES: list[tuple[str, Any, list[str]]] = [
    ("config-not-utf8", CONFIG_HEAD.encode() + b"profiles:\n- schedulerName: \xfe\n", ["not UTF-8 text"]),
    ("config-bad-yaml", CONFIG_HEAD + "profiles: [\n", ["invalid YAML"]),
    ("config-profiles-string", CONFIG_HEAD + "profiles: x\n", ["profiles", "must be a list"]),
    ("config-scheduler-name-int", CONFIG_HEAD + "profiles:\n- schedulerName: 3\n", ["profiles[0].schedulerName"]),
    ("config-plugin-config-string", CONFIG_HEAD + "profiles:\n- pluginConfig: x\n", ["profiles[0].pluginConfig"]),
    ("config-parallelism-list", CONFIG_HEAD + "parallelism: [1]\n", ["parallelism", "must be an integer"]),
    ("config-enabled-string", CONFIG_HEAD + "profiles:\n- plugins:\n    score:\n      enabled: x\n",
     ["profiles[0].plugins.score.enabled"]),
    ("config-args-list", CONFIG_HEAD + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: [1]\n",
     ["profiles[0].pluginConfig[0].args"]),
    ("config-top-level-list", "- a\n- b\n", ["top level must be a mapping"]),
]


@pytest.mark.parametrize(("content", "fragments"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, fragments: list[str]
) -> None:
    cluster = _write(tmp_path / "cluster.yaml", [NODE_OK])
    config = _write(tmp_path / "config.yaml", content)
    assert main(["simulate", "--cluster", cluster, "--config", config]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"error: {config}: "), line
    assert line.count(config) == 1, line
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"


def test_good_file_still_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture the bad cases extend is itself fine (so each failure is the bad object's)."""
    path = _write(tmp_path / "cluster.yaml", [NODE_OK, _pod(_req(cpu="1E"))])
    assert main(["simulate", "--cluster", path, "--output", "placements"]) == 0
    assert '"node": "good"' in capsys.readouterr().out


@pytest.mark.parametrize(("content", "fragments"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_file_for_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, fragments: list[str]
) -> None:
    """``pyscheduler run`` checks its config before touching a cluster: same one line, exit 2."""
    config = _write(tmp_path / "config.yaml", content)
    assert main(["run", "--config", config]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"error: {config}: ") and line.count(config) == 1, line
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"


def test_run_leaves_the_cyclic_gc_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `run` turns collection off while it imports the scheduler and freezes what the imports
    # made (later collections skip it); a start that ends early (here a bad config) must not
    # leave collection off.
    import gc

    gc.unfreeze()
    config = _write(tmp_path / "config.yaml", "apiVersion: [")
    try:
        assert main(["run", "--config", config]) == 2
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
