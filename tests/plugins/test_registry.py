"""The plugin registry: the in-tree plugins, and out-of-tree plugins found through the
scheduler.plugins entry-point group and enabled by name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from scheduler.config import ConfigError, parse_config
from scheduler.config.defaults import IN_TREE_PLUGINS
from scheduler.core.profiles import check_profiles
from scheduler.framework.interface import Plugin
from scheduler.plugins.registry import GROUP, IN_TREE, default_registry
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pyscheduler-node-label-preference"


@pytest.fixture
def example_eps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield [EntryPoint("NodeLabelPreference", "node_label_preference:NodeLabelPreference", GROUP)]
    sys.modules.pop("node_label_preference", None)


def _doc(args: dict) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": "NodeLabelPreference", "weight": 50}]}},
                "pluginConfig": [{"name": "NodeLabelPreference", "args": args}],
            }
        ],
    }


def test_in_tree_plugins_are_registered_under_their_names() -> None:
    assert all(isinstance(cls, type) and issubclass(cls, Plugin) and cls.name == name for name, cls in IN_TREE.items())
    # The config layer knows the same names (it treats their args as typed).
    assert set(IN_TREE) == IN_TREE_PLUGINS
    assert default_registry([]) == IN_TREE


def test_example_plugin_is_found_and_decides(example_eps: list[EntryPoint]) -> None:
    reg = default_registry(example_eps)
    assert "NodeLabelPreference" in reg
    cfg = parse_config(_doc({"label": "disktype", "value": "ssd"}))
    docs = [make_node("plain"), make_node("fast", labels={"disktype": "ssd"}), make_pod("p", cpu="100m")]
    sim = Simulator(build_cluster(docs), cfg, seed=0, registry=reg)
    [out] = list(sim.attempts())
    assert out.node == "fast"
    assert out.result is not None and out.result.scores is not None
    assert "NodeLabelPreference" in out.result.scores.plugins


def test_unknown_plugin_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="NodeLabelPreference"):
        check_profiles(parse_config(_doc({"label": "x"})), default_registry([]))


class ShadowSort(Plugin):
    name = "PrioritySort"


def test_in_tree_name_wins_over_an_entry_point() -> None:
    ep = EntryPoint("shadow", f"{__name__}:ShadowSort", GROUP)
    assert default_registry([ep])["PrioritySort"] is IN_TREE["PrioritySort"]
