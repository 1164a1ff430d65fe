"""The extender/v1 JSON protocol (k8s.io/kube-scheduler/extender/v1 types), both ways.

The Go types carry no JSON tags, so the keys are the field names ("Pod", "NodeNames",
"FailedNodes", ...), and Go's decoder matches them case-insensitively: an extender answering
``nodenames`` is understood, as upstream's compatibility test insists. Pods and nodes go out
as the API server sent them, without ``kind``/``apiVersion`` (client-go's typed objects have
none); a field the Go type leaves nil goes out as ``null``.

Decoding follows encoding/json where an extender can tell: the first JSON value of the body is
read (an empty body is ``EOF``), a value of the wrong JSON type is an error in Go's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.extender import FailedNodesMap, HostPriority, Victims
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


class WireError(Exception):
    """An answer that does not decode; ``str()`` is what Go's decoder would have said."""


def api_object(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object as a typed client-go value marshals it: without its type meta."""
    out = dict(raw or {})
    out.pop("kind", None)
    out.pop("apiVersion", None)
    return out


def node_list(nodes: Sequence[NodeInfo]) -> dict[str, Any]:
    """A v1.NodeList of the nodes (empty list meta, as Go writes it)."""
    return {"metadata": {}, "items": [api_object(n.raw) for n in nodes]}


def extender_args(pod: PodInfo, nodes: Sequence[NodeInfo], node_cache_capable: bool) -> dict[str, Any]:
    """ExtenderArgs: names only to an extender that caches nodes, whole nodes otherwise."""
    if node_cache_capable:
        return {"Pod": api_object(pod.raw), "Nodes": None, "NodeNames": [n.name for n in nodes]}
    return {"Pod": api_object(pod.raw), "Nodes": node_list(nodes), "NodeNames": None}


def binding_args(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    return {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}


# ---------------------------------------------------------------------------------------------
# Decoding


def decode_body(body: bytes) -> Any:
    """The first JSON value of ``body`` (json.Decoder.Decode); WireError as Go words it."""
    text = body.decode("utf-8", "replace")
    i = 0
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if i == len(text):
        raise WireError("EOF")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, i)
    except json.JSONDecodeError as exc:
        raise WireError(_syntax_error(text, exc)) from None
    return value


def _quote_char(c: str) -> str:
    """encoding/json's quoteChar."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    if c.isprintable():
        return f"'{c}'"
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    return "'" + named.get(c, f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") + "'"


def _syntax_error(text: str, exc: json.JSONDecodeError) -> str:
    if exc.pos >= len(text):
        return "unexpected EOF"
    after_item = "after object key:value pair" if _in_object(text, exc.pos) else "after array element"
    where = {
        "Expecting value": "looking for beginning of value",
        "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
        "Expecting ':' delimiter": "after object key",
        "Expecting ',' delimiter": after_item,
    }.get(exc.msg, "in string literal" if "control character" in exc.msg or "escape" in exc.msg else "")
    msg = f"invalid character {_quote_char(text[exc.pos])}"
    return f"{msg} {where}" if where else msg


def _in_object(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside an object rather than an array (innermost open bracket)."""
    depth: list[str] = []
    in_str = esc = False
    for c in text[:pos]:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth.append(c)
        elif c in "]}" and depth:
            depth.pop()
    return bool(depth) and depth[-1] == "{"


_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _type_error(value: Any, struct: str, field_name: str, go_type: str) -> WireError:
    kind = _JSON_TYPE.get(type(value), "value")
    if kind == "number":
        kind = f"number {json.dumps(value)}"
    return WireError(f"json: cannot unmarshal {kind} into Go struct field {struct}.{field_name} of type {go_type}")


def _fields(obj: Any, struct: str, names: Sequence[str]) -> dict[str, Any]:
    """The object's members by Go field name, keys matched case-insensitively (the last match
    wins, as each one overwrites the field); ``null`` counts as absent."""
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        kind = _JSON_TYPE.get(type(obj), "value")
        raise WireError(f"json: cannot unmarshal {kind} into Go value of type v1.{struct}")
    by_lower = {n.lower(): n for n in names}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = by_lower.get(key.lower())
        if name is not None:
            if value is None:
                out.pop(name, None)
            else:
                out[name] = value
    return out


def _string(value: Any, struct: str, field_name: str) -> str:
    if not isinstance(value, str):
        raise _type_error(value, struct, field_name, "string")
    return value


def _int64(value: Any, struct: str, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise _type_error(value, struct, field_name, "int64")
    return value


def _string_map(value: Any, struct: str, field_name: str) -> FailedNodesMap:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _type_error(value, struct, field_name, "v1.FailedNodesMap")
    return dict(value)


def _string_list(value: Any, struct: str, field_name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _type_error(value, struct, field_name, "[]string")
    return list(value)


@dataclass(slots=True)
class FilterResult:
    """ExtenderFilterResult; None where the field was absent or null."""

    nodes: list[dict[str, Any]] | None
    node_names: list[str] | None
    failed: FailedNodesMap
    failed_and_unresolvable: FailedNodesMap
    error: str


def filter_result(body: bytes) -> FilterResult:
    f = _fields(
        decode_body(body),
        "ExtenderFilterResult",
        ("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"),
    )
    nodes: list[dict[str, Any]] | None = None
    if "Nodes" in f:
        items = _fields(f["Nodes"], "NodeList", ("Items",)).get("Items")
        if items is not None and not isinstance(items, list):
            raise _type_error(items, "NodeList", "items", "[]v1.Node")
        nodes = []
        for item in items or []:
            if not isinstance(item, dict):
                raise _type_error(item, "NodeList", "items", "v1.Node")
            nodes.append(item)
    s = "ExtenderFilterResult"
    return FilterResult(
        nodes=nodes,
        node_names=_string_list(f["NodeNames"], s, "NodeNames") if "NodeNames" in f else None,
        failed=_string_map(f["FailedNodes"], s, "FailedNodes") if "FailedNodes" in f else {},
        failed_and_unresolvable=(
            _string_map(f["FailedAndUnresolvableNodes"], s, "FailedAndUnresolvableNodes")
            if "FailedAndUnresolvableNodes" in f
            else {}
        ),
        error=_string(f["Error"], s, "Error") if "Error" in f else "",
    )


def host_priorities(body: bytes) -> list[HostPriority]:
    value = decode_body(body)
    if value is None:
        return []
    if not isinstance(value, list):
        kind = _JSON_TYPE.get(type(value), "value")
        raise WireError(f"json: cannot unmarshal {kind} into Go value of type v1.HostPriorityList")
    out: list[HostPriority] = []
    for item in value:
        f = _fields(item, "HostPriority", ("Host", "Score"))
        host = _string(f["Host"], "HostPriority", "Host") if "Host" in f else ""
        score = _int64(f["Score"], "HostPriority", "Score") if "Score" in f else 0
        out.append(HostPriority(host, score))
    return out


def binding_error(body: bytes) -> str:
    f = _fields(decode_body(body), "ExtenderBindingResult", ("Error",))
    return _string(f["Error"], "ExtenderBindingResult", "Error") if "Error" in f else ""


@dataclass(slots=True)
class MetaVictims:
    uids: list[str]
    num_pdb_violations: int


def preemption_result(body: bytes) -> dict[str, MetaVictims | None]:
    """ExtenderPreemptionResult.NodeNameToMetaVictims (a null entry stays None: the caller
    reports a node without victims)."""
    f = _fields(decode_body(body), "ExtenderPreemptionResult", ("NodeNameToMetaVictims",))
    raw = f.get("NodeNameToMetaVictims")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _type_error(raw, "ExtenderPreemptionResult", "NodeNameToMetaVictims", "map[string]*v1.MetaVictims")
    out: dict[str, MetaVictims | None] = {}
    for node, mv in raw.items():
        if mv is None:
            out[node] = None
            continue
        m = _fields(mv, "MetaVictims", ("Pods", "NumPDBViolations"))
        pods = m.get("Pods") or []
        if not isinstance(pods, list):
            raise _type_error(pods, "MetaVictims", "Pods", "[]*v1.MetaPod")
        uids = []
        for p in pods:
            pf = _fields(p, "MetaPod", ("UID",))
            uids.append(_string(pf["UID"], "MetaPod", "UID") if "UID" in pf else "")
        n = _int64(m["NumPDBViolations"], "MetaVictims", "NumPDBViolations") if "NumPDBViolations" in m else 0
        out[node] = MetaVictims(uids, n)
    return out


def preemption_args(pod: PodInfo, victims: Mapping[str, Victims], node_cache_capable: bool) -> dict[str, Any]:
    """ExtenderPreemptionArgs: victims by UID to an extender that caches nodes, whole pods
    otherwise."""
    if node_cache_capable:
        meta = {
            node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
            for node, v in victims.items()
        }
        return {"Pod": api_object(pod.raw), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    full = {
        node: {"Pods": [api_object(p.raw) for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
        for node, v in victims.items()
    }
    return {"Pod": api_object(pod.raw), "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
