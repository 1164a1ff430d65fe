"""The small part of Go's template language that scheduler_perf's object templates use.

scheduler_perf renders each template file with ``{"Index": i, "Count": n}`` and the functions of
its ``getTemplateFuncs``, then decodes the YAML. The files of v1.36.3 use only actions of the
form ``{{ .Index }}``, ``{{ .Count }}`` and ``{{ Func arg... }}`` with the integer helpers
(``DivideInt 30000 .Count``, ``Mod .Index 12``), whose arguments are fields or number
literals. That is what this renders; anything else (pipes, parentheses, ``if``/``range``,
trim markers, the float helpers, another field) is refused with the construct named, so a new
upstream template cannot be rendered wrongly without notice.

The values are numbers, which upstream's html/template prints unescaped, as here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

_ACTION = re.compile(r"\{\{(.*?)\}\}", re.S)
_NUMBER = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


class TemplateError(ValueError):
    """A template this renderer does not support, or an action that fails (as Go would)."""


def _float(v: Any) -> float:
    # scheduler_perf's toFloat64: every argument goes through float64.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TemplateError(f"cannot cast {v!r} to float64")
    return float(v)


def _go_int(f: float) -> int:
    # Go's int(float64) truncates toward zero.
    if math.isnan(f) or math.isinf(f):
        raise TemplateError(f"cannot convert {f} to int")
    return int(f)


def _add(*xs: Any) -> int:
    return _go_int(math.fsum(_float(x) for x in xs))


def _subtract(a: Any, b: Any) -> int:
    return _go_int(_float(a) - _float(b))


def _multiply(*xs: Any) -> int:
    p = 1.0
    for x in xs:
        p *= _float(x)
    return _go_int(p)


def _divide(a: Any, b: Any) -> int:
    if _float(b) == 0:
        raise TemplateError("division by zero")
    return _go_int(_float(a) / _float(b))


def _mod(a: Any, b: Any) -> int:
    x, y = _go_int(_float(a)), _go_int(_float(b))
    if y == 0:
        raise TemplateError("integer divide by zero")
    # Go's % keeps the sign of the dividend.
    r = abs(x) % abs(y)
    return -r if x < 0 else r


FUNCS: Mapping[str, tuple[Callable[..., int], int | None]] = {
    # name: (function, number of arguments or None for variadic)
    "AddInt": (_add, None),
    "SubtractInt": (_subtract, 2),
    "MultiplyInt": (_multiply, None),
    "DivideInt": (_divide, 2),
    "Mod": (_mod, 2),
}


def _argument(tok: str, env: Mapping[str, Any], action: str) -> Any:
    if tok.startswith("."):
        name = tok[1:]
        if name not in env:
            raise TemplateError(f"{{{{{action}}}}}: field {tok} is not one of {sorted('.' + k for k in env)}")
        return env[name]
    m = _NUMBER.match(tok)
    if m:
        return float(tok) if (m.group(2) or "." in tok) else int(tok)
    raise TemplateError(f"{{{{{action}}}}}: unsupported argument {tok!r}")


def _evaluate(action: str, env: Mapping[str, Any]) -> Any:
    body = action.strip()
    if action.startswith("-") or action.endswith("-"):
        raise TemplateError(f"{{{{{action}}}}}: trim markers are not supported")
    if any(c in body for c in "|()$\"'`"):
        raise TemplateError(f"{{{{{action}}}}}: pipes, parentheses, variables and strings are not supported")
    toks = body.split()
    if not toks:
        raise TemplateError("empty action {{}}")
    head, args = toks[0], toks[1:]
    if head.startswith("."):
        if args:
            raise TemplateError(f"{{{{{action}}}}}: a field takes no arguments")
        return _argument(head, env, action)
    if head not in FUNCS:
        raise TemplateError(f"{{{{{action}}}}}: unsupported function or keyword {head!r} (supported: {sorted(FUNCS)})")
    fn, arity = FUNCS[head]
    if arity is not None and len(args) != arity:
        raise TemplateError(f"{{{{{action}}}}}: {head} wants {arity} arguments, got {len(args)}")
    return fn(*(_argument(a, env, action) for a in args))


def _print(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        # Only integers come out of the supported actions and fields.
        raise TemplateError(f"cannot print {v!r}: only integer values are supported")
    return str(v)


def render(text: str, env: Mapping[str, Any]) -> str:
    """``text`` with every ``{{ ... }}`` action replaced by its value under ``env``."""
    if "{{" not in text:
        return text
    out = _ACTION.sub(lambda m: _print(_evaluate(m.group(1), env)), text)
    if "{{" in out:
        raise TemplateError("unbalanced {{ in template")
    return out


def has_actions(text: str) -> bool:
    return "{{" in text
