"""Shape checks for the API fields the model reads, and the errors that name a bad field.

The model parses optimistically (no per-field checks on the common path); when parsing
raises, or for the few subtrees where a wrong type would parse silently into nonsense
(affinity, spread constraints, tolerations), ``check`` walks the object against the schema
below and reports the first bad field as ``path: message`` in apimachinery's field-error style.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.model.quantity import QuantityError
from scheduler.model.quantity import parse as parse_quantity


class FieldError(ValueError):
    """One bad field: ``path`` in API notation (spec.containers[0].resources.requests[cpu])."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Go's strconv.Quote (fmt's %q): printable characters as they are, the rest escaped, so a
    value or key with a line break still makes one line."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def one_line(text: str) -> str:
    """``text`` with what is not printable escaped as Go's %q would (a name or map key from the
    object may hold line breaks and control characters)."""
    return text if text.isprintable() else go_quote(text)[1:-1]


class ObjectError(ValueError):
    """An object that cannot be used; ``str()`` is one line naming kind, object and field."""

    def __init__(self, kind: str, key: str, path: str, message: str) -> None:
        kind, key, path, message = one_line(kind), one_line(key), one_line(path), one_line(message)
        where = f"{kind} {key}" if key else kind
        super().__init__(f"{where}: {path}: {message}" if path else f"{where}: {message}")
        self.kind = kind
        self.key = key
        self.path = path
        self.message = message


class _Str:
    pass


class _Bool:
    pass


class _Any:
    pass


class Int:
    def __init__(self, lo: int | None = None, hi: int | None = None, msg: str = "") -> None:
        self.lo, self.hi, self.msg = lo, hi, msg

    def in_range(self, v: int) -> bool:
        return not ((self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi))


class MapOf:
    def __init__(self, value: Any) -> None:
        self.value = value


class _Quantity:
    pass


STR = _Str()
BOOL = _Bool()
ANY = _Any()
QTY = _Quantity()
INT = Int()
INT32 = Int(-(2**31), 2**31 - 1, "must be a 32-bit integer")


def _tname(v: Any) -> str:
    if isinstance(v, Mapping):
        return "an object"
    if isinstance(v, list | tuple):
        return "a list"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    return type(v).__name__


def _invalid(path: str, v: Any, detail: str) -> FieldError:
    # apimachinery field.Invalid: a string value as %q.
    shown = go_quote(v) if isinstance(v, str) else f'"{v!r}"'
    return FieldError(path, f"Invalid value: {shown}: {detail}")


def check_quantity(path: str, v: Any) -> None:
    try:
        q = parse_quantity(v)
    except QuantityError as exc:
        raise _invalid(path, v, str(exc)) from None
    if q.value < 0:
        raise _invalid(path, v, "must be greater than or equal to 0")


def check(v: Any, schema: Any, path: str) -> None:
    """Raise FieldError for the first field of ``v`` that does not fit ``schema``."""
    if not _validator(schema)(v):
        _explain(v, schema, path)


Validator = Callable[[Any], bool]
# Compiled validators by schema identity; the schema is kept so its id cannot be reused.
_COMPILED: dict[int, tuple[Any, Validator]] = {}


def _validator(schema: Any) -> Validator:
    hit = _COMPILED.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    fn = _compile(schema)
    _COMPILED[id(schema)] = (schema, fn)
    return fn


def _is_map(v: Any) -> bool:
    return type(v) is dict or isinstance(v, Mapping)


def _is_list(v: Any) -> bool:
    return type(v) is list or isinstance(v, list | tuple)


def _compile(schema: Any) -> Validator:
    """A yes/no version of ``_explain`` for one schema: no paths, no messages, no schema-type
    dispatch per value. Parsing checks every pod and node event, so this is on the watch's hot
    path; ``_explain`` runs only when the answer is no, to name the field."""
    if schema is ANY:
        return lambda v: True
    if isinstance(schema, dict):
        fields = tuple((key, _compile(sub)) for key, sub in schema.items())

        def obj(v: Any) -> bool:
            if v is None:
                return True
            if not _is_map(v):
                return False
            for key, ok in fields:
                if key in v and not ok(v[key]):
                    return False
            return True

        return obj
    if isinstance(schema, list):
        item_ok = _compile(schema[0])

        def seq(v: Any) -> bool:
            if v is None:
                return True
            if not _is_list(v):
                return False
            return all(map(item_ok, v))

        return seq
    if isinstance(schema, MapOf):
        value_ok = _compile(schema.value)

        def mapping(v: Any) -> bool:
            if v is None:
                return True
            if not _is_map(v):
                return False
            return all(map(value_ok, v.values()))

        return mapping
    if schema is STR:
        return lambda v: type(v) is str or v is None or not isinstance(v, Mapping | list | tuple)
    if schema is BOOL:
        return lambda v: v is None or isinstance(v, bool)
    if schema is QTY:

        def qty(v: Any) -> bool:
            if v is None:
                return True
            try:
                check_quantity("", v)
            except FieldError:
                return False
            return True

        return qty
    if isinstance(schema, Int):
        in_range = schema.in_range

        def integer(v: Any) -> bool:
            if v is None:
                return True
            if isinstance(v, bool) or not isinstance(v, int):
                return False
            return in_range(v)

        return integer
    return lambda v: True  # a schema type this module does not know accepts anything, as _explain


def _explain(v: Any, schema: Any, path: str) -> None:
    """The slow walk behind ``check``: builds each field's path, raises at the first bad one."""
    if v is None or schema is ANY:
        return
    if isinstance(schema, dict):
        if not isinstance(v, Mapping):
            raise FieldError(path, f"expected an object, got {_tname(v)}")
        for key, sub in schema.items():
            if key in v:
                _explain(v[key], sub, f"{path}.{key}" if path else key)
        return
    if isinstance(schema, list):
        if not isinstance(v, list | tuple):
            raise FieldError(path, f"expected a list, got {_tname(v)}")
        for i, item in enumerate(v):
            _explain(item, schema[0], f"{path}[{i}]")
        return
    if isinstance(schema, MapOf):
        if not isinstance(v, Mapping):
            raise FieldError(path, f"expected an object, got {_tname(v)}")
        for key, item in v.items():
            _explain(item, schema.value, f"{path}[{key}]")
        return
    if schema is STR:
        if isinstance(v, Mapping | list | tuple):
            raise FieldError(path, f"expected a string, got {_tname(v)}")
        return
    if schema is BOOL:
        if not isinstance(v, bool):
            raise FieldError(path, f"expected a boolean, got {_tname(v)}")
        return
    if schema is QTY:
        check_quantity(path, v)
        return
    if isinstance(schema, Int):
        if isinstance(v, bool) or not isinstance(v, int):
            raise FieldError(path, f"expected an integer, got {_tname(v)}")
        if not schema.in_range(v):
            raise _invalid(path, v, schema.msg or f"must be between {schema.lo} and {schema.hi}, inclusive")
        return


_REQUIREMENT = {"key": STR, "operator": STR, "values": [STR]}
LABEL_SELECTOR = {"matchLabels": MapOf(STR), "matchExpressions": [_REQUIREMENT]}
NODE_SELECTOR_TERM = {"matchExpressions": [_REQUIREMENT], "matchFields": [_REQUIREMENT]}
_WEIGHT = Int(1, 100, "must be in the range 1-100")
_POD_TERM = {
    "labelSelector": LABEL_SELECTOR,
    "namespaces": [STR],
    "namespaceSelector": LABEL_SELECTOR,
    "topologyKey": STR,
    "matchLabelKeys": [STR],
    "mismatchLabelKeys": [STR],
}
_POD_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": [_POD_TERM],
    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": _WEIGHT, "podAffinityTerm": _POD_TERM}],
}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [NODE_SELECTOR_TERM]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": _WEIGHT, "preference": NODE_SELECTOR_TERM}],
    },
    "podAffinity": _POD_AFFINITY,
    "podAntiAffinity": _POD_AFFINITY,
}
TOLERATIONS = [{"key": STR, "operator": STR, "value": STR, "effect": STR, "tolerationSeconds": INT}]
SPREAD_CONSTRAINTS = [
    {
        "maxSkew": Int(1, None, "must be greater than zero"),
        "topologyKey": STR,
        "whenUnsatisfiable": STR,
        "labelSelector": LABEL_SELECTOR,
        "minDomains": Int(1, None, "must be greater than zero"),
        "nodeAffinityPolicy": STR,
        "nodeTaintsPolicy": STR,
        "matchLabelKeys": [STR],
    }
]
_RESOURCES = {"requests": MapOf(QTY), "limits": MapOf(QTY)}
_CONTAINER = {
    "name": STR,
    "image": STR,
    "restartPolicy": STR,
    "resources": _RESOURCES,
    "ports": [
        {
            "hostPort": Int(0, 65535, "must be between 1 and 65535, inclusive"),
            "containerPort": INT,
            "hostIP": STR,
            "protocol": STR,
        }
    ],
}
_CONTAINER_STATUS = {"name": STR, "resources": _RESOURCES, "allocatedResources": MapOf(QTY)}
METADATA = {
    "name": STR,
    "namespace": STR,
    "uid": STR,
    "labels": MapOf(STR),
    "ownerReferences": [{"kind": STR, "name": STR, "uid": STR, "controller": BOOL}],
}
POD = {
    "metadata": METADATA,
    "spec": {
        "nodeName": STR,
        "schedulerName": STR,
        "priority": INT32,
        "preemptionPolicy": STR,
        "schedulingGates": [{"name": STR}],
        "schedulingGroup": {"podGroupName": STR},
        "tolerations": TOLERATIONS,
        "nodeSelector": MapOf(STR),
        "volumes": [{"name": STR}],
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "overhead": MapOf(QTY),
        "resources": _RESOURCES,
        "affinity": AFFINITY,
        "topologySpreadConstraints": SPREAD_CONSTRAINTS,
    },
    "status": {
        "phase": STR,
        "nominatedNodeName": STR,
        "startTime": STR,
        "resources": _RESOURCES,
        "allocatedResources": MapOf(QTY),
        "containerStatuses": [_CONTAINER_STATUS],
        "initContainerStatuses": [_CONTAINER_STATUS],
    },
}
NODE = {
    "metadata": METADATA,
    "spec": {"taints": [{"key": STR, "value": STR, "effect": STR}], "unschedulable": BOOL},
    "status": {
        "allocatable": MapOf(QTY),
        "capacity": MapOf(QTY),
        "images": [{"names": [STR], "sizeBytes": Int(0, None, "must be greater than or equal to 0")}],
    },
}
NAMESPACE = {"metadata": METADATA}
# scheduling.k8s.io/v1alpha2 PodGroup: the fields the pod-group cycle and its plugins read.
PODGROUP = {
    "metadata": {**METADATA, "generation": INT},
    "spec": {
        "schedulingPolicy": {"basic": {}, "gang": {"minCount": INT32}},
        "schedulingConstraints": {"topology": [{"key": STR}]},
        "disruptionMode": STR,
        "priorityClassName": STR,
        "priority": INT32,
    },
    "status": {"conditions": [{"type": STR, "status": STR, "reason": STR, "message": STR}]},
}
OWNER = {"metadata": METADATA, "spec": {"selector": ANY}}
# Storage kinds are read raw by the volume plugins; their top-level shape must hold.
STORAGE = {"metadata": METADATA, "spec": {}, "status": {}}
_DEVICE_REQUEST = {"name": STR, "deviceClassName": STR, "allocationMode": STR, "count": INT, "selectors": [ANY]}
# ResourceClaims, templates, DeviceClasses and ResourceSlices (each reads the parts it has).
DRA = {
    "metadata": METADATA,
    "spec": {
        "devices": {"requests": [{"name": STR, "exactly": _DEVICE_REQUEST, "firstAvailable": [_DEVICE_REQUEST]}],
                    "constraints": [ANY], "config": [ANY]},
        "driver": STR,
        "nodeName": STR,
        "pool": {"name": STR, "generation": INT, "resourceSliceCount": INT},
        "selectors": [ANY],
    },
    "status": {},
}
PDB = {"metadata": METADATA, "spec": {}, "status": {"disruptionsAllowed": INT32, "disruptedPods": MapOf(ANY)}}


def object_key(raw: Any) -> str:
    """namespace/name (or name) of a raw object, best effort, for error lines."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(meta, Mapping):
        return ""
    name = str(meta.get("name") or "")
    ns = meta.get("namespace")
    return f"{ns}/{name}" if isinstance(ns, str) and ns else name


def object_error(kind: str, raw: Any, schema: Any, exc: Exception, default_ns: str = "") -> ObjectError:
    """Name the field behind ``exc`` (a failure while parsing ``raw``) as one ObjectError."""
    key = object_key(raw)
    if default_ns and key and "/" not in key:
        key = f"{default_ns}/{key}"
    if isinstance(exc, FieldError):
        return ObjectError(kind, key, exc.path, exc.message)
    try:
        check(raw, schema, "")
    except FieldError as fe:
        return ObjectError(kind, key, fe.path, fe.message)
    return ObjectError(kind, key, "", f"cannot be parsed: {exc}")
