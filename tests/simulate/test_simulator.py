"""`simulate`'s contract: JSON lines, queue order, exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scheduler.cli import main
from scheduler.simulate.simulator import run
from scheduler.testing.builders import make_node, make_pod

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


def _write(tmp_path: Path, docs: list[dict], name: str = "cluster.yaml") -> str:
    p = tmp_path / name
    p.write_text(yaml.safe_dump_all(docs))
    return str(p)


def _json_lines(cluster: str, config: str | None = None, output: str = "json", seed: int = 1) -> list[dict]:
    buf = io.StringIO()
    assert run(cluster, config, seed, output, stream=buf) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_example_cluster_json_contract() -> None:
    web, big = _json_lines(str(EXAMPLE))
    assert web["pod"] == "default/web" and web["node"] == "n1"
    assert (web["evaluated"], web["feasible"]) == (3, 2)
    # taint_toleration.go: NoSchedule taint not tolerated -> UnschedulableAndUnresolvable reason
    assert web["filtered"] == {"n2": {"plugin": "TaintToleration", "reasons": ["node(s) had untolerated taint(s)"]}}
    n1 = web["scores"]["n1"]["plugins"]
    # least_allocated.go: cpu (2000-500)*100/2000 = 75, memory (4Gi-1Gi)*100/4Gi = 75 -> 75, weight 1
    assert n1["NodeResourcesFit"] == {"score": 75, "final": 75}
    # TaintToleration: raw 0 untolerated PreferNoSchedule taints, reversed normalisation -> 100, weight 3
    assert n1["TaintToleration"] == {"score": 0, "final": 300}
    # balanced_allocation.go: empty node balance 100, with the pod cpu 0.25 / memory 0.25 -> 100;
    # the score is the change: 50 + (50 + 100 - 100) / 2 = 75
    assert n1["NodeResourcesBalancedAllocation"] == {"score": 75, "final": 75}
    assert web["scores"]["n1"]["total"] == 450
    # n3 runs a 3-cpu pod: cpu (4000-3500)*100/4000 = 12, memory (8192-1224)Mi*100/8192Mi = 85 -> (12+85)/2 = 48
    assert web["scores"]["n3"]["plugins"]["NodeResourcesFit"]["score"] == 48
    assert "message" not in web
    assert big["node"] is None and big["feasible"] == 0 and big["scores"] == {}
    assert big["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_placements_output(tmp_path: Path) -> None:
    lines = _json_lines(str(EXAMPLE), output="placements")
    assert lines == [{"pod": "default/web", "node": "n1"}, {"pod": "default/big", "node": None}]


def test_queue_order_priority_then_creation_then_file_order(tmp_path: Path) -> None:
    docs = [
        make_node("n1"),
        make_pod("late-low", priority=0, creation="2024-01-01T00:00:05Z"),
        make_pod("early-low", priority=0, creation="2024-01-01T00:00:01Z"),
        make_pod("high", priority=100, creation="2024-01-01T00:00:09Z"),
        make_pod("same-a", priority=0, creation="2024-01-01T00:00:07Z"),
        make_pod("same-b", priority=0, creation="2024-01-01T00:00:07Z"),
        make_pod("gated", gates=["example.com/wait"]),
        make_pod("other", scheduler_name="someone-else"),
    ]
    lines = _json_lines(_write(tmp_path, docs), output="placements")
    assert [x["pod"] for x in lines] == [
        "default/high",
        "default/early-low",
        "default/late-low",
        "default/same-a",
        "default/same-b",
    ]


def test_text_output_names_gated_pods(tmp_path: Path) -> None:
    buf = io.StringIO()
    path = _write(tmp_path, [make_node("n1"), make_pod("g", gates=["example.com/wait"])])
    assert run(path, None, 1, "text", stream=buf) == 0
    # schedulinggates plugin: UnschedulableAndUnresolvable "waiting for scheduling gates: [...]"
    assert "default/g: not attempted (waiting for scheduling gates: [example.com/wait])" in buf.getvalue()


def test_each_placement_updates_the_cluster(tmp_path: Path) -> None:
    docs = [make_node("n1", cpu="1"), make_pod("a", cpu="600m"), make_pod("b", cpu="600m")]
    a, b = _json_lines(_write(tmp_path, docs))
    assert a["node"] == "n1"
    assert b["node"] is None
    assert b["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_running_pods_count_and_terminal_pods_do_not(tmp_path: Path) -> None:
    docs = [
        make_node("n1", cpu="1"),
        make_pod("running", cpu="800m", node_name="n1"),
        make_pod("done", cpu="800m", node_name="n1", phase="Succeeded"),
        make_pod("new", cpu="300m"),
    ]
    [line] = _json_lines(_write(tmp_path, docs))
    assert line["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_prefilter_failure_explains_every_node(tmp_path: Path) -> None:
    pin = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ghost"]}]}
                ]
            }
        }
    }
    docs = [make_node("n1"), make_node("n2"), make_pod("p", affinity=pin)]
    [line] = _json_lines(_write(tmp_path, docs))
    # schedule_one.go: nodes outside the PreFilterResult get "didn't satisfy plugin(s) [NodeAffinity]"
    assert line["message"] == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert set(line["filtered"]) == {"n1", "n2"}


def test_seed_makes_ties_reproducible(tmp_path: Path) -> None:
    docs = [make_node(f"n{i}") for i in range(8)] + [make_pod(f"p{i}", cpu="100m") for i in range(5)]
    path = _write(tmp_path, docs)
    assert _json_lines(path, output="placements", seed=7) == _json_lines(path, output="placements", seed=7)


def test_text_output_has_a_table() -> None:
    buf = io.StringIO()
    assert run(str(EXAMPLE), None, 1, "text", stream=buf) == 0
    text = buf.getvalue()
    assert "default/web -> n1   (evaluated 3, feasible 2)" in text
    assert "NodeResourcesFit" in text and "450" in text
    assert "default/big: unschedulable" in text


@pytest.mark.parametrize(
    ("case", "cluster", "config", "needle"),
    [
        ("unparseable YAML", "kind: Node\n  bad: [", None, "not valid YAML"),
        ("object without kind", "metadata: {name: x}\n", None, "has no kind"),
        ("object without name", "kind: Node\nmetadata: {}\n", None, "has no metadata.name"),
        (
            "unknown plugin",
            None,
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n",
            "NoSuchPlugin",
        ),
        ("invalid percentage", None, "percentageOfNodesToScore: 101\n", "percentageOfNodesToScore"),
        (
            "bad plugin args",
            None,
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
            "        type: LeastAllocated\n        resources: [{name: cpu, weight: 101}]\n",
            "weight",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, cluster: str | None, config: str | None, needle: str
) -> None:
    cpath = tmp_path / "cluster.yaml"
    cpath.write_text(cluster if cluster is not None else EXAMPLE.read_text())
    args = ["simulate", "--cluster", str(cpath)]
    if config is not None:
        cfg = tmp_path / "config.yaml"
        cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + config)
        args += ["--config", str(cfg)]
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1
    assert needle in err[0]
    assert (str(cfg) if config is not None else str(cpath)) in err[0]


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


_THREADS_AFTER_CLI = """
import contextlib, io, os, sys
from scheduler.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["simulate", "--cluster", sys.argv[1], "--output", "placements"])
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc")
@pytest.mark.parametrize(("given", "want"), [(None, "1"), ("2", "2")], ids=["default", "user-set"])
def test_cli_keeps_numpy_to_one_blas_thread_unless_told(given: str | None, want: str) -> None:
    # Nothing calls BLAS; OpenBLAS's per-core threads only cost start-up CPU. A value the user
    # set is left alone.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", _THREADS_AFTER_CLI, str(EXAMPLE)], env=env, check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]).stdout.split()
    assert out[0] == want
    if given is None:
        assert out[1] == "1"  # numpy imported, no OpenBLAS thread started
