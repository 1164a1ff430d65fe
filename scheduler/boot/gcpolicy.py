"""The cyclic garbage collector around the start-up phases that build long-lived objects.

Stdlib only: ``cli`` uses it before the scheduler's own modules are imported.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def long_lived_objects() -> Iterator[None]:
    """No cyclic collection while the block makes objects that live as long as the process
    (imports, profiles, the first LIST): collecting only rescans them. Then freeze them out of
    every later collection (the first one after would still scan them all); reference counting
    still frees any that go away."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
