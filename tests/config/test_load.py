"""Loading: the YAML file around the document, and the defaults of ``run`` without one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scheduler.config import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginRef,
    error_line,
    load_config,
    load_run_config,
    parse_config,
)
from scheduler.config.load import RUN_DEFAULT_LEASE_NAME, RUN_DEFAULT_LEASE_NAMESPACE, RUN_DEFAULT_SCHEDULER_NAME


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "sched.yaml"
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_load_config_from_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        leaderElection:
          leaderElect: false
        profiles:
          - schedulerName: bin-packer
            plugins:
              score:
                disabled:
                  - name: NodeResourcesBalancedAllocation
            pluginConfig:
              - name: NodeResourcesFit
                args:
                  scoringStrategy:
                    type: MostAllocated
        """,
    )
    c = load_config(path)
    p = c.profiles[0]
    assert p.scheduler_name == "bin-packer"
    assert p.plugins["score"].disabled == ("NodeResourcesBalancedAllocation",)
    assert p.plugin_args["NodeResourcesFit"] == {"scoringStrategy": {"type": "MostAllocated"}}
    assert c.leader_election.leader_elect is False


def test_load_config_bad_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: [unclosed\nkind: x\n")
    with pytest.raises(ConfigError) as ei:
        load_config(path)
    msg = str(ei.value)
    assert msg.startswith(f"{path}: invalid YAML: ")
    assert "line" in msg and "\n" not in msg


def test_load_config_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read config file"):
        load_config(path)


def test_load_config_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(path)


def test_load_config_none_is_defaults() -> None:
    assert load_config(None) == parse_config({"apiVersion": API_VERSION, "kind": KIND})


def test_run_defaults_use_pyschedulers_own_names(tmp_path: Path) -> None:
    # Without a file, `run` answers for "pyscheduler" and holds its own Lease; with one, the file rules.
    c = load_run_config(None)
    assert [p.scheduler_name for p in c.profiles] == [RUN_DEFAULT_SCHEDULER_NAME]
    le = c.leader_election
    assert (le.resource_namespace, le.resource_name) == (RUN_DEFAULT_LEASE_NAMESPACE, RUN_DEFAULT_LEASE_NAME)
    assert c.profiles[0].plugins == load_config(None).profiles[0].plugins
    path = write(tmp_path, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    assert load_run_config(path) == load_config(path)


def test_error_line_names_the_file_once() -> None:
    assert error_line("f.yaml", ConfigError("parallelism: bad")) == "f.yaml: parallelism: bad"
    assert error_line("f.yaml", ConfigError("f.yaml: invalid YAML: x")) == "f.yaml: invalid YAML: x"


def test_config_objects_are_frozen() -> None:
    c = load_config(None)
    with pytest.raises(AttributeError):
        c.parallelism = 3  # type: ignore[misc]
    assert isinstance(c.profiles[0].plugins["multiPoint"].enabled[0], PluginRef)
