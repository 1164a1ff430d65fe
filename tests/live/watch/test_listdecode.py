"""The bytes of LIST bodies and watch lines, decoded: a list cut at item boundaries while it
arrives, and managedFields dropped from Pods and Nodes before decoding."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from scheduler.live.watch.listdecode import ListDecoder, drop_managed_fields, loads
from scheduler.testing.builders import make_node, make_pod

# ------------------------------------------------------------------------------------------------
# ListDecoder: a LIST body decoded while it arrives. Every case compares with orjson's decode of
# the whole body, for several chunk sizes and a piece size small enough that cutting happens.
# Bodies are written as the API server writes them (apimachinery serializer/json collections.go:
# kind, apiVersion, metadata, then items, compact, items starting with their metadata).


def _api_body(items: list[Any], kind: str = "PodList", meta: dict[str, Any] | None = None) -> bytes:
    head = {"kind": kind, "apiVersion": "v1", "metadata": meta or {"resourceVersion": "42"}}
    return orjson.dumps({**head, "items": items}) + b"\n"


def _pods(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        p = make_pod(f"p{i}", cpu="100m", node_name=f"n{i % 3}" if i % 2 else "", labels={"app": "a"})
        out.append({"metadata": p["metadata"], **{k: v for k, v in p.items() if k != "metadata"}})
    return out


_NESTED = {  # an item holding the boundary bytes one level down: a cut there must not stick
    "metadata": {"name": "tricky"},
    "spec": {"xs": [{"a": 1}, {"metadata": {"name": "inner"}}, {"metadata": {"name": "inner2"}}]},
}
_IN_STRING = {"metadata": {"name": "s", "annotations": {"x": '},{"metadata":{"name":"fake"}}'}}}

DECODER_CASES = [
    ("pods, cut many times", _api_body(_pods(300))),
    ("nodes", _api_body([make_node(f"n{i}") for i in range(200)], "NodeList")),
    ("empty items", _api_body([])),
    ("items null", b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":null}\n'),
    ("boundary inside an item", _api_body([*_pods(50), _NESTED, *_pods(50)])),
    ("boundary inside a string", _api_body([*_pods(50), _IN_STRING, *_pods(50)])),
    ("continue token", _api_body(_pods(80), meta={"resourceVersion": "9", "continue": "abc=="})),
    # Unstructured lists sort their keys: items before metadata. Nothing is lost.
    ("metadata after items", orjson.dumps({"apiVersion": "v1", "items": _pods(80), "kind": "List",
                                           "metadata": {"resourceVersion": "5"}})),
    ("a Status, not a list", orjson.dumps({"kind": "Status", "status": "Failure", "code": 500})),
]


@pytest.mark.parametrize("name,body", DECODER_CASES, ids=[c[0] for c in DECODER_CASES])
@pytest.mark.parametrize("chunk", [1, 7, 512, 1 << 20])
def test_list_decoder_gives_what_a_whole_decode_gives(name: str, body: bytes, chunk: int) -> None:
    whole = orjson.loads(body)
    dec = ListDecoder(min_piece=1024)
    items: list[Any] = []
    for i in range(0, len(body), chunk):
        items.extend(dec.feed(body[i:i + chunk]))
    items.extend(dec.close())
    assert items == list(whole.get("items") or [])
    assert dec.meta == (whole.get("metadata") or {})


def test_list_decoder_hands_out_items_before_the_body_ends() -> None:
    body = _api_body(_pods(400))
    dec = ListDecoder(min_piece=4096)
    step = len(body) // 8 + 1
    per_feed = [dec.feed(body[i:i + step]) for i in range(0, len(body), step)]
    # Every eighth of the body completes items: cutting goes on after the first piece.
    assert all(per_feed), [len(x) for x in per_feed]
    items = [p for got in per_feed for p in got] + dec.close()
    assert [p["metadata"]["name"] for p in items] == [f"p{i}" for i in range(400)]


@pytest.mark.parametrize("body", [b'{"kind":"PodList","items":[{"metadata":{}}', b"", b"[1,2]"])
def test_list_decoder_raises_on_a_broken_body(body: bytes) -> None:
    dec = ListDecoder(min_piece=1)
    dec.feed(body)
    with pytest.raises((orjson.JSONDecodeError, ValueError)):
        dec.close()


# ------------------------------------------------------------------------------------------------
# managedFields dropped from the bytes of Pods and Nodes before decoding. Every case must decode
# to what decoding the whole bytes and deleting metadata.managedFields gives (the informer
# transform of kube-scheduler's scheduler.go); objects the markers cannot be trusted on keep them
# (the watcher's dispatch deletes them after decoding).

_MF = [  # as kwok and the API server write them: nested objects, keys holding JSON-ish text
    {"manager": "kwok", "operation": "Update", "apiVersion": "v1", "time": "2026-11-26T08:12:26Z",
     "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {".": {}, 'k:{"type":"Ready"}': {
         ".": {}, "f:status": {}}}, "f:podIPs": {'k:{"ip":"10.128.0.7"}': {".": {}, "f:ip": {}}}}},
     "subresource": "status"},
    {"manager": "kube-scheduler", "operation": "Update", "apiVersion": "v1", "time": "2026-11-26T08:12:27Z",
     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:nodeName": {}}}},
]


def _with_mf(obj: dict[str, Any], mf: list[Any] = _MF) -> dict[str, Any]:
    # A list item as the API server writes it (no kind/apiVersion): ObjectMeta with
    # managedFields as its last field, then spec, then status.
    out: dict[str, Any] = {"metadata": {**obj["metadata"], "managedFields": mf}, "spec": obj.get("spec") or {}}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def _without_mf(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _without_mf(v) for k, v in doc.items() if k != "managedFields"}
    if isinstance(doc, list):
        return [_without_mf(v) for v in doc]
    return doc


_POD = _with_mf(_pods(1)[0])
_NODE = _with_mf(make_node("n1"))
_NO_SPEC = {"metadata": {"name": "nospec", "managedFields": _MF}, "status": {"phase": "Running"}}
_MF_NOT_LAST = {"metadata": {"name": "late", "managedFields": [{"a": {}}], "labels": {"x": "y"}}, "spec": {}}
_MARKERS_IN_STRINGS = _with_mf({"metadata": {"name": "s", "annotations": {
    "a": ',"managedFields":[{', "b": '}]},"spec":', "c": '"metadata":{'}}, "spec": {}})
# A list inside an entry ending right before a "spec" key: the first end marker is not the real
# end, the cut bytes do not decode, and the whole bytes are decoded instead.
_MISLEADING = {"metadata": {"name": "m", "managedFields": [{"a": {"l": [{"b": 1}]}, "spec": 2}]}, "spec": {}}

TRIM_CASES = [
    ("pod list", [_POD] * 3, True),
    ("node list", [_NODE] * 3, True),
    ("watch event", {"type": "MODIFIED", "object": {"kind": "Pod", "apiVersion": "v1", **_POD}}, True),
    ("object without spec, then a pod", [_NO_SPEC, _POD], True),
    ("managedFields not last in metadata, then a pod", [_MF_NOT_LAST, _POD], True),
    ("markers inside strings", [_MARKERS_IN_STRINGS], True),
    ("end marker inside an entry", [_MISLEADING, _POD], False),
    ("no managedFields", _pods(3), False),
]


@pytest.mark.parametrize("name,doc,trimmed", TRIM_CASES, ids=[c[0] for c in TRIM_CASES])
def test_managed_fields_dropped_before_decoding(name: str, doc: Any, trimmed: bool) -> None:
    data = orjson.dumps(doc)
    got = loads(data, trim=True)
    whole = orjson.loads(data)
    # What the bytes kept is exactly what the whole decode has, less managedFields.
    assert _without_mf(got) == _without_mf(whole)
    cut = drop_managed_fields(data)
    if trimmed:
        assert len(cut) < len(data)
        kept = [o for o in (got if isinstance(got, list) else [got["object"]])
                if "managedFields" in o["metadata"]]
        untrusted = [o for o in (doc if isinstance(doc, list) else []) if o in (_NO_SPEC, _MF_NOT_LAST)]
        assert len(kept) == len(untrusted)
    else:
        assert got == whole


def test_list_decoder_trims_pods_as_they_arrive() -> None:
    items = [_with_mf(p) for p in _pods(200)]
    body = _api_body(items)
    for chunk in (7, 512, 1 << 20):
        dec = ListDecoder(min_piece=1024, trim=True)
        got: list[Any] = []
        for i in range(0, len(body), chunk):
            got.extend(dec.feed(body[i:i + chunk]))
        got.extend(dec.close())
        assert got == _without_mf(items)
        assert dec.meta == {"resourceVersion": "42"}
