"""Field names as Go's typed decoding reads them: matched case-insensitively.

scheduler_perf decodes node, pod, volume, claim and namespace templates into the Go types
(sigs.k8s.io/yaml, i.e. encoding/json), which match a field name exactly or else
case-insensitively: v1.36.3's pod-with-node-inclusion-policy.yaml writes ``NodeAffinityPolicy``
and the pod gets ``nodeAffinityPolicy``. The API server's strict decoding is case-sensitive, so
before sending such an object the bench renames each key that is not a field of its type to
the field it folds to, walking the type's OpenAPI v3 schema as served by the plane.
(createAny, updateAny and churn decode into unstructured objects upstream: their keys stay.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.live_http import Kube

Schema = Mapping[str, Any]

# group/version -> the components of its OpenAPI v3 document; the same for every plane of one
# kube-apiserver binary, so kept for the whole bench (and each kind's root schema).
_DOCS: dict[str, Mapping[str, Schema]] = {}
_ROOTS: dict[tuple[str, str], Schema] = {}


def _doc(kube: Kube, api_version: str) -> Mapping[str, Schema]:
    if api_version not in _DOCS:
        path = "/openapi/v3/api/v1" if api_version == "v1" else f"/openapi/v3/apis/{api_version}"
        _DOCS[api_version] = kube.request("GET", path)["components"]["schemas"]
    return _DOCS[api_version]


def _deref(schemas: Mapping[str, Schema], s: Schema) -> Schema:
    while True:
        if "$ref" in s:
            s = schemas[s["$ref"].rsplit("/", 1)[-1]]
        elif len(s.get("allOf") or ()) == 1:
            s = s["allOf"][0]
        else:
            return s


def fold(obj: Any, schema: Schema, schemas: Mapping[str, Schema]) -> Any:
    """``obj`` with its keys renamed to the fields of ``schema`` they match case-insensitively."""
    s = _deref(schemas, schema)
    if isinstance(obj, list) and "items" in s:
        return [fold(x, s["items"], schemas) for x in obj]
    if not isinstance(obj, dict):
        return obj
    props: Mapping[str, Schema] = s.get("properties") or {}
    if props:
        lower: dict[str, str] = {p.lower(): p for p in props}
        out = {}
        for k, v in obj.items():
            name = str(k) if k in props else lower.get(str(k).lower(), str(k))
            out[name] = fold(v, props[name], schemas) if name in props else v
        return out
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        return {k: fold(v, extra, schemas) for k, v in obj.items()}
    return obj


def _root(schemas: Mapping[str, Schema], api_version: str, kind: str) -> Schema:
    key = (api_version, kind)
    if key not in _ROOTS:
        group, _, version = api_version.rpartition("/")
        for s in schemas.values():
            for gvk in s.get("x-kubernetes-group-version-kind") or ():
                if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                    _ROOTS[key] = s
        if key not in _ROOTS:
            raise ValueError(f"no OpenAPI schema for {api_version} {kind}")
    return _ROOTS[key]


def typed(kube: Kube, obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """``obj`` as Go's decoding into the type ``kind`` (of obj's apiVersion, default v1) reads
    it (see the module doc); apiVersion and kind filled in where the template has none."""
    obj = {"apiVersion": "v1", "kind": kind, **obj}
    schemas = _doc(kube, str(obj["apiVersion"]))
    out: dict[str, Any] = fold(obj, _root(schemas, str(obj["apiVersion"]), str(obj["kind"])), schemas)
    return out
