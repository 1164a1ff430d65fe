"""Command line: ``pyscheduler simulate`` (offline) and ``pyscheduler run`` (live)."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
from typing import Any, NoReturn

from scheduler.boot.gcpolicy import long_lived_objects
from scheduler.boot.lazyimport import defer_reexports
from scheduler.live.serving.options import add_flags as add_serving_flags

# The kube-scheduler release whose behaviour, flags and endpoints this one follows.
KUBE_VERSION = "v1.36.3"
BOOL_TRUE = ("1", "t", "T", "TRUE", "true", "True")
BOOL_FALSE = ("0", "f", "F", "FALSE", "false", "False")
# What /flagz shows for a flag left unset (kube-scheduler's flag defaults; our own names for the
# Lease are the config's, not a flag's).
UNSET_FLAG_TEXT = {
    "profiling": "true", "contention-profiling": "true", "leader-elect": "true",
    "leader-elect-lease-duration": "15s", "leader-elect-renew-deadline": "10s", "leader-elect-retry-period": "2s",
    "leader-elect-resource-lock": "leases", "leader-elect-resource-name": "kube-scheduler",
    "leader-elect-resource-namespace": "kube-system", "version": "false",
}
# Flags whose values are lists: Go's string-slice text.
LIST_FLAGS = ("authorization-always-allow-paths",)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyscheduler", description="A Kubernetes scheduler in Python.")
    _add_version_flag(p)
    sub = p.add_subparsers(dest="command")

    sim = sub.add_parser(
        "simulate", help="schedule the pending pods of a cluster file offline and explain each decision"
    )
    sim.add_argument("--cluster", required=True, help="Kubernetes manifests (multi-document YAML, kind: List, or JSON)")
    sim.add_argument(
        "--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default profile if absent"
    )
    sim.add_argument("--seed", type=int, default=None, help="seed for the tie-break among equal top scores")
    sim.add_argument("--output", choices=("text", "json", "placements"), default="text")
    sim.add_argument("--stats", action="store_true", help="print scheduling throughput (pods/s) to stderr")
    _add_feature_gates(sim)

    run = sub.add_parser("run", help="run the scheduler against a cluster")
    p.set_defaults(run_parser=run)
    run.add_argument(
        "--config",
        help="KubeSchedulerConfiguration file; if absent, one profile 'pyscheduler' and the Lease "
        "pyscheduler/pyscheduler (never kube-scheduler's 'default-scheduler' or its Lease)",
    )
    run.add_argument("--kubeconfig", help="kubeconfig file; in-cluster credentials or ~/.kube/config otherwise")
    add_serving_flags(run, _duration)
    _add_deprecated_flags(run)
    _add_leader_election_flags(run)
    _add_logs_flags(run)
    _add_version_flag(run)
    _add_feature_gates(run)
    _add_record_flags(run)
    _add_feature_gates(_add_explain(sub))
    return p


def _add_explain(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("explain", help="why a pod is where it is, or why it is pending (asks the scheduler)")
    p.add_argument("pod", metavar="POD", help="the pod's name (or namespace/name)")
    p.add_argument("-n", "--namespace", help="the pod's namespace (default: the kubeconfig context's, else default)")
    p.add_argument("--kubeconfig", help="kubeconfig file; in-cluster credentials or ~/.kube/config otherwise")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text")
    p.add_argument("--server", metavar="URL", help="ask the scheduler at this URL (https://host:10259)")
    p.add_argument("--certificate-authority", metavar="FILE", help="CA bundle for --server's certificate")
    p.add_argument("--insecure-skip-tls-verify", action="store_true",
                   help="do not check --server's certificate (it is self-signed unless configured)")
    p.add_argument("--what-if", action="store_true",
                   help="do not ask: recompute the decision now from the cluster, writing nothing")
    p.add_argument("--config", help="the scheduler's KubeSchedulerConfiguration file (else its ConfigMap)")
    p.add_argument("--config-map", default="pyscheduler/pyscheduler-config", metavar="NAMESPACE/NAME",
                   help="the ConfigMap holding the scheduler's config.yaml (default pyscheduler/pyscheduler-config)")
    p.add_argument("--no-hints", action="store_true",
                   help="for a pending pod, do not read the cluster to find nodes that fail one plugin only")
    return p


def _add_record_flags(run: argparse.ArgumentParser) -> None:
    g = run.add_argument_group("decision records (pyscheduler explain, /debug/explain)")
    g.add_argument("--decision-records", type=int, default=1000, metavar="N",
                   help="pods whose latest attempts are kept for explain (the least recent dropped; 0: none)")
    g.add_argument("--decision-top-nodes", type=int, default=10, metavar="N",
                   help="score rows an older record keeps (the newest records keep every node)")
    g.add_argument("--result-annotations", action="store_true",
                   help="also write each attempt's record to its pod as kube-scheduler-simulator's result "
                        "annotations (one write per attempt; needs patch on pods)")


def _bool(text: str) -> bool:
    """A boolean flag's value as pflag reads it (strconv.ParseBool)."""
    if text in BOOL_TRUE:
        return True
    if text in BOOL_FALSE:
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _bool_flag(g: argparse._ArgumentGroup, name: str, help: str) -> None:
    # --flag alone means true; --flag=false turns it off; None: not given on the command line.
    g.add_argument(name, nargs="?", const=True, default=None, type=_bool, metavar="true|false", help=help)


def _add_deprecated_flags(run: argparse.ArgumentParser) -> None:
    g = run.add_argument_group("deprecated (ignored when --config is given, as upstream)")
    _bool_flag(g, "--profiling", "serve /debug/pprof and /debug/flags/v (enableProfiling; default true)")
    _bool_flag(g, "--contention-profiling",
               "record lock contention while profiling (enableContentionProfiling; default true)")


def _add_leader_election_flags(run: argparse.ArgumentParser) -> None:
    """kube-scheduler's --leader-elect* flags. Each one given overrides its leaderElection field,
    with --config or without (options.go ApplyLeaderElectionTo), before validation."""
    g = run.add_argument_group("leader election (each overrides the config file's leaderElection field)")
    _bool_flag(g, "--leader-elect", "take the Lease before scheduling (replicated schedulers; default true)")
    g.add_argument("--leader-elect-lease-duration", type=_duration, metavar="duration",
                   help="how long candidates wait after the last renewal they saw before taking a led "
                   "Lease (default 15s)")
    g.add_argument("--leader-elect-renew-deadline", type=_duration, metavar="duration",
                   help="how long the leader keeps trying to renew before it stops leading; less than "
                   "the lease duration (default 10s)")
    g.add_argument("--leader-elect-retry-period", type=_duration, metavar="duration",
                   help="wait between attempts to take or renew the Lease (default 2s)")
    g.add_argument("--leader-elect-resource-lock", metavar="string",
                   help="object type used as the lock; 'leases' only (default \"leases\")")
    g.add_argument("--leader-elect-resource-name", metavar="string", help="name of the Lease")
    g.add_argument("--leader-elect-resource-namespace", metavar="string", help="namespace of the Lease")


def _level(text: str) -> int:
    from scheduler.live.log import LoggingError, parse_level

    try:
        # argparse hands "-v=3" over as "=3".
        return parse_level(text.removeprefix("="))
    except LoggingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _vmodule(text: str) -> list[tuple[str, int]]:
    from scheduler.live.log import LoggingError, parse_vmodule

    try:
        return parse_vmodule(text)
    except LoggingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_logs_flags(run: argparse.ArgumentParser) -> None:
    g = run.add_argument_group("logs")
    g.add_argument("--logging-format", default="text", metavar="string",
                   help='log format: "text" (klog\'s layout, the default) or "json" (one object per line)')
    g.add_argument("-v", "--v", dest="v", type=_level, default=0, metavar="Level",
                   help="log verbosity (klog levels; 10 logs every plugin's score for every node)")
    g.add_argument("--vmodule", type=_vmodule, default=[], metavar="pattern=N,...",
                   help="verbosity per module: comma-separated pattern=N (text format only)")


def _add_version_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", nargs="?", const="true", default=None, metavar="version[=true]",
                   help="print version information and quit (--version=raw: every field)")


def flag_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """Every flag of ``parser`` and its value as text, the way Go's flag values print (/flagz)."""
    from scheduler.config.duration import format_duration

    out: dict[str, str] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.dest in ("help",):
            continue
        name = longs[0][2:]
        value = getattr(args, action.dest, None)
        if value is None:
            text = UNSET_FLAG_TEXT.get(name, "")
        elif isinstance(value, bool):
            text = "true" if value else "false"
        elif action.type is _duration or (isinstance(value, float) and "ttl" in name):
            text = format_duration(float(value))
        elif name == "vmodule":
            text = ",".join(f"{pat}={n}" for pat, n in value)
        elif name == "feature-gates":
            text = ",".join(value)
        elif name in LIST_FLAGS:
            text = "[" + ",".join(x.strip() for x in str(value).split(",") if x.strip()) + "]"
        else:
            text = str(value)
        out[name] = text
    out["help"] = "false"
    return out


def version_text(mode: str) -> str | None:
    """What --version prints; None for --version=false. ValueError for a value it does not take."""
    from scheduler import __version__

    if mode in BOOL_FALSE:
        return None
    if mode in BOOL_TRUE:
        return f"pyscheduler v{__version__} (kube-scheduler {KUBE_VERSION})"
    if mode == "raw":
        major, minor = __version__.split(".")[:2]
        machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
        return (f'version.Info{{Major:"{major}", Minor:"{minor}", GitVersion:"v{__version__}", '
                f'KubeSchedulerVersion:"{KUBE_VERSION}", PythonVersion:"{platform.python_version()}", '
                f'Platform:"{sys.platform}/{machine}"}}')
    raise ValueError(f'invalid argument "{mode}" for "--version" flag: pyscheduler reports its own version; '
                     "accepted: true, false, raw")


def _add_feature_gates(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="[kube:]Gate=true|false,...",
        help="feature gates as kube-scheduler v1.36.3 takes them (repeatable; every gate it knows, "
        "at its default, locked gates fixed)",
    )


def _duration(text: str) -> float:
    from scheduler.config.duration import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    # numpy's OpenBLAS starts a thread per core when numpy is imported; nothing here calls BLAS,
    # so on a 2-core machine those threads only cost about 0.1 CPU-s of every start.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version is not None:
        try:
            text = version_text(args.version)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if text is not None:
            print(text)
            return 0
    if args.command is None:
        parser.error("the following arguments are required: command")
    from scheduler.config.features import FeatureGateError, parse_feature_gates

    try:
        # Checked before anything else, as kube-scheduler applies them before reading its config.
        args.gates = parse_feature_gates(args.feature_gates)
    except FeatureGateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "simulate":
        from scheduler.simulate.simulator import run as simulate_run

        for message, gate, value in args.gates.warnings:
            print(f"warning: {message} featureGate={gate} value={str(value).lower()}", file=sys.stderr)
        return simulate_run(args.cluster, args.config, args.seed, args.output, stats=args.stats, gates=args.gates)
    if args.command == "explain":
        from scheduler.live.explainclient import run as explain_run
        from scheduler.simulate.whatif import what_if

        return explain_run(args, what_if)
    if args.command == "run":
        args.flagz = flag_values(args.run_parser, args)
        # kopf and the kubernetes client re-export hundreds of modules we never use; importing
        # them was the largest single part of the start-up.
        defer_reexports()
        # Several hundred thousand objects: about 0.15 s of every start without this.
        with long_lived_objects():
            from scheduler.live.app import main as app_main
        return app_main(args)
    return 2


def entrypoint() -> NoReturn:
    """The process's entry (``pyscheduler``, ``python -m scheduler``): main, then exit at once.

    The API writers' threads may still be inside a call when ``run`` returns (a fenced leader
    stops with bindings in flight on a slow API server); interpreter finalization with them
    alive has ended in SIGABRT instead of the exit code. kube-scheduler exits at once too."""
    code = main()
    _remove_written_credentials()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _remove_written_credentials() -> None:
    """The kubeconfig loader writes a kubeconfig's embedded certificates and key to temporary
    files (the TLS layers read them by path) and removes them at interpreter exit, which
    os._exit skips: every start left its client key in the temporary directory."""
    loader = sys.modules.get("kubernetes.config.kube_config")
    cleanup = getattr(loader, "_cleanup_temp_files", None)
    if callable(cleanup):
        with contextlib.suppress(Exception):
            cleanup()


if __name__ == "__main__":
    entrypoint()
