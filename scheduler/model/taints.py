"""Node taints and pod tolerations (v1.Taint, v1.Toleration) and the matching rule, which DRA's
device taints share."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from scheduler.model.kinds import Raw
from scheduler.model.memo import memoized
from scheduler.model.schema import TOLERATIONS, check

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str
    # timeAdded as nanoseconds since the epoch (None when unset). Matching ignores it, but
    # upstream compares whole taints (Semantic.DeepEqual) to detect a taint change.
    time_added: int | None = None


class _TaintLike(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def effect(self) -> str: ...


def toleration_matches(
    key: str, operator: str, value: str, effect: str, taint: _TaintLike, comparison: bool = False
) -> bool:
    """ToleratesTaint, shared by node taints (v1.Toleration) and device taints (DRA's
    DeviceToleration): effect and key must match unless empty; Exists ignores the value; Lt and
    Gt compare integer values, only with the TaintTolerationComparisonOperators gate
    (``comparison``; device tolerations have no such operators)."""
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator == "Exists":
        return True
    if operator in ("", "Equal"):
        return value == taint.value
    if operator in ("Lt", "Gt") and comparison:
        tol, tnt = _decimal_int64(value), _decimal_int64(taint.value)
        if tol is None or tnt is None:
            return False
        return tnt < tol if operator == "Lt" else tnt > tol
    return False


_INT64 = (-(2**63), 2**63 - 1)


def _decimal_int64(s: str) -> int | None:
    """content.IsDecimalInteger (an optional '-', no leading zero, ASCII digits) then
    strconv.ParseInt(s, 10, 64); None where upstream logs an error and does not tolerate."""
    digits = s[1:] if s.startswith("-") else s
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    if digits[0] == "0" and s != "0":
        return None
    v = int(s)
    return v if _INT64[0] <= v <= _INT64[1] else None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" (default) or "Exists"
    value: str
    effect: str  # "" matches every effect
    # Kept only so that comparing tolerations compares what upstream's DeepEqual does.
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint, comparison: bool = False) -> bool:
        """v1.Toleration.ToleratesTaint (``comparison``: the TaintTolerationComparisonOperators gate)."""
        return toleration_matches(self.key, self.operator, self.value, self.effect, taint, comparison)


def tolerates_taint(tolerations: tuple[Toleration, ...], taint: Taint, comparison: bool = False) -> bool:
    for t in tolerations:
        if t.tolerates(taint, comparison):
            return True
    return False


def find_untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], effects: tuple[str, ...], comparison: bool = False
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates (v1helper.FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in effects and not tolerates_taint(tolerations, taint, comparison):
            return taint
    return None


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))")


def _rfc3339_ns(value: Any) -> int | None:
    """A metav1.Time as UTC nanoseconds since the epoch (exact, unlike a float); None when unset
    or unreadable."""
    if not value:
        return None
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return calendar.timegm(dt.utctimetuple()) * 10**9 + dt.microsecond * 1000
    m = _RFC3339.fullmatch(str(value).strip())
    if m is None:
        return None
    y, mo, d, h, mi, sec, frac, sign, oh, om = m.groups()
    secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(sec), 0, 0, 0))
    if sign:
        offset = int(oh) * 3600 + int(om) * 60
        secs -= offset if sign == "+" else -offset
    nanos = int((frac or "")[:9].ljust(9, "0"))
    return secs * 10**9 + nanos


def parse_taints(raw: list[Raw] | None) -> tuple[Taint, ...]:
    return tuple(
        Taint(
            str(t.get("key", "")),
            str(t.get("value", "") or ""),
            str(t.get("effect", "")),
            _rfc3339_ns(t.get("timeAdded")),
        )
        for t in raw or []
    )


# Every pod of a workload carries the same tolerations (see scheduler.model.memo).
_tolerations_memo: dict[bytes, tuple[Toleration, ...]] = {}


def _check_parse_tolerations(raw: list[Raw]) -> tuple[Toleration, ...]:
    check(raw, TOLERATIONS, "spec.tolerations")
    return parse_tolerations(raw)


def checked_tolerations(raw: list[Raw] | None) -> tuple[Toleration, ...]:
    """spec.tolerations checked and parsed (raises the check's FieldError)."""
    return memoized(_tolerations_memo, raw, _check_parse_tolerations) if raw else ()


def parse_tolerations(raw: list[Raw] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            str(t.get("key", "") or ""),
            str(t.get("operator", "") or ""),
            str(t.get("value", "") or ""),
            str(t.get("effect", "") or ""),
            int(t["tolerationSeconds"]) if t.get("tolerationSeconds") is not None else None,
        )
        for t in raw or []
    )
