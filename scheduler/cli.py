"""Command line: ``pyscheduler simulate`` (offline) and ``pyscheduler run`` (live)."""

from __future__ import annotations

import argparse
import os
import sys

from scheduler.boot.gcpolicy import long_lived_objects
from scheduler.boot.lazyimport import defer_reexports
from scheduler.live.serving.options import add_flags as add_serving_flags


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyscheduler", description="A Kubernetes scheduler in Python.")
    sub = p.add_subparsers(dest="command", required=True)

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
    run.add_argument(
        "--config",
        help="KubeSchedulerConfiguration file; if absent, one profile 'pyscheduler' and the Lease "
        "pyscheduler/pyscheduler (never kube-scheduler's 'default-scheduler' or its Lease)",
    )
    run.add_argument("--kubeconfig", help="kubeconfig file; in-cluster credentials or ~/.kube/config otherwise")
    add_serving_flags(run, _duration)
    _add_feature_gates(run)
    return p


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
    args = _parser().parse_args(argv)
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
    if args.command == "run":
        # kopf and the kubernetes client re-export hundreds of modules we never use; importing
        # them was the largest single part of the start-up.
        defer_reexports()
        # Several hundred thousand objects: about 0.15 s of every start without this.
        with long_lived_objects():
            from scheduler.live.app import main as app_main
        return app_main(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
