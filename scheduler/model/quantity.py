"""Kubernetes resource.Quantity as kube-scheduler sees it, overflow included.

kube-scheduler turns quantities into int64 with Quantity.Value()/MilliValue(). Those never
fail: past the int64 range they return 0 or a wrapped number depending on how the quantity
is stored (an int64 mantissa with a decimal scale, or an arbitrary-precision decimal), and
both the stored form and the string the API server hands back depend on the text the user
wrote. A node with ``cpu: 1E`` therefore has 0 milli-CPU for the scheduler and a pod asking
for ``cpu: 1E`` asks for 0. This module models apimachinery v0.36.3 (quantity.go, amount.go,
math.go, scale_int.go, suffix.go) closely enough to give the same int64 for every input; the
expected values in tests/test_quantity_overflow.py were produced by that Go code.

Values are always plain Python ints inside the signed 64-bit range, so numpy int64 columns
can hold them and vector arithmetic wraps exactly like Go's int64 arithmetic.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_SIMPLE_DEC = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_SUFFIX_OF = {e: s for s, e in _SIMPLE_DEC.items()}
_BIN_SUFFIX_OF = {e: s for s, e in _BIN.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
# Exponents past this are refused: upstream's arbitrary-precision path would grind through
# numbers with millions of digits (the API server never stores such objects).
_MAX_DEC_DIGITS = 4096

_REGEX_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class QuantityError(ValueError):
    pass


def wrap64(x: int) -> int:
    """Two's-complement int64 wrap (Go integer overflow, big.Int.Int64)."""
    return ((x + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def _wrap32(x: int) -> int:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _tdiv(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - b * _tdiv(a, b)


def _mul_scale(a: int, b: int) -> tuple[int, bool]:
    """Multiply by a power of ten > 1: the wrapped product and whether it fit."""
    if a in (0, 1):
        return a * b, True
    if a == I64_MIN:
        return 0, False
    c = wrap64(a * b)
    return c, _tdiv(c, b) == a


def _positive_scale(base: int, scale: int) -> tuple[int, bool]:
    # Scales 1, 2, 3, 6 and 9 hand back the wrapped product on overflow, the others 0.
    if scale == 0:
        return base, True
    if scale in (1, 2, 3, 6, 9):
        return _mul_scale(base, 10**scale)
    value = base
    for _ in range(max(scale, 0)):
        if value == 0:
            break
        value, ok = _mul_scale(value, 10)
        if not ok:
            return 0, False
    return value, True


def _negative_scale(base: int, scale: int) -> tuple[int, bool]:
    """Divide by 10**scale rounding away from zero; (value, exact)."""
    if scale == 0:
        return base, True
    value = base
    fraction = False
    for _ in range(max(scale, 0)):
        if not fraction and _tmod(value, 10) != 0:
            fraction = True
        value = _tdiv(value, 10)
        if value == 0:
            if fraction:
                return (1 if base > 0 else -1), False
            return 0, True
    if fraction:
        value += 1 if base > 0 else -1
    return value, not fraction


def _int64_add(a: int, b: int) -> tuple[int, bool]:
    c = wrap64(a + b)
    if a > 0 and b > 0 and c < 0:
        return 0, False
    if a < 0 and b < 0 and (c > 0 or (a == I64_MIN and b == I64_MIN)):
        return 0, False
    return c, True


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """Strip factors of ``base``; (rest, times). Works on big ints too."""
    times = 0
    while value != 0 and value % base == 0:
        value //= base
        times += 1
    return value, times


class Quantity:
    """A parsed quantity in upstream's two storage forms.

    ``big`` False: an int64 mantissa ``value`` times 10**``scale`` (scale is int32).
    ``big`` True: an arbitrary-precision ``value`` times 10**``scale``.
    """

    __slots__ = ("big", "fmt", "scale", "value")

    def __init__(self, value: int, scale: int, big: bool, fmt: str) -> None:
        self.value = value
        self.scale = scale
        self.big = big
        self.fmt = fmt

    @property
    def exact(self) -> Fraction:
        return Fraction(self.value) * Fraction(10) ** self.scale

    def is_zero(self) -> bool:
        return self.value == 0

    def scaled_value(self, target: int) -> int:
        """Quantity.ScaledValue: ceil(q / 10**target) as Go's int64 computes it."""
        if not self.big:
            if self.scale < target:
                return _negative_scale(self.value, _wrap32(target - self.scale))[0]
            return _positive_scale(self.value, _wrap32(self.scale - target))[0]
        dif = target - self.scale  # upstream: dec scale minus new scale, both negated here
        if dif == 0:
            return wrap64(self.value)
        if dif < 0:
            p = 10**-dif if -dif <= 18 else I64_MIN  # int64(math.Pow10(n)) on amd64
            return wrap64(wrap64(self.value) * p)
        if self.value < I64_MAX and dif < 19:
            d = 10**dif
            u = wrap64(self.value)
            r = _tdiv(u, d)
            return wrap64(r + 1) if _tmod(u, d) else r
        if dif > len(str(abs(self.value))):
            # |value| < 10**dif: the floor is 0 or -1 and any remainder adds one.
            return 1 if self.value > 0 else 0
        q, m = divmod(self.value, 10**dif)  # Euclidean for a positive divisor
        return wrap64(q + 1) if m else wrap64(q)

    def milli(self) -> int:
        return self.scaled_value(-3)

    def int_value(self) -> int:
        return self.scaled_value(0)

    def add(self, other: Quantity) -> Quantity:
        """Quantity.Add: exact; stays an int64 mantissa unless that would overflow."""
        fmt = other.fmt if self.value == 0 else self.fmt
        if not self.big and not other.big:
            a, b = self, other
            if b.value == 0:
                return Quantity(a.value, a.scale, False, fmt)
            if a.value == 0:
                return Quantity(b.value, b.scale, False, fmt)
            if a.scale == b.scale:
                c, ok = _int64_add(a.value, b.value)
                if ok:
                    return Quantity(c, a.scale, False, fmt)
            elif a.scale > b.scale:
                c, ok = _positive_scale(a.value, _wrap32(a.scale - b.scale))
                if ok:
                    c, ok = _int64_add(c, b.value)
                    if ok:
                        return Quantity(c, b.scale, False, fmt)
            else:
                c, ok = _positive_scale(b.value, _wrap32(b.scale - a.scale))
                if ok:
                    c, ok = _int64_add(a.value, c)
                    if ok:
                        return Quantity(c, a.scale, False, fmt)
        # Decimal sum: the result keeps the finer of the two scales.
        s = min(self.scale, other.scale)
        v = self.value * 10 ** (self.scale - s) + other.value * 10 ** (other.scale - s)
        return Quantity(v, s, True, fmt)

    def cmp(self, other: Quantity) -> int:
        a, b = self.exact, other.exact
        return (a > b) - (a < b)

    # -- the string the API server hands back --------------------------------------------------
    def canonical(self) -> str:
        """Quantity.String() without a cached input string (CanonicalizeBytes)."""
        if self.value == 0:
            return "0"
        fmt = self.fmt
        rounded: Quantity | None = None
        if fmt == BINARY_SI:
            if -1024 < self.exact < 1024:
                fmt = DECIMAL_SI
            else:
                rounded, exact = self._as_scale0()
                if not exact:
                    fmt = DECIMAL_SI
        elif fmt != DECIMAL_SI:
            fmt = DECIMAL_EXPONENT
        if fmt == BINARY_SI:
            assert rounded is not None
            number, exp = rounded._base1024()
            return number + _BIN_SUFFIX_OF.get(exp * 10, "")
        number, exp = self._canonical_bytes()
        if fmt == DECIMAL_SI:
            # Exponents without an SI suffix print bare: upstream writes 1e21 as "1".
            return number + _DEC_SUFFIX_OF.get(exp, "")
        return number if exp == 0 else f"{number}e{exp}"

    def _as_scale0(self) -> tuple[Quantity, bool]:
        if not self.big:
            if self.scale >= 0:
                return self, True
            v, exact = _negative_scale(self.value, _wrap32(-self.scale))
            return Quantity(v, 0, False, self.fmt), exact
        if self.scale >= 0:
            return self, True
        d = 10**-self.scale
        q = -(-abs(self.value) // d)
        v = q if self.value > 0 else -q
        return Quantity(v, 0, True, self.fmt), v * d == self.value

    def _base1024(self) -> tuple[str, int]:
        if not self.big:
            v, ok = _positive_scale(self.value, self.scale) if self.scale >= 0 else (0, False)
            if ok:
                neg = v < 0
                rest, times = _remove_factors(abs(v), 1024)
                return str(-rest if neg else rest), times
        rest, times = _remove_factors(self.value * 10 ** max(self.scale, 0), 1024)
        return str(rest), times

    def _canonical_bytes(self) -> tuple[str, int]:
        if not self.big:
            neg = self.value < 0
            amount = wrap64(-self.value) if neg else self.value
            times = 0
            while amount >= 10 and amount % 10 == 0:
                amount //= 10
                times += 1
            if neg:
                amount = wrap64(-amount)
            exp = _wrap32(self.scale + times)
            r = exp - 3 * _tdiv(exp, 3)
            ok = True
            if r in (1, -2):
                amount, ok = _mul_scale(amount, 10)
                exp = _wrap32(exp - 1)
            elif r in (2, -1):
                amount, ok = _mul_scale(amount, 100)
                exp = _wrap32(exp - 2)
            if ok:
                return str(amount), exp
        amount, times = _remove_factors(self.value, 10)
        exp = self.scale + times
        while exp - 3 * _tdiv(exp, 3) != 0:
            amount *= 10
            exp -= 1
        return str(amount), exp


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num, "", ""
    num = num or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(_REGEX_MSG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    if suffix in _SIMPLE_DEC:
        return 10, _SIMPLE_DEC[suffix], DECIMAL_SI
    if suffix in _BIN:
        return 2, _BIN[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and body.isdigit() and body.isascii() and -(1 << 63) <= int(digits) <= I64_MAX:
            return 10, _wrap32(int(digits)), DECIMAL_EXPONENT
    raise QuantityError("unable to parse quantity's suffix")


def _parse_decimal(value: str) -> tuple[int, int]:
    """inf.Dec SetString for sign, digits, optional point and digits: (unscaled, -scale)."""
    body = value.lstrip("+-")
    whole, _, frac = body.partition(".")
    if not (whole or frac):
        raise QuantityError("unable to parse numeric part of quantity")
    v = int((whole or "0") + frac)
    return (-v if value.startswith("-") else v), -len(frac)


def _go_parse(text: str) -> tuple[Quantity, bool]:
    """ParseQuantity; the flag says whether upstream keeps ``text`` as the string form."""
    if not text:
        raise QuantityError(_REGEX_MSG)
    if text == "0":
        return Quantity(0, 0, False, DECIMAL_SI), True
    positive, value, num, denom, suf = _split(text)
    base, exponent, fmt = _interpret(suf)
    precision = 0
    scale = 0
    mantissa = 1
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale = _wrap32(scale - len(denom))
        if scale >= -9:
            shifted = num + denom
            v = int(shifted)
            result = v * mantissa
            if I64_MIN <= result <= I64_MAX:
                if not positive:
                    result = -result
                if fmt == BINARY_SI:
                    keep = exponent % 10 == 0 and (v & 0x07) != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, False, fmt), keep

    unscaled, sc = _parse_decimal(value)
    if base == 10:
        sc = _wrap32(sc + exponent)
    else:
        unscaled <<= exponent
    if sc > _MAX_DEC_DIGITS:
        raise QuantityError(f"quantity {text!r} is out of range")
    neg = unscaled < 0
    unscaled = abs(unscaled)
    if unscaled != 0:
        # Round to nano, away from zero; the result always has nano scale.
        if sc < -9:
            k = -9 - sc
            if len(str(unscaled)) <= k:
                unscaled = 1
            else:
                d = 10**k
                unscaled = -(-unscaled // d)
        else:
            unscaled *= 10 ** (sc + 9)
        sc = -9
    if fmt == BINARY_SI and unscaled * 10 ** max(sc, 0) > I64_MAX * 10 ** max(-sc, 0):
        unscaled, sc = I64_MAX, 0
    if fmt == BINARY_SI and Fraction(unscaled) * Fraction(10) ** sc < 1 and unscaled > 0:
        fmt = DECIMAL_SI
    return Quantity(-unscaled if neg else unscaled, sc, True, fmt), False


def _text(value: str | int | float) -> str:
    if isinstance(value, float):
        # YAML hands 0.5 for "0.5"; its shortest repr is what JSON would carry.
        return repr(value)
    return str(value).strip()


def _check_type(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"{_REGEX_MSG}, got {value!r}")


@lru_cache(maxsize=8192)
def _api_string(value: str | int | float) -> str:
    text = _text(value)
    q, keep = _go_parse(text)
    return text if keep else q.canonical()


def api_string(value: str | int | float) -> str:
    """The string the API server stores and serves for what a manifest says."""
    _check_type(value)
    return _api_string(value)


@lru_cache(maxsize=8192)
def _parse(value: str | int | float) -> Quantity:
    return _go_parse(_api_string(value))[0]


def parse(value: str | int | float) -> Quantity:
    """The quantity kube-scheduler holds for a manifest value (after the API round trip)."""
    if type(value) is not str:
        _check_type(value)
    return _parse(value)


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity (after the API round trip)."""
    return parse(value).exact


def milli_value(value: str | int | float) -> int:
    """Quantity.MilliValue() (CPU)."""
    return parse(value).milli()


def int_value(value: str | int | float) -> int:
    """Quantity.Value() (memory, storage, counts, extended resources)."""
    return parse(value).int_value()
