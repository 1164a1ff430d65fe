"""Exact Kubernetes resource.Quantity parsing (integer/rational math, never floats)."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# sign, digits with optional fraction, then a binary/decimal suffix or an exponent.
_RE = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


class QuantityError(ValueError):
    pass


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Fraction:
    """Parse a quantity such as ``500m``, ``1.5Gi``, ``1e3`` into an exact Fraction."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        # YAML may hand us 0.5 for "0.5"; go through its shortest repr to stay exact.
        value = repr(value)
    text = value.strip()
    m = _RE.match(text)
    if not m:
        pattern = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        raise QuantityError(f"quantities must match the regular expression {pattern}, got {value!r}")
    sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
    q = Fraction(number)
    if suffix in _BINARY:
        q *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        q *= _DECIMAL[suffix]
    else:
        q *= Fraction(10) ** int(suffix[1:])
    return -q if sign == "-" else q


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def milli_value(value: str | int | float) -> int:
    """Quantity.MilliValue(): value * 1000 rounded up (used for CPU)."""
    return _ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float) -> int:
    """Quantity.Value(): rounded up to an integer (used for memory, storage, counts)."""
    return _ceil(parse_quantity(value))
