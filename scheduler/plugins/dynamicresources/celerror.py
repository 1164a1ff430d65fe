"""The error of a CEL selector, apart from both the evaluator (cel.py, which raises it) and
the cache (celcache.py, which loads the evaluator on first use), so that the allocator can
catch it without loading cel-python and neither module imports the other's importer."""

from __future__ import annotations


class CelError(Exception):
    """A compile or runtime error, with cel-go-like text where known."""
