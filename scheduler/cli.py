"""Command line: ``pyscheduler simulate`` (offline) and ``pyscheduler run`` (live)."""

from __future__ import annotations

import argparse
import sys


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

    run = sub.add_parser("run", help="run the scheduler against a cluster")
    run.add_argument("--config", help="KubeSchedulerConfiguration file; defaults if absent")
    run.add_argument("--kubeconfig", help="kubeconfig file; in-cluster credentials or ~/.kube/config otherwise")
    run.add_argument("--port", type=int, default=None, help="port for /healthz, /readyz, /metrics (default 10259)")
    run.add_argument("--bind-address", default=None, help="address for the health/metrics server (default 0.0.0.0)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "simulate":
        from scheduler.simulate import run as simulate_run

        return simulate_run(args.cluster, args.config, args.seed, args.output, stats=args.stats)
    if args.command == "run":
        from scheduler.app import main as app_main

        return app_main(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
