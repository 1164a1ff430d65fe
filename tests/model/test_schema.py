"""scheduler.model.schema: the compiled yes/no validators agree with the path-naming walk.

Parsing runs ``check`` on every pod and node event, so ``check`` answers with a validator
compiled per schema and only walks the object (building field paths) when the answer is no.
Each case is (schema, value, expected bad field path or None). The paths and messages are
apimachinery's field-error style (k8s.io/apimachinery/pkg/util/validation/field), as the
malformed-input cases in test_malformed_inputs.py assert through the CLI.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.schema import (
    AFFINITY,
    ANY,
    NODE,
    POD,
    SPREAD_CONSTRAINTS,
    TOLERATIONS,
    FieldError,
    _explain,
    _validator,
    check,
)

_TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}

CASES: list[tuple[str, Any, Any, str | None]] = [
    ("none-is-absent", AFFINITY, None, None),
    (
        "node-affinity-ok",
        AFFINITY,
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_TERM]}}},
        None,
    ),
    (
        "values-not-a-list",
        AFFINITY,
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": "a"}]}]
                }
            }
        },
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values",
    ),
    # pkg/apis/core/validation: preferred weight "must be in the range 1-100".
    (
        "weight-out-of-range",
        AFFINITY,
        {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}
                ]
            }
        },
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    (
        "weight-bool-is-not-int",
        AFFINITY,
        {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": True, "podAffinityTerm": {"topologyKey": "zone"}}
                ]
            }
        },
        "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    (
        "match-labels-value-object",
        AFFINITY,
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": {"x": 1}}}, "topologyKey": "zone"}
                ]
            }
        },
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels[app]",
    ),
    ("tuple-counts-as-list", TOLERATIONS, ({"key": "k", "operator": "Exists"},), None),
    (
        "toleration-seconds-string",
        TOLERATIONS,
        [{"key": "k", "tolerationSeconds": "5"}],
        "spec.tolerations[0].tolerationSeconds",
    ),
    ("tolerations-an-object", TOLERATIONS, {"key": "k"}, "spec.tolerations"),
    # A number where a string is expected is read as its text, as before (not an error).
    ("number-for-string", TOLERATIONS, [{"key": "k", "value": 5}], None),
    (
        "max-skew-zero",
        SPREAD_CONSTRAINTS,
        [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        "spec.topologySpreadConstraints[0].maxSkew",
    ),
    (
        "negative-request",
        POD,
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}},
        "spec.containers[0].resources.requests[cpu]",
    ),
    (
        "bad-quantity",
        POD,
        {"spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "lots"}}}]}},
        "spec.containers[0].resources.limits[memory]",
    ),
    ("priority-over-int32", POD, {"spec": {"priority": 2**31}}, "spec.priority"),
    ("unknown-fields-ignored", POD, {"spec": {"whatever": {"deep": [1, 2]}}, "extra": 1}, None),
    (
        "image-size-negative",
        NODE,
        {"status": {"images": [{"names": ["a"], "sizeBytes": -1}]}},
        "status.images[0].sizeBytes",
    ),
    ("unschedulable-string", NODE, {"spec": {"unschedulable": "yes"}}, "spec.unschedulable"),
    ("any-takes-anything", ANY, [object()], None),
]


ROOTS = {
    id(AFFINITY): "spec.affinity",
    id(TOLERATIONS): "spec.tolerations",
    id(SPREAD_CONSTRAINTS): "spec.topologySpreadConstraints",
}


@pytest.mark.parametrize(("schema", "value", "bad_path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_compiled_validator_agrees_with_the_walk(schema: Any, value: Any, bad_path: str | None) -> None:
    root = ROOTS.get(id(schema), "")
    assert _validator(schema)(value) is (bad_path is None)
    if bad_path is None:
        check(value, schema, root)
        _explain(value, schema, root)
        return
    with pytest.raises(FieldError) as err:
        check(value, schema, root)
    assert err.value.path == bad_path
