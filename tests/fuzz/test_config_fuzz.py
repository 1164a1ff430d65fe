"""Malformed KubeSchedulerConfigurations through ``simulate --config`` (decode, default,
validate, build the frameworks, schedule the fuzz world with them): exit 0, or exit 2 with one
line naming the config file (tests/model/test_malformed_inputs.py and tests/config have the
hand-written cases). A config that loads must schedule every pod without a crash."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given

from scheduler.config import parse_config
from scheduler.testing.fuzz import (
    dump,
    json_values,
    mutated,
    refusal_problem,
    seed_config,
    seed_objects,
    simulate_files,
)

WORLD = dump(seed_objects())
SEED = seed_config()


def _check(config: bytes) -> None:
    rc, out, err, _, path = simulate_files(WORLD, config)
    problem = refusal_problem(rc, err, (path,))
    assert problem is None, problem
    if rc == 0:
        # Every pending pod of the world attempted once, when a profile is theirs.
        profiles = {p.scheduler_name for p in parse_config(yaml.safe_load(config)).profiles}
        assert out.count("\n") == (11 if "default-scheduler" in profiles else 0), out


def test_seed_config_schedules() -> None:
    rc, out, err, _, _ = simulate_files(WORLD, yaml.safe_dump(SEED).encode())
    assert (rc, err) == (0, "")
    assert out.count('"node": "n') == 10


@given(mutated(SEED, max_mutations=4))
def test_mutated_config(doc: Any) -> None:
    _check(yaml.safe_dump(doc, allow_unicode=True).encode())


@given(json_values(max_leaves=16))
def test_arbitrary_config(body: Any) -> None:
    doc = {**body, "apiVersion": SEED["apiVersion"], "kind": SEED["kind"]} if isinstance(body, dict) else body
    _check(yaml.safe_dump(doc, allow_unicode=True).encode())


def _with_args(plugin: str, args: dict[str, Any]) -> dict[str, Any]:
    doc = {"apiVersion": SEED["apiVersion"], "kind": SEED["kind"]}
    profile = {"schedulerName": "default-scheduler", "pluginConfig": [{"name": plugin, "args": args}]}
    return {**doc, "profiles": [profile]}


# What the fuzzing above found, each fixed: (id, config, fragment of the one line).
FOUND: list[tuple[str, dict[str, Any], str]] = [
    # A plugin factory's AttributeError on a wrong-typed args field escaped to simulate's last
    # resort and was blamed on the cluster file. kube-scheduler v1.36.3 refuses this config with
    # "decoding .profiles[0].pluginConfig[0]: decoding args for plugin NodeResourcesFit: json:
    # cannot unmarshal bool into Go struct field NodeResourcesFitArgs.scoringStrategy of type
    # v1.ScoringStrategy".
    ("fit-scoring-strategy-bool", _with_args("NodeResourcesFit", {"scoringStrategy": True}),
     "decoding args for plugin NodeResourcesFit: "),
    # The same with an infinite weight (YAML .inf): an OverflowError past the factory's guard.
    ("fit-weight-infinite", _with_args("NodeResourcesFit", {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": float("inf")}]}}),
     "decoding args for plugin NodeResourcesFit: "),
    # An unknown key with control characters broke the one line (\x1e and \r end lines). The
    # binary quotes it as Go's %q: strict decoding error: unknown field "\x1e0\r" (it also lists
    # every unknown field, comma-separated, where we name the first).
    ("unknown-field-control-characters", {"apiVersion": SEED["apiVersion"], "kind": SEED["kind"], "\x1e0\r": None},
     'strict decoding error: unknown field "\\x1e0\\r"'),
]


@pytest.mark.parametrize(("doc", "fragment"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_found(doc: dict[str, Any], fragment: str) -> None:
    rc, _, err, _, path = simulate_files(WORLD, yaml.safe_dump(doc).encode())
    assert refusal_problem(rc, err, (path,)) is None, err
    assert rc == 2 and err.startswith(f"error: {path}: ") and fragment in err, err
