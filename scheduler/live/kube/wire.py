"""Kubernetes' protobuf wire form of the two objects the scheduler creates with every pod (its
Binding and its Event), and of the Status the API server answers an error with.

kube-scheduler's clients talk protobuf; ours sent JSON. The API server spends more CPU decoding a JSON
body and encoding a JSON answer than it does in protobuf, and every pod brings two such
creates: in 8-second CPU profiles of kube-apiserver on a one-node gated workload, JSON work for
ours' writes was about 5% of its CPU more than for kube-scheduler's (issue 25).

The encoding is schema-driven from the same dict the JSON path sends: ``encode`` returns None
for a body with anything its schema does not name (it then goes as JSON), so no field is lost.
Field numbers are those of the API's ``generated.proto`` (k8s.io/api and apimachinery v0.36.3).
The envelope is ``runtime.Unknown`` behind the 4-byte ``k8s\\0`` magic, as the API server reads
``application/vnd.kubernetes.protobuf``.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from typing import Any

PROTOBUF = "application/vnd.kubernetes.protobuf"
# What client-go asks for when acceptContentTypes is empty (rest/request.go setAcceptHeader):
# the content type, then anything; the API server answers protobuf where it has it.
ACCEPT = f"{PROTOBUF}, */*"
MAGIC = b"k8s\x00"

# Field kinds.
_STR, _INT, _MSG, _MAP, _MICRO = range(5)


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _BYTE[n]
    if n < 0:
        n += 1 << 64  # proto int32/int64: two's complement in ten bytes
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_BYTE = [bytes((i,)) for i in range(0x80)]


class _Schema:
    """One message: its fields as (JSON name, key bytes, kind, sub-schema), in field-number
    order (as Go writes them), and their names."""

    __slots__ = ("fields", "names")

    def __init__(self, *fields: tuple[str, int, int, _Schema | None]) -> None:
        wire_type = {_INT: 0}
        self.fields = tuple((name, _varint(number << 3 | wire_type.get(kind, 2)), kind, sub)
                            for name, number, kind, sub in fields)
        self.names = frozenset(f[0] for f in fields)


# meta/v1 ObjectMeta: what a created object of ours may carry.
_OBJECT_META = _Schema(
    ("name", 1, _STR, None), ("generateName", 2, _STR, None), ("namespace", 3, _STR, None),
    ("uid", 5, _STR, None), ("resourceVersion", 6, _STR, None),
    ("labels", 11, _MAP, None), ("annotations", 12, _MAP, None),
)
# core/v1 ObjectReference.
_OBJECT_REFERENCE = _Schema(
    ("kind", 1, _STR, None), ("namespace", 2, _STR, None), ("name", 3, _STR, None), ("uid", 4, _STR, None),
    ("apiVersion", 5, _STR, None), ("resourceVersion", 6, _STR, None), ("fieldPath", 7, _STR, None),
)
_BINDING = _Schema(("metadata", 1, _MSG, _OBJECT_META), ("target", 2, _MSG, _OBJECT_REFERENCE))
# events/v1 EventSeries and Event (the deprecated core-compatible fields are never ours).
_EVENT_SERIES = _Schema(("count", 1, _INT, None), ("lastObservedTime", 2, _MICRO, None))
_EVENT = _Schema(
    ("metadata", 1, _MSG, _OBJECT_META), ("eventTime", 2, _MICRO, None), ("series", 3, _MSG, _EVENT_SERIES),
    ("reportingController", 4, _STR, None), ("reportingInstance", 5, _STR, None), ("action", 6, _STR, None),
    ("reason", 7, _STR, None), ("regarding", 8, _MSG, _OBJECT_REFERENCE), ("related", 9, _MSG, _OBJECT_REFERENCE),
    ("note", 10, _STR, None), ("type", 11, _STR, None),
)
_KINDS: dict[tuple[str, str], _Schema] = {("v1", "Binding"): _BINDING, ("events.k8s.io/v1", "Event"): _EVENT}
# A map entry's key and value fields, and the envelope's (runtime.Unknown: typeMeta, raw).
_KEY1, _KEY2 = b"\x0a", b"\x12"


class _Unencodable(Exception):
    """A body field the schema does not name, or a value of the wrong type."""


def _delimited(key: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return key + (_BYTE[n] if n < 0x80 else _varint(n)) + payload


# The last second parsed by _micro_time: an Event's times are mostly within one second.
_second: tuple[str, int] = ("", 0)


def _micro_time(value: Any) -> bytes:
    """meta/v1 MicroTime (``seconds``=1, ``nanos``=2) from its JSON form, RFC 3339 with
    microseconds in UTC as transport.micro_time writes it."""
    global _second
    if not isinstance(value, str) or len(value) != 27 or value[19] != "." or value[26] != "Z":
        raise _Unencodable(f"MicroTime {value!r}")
    head = value[:19]
    cached = _second
    if cached[0] != head:
        try:
            secs = calendar.timegm((int(head[0:4]), int(head[5:7]), int(head[8:10]), int(head[11:13]),
                                    int(head[14:16]), int(head[17:19]), 0, 0, 0))
        except ValueError:
            raise _Unencodable(f"MicroTime {value!r}") from None
        cached = _second = (head, secs)
    try:
        micros = int(value[20:26])
    except ValueError:
        raise _Unencodable(f"MicroTime {value!r}") from None
    out = b"\x08" + _varint(cached[1])
    if micros:
        out += b"\x10" + _varint(micros * 1000)
    return out


def _message(body: Any, schema: _Schema) -> bytes:
    if not (type(body) is dict or isinstance(body, Mapping)) or not schema.names.issuperset(body):
        raise _Unencodable(f"fields {sorted(set(body) - schema.names) if isinstance(body, Mapping) else body!r}")
    parts: list[bytes] = []
    for name, key, kind, sub in schema.fields:
        value = body.get(name)
        if value is None:
            continue
        if kind == _STR:
            if not isinstance(value, str):
                raise _Unencodable(f"{name}: {value!r}")
            if value:  # "" and absent are the same object to the API server
                parts.append(_delimited(key, value.encode()))
        elif sub is not None:  # a message
            parts.append(_delimited(key, _message(value, sub)))
        elif kind == _MICRO:
            parts.append(_delimited(key, _micro_time(value)))
        elif kind == _INT:
            if type(value) is not int:
                raise _Unencodable(f"{name}: {value!r}")
            parts.append(key + _varint(value))
        else:  # map<string, string>: repeated entries {key = 1, value = 2}, in key order as Go writes them
            if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                raise _Unencodable(f"{name}: {value!r}")
            for k in sorted(value):
                parts.append(_delimited(key, _delimited(_KEY1, str(k).encode()) + _delimited(_KEY2, value[k].encode())))
    return b"".join(parts)


def encode(body: Mapping[str, Any]) -> bytes | None:
    """The protobuf body of a Binding or an events/v1 Event given as its JSON dict; None for
    any other kind, or a body with a field or value the schema has no place for."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    schema = _KINDS.get((api_version, kind)) if isinstance(api_version, str) and isinstance(kind, str) else None
    if schema is None:
        return None
    try:
        raw = _message({k: v for k, v in body.items() if k != "apiVersion" and k != "kind"}, schema)
    except _Unencodable:
        return None
    type_meta = _delimited(_KEY1, api_version.encode()) + _delimited(_KEY2, kind.encode())  # type: ignore[union-attr]
    return MAGIC + _delimited(_KEY1, type_meta) + _delimited(_KEY2, raw)


def _fields(data: bytes) -> dict[int, bytes | int]:
    """The last value of each field of one message: bytes for length-delimited ones, int for
    varints (fixed-width ones are skipped). ValueError on a truncated message."""
    out: dict[int, bytes | int] = {}
    i, end = 0, len(data)
    while i < end:
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number], i = _read_varint(data, i)
        elif wire == 2:
            size, i = _read_varint(data, i)
            if i + size > end:
                raise ValueError("truncated field")
            out[number] = data[i:i + size]
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    if i != end:
        raise ValueError("truncated field")
    return out


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7


def status_message(body: bytes) -> str | None:
    """The ``message`` of a protobuf meta/v1 Status answer (field 3 of the Unknown's raw);
    None when ``body`` is not a protobuf Status, "" when it has no message."""
    if not body.startswith(MAGIC):
        return None
    try:
        envelope = _fields(body[len(MAGIC):])
        type_meta = envelope.get(1)
        kind = _fields(type_meta).get(2) if isinstance(type_meta, bytes) else None
        raw = envelope.get(2)
        if kind != b"Status" or not isinstance(raw, bytes):
            return None
        message = _fields(raw).get(3, b"")
        return message.decode(errors="replace") if isinstance(message, bytes) else None
    except ValueError:
        return None
