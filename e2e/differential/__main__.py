"""``python -m differential --seeds 1-30`` (run with ``PYTHONPATH=e2e`` from the repo root).

Uses ``$KUBECONFIG`` if it reaches a cluster whose nodes kwok manages (a local control plane
from ``e2e/controlplane/up.sh``), otherwise starts a local control plane for the run. Prints
every mismatch as it is found, then decision counts and agreement per check; exits 1 on any
mismatch.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter

from e2e.support.plane import CONTROLPLANE_DIR, ensure_control_plane

from . import kubescheduler
from .compare import Tally
from .runner import run_seed
from .workload import run_workload_seed


def parse_seeds(text: str) -> list[int]:
    """ "1-30", "3", "1,4,7-9" -> seeds in order."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    if not out:
        raise ValueError(f"no seeds in {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="differential", description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1-5", help="e.g. 1-30 or 1,4,7-9")
    p.add_argument("--pending", type=int, default=None, help="pending pods per seed (default: random 8-14)")
    p.add_argument("--workdir", default=None, help="where cluster files and kube-scheduler logs go")
    p.add_argument(
        "--node-declared-features",
        choices=("auto", "on", "off"),
        default="auto",
        help="NodeDeclaredFeatures in both profiles: auto = when pyscheduler has the plugin",
    )
    p.add_argument("--vary-args", action="store_true", help="non-default plugin args and weights per seed (both sides)")
    p.add_argument("--simulate-subprocess", action="store_true", help="run each simulate as its own process")
    p.add_argument("--dra", action="store_true", help="devices and ResourceClaims too (differential/dra_gen.py)")
    p.add_argument(
        "--workload",
        action="store_true",
        help="random gangs (PodGroups), the workload-aware scheduling gates on both sides (differential/workload.py)",
    )
    p.add_argument(
        "--extender", action="store_true", help="both sides ask the suite's extenders (e2e/support/extender.py)"
    )
    args = p.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the binary is stopped and the seed's objects removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seeds = parse_seeds(args.seeds)
    ndf = {"auto": None, "on": True, "off": False}[args.node_declared_features]
    workdir = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="pyscheduler-differential-"))
    binary = kubescheduler.binary_path()
    if not binary.exists():
        subprocess.run([str(CONTROLPLANE_DIR / "build.sh"), "kube-scheduler"], check=True)
    cp = ensure_control_plane()
    if not cp.kwok:
        print("the cluster's nodes are not kwok-managed; refusing to create fake nodes there", file=sys.stderr)
        return 2
    run_id = uuid.uuid4().hex[:4]
    total = Tally()
    features: Counter[str] = Counter()
    t0 = time.monotonic()
    api = cp.api_client()
    try:
        for seed in seeds:
            if args.workload:
                res = run_workload_seed(api, cp.kubeconfig, seed, workdir / f"seed-{seed}", run_id)
                total.merge(res.tally)
                features.update(res.features)
                print(f"seed {seed}: {res.tally.decisions} gangs, {len(res.tally.mismatches)} mismatches", flush=True)
                continue
            res = run_seed(
                api,
                cp.kubeconfig,
                seed,
                workdir / f"seed-{seed}",
                run_id,
                node_declared_features=ndf,
                pending=args.pending,
                subprocess_cli=args.simulate_subprocess,
                vary_args=args.vary_args,
                dra=args.dra,
                extender=args.extender,
            )
            total.merge(res.tally)
            features.update(res.features)
            bad = len(res.tally.mismatches)
            print(f"seed {seed}: {res.tally.decisions} decisions, {bad} mismatches", flush=True)
    finally:
        api.close()
        cp.stop()
    print(
        f"\nkube-scheduler {kubescheduler.kube_version()} vs pyscheduler simulate, seeds {args.seeds} "
        f"({len(seeds)} seeds, {time.monotonic() - t0:.0f}s, files in {workdir})"
    )
    print(total.summary())
    print("  features exercised (pods): " + ", ".join(f"{k} {v}" for k, v in sorted(features.items())))
    if total.mismatches:
        by = Counter((m.check, m.plugin) for m in total.mismatches)
        print(
            f"{len(total.mismatches)} mismatches: "
            + ", ".join(f"{c}{'/' + pl if pl else ''} {n}" for (c, pl), n in by.most_common())
        )
        return 1
    print("all decisions agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
