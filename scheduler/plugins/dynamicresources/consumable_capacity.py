"""Consumable capacity (upstream structured's consumable_capacity.go): what a request takes
of a shared device's capacities, rounded by the capacity's request policy, and whether it fits
next to what is already consumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from scheduler.model.dra import Device, SubRequest
from scheduler.model.quantity import QuantityError, parse

_NONE: Mapping[str, Fraction] = {}


def requested_capacity(req: SubRequest) -> dict[str, Fraction] | None:
    cap = req.capacity
    if not isinstance(cap, Mapping) or not isinstance(cap.get("requests"), Mapping):
        return None
    return {str(k): parse(v).exact for k, v in cap["requests"].items()}


def request_fits(
    req: SubRequest,
    dev: Device,
    current: Mapping[str, Fraction] | None,
    allocating: Mapping[str, Fraction] | None,
) -> bool:
    """CmpRequestOverCapacity: what the request consumes of each capacity (rounded by the
    capacity's request policy) must be allowed and fit next to what is already consumed
    (``current``: by allocated claims; ``allocating``: earlier in this allocation)."""
    try:
        wanted = requested_capacity(req)
    except (QuantityError, ValueError):
        return False
    if not wanted and not current and not allocating and not dev.capacity_policy:
        return True  # the whole of each capacity, of which nothing is taken: always fits
    if wanted and any(n not in dev.capacity for n in wanted):
        return False
    if current is None:
        current = _NONE
    if allocating is None:
        allocating = _NONE
    for name, q in dev.capacity.items():
        consumed = consumed_capacity(dev, name, wanted)
        policy = dev.capacity_policy.get(name)
        if policy is not None and policy.violated(consumed):
            return False
        total = current.get(name, Fraction(0)) + consumed + allocating.get(name, Fraction(0))
        if total > q.exact:
            return False
    return True


def consumed_capacity(dev: Device, name: str, wanted: Mapping[str, Fraction] | None) -> Fraction:
    """calculateConsumedCapacity: the request (rounded by the policy), else the policy's
    default, else the whole capacity."""
    requested = wanted.get(name) if wanted else None
    policy = dev.capacity_policy.get(name)
    if policy is None:
        return requested if requested is not None else dev.capacity[name].exact
    return policy.consumed(requested, dev.capacity[name].exact)


def render_consumed(req: SubRequest, dev: Device, name: str, q: Fraction) -> str:
    """A consumed amount as upstream writes it: the quantity it was copied from (request,
    policy default or the capacity itself) in canonical form, else a plain number."""
    cap = req.capacity.get("requests") if isinstance(req.capacity, Mapping) else None
    text = cap.get(name) if isinstance(cap, Mapping) else None
    if isinstance(text, (str, int, float)):
        qq = parse(text)
        if qq.exact == q:
            return qq.canonical()
    if dev.capacity[name].exact == q:
        return dev.capacity[name].canonical()
    return _fmt(q)


def _fmt(q: Fraction) -> str:
    if q.denominator == 1:
        return str(q.numerator)
    return str(parse(f"{float(q)}").canonical())
