"""Serving options: kube-scheduler's secure serving, delegated authentication and authorization
flags (same names and defaults as cmd/kube-scheduler/app/options), their values and their checks.

The command line is built with these flags for every command, ``simulate`` too, so this module
imports the standard library only.
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_SECURE_PORT = 10259
DEFAULT_BIND_ADDRESS = "0.0.0.0"
MASTERS = "system:masters"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS = (MASTERS,)
DEFAULT_CACHE_TTL = 10.0


class ServingError(Exception):
    """Bad serving options or key material; one line, reported before the scheduler starts."""


def parse_allow_paths(paths: Sequence[str]) -> tuple[set[str], list[str]]:
    """--authorization-always-allow-paths as (exact paths, prefixes), leading '/' dropped: a
    trailing '*' makes a prefix, a '*' anywhere else is an error (apiserver's path.NewAuthorizer)."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for p in paths:
        p = p.removeprefix("/")
        if not p:
            exact.add(p)
            continue
        if "*" in p[:-1]:
            raise ServingError(f"only trailing * allowed in {p!r}")
        if p.endswith("*"):
            prefixes.append(p[:-1])
        else:
            exact.add(p)
    return exact, prefixes


@dataclass(slots=True)
class ServingOptions:
    bind_address: str = DEFAULT_BIND_ADDRESS
    secure_port: int = DEFAULT_SECURE_PORT  # 0 turns secure serving off, as upstream
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    authorized_ttl: float = DEFAULT_CACHE_TTL
    unauthorized_ttl: float = DEFAULT_CACHE_TTL
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    client_ca_file: str | None = None

    def validate(self) -> None:
        if not 0 <= self.secure_port <= 65535:
            raise ServingError(f"--secure-port {self.secure_port} must be between 0 and 65535, inclusive")
        try:
            ipaddress.ip_address(self.bind_address)
        except ValueError:
            raise ServingError(f"--bind-address {self.bind_address!r} is not an IP address") from None
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise ServingError("--tls-cert-file and --tls-private-key-file must be given together")
        parse_allow_paths(self.always_allow_paths)  # raises on a misplaced '*'


def add_flags(run: argparse.ArgumentParser, duration: Callable[[str], float]) -> None:
    """kube-scheduler's secure serving, authentication and authorization flags (same names).
    ``duration``: the command line's type for Go durations ("10s", "1m")."""
    g = run.add_argument_group("secure serving (HTTPS for /healthz, /livez, /readyz, /metrics)")
    g.add_argument("--bind-address", default=DEFAULT_BIND_ADDRESS, help="IP address to listen on (default 0.0.0.0)")
    # --port: the earlier name, kept so existing scripts keep working.
    g.add_argument("--secure-port", "--port", dest="secure_port", type=int, default=DEFAULT_SECURE_PORT,
                   help="HTTPS port; 0 turns serving off (default 10259)")
    g.add_argument("--tls-cert-file", default=None,
                   help="serving certificate (PEM, chain after it); a self-signed pair is made at start if absent")
    g.add_argument("--tls-private-key-file", default=None, help="private key of --tls-cert-file (PEM)")
    a = run.add_argument_group("delegated authentication and authorization (TokenReview, SubjectAccessReview)")
    a.add_argument("--authentication-kubeconfig", default=None,
                   help="kubeconfig allowed to create tokenreviews; in-cluster if absent, else every request "
                        "is anonymous")
    a.add_argument("--authorization-kubeconfig", default=None,
                   help="kubeconfig allowed to create subjectaccessreviews; in-cluster if absent, else all "
                        "but the always-allowed paths is forbidden")
    a.add_argument("--client-ca-file", default=None,
                   help="CA bundle (PEM) for client certificates: a certificate it signed authenticates as its "
                        "CommonName, groups its Organizations; without it, the client-ca-file of ConfigMap "
                        "kube-system/extension-apiserver-authentication when an authentication kubeconfig is known")
    a.add_argument("--authentication-token-webhook-cache-ttl", type=duration, default=DEFAULT_CACHE_TTL,
                   metavar="DURATION", help="how long TokenReview answers are cached (default 10s)")
    a.add_argument("--authorization-webhook-cache-authorized-ttl", type=duration, default=DEFAULT_CACHE_TTL,
                   metavar="DURATION", help="how long allowing SubjectAccessReview answers are cached (default 10s)")
    a.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=duration, default=DEFAULT_CACHE_TTL,
                   metavar="DURATION", help="how long denying SubjectAccessReview answers are cached (default 10s)")
    a.add_argument("--authorization-always-allow-paths", default=",".join(DEFAULT_ALWAYS_ALLOW_PATHS),
                   metavar="PATHS", help="comma-separated paths served without authorization; a trailing * "
                                         "makes a prefix (default /healthz,/readyz,/livez)")


def options_from_args(args: Any) -> ServingOptions:
    """ServingOptions from the parsed ``run`` command line (``add_flags`` defines the flags)."""
    paths = tuple(p.strip() for p in str(args.authorization_always_allow_paths).split(",") if p.strip())
    return ServingOptions(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        tls_cert_file=args.tls_cert_file or None,
        tls_private_key_file=args.tls_private_key_file or None,
        authentication_kubeconfig=args.authentication_kubeconfig or None,
        authorization_kubeconfig=args.authorization_kubeconfig or None,
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        always_allow_paths=paths,
        client_ca_file=getattr(args, "client_ca_file", None) or None,
    )
