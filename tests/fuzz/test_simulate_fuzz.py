"""Malformed cluster files through ``simulate`` (the CLI entry: load, decode, build the cluster,
schedule every pending pod): it ends with exit 0, or exit 2 and one line naming the file, the
object and the field (tests/model/test_malformed_inputs.py has the hand-written cases). Nothing
raises past the CLI, and no bare exception stands in for the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.testing.fuzz import dump, json_values, mutated, refusal_problem, seed_objects, simulate_files

SEEDS = seed_objects()


def _check(docs: list[Any]) -> None:
    rc, out, err, path, _ = simulate_files(dump(docs))
    problem = refusal_problem(rc, err, (path,))
    assert problem is None, problem
    if rc == 0:
        assert out.count("\n") >= 1, "no pod attempted"


def test_world_schedules() -> None:
    rc, out, err, _, _ = simulate_files(dump(SEEDS))
    assert (rc, err) == (0, "")
    assert out.count('"node": "n') == 10 and '"node": null' in out


@given(st.data(), st.sampled_from(range(len(SEEDS))))
def test_mutated_object(data: st.DataObject, i: int) -> None:
    """The world with one object broken in one to three places."""
    docs = list(SEEDS)
    docs[i] = data.draw(mutated(SEEDS[i]))
    _check(docs)


@given(st.sampled_from(sorted({o["kind"] for o in SEEDS})), json_values(max_leaves=12))
def test_arbitrary_object(kind: str, body: Any) -> None:
    """The world plus an object of a known kind and arbitrary content."""
    obj = body if isinstance(body, dict) else {"spec": body}
    obj = {**obj, "kind": kind, "apiVersion": "v1", "metadata": obj.get("metadata", {"name": "junk"})}
    _check([*SEEDS, obj])


def _pdb(status: dict[str, Any]) -> dict[str, Any]:
    pdb = next(o for o in SEEDS if o["kind"] == "PodDisruptionBudget")
    return {**pdb, "status": status}


def _claim_count(count: Any) -> dict[str, Any]:
    claim = copy.deepcopy(next(o for o in SEEDS if o["kind"] == "ResourceClaim"))
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = count
    return claim


# What the fuzzing found, each fixed: (id, the broken object, fragment of the one line).
FOUND: list[tuple[str, dict[str, Any], str]] = [
    # The coverage-guided run (bench/fuzz.py; its input is kept in corpus/cluster/crash-2b80...):
    # a DRA object's error line named no file (simulate printed the store's bare ValueError),
    # nor the field.
    ("claim-count-not-an-integer", _claim_count("1>"),
     "ResourceClaim fz/gpu-claim: spec.devices.requests[0].exactly.count: expected an integer"),
    # PodDisruptionBudget.parse had no containment: int() of the status count raised past the
    # model (a bare ValueError line in simulate, a traceback in the live watcher).
    # A node name with control characters (\x1b, \x85 end lines for splitlines) split the line.
    ("node-name-control-characters",
     {**SEEDS[0], "metadata": {"name": "\x85\x1b\x85", "labels": [["disk", "hdd"]]}},
     "Node \\u0085\\x1b\\u0085: metadata.labels: expected an object, got a list"),
    ("pdb-disruptions-allowed-quantity", _pdb({"disruptionsAllowed": "1E"}),
     "PodDisruptionBudget fz/web: status.disruptionsAllowed: expected an integer"),
    ("pdb-disruptions-allowed-infinite", _pdb({"disruptionsAllowed": float("inf")}),
     "PodDisruptionBudget fz/web: status.disruptionsAllowed: expected an integer"),
]


@pytest.mark.parametrize(("obj", "fragment"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_found(obj: dict[str, Any], fragment: str) -> None:
    rc, _, err, path, _ = simulate_files(dump([o for o in SEEDS if o["kind"] != obj["kind"]] + [obj]))
    assert refusal_problem(rc, err, (path,)) is None, err
    assert rc == 2 and err.startswith(f"error: {path}: ") and fragment in err, err
