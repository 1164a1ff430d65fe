"""The lease fence: what a write that must not outlive this replica's leadership checks.

With leader election a Binding is sent only while the fence is open (the last successful
renewal is younger than the renew deadline). The check runs in the sending thread right before
the request, and again right before its bytes are written (the connections ``clients.py``
installs call ``check_send_guard``): a thread checked the fence, then the process was paused
(SIGSTOP) before the bytes left; on waking it must not send them. The request may not outlive
the lease as this replica last renewed it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from scheduler.live.kube.rawhttp import check_send_guard, send_guard
from scheduler.live.kube.transport import REQUEST_TIMEOUT, Fenced

__all__ = ["Fence", "check_send_guard", "fence_guard", "send_fenced"]

T = TypeVar("T")


class Fence(Protocol):
    """What the leader elector tells writers (``LeaderElector`` implements it)."""

    def open_for(self) -> float:
        """Seconds left before the renew deadline passes; <= 0: no new cycle or Binding."""
        ...

    def lease_left(self) -> float:
        """Seconds until other candidates may take the lease, counted from the last renewal."""
        ...


def fence_guard(fence: Fence) -> tuple[Callable[[], None], float]:
    """The check a fenced request runs (now, and again right before its bytes are written) and
    its timeout: it must not outlive our claim to the lease. Raises ``Fenced`` (nothing sent)
    when the fence is closed already."""

    def check() -> None:
        if fence.open_for() <= 0:
            raise Fenced()

    check()
    return check, max(0.1, min(REQUEST_TIMEOUT, fence.lease_left()))


def send_fenced(fence: Fence, send: Callable[..., T], *args: Any) -> T:
    """``send(*args, timeout=...)`` from the sending thread, only while ``fence`` is open;
    raises ``Fenced`` (nothing sent) once it is closed."""
    check, timeout = fence_guard(fence)
    send_guard.check = check  # and again right before its bytes are written
    try:
        return send(*args, timeout=timeout)
    finally:
        send_guard.check = None
