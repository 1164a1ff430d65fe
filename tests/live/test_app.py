"""``pyscheduler run``'s start-up checks and the command line over the configuration, as
kube-scheduler v1.36.3's Options.ApplyTo and Run do them (cmd/kube-scheduler/app/options/
options.go, server.go; client-go leaderelection.NewLeaderElector)."""

from __future__ import annotations

import logging
import pathlib

import pytest
import structlog

from scheduler import cli
from scheduler.config import ConfigError, load_config, load_run_config
from scheduler.live import app
from scheduler.live import log as logconf

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
enableProfiling: false
leaderElection:
  leaseDuration: 20s
  resourceName: from-file
"""


@pytest.fixture
def config_file(tmp_path: pathlib.Path) -> str:
    p = tmp_path / "config.yaml"
    p.write_text(CONFIG)
    return str(p)


@pytest.fixture(autouse=True)
def _reset_logging():
    yield
    logconf.set_verbosity(0)
    logconf.set_vmodule([])
    structlog.reset_defaults()
    logging.getLogger().handlers[:] = []


def _args(*argv: str):
    return cli._parser().parse_args(["run", *argv])


def test_leader_election_flags_override_the_file(config_file: str) -> None:
    args = _args("--config", config_file, "--leader-elect-resource-name=from-flag", "--leader-elect=false")
    cfg = app.apply_flags(load_config(config_file), args)
    le = cfg.leader_election
    # Given flags win; the file's other fields stay (ApplyLeaderElectionTo copies Changed flags only).
    assert (le.leader_elect, le.resource_name, le.lease_duration) == (False, "from-flag", 20.0)


def test_deprecated_profiling_flags_apply_only_without_config(config_file: str) -> None:
    with_file = app.apply_flags(load_config(config_file), _args("--config", config_file, "--profiling=true"))
    assert with_file.enable_profiling is False  # "ignored if a config file is specified in --config"
    without = app.apply_flags(load_run_config(None), _args("--profiling=false", "--contention-profiling=false"))
    assert (without.enable_profiling, without.enable_contention_profiling) == (False, False)


def test_no_flags_leave_the_configuration_as_loaded(config_file: str) -> None:
    cfg = load_config(config_file)
    assert app.apply_flags(cfg, _args("--config", config_file)) is cfg


def test_flags_are_validated_with_the_configuration(config_file: str) -> None:
    with pytest.raises(ConfigError, match=r"^leaderElection\.leaseDuration: Invalid value: "):
        app.apply_flags(load_config(config_file), _args("--config", config_file,
                                                        "--leader-elect-renew-deadline=30s"))
    with pytest.raises(ConfigError, match=r'leaderElection\.resourceLock: Invalid value: "endpoints"'):
        app.apply_flags(load_config(config_file), _args("--config", config_file,
                                                        "--leader-elect-resource-lock=endpoints"))


@pytest.mark.parametrize(
    "argv",
    [
        # renewDeadline 2s is not greater than 1.2 * retryPeriod 2s: config validation lets it
        # through, the elector refuses it.
        ["--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"],
        ["--leader-elect-renew-deadline=2400ms", "--leader-elect-retry-period=2s"],
    ],
)
def test_renew_deadline_within_jittered_retry_is_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", "--secure-port=0", *argv])
    assert code == app.EXIT_CONFIG
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: couldn't create leader elector: renewDeadline must be greater than retryPeriod*JitterFactor"]


def test_renew_deadline_just_above_the_jittered_retry_passes() -> None:
    from scheduler.live.kube.elector import check_timings

    check_timings(15.0, 2.401, 2.0)


def test_vmodule_with_json_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--logging-format=json", "--vmodule=loop=3"]) == 1
    assert capsys.readouterr().err == "error: vmodule: Forbidden: Only supported for text log format\n"


def test_unknown_logging_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--logging-format=xml"]) == 1
    assert capsys.readouterr().err == 'error: format: Invalid value: "xml": Unsupported log format\n'
