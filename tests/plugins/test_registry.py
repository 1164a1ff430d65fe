"""Out-of-tree plugins: found through the scheduler.plugins entry-point group, enabled by name."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from scheduler.config.decode import parse_config
from scheduler.plugins.registry import GROUP, default_registry
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pyscheduler-node-label-preference"


@pytest.fixture
def example_eps(monkeypatch: pytest.MonkeyPatch) -> list[EntryPoint]:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield [EntryPoint("NodeLabelPreference", "node_label_preference:NodeLabelPreference", GROUP)]
    sys.modules.pop("node_label_preference", None)


def _doc(extra_disabled: list[str], args: dict) -> dict:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "NodeLabelPreference", "weight": 50}],
                        "disabled": [{"name": n} for n in extra_disabled],
                    }
                },
                "pluginConfig": [{"name": "NodeLabelPreference", "args": args}],
            }
        ],
    }


def test_example_plugin_is_found_and_decides(example_eps: list[EntryPoint]) -> None:
    reg = default_registry(example_eps)
    assert "NodeLabelPreference" in reg
    missing = [n for n in ("PodTopologySpread", "InterPodAffinity") if n not in reg]
    cfg = parse_config(_doc(missing, {"label": "disktype", "value": "ssd"}), reg)
    docs = [make_node("plain"), make_node("fast", labels={"disktype": "ssd"}), make_pod("p", cpu="100m")]
    sim = Simulator(build_cluster(docs), cfg, seed=0, registry=reg)
    [out] = list(sim.attempts())
    assert out.node == "fast"
    assert out.result is not None and out.result.scores is not None
    assert "NodeLabelPreference" in out.result.scores.plugins


def test_unknown_plugin_name_is_a_config_error() -> None:
    from scheduler.config.decode import ConfigError

    with pytest.raises(ConfigError, match="NodeLabelPreference"):
        parse_config(_doc([], {"label": "x"}), default_registry([]))
