"""The serving flags and options: kube-scheduler's names and defaults, checked before start."""

from __future__ import annotations

import argparse

import pytest

from scheduler import cli
from scheduler.live.serving.options import ServingError, ServingOptions, options_from_args


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (ServingOptions(secure_port=70000), "--secure-port 70000 must be between 0 and 65535"),
        (ServingOptions(bind_address="localhost"), "--bind-address 'localhost' is not an IP address"),
        (ServingOptions(tls_cert_file="c.pem"), "must be given together"),
        (ServingOptions(always_allow_paths=("/a*b",)), r"only trailing \* allowed"),
    ],
)
def test_options_validate(opts: ServingOptions, message: str) -> None:
    with pytest.raises(ServingError, match=message):
        opts.validate()


def test_cli_defaults_and_flags() -> None:
    args = cli._parser().parse_args(["run"])
    o = options_from_args(args)
    assert (o.bind_address, o.secure_port, o.tls_cert_file) == ("0.0.0.0", 10259, None)
    assert o.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (o.token_cache_ttl, o.authorized_ttl, o.unauthorized_ttl) == (10.0, 10.0, 10.0)
    args = cli._parser().parse_args(
        ["run", "--port", "1234", "--bind-address", "127.0.0.1", "--authorization-always-allow-paths",
         "/healthz,/healthz/*", "--authentication-token-webhook-cache-ttl", "1m", "--authentication-kubeconfig",
         "k"]
    )
    o = options_from_args(args)
    assert (o.secure_port, o.bind_address, o.token_cache_ttl) == (1234, "127.0.0.1", 60.0)
    assert o.always_allow_paths == ("/healthz", "/healthz/*")
    assert (o.authentication_kubeconfig, o.authorization_kubeconfig) == ("k", None)


def test_parse_args_namespace_is_complete() -> None:
    # options_from_args reads every serving flag cli.py defines.
    args = cli._parser().parse_args(["run"])
    assert isinstance(args, argparse.Namespace)
    options_from_args(args).validate()
