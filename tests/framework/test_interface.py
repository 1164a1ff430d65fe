"""The Handle plugins get (scheduler/framework/interface.py; upstream framework.Handle)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot


class ApiClientLike:
    """Stands for the kubernetes ApiClient (not callable, as that class is not)."""


@pytest.mark.parametrize(
    "given",
    [
        None,  # offline (simulate): no client
        ApiClientLike(),  # an object is handed over as it is
        "factory",  # the live app's: the client is built when a plugin first reads it
    ],
)
def test_client_set_is_built_at_the_first_read(given: Any) -> None:
    calls: list[ApiClientLike] = []

    def factory() -> ApiClientLike:
        calls.append(ApiClientLike())
        return calls[-1]

    handle = Handle(Snapshot(), Listers(), client_set=factory if given == "factory" else given)
    assert not calls  # nothing built with the handle
    first = handle.client_set
    assert handle.client_set is first  # one client, however often it is read
    if given == "factory":
        assert calls == [first]
    else:
        assert first is given and not calls
