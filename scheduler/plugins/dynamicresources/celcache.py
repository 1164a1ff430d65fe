"""The compiled-expression cache of DynamicResources (upstream cel.Cache).

Apart from cel.py so that loading the plugin does not load cel-python (about 50 ms of every
start): the evaluator is imported on the first expression compiled, or ahead of it by
``preload`` once the cluster shows DRA objects.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.plugins.dynamicresources.cel import CompiledExpression

# upstream NewCache(10, ...): the most recent expressions stay compiled.
CACHE_SIZE = 10

_CEL_MODULE = "scheduler.plugins.dynamicresources.cel"
_preload_lock = threading.Lock()
_preload_started = False


def preload() -> bool:
    """Import the evaluator on a thread of its own (its parser takes about 0.3 s to build),
    once: the live scheduler calls this when the first DeviceClass or ResourceSlice arrives, so
    that the first pod with a claim does not pay for it inside its scheduling cycle. Returns
    whether this call started the import."""
    global _preload_started
    with _preload_lock:
        if _preload_started or _CEL_MODULE in sys.modules:
            return False
        _preload_started = True
    threading.Thread(target=_load, name="cel-preload", daemon=True).start()
    return True


def _load() -> None:
    # A failure is not ours to report: the first expression compiled imports it again and does.
    with contextlib.suppress(Exception):
        importlib.import_module(_CEL_MODULE)


class CelCache:
    """Compiled expressions, the most recently used ``size`` kept (upstream cel.Cache)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, CompiledExpression] = OrderedDict()

    def get_or_compile(self, expression: str) -> CompiledExpression:
        e = self._entries.get(expression)
        if e is not None:
            self._entries.move_to_end(expression)
            return e
        from scheduler.plugins.dynamicresources.cel import CompiledExpression

        e = CompiledExpression(expression)
        self._entries[expression] = e
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return e
