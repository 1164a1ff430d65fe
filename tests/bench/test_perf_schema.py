"""bench/perf_schema.py: Go's case-insensitive field matching, walked over an OpenAPI v3 schema
shaped as kube-apiserver serves it ($ref inside a one-element allOf, items,
additionalProperties)."""

from __future__ import annotations

from typing import Any

from bench.perf_schema import fold

SCHEMAS: dict[str, Any] = {
    "Pod": {"type": "object", "properties": {
        "metadata": {"allOf": [{"$ref": "#/components/schemas/Meta"}]},
        "spec": {"default": {}, "allOf": [{"$ref": "#/components/schemas/PodSpec"}]}}},
    "Meta": {"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "generateName": {"type": "string"}}},
    "PodSpec": {"type": "object", "properties": {
        "topologySpreadConstraints": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/TSC"}]}},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "TSC": {"type": "object", "properties": {"maxSkew": {"type": "integer"}, "nodeAffinityPolicy": {"type": "string"},
                                             "nodeTaintsPolicy": {"type": "string"}}},
}  # fmt: skip


def test_fold_renames_fields_not_map_keys() -> None:
    # pod-with-node-inclusion-policy.yaml (v1.36.3) writes NodeAffinityPolicy/NodeTaintsPolicy.
    pod = {
        "metadata": {"GenerateName": "p-", "labels": {"Foo": "bar"}},
        "Spec": {
            "topologySpreadConstraints": [{"MaxSkew": 1, "NodeAffinityPolicy": "Honor", "NodeTaintsPolicy": "Honor"}],
            "nodeSelector": {"Zone": "a"},
        },
        "unknownField": 1,
    }
    assert fold(pod, SCHEMAS["Pod"], SCHEMAS) == {
        "metadata": {"generateName": "p-", "labels": {"Foo": "bar"}},
        "spec": {
            "topologySpreadConstraints": [{"maxSkew": 1, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Honor"}],
            "nodeSelector": {"Zone": "a"},
        },
        # Not a field in any case: left for the API server's strict decoding to refuse.
        "unknownField": 1,
    }
