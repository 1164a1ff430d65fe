"""Malformed cluster files through ``simulate`` (the CLI entry: load, decode, build the cluster,
schedule every pending pod): it ends with exit 0, or exit 2 and one line naming the file, the
object and the field (tests/model/test_malformed_inputs.py has the hand-written cases). Nothing
raises past the CLI, and no bare exception stands in for the field."""

from __future__ import annotations

from typing import Any

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
