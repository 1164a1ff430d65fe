"""The configuration's extenders: decoded values, validation and the start-up build errors.

Upstream (kubernetes v1.36.3): apis/config/validation/validation.go validateExtenders and its
validation_test.go cases (extender-negative-weight, -duplicate-managed-resources,
-duplicate-bind), scheduler.go buildExtenders, client-go TLSConfigFor. Every error case is
also run through the kube-scheduler v1.36.3 binary, which must exit with the same words.
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config import API_VERSION, KIND, ConfigError, parse_config
from scheduler.config.types import Extender, ExtenderManagedResource, ExtenderTLSConfig
from scheduler.extender import build_extenders


def doc(extenders: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "extenders": extenders, **fields}


def test_every_field_decodes() -> None:
    cfg = parse_config(
        doc(
            [
                {
                    "urlPrefix": "https://e:8443/x",
                    "filterVerb": "filter",
                    "preemptVerb": "preempt",
                    "prioritizeVerb": "prioritize",
                    "weight": 3,
                    "bindVerb": "bind",
                    "enableHTTPS": True,
                    "tlsConfig": {
                        "insecure": False,
                        "serverName": "e",
                        "certFile": "/c",
                        "keyFile": "/k",
                        "caFile": "/ca",
                        "certData": "Y2VydA==",
                        "keyData": "a2V5",
                        "caData": "Y2E=",
                    },
                    "httpTimeout": "1m30s",
                    "nodeCacheCapable": True,
                    "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                    "ignorable": True,
                }
            ]
        )
    )
    assert cfg.extenders == (
        Extender(
            url_prefix="https://e:8443/x",
            filter_verb="filter",
            preempt_verb="preempt",
            prioritize_verb="prioritize",
            weight=3,
            bind_verb="bind",
            enable_https=True,
            tls_config=ExtenderTLSConfig(False, "e", "/c", "/k", "/ca", b"cert", b"key", b"ca"),
            http_timeout=90.0,
            node_cache_capable=True,
            managed_resources=(ExtenderManagedResource("example.com/gpu", True),),
            ignorable=True,
        ),
    )


def test_no_defaults_for_extenders() -> None:
    # v1 defaults.go sets nothing on an extender: weight stays 0 (valid without prioritizeVerb).
    cfg = parse_config(doc([{"urlPrefix": "http://e"}]))
    assert cfg.extenders == (Extender(url_prefix="http://e"),)


# (case, extenders, extra top-level fields, our error); each is checked against the binary.
ERRORS: list[tuple[str, list[dict[str, Any]], dict[str, Any], str]] = [
    (
        "extender-negative-weight",
        [{"urlPrefix": "http://e", "prioritizeVerb": "prioritize", "weight": -1}],
        {},
        "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it",
    ),
    (
        "extender-prioritizer-without-weight",
        [{"urlPrefix": "http://e", "prioritizeVerb": "prioritize"}],
        {},
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
    ),
    (
        "extender-duplicate-managed-resources",
        [
            {"urlPrefix": "http://e", "managedResources": [{"name": "example.com/foo"}]},
            {"urlPrefix": "http://f", "managedResources": [{"name": "example.com/foo"}]},
        ],
        {},
        'extenders[1].managedResources[0].name: Invalid value: "example.com/foo": '
        "duplicate extender managed resource name",
    ),
    (
        "extender-duplicate-bind",
        [{"urlPrefix": "http://e", "bindVerb": "foo"}, {"urlPrefix": "http://f", "bindVerb": "bar"}],
        {},
        'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind',
    ),
    (
        "extender-native-and-quota-names",
        [
            {
                "urlPrefix": "http://e",
                "managedResources": [
                    {"name": "cpu"},
                    {"name": "kubernetes.io/foo"},
                    {"name": "requests.example.com/foo"},
                    {"name": "example.com/ok"},
                ],
            }
        ],
        {},
        '[extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name, '
        'extenders[0].managedResources[1].name: Invalid value: "kubernetes.io/foo": '
        "is an invalid extended resource name, "
        'extenders[0].managedResources[2].name: Invalid value: "requests.example.com/foo": '
        "is an invalid extended resource name]",
    ),
    (
        "extender-resource-names-not-qualified",
        [{"urlPrefix": "http://e", "managedResources": [{"name": "a/b/c"}, {"name": "Example.com/x"}, {"name": ""}]}],
        {},
        "[extenders[0].managedResources[0].name: Invalid value: \"a/b/c\": a valid label key must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName'), "
        'extenders[0].managedResources[1].name: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
        'extenders[0].managedResources[2].name: Invalid value: "": name part must be non-empty, '
        'extenders[0].managedResources[2].name: Invalid value: "": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]",
    ),
    (
        "extender-errors-after-the-others",
        [{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
        {"parallelism": 0},
        "[parallelism: Invalid value: 0: should be an integer value greater than zero, "
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it]",
    ),
    # Start-up (buildExtenders), after validation.
    (
        "build-insecure-with-ca",
        [{"urlPrefix": "https://e", "tlsConfig": {"insecure": True, "caData": "YWJj"}}],
        {},
        "couldn't build extenders: specifying a root certificates file with the insecure flag is not allowed",
    ),
    (
        "build-bad-ca",
        [{"urlPrefix": "https://e", "tlsConfig": {"caData": "YWJj"}}],
        {},
        "couldn't build extenders: unable to load root certificates: unable to parse bytes as PEM block",
    ),
    (
        "build-bad-cert-data",
        [{"urlPrefix": "https://e", "tlsConfig": {"certData": "YWJj", "keyData": "YWJj"}}],
        {},
        "couldn't build extenders: tls: failed to find any PEM data in certificate input",
    ),
    (
        "build-missing-cert-file",
        [{"urlPrefix": "https://e", "tlsConfig": {"certFile": "/nonexistent/cert", "keyFile": "/nonexistent/key"}}],
        {},
        "couldn't build extenders: open /nonexistent/cert: no such file or directory",
    ),
    (
        "build-ignored-resource-without-fit",
        [{"urlPrefix": "http://e", "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}]}],
        {"profiles": [{"schedulerName": "a", "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}}]},
        "couldn't build extenders: can't find NodeResourcesFitArgs in plugin config",
    ),
]


def _ours(d: dict[str, Any]) -> str:
    try:
        build_extenders(parse_config(d))
    except ConfigError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize(("extenders", "fields", "want"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors(extenders: list[dict[str, Any]], fields: dict[str, Any], want: str) -> None:
    assert _ours(doc(extenders, **fields)) == want


# ---------------------------------------------------------------------------------------------
# The same cases through the kube-scheduler v1.36.3 binary


def _binary() -> Path:
    cache = os.environ.get("PYSCHED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyscheduler"
    )
    path = Path(cache) / "bin" / "kube-scheduler-v1.36.3" / "kube-scheduler"
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the kube-scheduler binary is missing: {path}")
        pytest.skip(f"kube-scheduler v1.36.3 binary not built ({path})")
    return path


_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.parametrize(("extenders", "fields", "want"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors_match_the_binary(
    tmp_path: Path, extenders: list[dict[str, Any]], fields: dict[str, Any], want: str
) -> None:
    binary = _binary()
    (tmp_path / "kubeconfig").write_text(_KUBECONFIG)
    # The binary reads a kubeconfig (never contacted: it stops at the error) and must not elect.
    d = doc(extenders, **fields)
    d.setdefault("leaderElection", {"leaderElect": False})
    d["clientConnection"] = {"kubeconfig": str(tmp_path / "kubeconfig")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(d))
    proc = subprocess.run(
        [str(binary), f"--config={tmp_path / 'config.yaml'}", "--secure-port=0"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    m = re.search(rb'"command failed" err="((?:[^"\\]|\\.)*)"\n', proc.stderr)
    assert m is not None, proc.stderr[-2000:]
    theirs = codecs.escape_decode(m.group(1))[0].decode()
    assert theirs == _ours(d) == want
