"""The plugin guide cannot rot: every `simulate` command docs/plugins.md and README.md show is
run and must print what the page prints, every code excerpt must be in the file it names, and
the queue behaviour the guide describes (PreEnqueue release, queueing hints) is driven here."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.cli import main as cli_main
from scheduler.config.load import load_config
from scheduler.framework.events import ActionType, ClusterEvent
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import GROUP, default_registry
from scheduler.simulate.simulator import Simulator, build_cluster, load_documents

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugins.md"
README = ROOT / "README.md"
PLUGINS = ROOT / "examples" / "plugins"
LABEL_PREFERENCE = ROOT / "examples" / "pyscheduler-node-label-preference"
APPROVAL_GATE = ROOT / "examples" / "pyscheduler-approval-gate"
SCENARIOS = PLUGINS / "scenarios"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
PATH = re.compile(r"`((?:examples|manifests)/[^`\s]+\.(?:py|yaml|toml))`")
PROMPT = ("$ pyscheduler simulate ", "$ python -m scheduler simulate ")


def _blocks(page: Path) -> Iterator[tuple[str, str, str]]:
    """(language, body, the last non-empty line before the fence) of every fenced block."""
    text = page.read_text(encoding="utf-8")
    for m in FENCE.finditer(text):
        before = [line for line in text[: m.start()].splitlines() if line.strip()]
        yield m.group(1), m.group(2), before[-1] if before else ""


def _commands(page: Path) -> list[tuple[list[str], str]]:
    out = []
    for lang, body, _ in _blocks(page):
        first, _, rest = body.partition("\n")
        for prompt in PROMPT:
            if lang == "console" and first.startswith(prompt):
                out.append((shlex.split(first[len(prompt) :]), rest))
    return out


def _excerpts(page: Path) -> list[tuple[str, str]]:
    """Code blocks introduced by a line naming a file: (path, body)."""
    out = []
    for lang, body, before in _blocks(page):
        m = PATH.search(before)
        if lang in ("python", "yaml", "toml") and m is not None and before.rstrip().endswith(":"):
            out.append((m.group(1), body))
    return out


@pytest.fixture
def guide_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What `pip install -e examples/plugins` (and the label-preference package) would give:
    the modules importable and their entry points, read from their pyproject.toml, installed."""
    eps: dict[str, str] = {}
    for project in (PLUGINS, LABEL_PREFERENCE, APPROVAL_GATE):
        meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
        eps.update(meta["project"]["entry-points"][GROUP])
    dist = tmp_path / "plugin_guide_examples-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-guide-examples\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[{GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    for path in (tmp_path, PLUGINS, LABEL_PREFERENCE, APPROVAL_GATE):
        monkeypatch.syspath_prepend(str(path))
    monkeypatch.chdir(ROOT)
    yield
    ours = ("plugin_guide.", "node_label_pref", "approval_gate")
    for name in [m for m in sys.modules if m == "plugin_guide" or m.startswith(ours)]:
        del sys.modules[name]


GUIDE_COMMANDS = _commands(GUIDE)
README_COMMANDS = _commands(README)


def test_the_pages_have_commands_and_excerpts() -> None:
    assert len(GUIDE_COMMANDS) >= len(list(SCENARIOS.iterdir()))
    assert README_COMMANDS
    assert len(_excerpts(GUIDE)) >= 12


@pytest.mark.parametrize(("argv", "expected"), GUIDE_COMMANDS + README_COMMANDS, ids=lambda v: "")
def test_command_prints_what_the_page_shows(
    argv: list[str], expected: str, guide_plugins: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["simulate", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == expected


@pytest.mark.parametrize(("path", "body"), _excerpts(GUIDE) + _excerpts(README), ids=lambda v: "")
def test_excerpt_is_in_the_file_it_names(path: str, body: str) -> None:
    assert body in (ROOT / path).read_text(encoding="utf-8")


def test_every_scenario_is_shown_in_the_guide() -> None:
    shown = {a for argv, _ in GUIDE_COMMANDS for a in argv if a.startswith("examples/plugins/scenarios/")}
    for d in SCENARIOS.iterdir():
        assert f"examples/plugins/scenarios/{d.name}/cluster.yaml" in shown, d.name


def test_every_entry_point_names_its_plugin(guide_plugins: None) -> None:
    registry = default_registry()
    meta = tomllib.loads((PLUGINS / "pyproject.toml").read_text(encoding="utf-8"))
    for name in meta["project"]["entry-points"][GROUP]:
        assert registry[name].name == name


def _simulator(scenario: str) -> Simulator:
    d = SCENARIOS / scenario
    return Simulator(build_cluster(load_documents(str(d / "cluster.yaml"))), load_config(str(d / "config.yaml")), 1)


def _pod(name: str, labels: dict[str, str]) -> PodInfo:
    return PodInfo({
        "metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels},
        "spec": {"schedulerName": "pyscheduler", "containers": [{"name": "c", "image": "i"}]},
    })


def _node(name: str, labels: dict[str, str]) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "1"}}})


def test_unreserve_frees_what_reserve_took(guide_plugins: None) -> None:
    sim = _simulator("slots-and-quota")
    placed = [out.node for out in sim.attempts()]
    assert placed == ["n1", None, "n1", None]
    slots = sim.frameworks["pyscheduler"].plugins["NodeSlots"]
    # a-2 reserved a slot, AppQuota's Permit rejected it, Unreserve gave the slot back.
    assert slots.slots == {"n1": {"default/a-1", "default/b-1"}}


def test_held_pod_is_released_when_its_label_goes(guide_plugins: None) -> None:
    from scheduler.backend.queue import SchedulingQueue

    sim = _simulator("hold")
    queue = SchedulingQueue(sim.frameworks, lambda: 0.0)
    held = _pod("waiting", {"example.com/hold": "true"})
    queue.add(held)
    assert queue.where("waiting") == "gated"
    queue.update(held, _pod("waiting", {}))
    assert queue.where("waiting") == "active"


def test_queueing_hint_wakes_the_pod_only_for_a_node_with_its_disk(guide_plugins: None) -> None:
    from scheduler.backend.queue import SchedulingQueue

    now = [0.0]
    sim = _simulator("disk-type")
    queue = SchedulingQueue(sim.frameworks, lambda: now[0])
    queue.add(_pod("cache", {"example.com/disk": "nvme"}))
    attempt = queue.pop_nowait()
    assert attempt is not None
    attempt.unschedulable_plugins = {"DiskType"}  # what the failed attempt records
    assert queue.add_unschedulable_if_not_present(attempt) == "unschedulable"

    added = ClusterEvent("Node", ActionType.ADD)
    assert queue.move_all_to_active_or_backoff(added, None, _node("n4", {"disktype": "hdd"})) == 0
    assert queue.where("cache") == "unschedulable"
    assert queue.move_all_to_active_or_backoff(added, None, _node("n5", {"disktype": "nvme"})) == 1
    now[0] += 2.0  # past the first attempt's 1 s backoff
    assert queue.pop_nowait() is attempt
