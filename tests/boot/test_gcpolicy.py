"""The steady-state collector policy (scheduler/boot/gcpolicy.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from scheduler.boot.gcpolicy import MIDDLE_THRESHOLD, OLD_THRESHOLD, YOUNG_THRESHOLD, steady_state


@pytest.fixture
def restore_gc() -> Iterator[None]:
    threshold, callbacks = gc.get_threshold(), list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.set_threshold(*threshold)
    gc.unfreeze()


@pytest.mark.parametrize(
    ("frozen_before", "elapsed", "frozen_after"),
    [
        (False, 0.0, True),  # within the period: survivors of a full collection are frozen
        (True, 600.0, False),  # the period is over: everything goes back for one full pass
    ],
)
def test_full_collection_freezes_or_rescans(
    restore_gc: None, frozen_before: bool, elapsed: float, frozen_after: bool
) -> None:
    now = [0.0]
    steady_state(clock=lambda: now[0])
    assert gc.get_threshold() == (YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
    keep = [[i] for i in range(1000)]  # tracked containers that survive the collection
    if frozen_before:
        gc.freeze()
    else:
        gc.unfreeze()
    now[0] = elapsed
    gc.collect()
    assert (gc.get_freeze_count() >= len(keep)) is frozen_after


def test_young_collections_leave_the_frozen_alone(restore_gc: None) -> None:
    steady_state(clock=lambda: 0.0)
    gc.unfreeze()
    gc.collect(0)
    assert gc.get_freeze_count() == 0


def test_installed_once(restore_gc: None) -> None:
    steady_state()
    steady_state()
    assert sum(1 for c in gc.callbacks if c.__name__ == "after_full_collection") == 1


def test_full_collections_come_as_often_as_with_cpythons_defaults() -> None:
    # Shorter middle pauses must not mean more full collections: young collections per full
    # one stay about CPython's (10 middle collections of 10 young ones each).
    young_per_full = (MIDDLE_THRESHOLD + 1) * (OLD_THRESHOLD + 1)
    assert 100 <= young_per_full <= 200 and MIDDLE_THRESHOLD < 10
