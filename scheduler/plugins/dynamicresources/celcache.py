"""The compiled-expression cache of DynamicResources (upstream cel.Cache).

Apart from cel.py so that loading the plugin does not load cel-python (about 50 ms of every
start): the evaluator is imported on the first expression compiled.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.plugins.dynamicresources.cel import CompiledExpression

# upstream NewCache(10, ...): the most recent expressions stay compiled.
CACHE_SIZE = 10


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
