"""The cyclic garbage collector of a long-running scheduler.

Stdlib only: ``cli`` uses it before the scheduler's own modules are imported.

Two phases. Start-up (``long_lived_objects``) makes objects that live as long as the process.
Afterwards (``steady_state``) every pod and node arrives through the watch, each a tree of
dicts and lists that lives as long as its object, and CPython's default policy rescans all of
them in every full collection: 13 full collections cost 4.6 of 22.7 CPU-s of a live
SchedulingBasic run (5,000 nodes, 11,000 pods), each a pause of the event loop.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from typing import Any

# Young-generation threshold: a watch event's decoded body usually dies before a collection
# at this size looks at it (CPython's 700 scans most of them once).
YOUNG_THRESHOLD = 10_000
# Middle generation: collected after this many young collections (CPython's 10). What survives
# the young generation is mostly long-lived (cached pods), and each middle collection is one
# pause of the event loop over all of it: 40-100 ms at 10, the worst latencies of a steady
# arrival. At 2 the pauses are a few times shorter for about the same total work.
MIDDLE_THRESHOLD = 2
# Full collections: after this many middle ones (CPython's 10), so that they come after about as
# many young collections as with CPython's (10, 10): a full collection costs as before.
OLD_THRESHOLD = 50
# How often frozen objects go back to the collector for one full pass, so that cycles among
# them that became garbage are freed: a bounded leak, paid for once per period.
FULL_RESCAN_S = 600.0


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


GcCallback = Callable[[str, dict[str, Any]], None]
# The steady-state callback in force, if any.
_installed: GcCallback | None = None


def steady_state(
    young: int = YOUNG_THRESHOLD, rescan_s: float = FULL_RESCAN_S, clock: Callable[[], float] = time.monotonic,
    middle: int = MIDDLE_THRESHOLD, old: int = OLD_THRESHOLD,
) -> GcCallback:
    """Objects that survived a full collection are frozen right after it, so the next full
    collection scans only what arrived since; every ``rescan_s`` they are unfrozen instead, and
    the next full collection covers everything once. Returns the installed callback (tests
    remove it)."""
    global _installed
    gc.set_threshold(young, middle, old)
    last = [clock()]
    if _installed in gc.callbacks:
        gc.callbacks.remove(_installed)  # one per process, however often an app starts

    def after_full_collection(phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        now = clock()
        if now - last[0] >= rescan_s:
            last[0] = now
            gc.unfreeze()
        else:
            gc.freeze()

    gc.callbacks.append(after_full_collection)
    _installed = after_full_collection
    return after_full_collection
