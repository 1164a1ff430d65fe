"""Fixtures shared across the test tree; the objects behind them live in scheduler.testing, where
e2e/ and bench/ can use them too."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.core.profiles import build_frameworks
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.testing.fakes import FakeClock, write_kubeconfig


@pytest.fixture
def clock() -> FakeClock:
    """Virtual time at 1000 s; ``clock.step(d)`` moves it."""
    return FakeClock()


@pytest.fixture
def kubeconfig(tmp_path: pathlib.Path) -> Callable[[dict[str, Any]], str]:
    """``kubeconfig(user)`` writes a kubeconfig with that user into tmp_path; returns its path."""
    return lambda user: write_kubeconfig(tmp_path, user)


@pytest.fixture(scope="module")
def frameworks() -> dict[str, Framework]:
    """The default configuration's frameworks by scheduler name, one set per test module."""
    return build_frameworks(load_config(None), Snapshot(), Listers())
