"""The command line as kube-scheduler v1.36.3's (cmd/kube-scheduler/app/options, component-base
logs/api and version/verflag): flag names, values, and what /flagz shows of them."""

from __future__ import annotations

import argparse

import pytest

from scheduler import __version__, cli


def _run_args(*argv: str) -> argparse.Namespace:
    return cli._parser().parse_args(["run", *argv])


@pytest.mark.parametrize(
    ("argv", "v", "vmodule", "fmt"),
    [
        ((), 0, [], "text"),  # upstream's defaults: -v 0, text
        (("-v=10",), 10, [], "text"),
        (("-v", "4"), 4, [], "text"),
        (("--v=3",), 3, [], "text"),
        (("--vmodule=schedule_one=10,eventhandlers=3",), 0, [("schedule_one", 10), ("eventhandlers", 3)], "text"),
        (("--logging-format=json",), 0, [], "json"),
    ],
)
def test_logs_flags(argv, v, vmodule, fmt):
    a = _run_args(*argv)
    assert (a.v, a.vmodule, a.logging_format) == (v, vmodule, fmt)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # The binary: invalid argument "abc" for "-v, --v" flag: strconv.ParseUint: ...
        (("-v=abc",), 'strconv.ParseUint: parsing "abc": invalid syntax'),
        (("--vmodule=x",), '"x" does not have the pattern=N format'),
    ],
)
def test_bad_logs_flags_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        _run_args(*argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_leader_election_flags_are_unset_unless_given():
    a = _run_args()
    assert [getattr(a, f) for f, _ in (("leader_elect", 0), ("leader_elect_lease_duration", 0))] == [None, None]
    a = _run_args("--leader-elect=false", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
                  "--leader-elect-retry-period=4s", "--leader-elect-resource-lock=leases",
                  "--leader-elect-resource-name=n", "--leader-elect-resource-namespace=ns")
    assert (a.leader_elect, a.leader_elect_lease_duration, a.leader_elect_renew_deadline,
            a.leader_elect_retry_period) == (False, 30.0, 20.0, 4.0)
    assert (a.leader_elect_resource_lock, a.leader_elect_resource_name, a.leader_elect_resource_namespace) == (
        "leases", "n", "ns")
    assert _run_args("--leader-elect").leader_elect is True  # a bare bool flag means true, as pflag


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_bool_flags_take_strconv_parsebool_values(value):
    assert _run_args(f"--profiling={value}").profiling is True


def test_bool_flag_refuses_other_words(capsys):
    with pytest.raises(SystemExit):
        _run_args("--leader-elect=yes")
    assert 'strconv.ParseBool: parsing "yes": invalid syntax' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("mode", "out"),
    [
        ("true", f"pyscheduler v{__version__} (kube-scheduler {cli.KUBE_VERSION})"),
        ("false", None),
    ],
)
def test_version_text(mode, out):
    assert cli.version_text(mode) == out


def test_version_raw_names_every_field():
    raw = cli.version_text("raw")
    assert raw is not None and raw.startswith("version.Info{Major:")
    for field in ("GitVersion:", "KubeSchedulerVersion:", "PythonVersion:", "Platform:"):
        assert field in raw


@pytest.mark.parametrize("argv", [["--version"], ["run", "--version"]])
def test_version_flag_prints_and_quits(argv, capsys):
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == f"pyscheduler v{__version__} (kube-scheduler {cli.KUBE_VERSION})\n"


def test_version_flag_refuses_a_version_to_report(capsys):
    assert cli.main(["--version=v1.2.3"]) == 2
    assert 'invalid argument "v1.2.3" for "--version" flag' in capsys.readouterr().err


def test_flag_values_print_as_go_flags_do():
    # What /flagz shows (apiserver flagz.NamedFlagSetsReader: flag.Value.String()).
    a = _run_args("--config", "c.yaml", "-v=3", "--vmodule=a=2", "--leader-elect=false",
                  "--leader-elect-lease-duration=1m30s", "--authentication-token-webhook-cache-ttl=1m")
    got = cli.flag_values(a.run_parser, a)
    assert got["config"] == "c.yaml"
    assert got["v"] == "3"
    assert got["vmodule"] == "a=2"
    assert got["leader-elect"] == "false"
    assert got["leader-elect-lease-duration"] == "1m30s"
    assert got["leader-elect-renew-deadline"] == "10s"  # unset: the flag's default
    assert got["leader-elect-resource-name"] == "kube-scheduler"
    assert got["authentication-token-webhook-cache-ttl"] == "1m0s"
    assert got["authorization-always-allow-paths"] == "[/healthz,/readyz,/livez]"
    assert got["secure-port"] == "10259"
    assert got["logging-format"] == "text"
    assert got["profiling"] == "true"
    assert got["help"] == "false"
    assert got["feature-gates"] == ""
    assert "run-parser" not in got and "flagz" not in got
    a = _run_args("--feature-gates=ComponentFlagz=false")
    assert cli.flag_values(a.run_parser, a)["feature-gates"] == "ComponentFlagz=false"


_EXIT_PROBE = """
import sys
from kubernetes import client, config
from scheduler import cli
conf = client.Configuration()
config.load_kube_config(config_file=sys.argv[1], client_configuration=conf)
print(conf.ssl_ca_cert, conf.cert_file, conf.key_file, flush=True)
cli.main = lambda argv=None: 3
cli.entrypoint()
"""


def test_exit_removes_the_credentials_the_kubeconfig_loader_wrote(tmp_path) -> None:
    # Embedded certificate data is written to temporary files; the loader removes them at
    # interpreter exit, which the entrypoint's os._exit skips.
    import base64
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    data = base64.b64encode(b"-----BEGIN TEST-----\n").decode()
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": data}}],
        "users": [{"name": "u", "user": {"client-certificate-data": data, "client-key-data": data}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    out = subprocess.run([sys.executable, "-c", _EXIT_PROBE, str(kc)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stderr
    written = [Path(p) for p in out.stdout.split()]
    assert len(written) == 3 and all(p.is_absolute() for p in written)
    assert not [p for p in written if p.exists()]
