"""Resource vectors: the names the scheduler sums and their conversion to integer base units
(milli-CPU, bytes, counts), as upstream framework.Resource."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.model.quantity import QuantityError, wrap64
from scheduler.model.quantity import parse as parse_quantity
from scheduler.model.schema import FieldError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _bad_value(path: str, message: str) -> ValueError:
    # Without a path (pod maps, converted in bulk) a plain error lets the schema check name the field.
    return FieldError(path, message) if path else QuantityError(message)


# Pods repeat the same few request strings and exact parsing is not cheap: good results only.
_QUANTITY_CACHE: dict[tuple[bool, Any], int] = {}
_QUANTITY_CACHE_MAX = 8192


def resource_amount(name: str, value: Any, path: str = "") -> int:
    """Upstream Resource.Add's conversion (MilliValue for cpu, Value otherwise), which never fails
    and wraps or zeroes past int64 (scheduler.model.quantity); refused where the API server refuses."""
    key = (name == CPU, value) if type(value) in (str, int) else None
    if key is not None:
        hit = _QUANTITY_CACHE.get(key)
        if hit is not None:
            return hit
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        raise _bad_value(path, f'Invalid value: "{value}": {exc}') from None
    if q.value < 0:
        raise _bad_value(path, f'Invalid value: "{value}": must be greater than or equal to 0')
    out = q.milli() if name == CPU else q.int_value()
    if key is not None and len(_QUANTITY_CACHE) < _QUANTITY_CACHE_MAX:
        _QUANTITY_CACHE[key] = out
    return out


class Resource:
    """A resource vector in integer base units (milli-CPU, bytes, counts)."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @staticmethod
    def from_list(raw: Mapping[str, Any] | None, path: str = "") -> Resource:
        r = Resource()
        if raw and type(raw) is not dict and not isinstance(raw, Mapping):
            raise FieldError(path, "expected an object of quantities")
        for name, q in (raw or {}).items():
            r.set(str(name), resource_amount(str(name), q, f"{path}[{name}]"))
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def add(self, other: Resource, sign: int = 1) -> None:
        # Go int64 sums: wrap instead of growing past what the numpy columns hold.
        self.milli_cpu = wrap64(self.milli_cpu + sign * other.milli_cpu)
        self.memory = wrap64(self.memory + sign * other.memory)
        self.ephemeral_storage = wrap64(self.ephemeral_storage + sign * other.ephemeral_storage)
        self.allowed_pod_number = wrap64(self.allowed_pod_number + sign * other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = wrap64(self.scalar.get(k, 0) + sign * v)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def names(self) -> list[str]:
        return [CPU, MEMORY, EPHEMERAL_STORAGE, *self.scalar]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and (
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            {k: v for k, v in self.scalar.items() if v},
        ) == (
            other.milli_cpu,
            other.memory,
            other.ephemeral_storage,
            other.allowed_pod_number,
            {k: v for k, v in other.scalar.items() if v},
        )

    def __repr__(self) -> str:
        return (
            f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, eph={self.ephemeral_storage}, "
            f"pods={self.allowed_pod_number}, scalar={self.scalar})"
        )


def resource_from_map(reqs: Mapping[str, int]) -> Resource:
    """A request map as a Resource; a "pods" entry is not a request the scheduler sums."""
    out = Resource()
    for k, v in reqs.items():
        out.set(k, v)
    out.allowed_pod_number = 0
    return out

