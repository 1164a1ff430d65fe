"""CEL device selectors (upstream k8s.io/dynamic-resource-allocation/cel).

Evaluated with cel-python (``celpy``), with the Kubernetes extension functions a DRA selector
uses added here: ``quantity()`` / ``isQuantity()`` and the Quantity methods, ``semver()`` /
``isSemver()`` and the Semver methods, and the strings extension functions. The ``device``
variable is built as upstream's ``DeviceMatches``: ``driver``, ``allowMultipleAllocations``,
``attributes`` and ``capacity`` as maps domain -> short name -> value, unqualified names in the
driver's domain, and an unknown domain an empty map (so ``device.attributes["x"].y`` fails with
"no such key" rather than "no such domain").

Differences from cel-go that are known: no static type check at compile time (a wrong field
only fails when evaluated), and runtime error texts are cel-go-like only for missing keys.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from scheduler.model.dra import Attribute, Device
from scheduler.model.quantity import Quantity, QuantityError, parse
from scheduler.plugins.dynamicresources.celerror import CelError

# ---------------------------------------------------------------------------------------------
# Kubernetes library types


class CelQuantity:
    """apiservercel.Quantity: compared exactly (integer math), as resource.Quantity.Cmp."""

    __slots__ = ("q",)

    def __init__(self, q: Quantity) -> None:
        self.q = q

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelQuantity) and self.q.cmp(other.q) == 0

    def __hash__(self) -> int:
        return hash(self.q.exact)

    def __repr__(self) -> str:
        return f"quantity({self.q.canonical()!r})"


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class Semver:
    """blang/semver v4 version, as the k8s semver library parses it (strict)."""

    __slots__ = ("major", "minor", "patch", "pre")

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise CelError(f"could not parse {text!r} as semver")
        self.major, self.minor, self.patch = int(m.group(1)), int(m.group(2)), int(m.group(3))
        self.pre: tuple[int | str, ...] = tuple(
            int(p) if p.isdigit() else p for p in (m.group(4).split(".") if m.group(4) else ())
        )

    def compare(self, other: Semver) -> int:
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if self.pre == other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return -1 if x < y else 1
            if isinstance(x, int):
                return -1
            if isinstance(y, int):
                return 1
            return -1 if str(x) < str(y) else 1
        return -1 if len(self.pre) < len(other.pre) else (1 if len(self.pre) > len(other.pre) else 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise CelError("no such overload")
    return str(v)


def _quantity(v: Any) -> CelQuantity:
    try:
        return CelQuantity(parse(_str(v)))
    except (QuantityError, ValueError) as exc:
        raise CelError(f"quantities must match the regular expression: {exc}") from None


def _is_quantity(v: Any) -> celtypes.BoolType:
    try:
        parse(_str(v))
    except (QuantityError, ValueError):
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _normalize(text: str) -> str:
    """semver(s, true): a "v" prefix dropped, missing minor/patch filled with 0 and leading
    zeros of the numbers dropped (the k8s semver library's normalize)."""
    text = text.removeprefix("v")
    core, sep, rest = text.partition("-") if "-" in text else text.partition("+")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def _semver(v: Any, normalize: Any = False) -> Semver:
    text = _str(v)
    return Semver(_normalize(text) if normalize else text)


def _is_semver(v: Any, normalize: Any = False) -> celtypes.BoolType:
    text = _str(v)
    return celtypes.BoolType(_SEMVER.match(_normalize(text) if normalize else text) is not None)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, CelQuantity) and isinstance(b, CelQuantity):
        return a.q.cmp(b.q)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise CelError("no such overload")


def _compare_to(a: Any, b: Any) -> celtypes.IntType:
    return celtypes.IntType(_cmp(a, b))


def _is_greater_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_cmp(a, b) > 0)


def _is_less_than(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_cmp(a, b) < 0)


def _q(a: Any) -> Quantity:
    if not isinstance(a, CelQuantity):
        raise CelError("no such overload")
    return a.q


def _frac_quantity(f: Fraction) -> CelQuantity:
    # Results of add/sub are exact; rendered back through the parser as a decimal.
    if f.denominator == 1:
        return CelQuantity(parse(str(f.numerator)))
    n, d = f.numerator, f.denominator
    scale = 0
    while d != 1 and scale < 18:
        n, scale = n * 10, scale + 1
        if n % d == 0:
            break
    return CelQuantity(parse(f"{n // d}e-{scale}"))


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, CelQuantity):
        other = _q(b) if isinstance(b, CelQuantity) else parse(str(int(b)))
        return _frac_quantity(a.q.exact + other.exact)
    return a + b


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, CelQuantity):
        other = _q(b) if isinstance(b, CelQuantity) else parse(str(int(b)))
        return _frac_quantity(a.q.exact - other.exact)
    return a - b


def _sign(a: Any) -> celtypes.IntType:
    e = _q(a).exact
    return celtypes.IntType((e > 0) - (e < 0))


def _is_integer(a: Any) -> celtypes.BoolType:
    e = _q(a).exact
    return celtypes.BoolType(e.denominator == 1 and -(2**63) <= e <= 2**63 - 1)


def _as_integer(a: Any) -> celtypes.IntType:
    e = _q(a).exact
    if e.denominator != 1 or not -(2**63) <= e <= 2**63 - 1:
        raise CelError("cannot convert value to integer")
    return celtypes.IntType(int(e))


def _as_float(a: Any) -> celtypes.DoubleType:
    return celtypes.DoubleType(float(_q(a).exact))


def _semver_part(i: int) -> Any:
    def f(a: Any) -> celtypes.IntType:
        if not isinstance(a, Semver):
            raise CelError("no such overload")
        return celtypes.IntType((a.major, a.minor, a.patch)[i])

    return f


# strings extension (cel-go ext.Strings), the functions selectors commonly use
def _lower(s: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in _str(s)))


def _upper(s: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in _str(s)))


def _split(s: Any, sep: Any, n: Any = None) -> celtypes.ListType:
    text, sp = _str(s), _str(sep)
    if n is not None and int(n) == 0:
        return celtypes.ListType([])
    parts = (list(text) if sp == "" else text.split(sp)) if n is None or int(n) < 0 else text.split(sp, int(n) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> celtypes.StringType:
    count = -1 if n is None else int(n)
    return celtypes.StringType(_str(s).replace(_str(old), _str(new), count))


def _trim(s: Any) -> celtypes.StringType:
    return celtypes.StringType(_str(s).strip())


def _index_of(s: Any, sub: Any, start: Any = None) -> celtypes.IntType:
    return celtypes.IntType(_str(s).find(_str(sub), int(start or 0)))


def _last_index_of(s: Any, sub: Any) -> celtypes.IntType:
    return celtypes.IntType(_str(s).rfind(_str(sub)))


def _substring(s: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text = _str(s)
    b, e = int(start), len(text) if end is None else int(end)
    if b < 0 or e > len(text) or b > e:
        raise CelError(f"index out of range: {b}")
    return celtypes.StringType(text[b:e])


def _join(lst: Any, sep: Any = None) -> celtypes.StringType:
    return celtypes.StringType(("" if sep is None else _str(sep)).join(_str(x) for x in lst))


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "add": _add,
    "sub": _sub,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_float,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    "lowerAscii": _lower,
    "upperAscii": _upper,
    "split": _split,
    "replace": _replace,
    "trim": _trim,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "substring": _substring,
    "join": _join,
}


# ---------------------------------------------------------------------------------------------
# The device variable


class _DomainMap(celtypes.MapType):
    """Outer attributes/capacity map: an unknown domain reads as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


def _attr_value(a: Attribute) -> Any:
    if a.kind == "int":
        return celtypes.IntType(a.value)
    if a.kind == "bool":
        return celtypes.BoolType(a.value)
    if a.kind == "string":
        return celtypes.StringType(a.value)
    return Semver(a.value)


def _split_name(name: str, driver: str) -> tuple[str, str]:
    i = name.find("/")
    return (driver, name) if i < 0 else (name[:i], name[i + 1 :])


def device_activation(driver: str, dev: Device) -> dict[str, Any]:
    attrs: dict[str, dict[Any, Any]] = {}
    for name, a in dev.attributes.items():
        domain, ident = _split_name(name, driver)
        try:
            value = _attr_value(a)
        except CelError as exc:
            raise CelError(f"attribute {name}: {exc}") from None
        attrs.setdefault(domain, {})[celtypes.StringType(ident)] = value
    caps: dict[str, dict[Any, Any]] = {}
    for name, q in dev.capacity.items():
        domain, ident = _split_name(name, driver)
        caps.setdefault(domain, {})[celtypes.StringType(ident)] = CelQuantity(q)
    device = celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(dev.allow_multiple_allocations),
            celtypes.StringType("attributes"): _DomainMap(
                {celtypes.StringType(d): celtypes.MapType(m) for d, m in attrs.items()}
            ),
            celtypes.StringType("capacity"): _DomainMap(
                {celtypes.StringType(d): celtypes.MapType(m) for d, m in caps.items()}
            ),
        }
    )
    return {"device": device}


# ---------------------------------------------------------------------------------------------
# Compile + evaluate, with an LRU cache


# Built at import: this module loads on the first expression compiled (celcache.py), so its
# parser (about 0.3 s) is never a start-up cost.
_ENV = celpy.Environment()
_KEY_ERR = re.compile(r"no such member in mapping: '(.*)'")


def _go_error(exc: CELEvalError) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    m = _KEY_ERR.match(text)
    if m:
        return f"no such key: {m.group(1)}"
    if text == "no such key" and len(exc.args) > 2 and exc.args[2]:
        return f"no such key: {exc.args[2][0]}"
    return text


class CompiledExpression:
    """An expression for the interpreter (a driver equality is a celcache.DriverIs instead)."""

    __slots__ = ("error", "expression", "program")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.error: str | None = None
        self.program: Any = None
        try:
            ast = _ENV.compile(expression)
            self.program = _ENV.program(ast, functions=FUNCTIONS)
        except Exception as exc:  # celpy raises its parser's errors
            self.error = " ".join(str(exc).split()) or type(exc).__name__

    def device_matches(self, driver: str, dev: Device) -> bool:
        """True/False, or CelError for a runtime error or a non-bool result. Evaluated once per
        device: the answer (or the error's message) is kept on it."""
        key = (self.expression, driver)
        known = dev.cel_results.get(key)
        if known is None:
            try:
                known = self._evaluate(driver, dev)
            except CelError as exc:
                known = str(exc)
            dev.cel_results[key] = known
        if isinstance(known, str):
            raise CelError(known)
        return known

    def _evaluate(self, driver: str, dev: Device) -> bool:
        if self.program is None:
            raise CelError(self.error or "not compiled")
        try:
            result = self.program.evaluate(device_activation(driver, dev))
        except CELEvalError as exc:
            raise CelError(_go_error(exc)) from None
        except CelError:
            raise
        except Exception as exc:
            raise CelError(str(exc)) from None
        if isinstance(result, CELEvalError):
            raise CelError(_go_error(result))
        if not isinstance(result, (bool, celtypes.BoolType)):
            raise CelError(f"CEL result of type {type(result).__name__} could not be converted to bool")
        return bool(result)
