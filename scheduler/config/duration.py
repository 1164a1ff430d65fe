"""Go durations: exactly the strings Go's time.ParseDuration accepts, with its error messages,
and time.Duration.String(). Used for the configuration file and the command-line flags.

Grammar (time/format.go): ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+``, units ns us µs μs ms s m h;
"0" alone needs no unit; values are int64 nanoseconds, so overflow is an error.
"""

from __future__ import annotations

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_LIMIT = 1 << 63  # the magnitude of the most negative int64


def parse_duration(text: str) -> float:
    """Seconds in a Go duration ("15s", "1m30s", "-1.5h", "0"); ValueError as Go words it."""
    return parse_duration_ns(text) / 1e9


def parse_duration_ns(text: str) -> int:
    """Nanoseconds in a Go duration, computed as time.ParseDuration does (int64, truncated)."""
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise _error("invalid duration", text)
    total = 0
    while s:
        if not (s[0] == "." or _digit(s[0])):
            raise _error("invalid duration", text)
        whole, s, pre = _leading_int(s, text)
        frac, scale, post = 0, 1.0, False
        if s[:1] == ".":
            frac, scale, s, post = _leading_fraction(s[1:])
        if not pre and not post:  # no digits at all (".s", "-.s")
            raise _error("invalid duration", text)
        i = 0
        while i < len(s) and not (s[i] == "." or _digit(s[i])):
            i += 1
        if i == 0:
            raise _error("missing unit in duration", text)
        unit_name, s = s[:i], s[i:]
        unit = _NS_PER_UNIT.get(unit_name)
        if unit is None:
            raise _error(f"unknown unit {_quote(unit_name)} in duration", text)
        if whole > _LIMIT // unit:
            raise _error("invalid duration", text)
        value = whole * unit
        if frac > 0:
            # Go adds the fraction through a float64 (exact enough for fractions of an hour).
            value += int(float(frac) * (float(unit) / scale))
            if value > _LIMIT:
                raise _error("invalid duration", text)
        total += value
        if total > _LIMIT:
            raise _error("invalid duration", text)
    if neg:
        return -total
    if total > _LIMIT - 1:
        raise _error("invalid duration", text)
    return total


def _digit(c: str) -> bool:
    return "0" <= c <= "9"  # ASCII only, as Go reads bytes


def _leading_int(s: str, text: str) -> tuple[int, str, bool]:
    """The leading [0-9]* as an integer, the rest, and whether there were digits."""
    x, i = 0, 0
    while i < len(s) and _digit(s[i]):
        if x > _LIMIT // 10:
            raise _error("invalid duration", text)
        x = x * 10 + ord(s[i]) - 48
        if x > _LIMIT:
            raise _error("invalid duration", text)
        i += 1
    return x, s[i:], i > 0


def _leading_fraction(s: str) -> tuple[int, float, str, bool]:
    """The leading [0-9]* as value/scale; digits past int64 precision are skipped, not errors."""
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and _digit(s[i]):
        if not overflow:
            if x > (_LIMIT - 1) // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - 48
                if y > _LIMIT:
                    overflow = True
                else:
                    x, scale = y, scale * 10
        i += 1
    return x, scale, s[i:], i > 0


def _error(message: str, text: str) -> ValueError:
    return ValueError(f"time: {message} {_quote(text)}")


def _quote(s: str) -> str:
    """time's quote(): non-ASCII and control characters as \\x escapes of their UTF-8 bytes
    (undecodable argv bytes come back as themselves through surrogateescape)."""
    out = ['"']
    for c in s:
        if c < " " or ord(c) >= 0x80:
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogateescape"))
        else:
            if c in '"\\':
                out.append("\\")
            out.append(c)
    out.append('"')
    return "".join(out)


def format_duration(seconds: float) -> str:
    """Go's time.Duration.String() for a number of seconds."""
    return format_duration_ns(round(seconds * 1e9))


def format_duration_ns(ns: int) -> str:
    """Go's time.Duration.String() for int64 nanoseconds."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns, size) + unit
    h, rem = divmod(ns, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    s = _trim(rem, 1_000_000_000) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"
