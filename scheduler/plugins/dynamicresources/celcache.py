"""The compiled-expression cache of DynamicResources (upstream cel.Cache).

Apart from cel.py so that loading the plugin does not load cel-python (about 50 ms of every
start and 11 MB): the evaluator is imported on the first expression that needs it, or ahead of
it by ``preload`` once the cluster shows an object holding one. ``device.driver == "name"``,
what most DeviceClasses select on, never needs it (``DriverIs``): a cluster whose selectors are
all of that form never loads it.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.model.dra import Device
    from scheduler.plugins.dynamicresources.cel import CompiledExpression

# upstream NewCache(10, ...): the most recent expressions stay compiled.
CACHE_SIZE = 10

_CEL_MODULE = "scheduler.plugins.dynamicresources.cel"
_preload_lock = threading.Lock()
_preload_started = False


# The driver equality, either way round, either quote, no escapes (an escape goes to the
# interpreter, which reads it as CEL does).
_DRIVER_IS = re.compile(
    r"""^\s*(?:device\.driver\s*==\s*(?P<q>["'])(?P<a>[^"'\\\n]*)(?P=q)"""
    r"""|(?P<r>["'])(?P<b>[^"'\\\n]*)(?P=r)\s*==\s*device\.driver)\s*$"""
)


def driver_literal(expression: str) -> str | None:
    """The driver name of a ``device.driver == "name"`` expression; None for any other."""
    m = _DRIVER_IS.match(expression)
    if m is None:
        return None
    return m.group("a") if m.group("q") else m.group("b")


class DriverIs:
    """A compiled ``device.driver == "name"``: what the interpreter answers, without it (its
    activation alone takes about a millisecond per device)."""

    __slots__ = ("driver", "expression")
    error: str | None = None  # it always compiles

    def __init__(self, expression: str, driver: str) -> None:
        self.expression = expression
        self.driver = driver

    def device_matches(self, driver: str, dev: Device) -> bool:
        return driver == self.driver


def needs_interpreter(obj: Any) -> bool:
    """Whether ``obj`` (a DeviceClass's or a ResourceClaim's JSON, or part of one) holds a CEL
    selector other than a driver equality, at any depth: class selectors, requests,
    subrequests."""
    todo = [obj]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            cel = v.get("cel")
            if isinstance(cel, dict):
                expr = cel.get("expression")
                if isinstance(expr, str) and driver_literal(expr) is None:
                    return True
            todo.extend(x for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            todo.extend(x for x in v if isinstance(x, (dict, list)))
    return False


def loading() -> bool:
    """The evaluator is loaded or on its way (``preload`` already called)."""
    return _preload_started or _CEL_MODULE in sys.modules


def preload() -> bool:
    """Import the evaluator on a thread of its own (its parser takes about 0.3 s to build),
    once, so that the first pod whose claim needs it does not pay for it inside its scheduling
    cycle. Returns whether this call started the import."""
    global _preload_started
    with _preload_lock:
        if _preload_started or _CEL_MODULE in sys.modules:
            return False
        _preload_started = True
    threading.Thread(target=_load, name="cel-preload", daemon=True).start()
    return True


def preload_for(obj: Any) -> bool:
    """``preload`` if ``obj`` (a DeviceClass's or ResourceClaim's spec) holds a selector the
    interpreter must evaluate; the live scheduler calls this for each one that arrives."""
    if loading() or not needs_interpreter(obj):
        return False
    return preload()


def _load() -> None:
    # A failure is not ours to report: the first expression compiled imports it again and does.
    with contextlib.suppress(Exception):
        importlib.import_module(_CEL_MODULE)


class CelCache:
    """Compiled expressions, the most recently used ``size`` kept (upstream cel.Cache)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, CompiledExpression | DriverIs] = OrderedDict()

    def get_or_compile(self, expression: str) -> CompiledExpression | DriverIs:
        e = self._entries.get(expression)
        if e is not None:
            self._entries.move_to_end(expression)
            return e
        driver = driver_literal(expression)
        if driver is not None:
            e = DriverIs(expression, driver)
        else:
            from scheduler.plugins.dynamicresources.cel import CompiledExpression

            e = CompiledExpression(expression)
        self._entries[expression] = e
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return e
