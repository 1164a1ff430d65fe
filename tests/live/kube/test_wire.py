"""The protobuf bodies of the Binding and the Event, and the protobuf Status of an error.

Field numbers are those of k8s.io/api v0.36.3 (core/v1 and events/v1 generated.proto) and
k8s.io/apimachinery v0.36.3 (meta/v1 and runtime generated.proto); the envelope is what
apimachinery's runtime/serializer/protobuf reads: the ``k8s\\0`` magic, then runtime.Unknown
{typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2}. e2e/test_api_writes.py has the API server
read them.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.live.kube import wire
from scheduler.live.kube.binder import binding_body
from scheduler.live.kube.transport import ApiError, KubeCoreAPI, message_of
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod

from .test_transport import bare_core_api


def decode(data: bytes) -> list[tuple[int, Any]]:
    """Every field of one message in order: (number, bytes or int)."""
    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = varint(data, i)
        else:
            assert wire_type == 2, f"field {number}: wire type {wire_type}"
            size, i = varint(data, i)
            value, i = data[i:i + size], i + size
        out.append((number, value))
    assert i == len(data)
    return out


def varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def envelope(data: bytes) -> tuple[bytes, bytes, bytes]:
    """(apiVersion, kind, raw) of a protobuf body."""
    assert data[:4] == b"k8s\x00"
    fields = dict(decode(data[4:]))
    type_meta = dict(decode(fields[1]))
    return type_meta[1], type_meta[2], fields[2]


EVENT = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "p.187c1f0a2b3c4d5e", "namespace": "ns"},
    "eventTime": "2026-11-27T06:37:15.266135Z",
    "reportingController": "default-scheduler",
    "reportingInstance": "default-scheduler-host",
    "action": "Binding",
    "reason": "Scheduled",
    "type": "Normal",
    "note": "Successfully assigned ns/p to n1",
    "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p", "uid": "u1",
                  "resourceVersion": "7"},
}


def test_binding_fields() -> None:
    # core/v1 Binding {metadata = 1, target = 2}; ObjectMeta {name = 1, namespace = 3, uid = 5};
    # ObjectReference {kind = 1, name = 3, apiVersion = 5}.
    pod = PodInfo(make_pod("p", namespace="ns", uid="u1"))
    api_version, kind, raw = envelope(wire.encode(binding_body(pod, "n1")) or b"")
    assert (api_version, kind) == (b"v1", b"Binding")
    fields = decode(raw)
    assert [n for n, _ in fields] == [1, 2]
    assert decode(fields[0][1]) == [(1, b"p"), (3, b"ns"), (5, b"u1")]
    assert decode(fields[1][1]) == [(1, b"Node"), (3, b"n1"), (5, b"v1")]


def test_event_fields() -> None:
    # events/v1 Event: metadata 1, eventTime 2 (MicroTime {seconds = 1, nanos = 2}),
    # reportingController 4, reportingInstance 5, action 6, reason 7, regarding 8, note 10, type 11.
    _, kind, raw = envelope(wire.encode(EVENT) or b"")
    assert kind == b"Event"
    fields = decode(raw)
    assert [n for n, _ in fields] == [1, 2, 4, 5, 6, 7, 8, 10, 11]  # in field-number order, as Go writes
    got = dict(fields)
    assert decode(got[1]) == [(1, b"p.187c1f0a2b3c4d5e"), (3, b"ns")]
    assert decode(got[2]) == [(1, 1795761435), (2, 266135000)]  # 2026-11-27T06:37:15Z, microseconds as nanos
    assert [got[4], got[5], got[6], got[7]] == [b"default-scheduler", b"default-scheduler-host", b"Binding",
                                                b"Scheduled"]
    assert decode(got[8]) == [(1, b"Pod"), (2, b"ns"), (3, b"p"), (4, b"u1"), (5, b"v1"), (6, b"7")]
    assert (got[10], got[11]) == (b"Successfully assigned ns/p to n1", b"Normal")


@pytest.mark.parametrize(
    ("time", "want"),
    [
        ("1970-01-01T00:00:00.000000Z", [(1, 0)]),  # zero nanos omitted (proto2 reads it as 0)
        ("1970-01-01T00:00:01.000001Z", [(1, 1), (2, 1000)]),
        ("2026-11-27T06:37:16.000000Z", [(1, 1795761436)]),
    ],
)
def test_micro_time(time: str, want: list[tuple[int, int]]) -> None:
    raw = envelope(wire.encode({**EVENT, "eventTime": time}) or b"")[2]
    assert decode(dict(decode(raw))[2]) == want


def test_event_series_and_labels() -> None:
    # EventSeries {count = 1, lastObservedTime = 2} at field 3; ObjectMeta labels (11) as map
    # entries {key = 1, value = 2} in key order.
    body = {**EVENT, "series": {"count": 2, "lastObservedTime": "2026-11-27T06:37:17.000001Z"},
            "metadata": {**EVENT["metadata"], "labels": {"b": "2", "a": "1"}}}
    got = decode(envelope(wire.encode(body) or b"")[2])
    count, last = decode(dict(got)[3])
    assert count == (1, 2) and last[0] == 2 and decode(last[1]) == [(1, 1795761437), (2, 1000)]
    meta = decode(dict(got)[1])
    assert [(n, decode(v)) for n, v in meta if n == 11] == [(11, [(1, b"a"), (2, b"1")]), (11, [(1, b"b"), (2, b"2")])]


@pytest.mark.parametrize(
    "body",
    [
        {**EVENT, "related": None, "deprecatedCount": 1},  # a field the schema does not name
        {**EVENT, "eventTime": "2026-11-27T06:37:15Z"},  # not MicroTime's form
        {**EVENT, "note": 3},  # a value of the wrong type
        {**EVENT, "metadata": {"name": "x", "labels": {"a": 1}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},  # another kind
        {"kind": "Binding", "metadata": {"name": "p"}},
    ],
)
def test_what_the_schema_cannot_carry_goes_as_json(body: dict[str, Any]) -> None:
    assert wire.encode(body) is None


def status(message: str, code: int = 404) -> bytes:
    """A protobuf meta/v1 Status: metadata 1, status 2, message 3, reason 4, code 6."""
    def field(n: int, payload: bytes) -> bytes:
        return bytes([n << 3 | 2, len(payload)]) + payload

    raw = field(1, b"") + field(2, b"Failure") + field(3, message.encode()) + field(4, b"NotFound")
    raw += bytes([6 << 3]) + wire._varint(code)  # input built with ours: the decoding is tested
    return b"k8s\x00" + field(1, field(1, b"v1") + field(2, b"Status")) + field(2, raw)


@pytest.mark.parametrize(
    ("body", "want"),
    [
        (status('pods "p" not found'), 'pods "p" not found'),
        (b'{"kind":"Status","message":"throttled"}', "throttled"),  # a JSON answer (a proxy's 429)
        (status('pods "p" not found')[:20], ""),  # truncated: no message, no exception
        (b"k8s\x00" + bytes([0x0A, 0x04, 0x12, 0x02]) + b"Ev", ""),  # not a Status
        (b"", ""),
    ],
)
def test_message_of_a_protobuf_or_json_status(body: bytes, want: str) -> None:
    assert message_of(body) == want


class _Resp:
    def __init__(self, status: int, body: bytes = b"") -> None:
        self.status, self.reason, self.headers, self._body = status, "x", {}, body

    def read(self) -> bytes:
        return self._body

    def release_conn(self) -> None:
        pass


class _Pool:
    """Answers in turn; records each request's content type and body."""

    def __init__(self, *answers: _Resp) -> None:
        self.answers, self.sent = list(answers), []

    def urlopen(self, method: str, path: str, **kw: Any) -> _Resp:
        self.sent.append((kw["headers"]["Content-Type"], kw["headers"]["Accept"], kw["body"]))
        return self.answers.pop(0)


def test_bindings_and_events_go_as_protobuf_and_errors_read_back() -> None:
    api = bare_core_api()
    api._pool = _Pool(_Resp(201), _Resp(201), _Resp(404, status('pods "p" not found')))
    pod = PodInfo(make_pod("p", namespace="ns", uid="u1"))
    api.create_binding("ns", "p", binding_body(pod, "n1"))
    api.create_event("ns", EVENT)
    with pytest.raises(ApiError) as info:
        api.create_binding("ns", "p", binding_body(pod, "n1"))
    assert (info.value.status, info.value.message) == (404, 'pods "p" not found')
    assert [(ct, accept) for ct, accept, _ in api._pool.sent] == [
        # client-go v0.36.3 rest/request.go setAcceptHeader: ContentType + ", */*".
        ("application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf, */*")
    ] * 3
    assert api._pool.sent[1][2] == wire.encode(EVENT)


def test_a_server_that_refuses_protobuf_gets_json_from_then_on() -> None:
    # 415 Unsupported Media Type: the same request again as JSON, and every later one.
    api: KubeCoreAPI = bare_core_api()
    api._pool = _Pool(_Resp(415, b'{"kind":"Status","message":"no protobuf"}'), _Resp(201), _Resp(201))
    api.create_event("ns", EVENT)
    api.create_event("ns", EVENT)
    assert [ct for ct, _, _ in api._pool.sent] == [
        "application/vnd.kubernetes.protobuf", "application/json", "application/json"
    ]


def test_a_body_it_cannot_encode_goes_as_json() -> None:
    api = bare_core_api()
    api._pool = _Pool(_Resp(201))
    api.create_event("ns", {**EVENT, "deprecatedCount": 1})
    assert api._pool.sent[0][0] == "application/json"
