"""Device binding conditions (upstream dynamicresources.go, DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus, both beta and on in v1.36.3).

A device may be published with ``bindingConditions`` (and ``bindingFailureConditions``): once
allocated, the pod is bound only when every binding condition is True in the claim's
``status.devices[].conditions`` for that device. PreBind waits for that (polling every 5s, up to
``bindingTimeout`` after it starts); a True failure condition or an allocation older than
``bindingTimeout`` fails it, and the next attempt's Filter finds the claim unusable, so PostFilter
deallocates it and other devices can be tried.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from scheduler.framework.status import go_quote
from scheduler.model.dra import ResourceClaim
from scheduler.model.kinds import as_list, as_map

# wait.PollUntilContextTimeout's interval in PreBind.
POLL_INTERVAL = 5.0

# Metric and log labels (schedmetrics.BindingConditionsStatus*).
SUCCESS = "success"
FAILED = "failed"
TIMEOUT = "timeout"
ERROR = "error"


class BindingFailed(Exception):
    """ErrDeviceBindingFailed: a binding failure condition is True."""


class BindingTimeout(Exception):
    """ErrDeviceBindingTimeout."""


def _results(claim: ResourceClaim) -> list[Mapping[str, Any]]:
    alloc = claim.allocation or {}
    return [as_map(r) for r in as_list(as_map(alloc.get("devices")).get("results"))]


def _device_status(claim: ResourceClaim, result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """getAllocatedDeviceStatus: the status entry of the allocated device (driver, pool, device)."""
    for st in as_list(as_map(claim.raw.get("status")).get("devices")):
        st = as_map(st)
        if (st.get("device"), st.get("driver"), st.get("pool")) == (
            result.get("device"),
            result.get("driver"),
            result.get("pool"),
        ):
            return st
    return None


def _condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in as_list(status.get("conditions")):
        c = as_map(c)
        if c.get("type") == ctype:
            return c
    return None


def _is_true(status: Mapping[str, Any], ctype: str) -> bool:
    c = _condition(status, ctype)
    return c is not None and c.get("status") == "True"


def claim_ready_for_binding(claim: ResourceClaim) -> bool:
    """isClaimReadyForBinding: True when every binding condition of every allocated device is
    True (so also when there are none); raises BindingFailed when a failure condition is True."""
    if claim.allocation is None:
        return False
    for r in _results(claim):
        conds = as_list(r.get("bindingConditions"))
        if not conds:
            continue
        st = _device_status(claim, r)
        if st is None:
            return False
        for fc in as_list(r.get("bindingFailureConditions")):
            c = _condition(st, str(fc))
            if c is not None and c.get("status") == "True":
                raise BindingFailed(
                    f"device binding failed: claim={claim.name}, reason={c.get('reason') or ''}, "
                    f"message={go_quote(str(c.get('message') or ''))}"
                )
        if not all(_is_true(st, str(bc)) for bc in conds):
            return False
    return True


def _timestamp(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def claim_timed_out(claim: ResourceClaim, binding_timeout: float, now: float) -> bool:
    """isClaimTimeout: the allocation has devices with binding conditions and its
    allocationTimestamp is more than ``binding_timeout`` seconds before ``now``."""
    if claim.allocation is None:
        return False
    ts = _timestamp(claim.allocation.get("allocationTimestamp"))
    if ts is None:
        return False
    return any(r.get("bindingConditions") for r in _results(claim)) and ts + binding_timeout < now


def has_binding_conditions(claims: Iterable[ResourceClaim]) -> bool:
    return any(claim.allocation is not None and any(r.get("bindingConditions") for r in _results(claim))
               for claim in claims)


def drivers(claim: ResourceClaim) -> list[str]:
    """The driver of every allocated device (the wait-duration histogram's samples)."""
    return [str(r.get("driver") or "") for r in _results(claim)]


class DeviceBindingStatus:
    """BindingConditionsStatus: one device with binding conditions, its pending and failed ones."""

    __slots__ = ("device", "driver", "failed", "pending", "pool")

    def __init__(self, driver: str, pool: str, device: str) -> None:
        self.driver = driver
        self.pool = pool
        self.device = device
        self.pending: list[str] = []
        self.failed: list[str] = []


def binding_status(claim: ResourceClaim) -> list[DeviceBindingStatus]:
    """listBindingConditionsStatus: each allocated device that has binding conditions."""
    out: list[DeviceBindingStatus] = []
    if claim.allocation is None:
        return out
    for r in _results(claim):
        conds = [str(c) for c in as_list(r.get("bindingConditions"))]
        if not conds:
            continue
        d = DeviceBindingStatus(str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
        st = _device_status(claim, r)
        if st is None:
            d.pending = conds
        else:
            d.failed = [str(c) for c in as_list(r.get("bindingFailureConditions")) if _is_true(st, str(c))]
            d.pending = [c for c in conds if not _is_true(st, c)]
        out.append(d)
    return out


def status_line(claims: Iterable[ResourceClaim], label: str) -> str:
    """formatBCStatusOneLine(getBindingConditionsStatusForStatus(...)): the devices worth
    naming for the outcome ``label``, on one line."""
    parts: list[str] = []
    for claim in claims:
        for d in binding_status(claim):
            if label == SUCCESS:
                if d.failed or d.pending:
                    continue
            elif label == FAILED:
                if not d.failed:
                    continue
                d.pending = []
            elif not d.pending or d.failed:
                continue
            line = f"<driver={d.driver}, pool={d.pool}> {d.device}"
            if d.failed:
                line += f" failed=[{','.join(d.failed)}]"
            if d.pending:
                line += f" pending=[{','.join(d.pending)}]"
            parts.append(line)
    return "; ".join(parts)

