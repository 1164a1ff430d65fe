"""Malformed PodGroups (scheduling.k8s.io/v1alpha2) and pods of a group, with the workload-aware
gates on: ``PodGroup.parse`` (what the live handler and simulate both call) returns or refuses
with one ObjectError line, and ``simulate`` ends in exit 0, or exit 2 with one line naming the
file and the object, never a bare exception."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduler.model.podgroup import PodGroup
from scheduler.model.schema import ObjectError
from scheduler.testing.fuzz import (
    GANG_GATES,
    dump,
    gang_objects,
    json_values,
    mutated,
    refusal_problem,
    seed_objects,
    simulate_files,
)

GANG = gang_objects()
WORLD = seed_objects()


def _check(gang: list[dict[str, Any]]) -> None:
    rc, _, err, path, _ = simulate_files(dump([*WORLD, *gang]), gates=GANG_GATES)
    problem = refusal_problem(rc, err, (path,))
    assert problem is None, problem


def test_gang_schedules() -> None:
    rc, out, err, _, _ = simulate_files(dump([*WORLD, *GANG]), gates=GANG_GATES)
    assert (rc, err) == (0, "")
    assert '"podGroup": "fz/gang", "cycle": 1, "result": "scheduled"' in out


@given(st.data(), st.sampled_from(range(len(GANG))))
def test_mutated_group_or_member(data: st.DataObject, i: int) -> None:
    gang = list(GANG)
    gang[i] = data.draw(mutated(GANG[i]))
    _check(gang)


@given(json_values(max_leaves=12))
def test_parse_arbitrary_spec(spec: Any) -> None:
    raw = {**GANG[0], "spec": spec}
    try:
        PodGroup.parse(raw)
    except ObjectError as exc:
        assert "\n" not in str(exc)
    _check([raw, *GANG[1:]])
