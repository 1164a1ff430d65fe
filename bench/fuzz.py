#!/usr/bin/env python3
"""`make fuzz`: a coverage-guided run (atheris, libFuzzer) of the two file decoders ``simulate``
and ``run`` read: the KubeSchedulerConfiguration file and the cluster file.

Each input is a file's bytes. The config target loads it as ``--config`` next to the fuzz world
(scheduler.testing.fuzz); the cluster target loads it as ``--cluster`` with the default config.
Both schedule what loaded, so a file that decodes reaches the plugins. The property is the one
tests/fuzz checks: exit 0, or exit 2 with one line naming the file, the object and the field
(never a bare exception, never anything raised past ``simulate``). A violation stops the run
with the input saved as ``crash-*`` in the working directory.

Corpus: starts from the seeds (the world, each seed object beside one node, the seed config) and
from what earlier runs kept in tests/fuzz/corpus/<target>/; at the end the inputs that added
coverage are merged into that directory (libFuzzer -merge=1), where tests/fuzz/test_corpus.py
replays every one of them in CI.

    python3 bench/fuzz.py                      # both targets, 120 s each
    python3 bench/fuzz.py --target cluster --seconds 600
    python3 bench/fuzz.py --target config --one FILE   # replay one input (a crash)

Not part of CI: atheris comes with the ``fuzz`` extra (pip install -e '.[fuzz]').
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
TARGETS = ("config", "cluster")


def seeds(target: str) -> dict[str, bytes]:
    """The starting inputs of ``target``, by name."""
    import yaml

    from scheduler.testing.fuzz import dump, seed_config, seed_objects, world_nodes

    if target == "config":
        base = seed_config()
        minimal = {"apiVersion": base["apiVersion"], "kind": base["kind"]}
        return {"seed-config": yaml.safe_dump(base).encode(), "seed-minimal": yaml.safe_dump(minimal).encode()}
    node = world_nodes()[0]
    out = {"seed-world": dump(seed_objects())}
    for obj in seed_objects():
        out[f"seed-{obj['kind']}-{obj['metadata']['name']}"] = dump([node, obj] if obj is not node else [obj])
    return out


_SMALL_WORLD: list[bytes] = []


def small_world() -> bytes:
    """The cluster the config target schedules (each input builds its frameworks: a bigger
    world only slows the run)."""
    if not _SMALL_WORLD:
        from scheduler.testing.fuzz import small_world as build

        _SMALL_WORLD.append(build())
    return _SMALL_WORLD[0]


def check(target: str, data: bytes) -> None:
    """One input through ``simulate``; AssertionError when the property does not hold."""
    from scheduler.testing.fuzz import refusal_problem, simulate_files

    if target == "config":
        rc, _, err, _, path = simulate_files(small_world(), data)
    else:
        rc, _, err, path, _ = simulate_files(data)
    problem = refusal_problem(rc, err, (path,))
    if problem is not None:
        raise AssertionError(problem)


def fuzz_one_target(target: str, argv: list[str]) -> None:
    """Runs in its own process: libFuzzer owns it until the time is up (then it exits)."""
    import atheris

    with atheris.instrument_imports(include=["scheduler"]):
        import scheduler.simulate.simulator
        import scheduler.testing.fuzz  # noqa: F401

    def one(data: bytes) -> None:
        check(target, data)

    atheris.Setup([sys.argv[0], *argv], one)
    atheris.Fuzz()


def run_target(target: str, seconds: int, timeout: int) -> dict[str, object]:
    kept = CORPUS / target
    kept.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-") as tmp:
        work, seed_dir = pathlib.Path(tmp) / "work", pathlib.Path(tmp) / "seeds"
        work.mkdir()
        seed_dir.mkdir()
        for name, data in seeds(target).items():
            (seed_dir / name).write_bytes(data)
        before = len(list(kept.iterdir()))
        # libFuzzer's merge runs this file again by its path: the target goes in the environment.
        me = [__file__]
        env = {**os.environ, "PYSCHED_FUZZ_TARGET": target, "PYTHONPATH": str(ROOT)}
        start = time.monotonic()
        fuzz = subprocess.run(
            [*me, f"-max_total_time={seconds}", f"-timeout={timeout}", "-rss_limit_mb=4096",
             "-max_len=65536", "-print_final_stats=1", str(work), str(seed_dir), str(kept)],
            cwd=tmp, capture_output=True, text=True, env=env,
        )
        took = time.monotonic() - start
        crashes = sorted(pathlib.Path(tmp).glob("crash-*")) + sorted(pathlib.Path(tmp).glob("timeout-*"))
        for c in crashes:
            shutil.copy(c, ROOT / c.name)  # for --one and for a regression case once fixed
        stats = {ln.rsplit(":", 1)[0].strip(): ln.rsplit(":", 1)[1].strip()
                 for ln in (fuzz.stdout + fuzz.stderr).splitlines() if ln.startswith("stat::")}
        # Keep only what adds coverage to the kept corpus (libFuzzer's merge), named by content.
        merged = pathlib.Path(tmp) / "merged"
        merged.mkdir()
        subprocess.run([*me, "-merge=1", f"-timeout={timeout}", str(merged), str(kept), str(work)],
                       cwd=tmp, capture_output=True, text=True, env=env)
        for f in merged.iterdir():
            data = f.read_bytes()
            (kept / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return {
        "target": target, "seconds": round(took), "execs": stats.get("stat::number_of_executed_units"),
        "execs_per_s": stats.get("stat::average_exec_per_sec"), "corpus_before": before,
        "corpus_after": len(list(kept.iterdir())), "crashes": [c.name for c in crashes],
        "exit": fuzz.returncode, "tail": fuzz.stderr.strip().splitlines()[-12:] if crashes else [],
    }


def main() -> int:
    inside = os.environ.get("PYSCHED_FUZZ_TARGET")
    if inside:  # a libFuzzer process (the run or its merge): every argument is libFuzzer's
        fuzz_one_target(inside, sys.argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=TARGETS, action="append")
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", "120")))
    ap.add_argument("--timeout", type=int, default=20, help="seconds one input may take before it counts as a hang")
    ap.add_argument("--one", help="replay one input file against --target and print the outcome")
    args = ap.parse_args()
    targets = args.target or list(TARGETS)
    if args.one:
        check(targets[0], pathlib.Path(args.one).read_bytes())
        print("ok")
        return 0
    failed = False
    for t in targets:
        report = run_target(t, args.seconds, args.timeout)
        print(" ".join(f"{k}={v}" for k, v in report.items() if k != "tail"))
        for line in report["tail"]:  # type: ignore[attr-defined]
            print(f"  {line}")
        failed |= bool(report["crashes"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
