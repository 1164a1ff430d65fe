"""Pods parked at Permit (upstream framework/runtime/waiting_pods_map.go).

A Permit plugin that answers Wait leaves the assumed pod here: its room stays held in the cache
while the scheduling loop goes on. The pod leaves when every plugin that asked to wait has
allowed it, when one rejects it (a plugin, a deletion, ``Handle.reject_waiting_pod``), or when a
plugin's timeout ends (each plugin its own, capped at 15 minutes).

Pure and synchronous: a ``WaitingPod`` keeps the first outcome it is given (upstream's
one-slot channel) and hands it to the callbacks registered with ``on_done``, in the thread that
decided it. Time is the edge's: the timeouts run on the ``PermitTimer`` the map was built with
(the live loop's clock; ``simulate`` fires the ones still pending at the end). ``allow``,
``reject`` and ``preempt`` may be called from any thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from scheduler.config.duration import format_duration
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo

# Upstream's maxTimeout: no plugin may make a pod wait longer.
MAX_PERMIT_TIMEOUT = 15 * 60.0

Cancel = Callable[[], None]
DoneCallback = Callable[[Status], None]


class PermitTimer(Protocol):
    """Calls ``fire`` after ``seconds`` (upstream time.AfterFunc); returns what stops it."""

    def __call__(self, seconds: float, fire: Callable[[], None]) -> Cancel: ...


def timeout_message(plugin: str, seconds: float) -> str:
    """What a pod is rejected with when ``plugin``'s wait ends, the duration as Go prints it."""
    return f"rejected due to timeout after waiting {format_duration(seconds)} at plugin {plugin}"


class WaitingPod:
    """One pod waiting at Permit (upstream waitingPod; the WaitingPod interface plugins get)."""

    __slots__ = ("_callbacks", "_done", "_lock", "_pending", "_result", "_timers", "pod")

    def __init__(self, pod: PodInfo, plugins_wait_time: Mapping[str, float], timer: PermitTimer | None = None) -> None:
        self.pod = pod
        self._lock = threading.Lock()
        self._pending: dict[str, float] = dict(plugins_wait_time)
        self._timers: dict[str, Cancel] = {}
        self._result: Status | None = None  # the first outcome (upstream's buffered channel)
        self._done = False
        self._callbacks: list[DoneCallback] = []
        # Held while arming, as upstream: no timer can act on a half-built pod.
        with self._lock:
            if timer is not None:
                for plugin, seconds in self._pending.items():
                    self._timers[plugin] = timer(seconds, functools.partial(self._expire, plugin))

    def __repr__(self) -> str:
        return f"WaitingPod({self.pod.key} pending={sorted(self._pending)})"

    def get_pod(self) -> PodInfo:
        return self.pod

    def get_pending_plugins(self) -> list[str]:
        """The plugins that asked to wait and have not allowed the pod yet."""
        with self._lock:
            return list(self._pending)

    def plugins_wait_time(self) -> dict[str, float]:
        """Each pending plugin's timeout in seconds (after the cap)."""
        with self._lock:
            return dict(self._pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; the last pending plugin to do so releases it."""
        with self._lock:
            if plugin in self._pending:
                del self._pending[plugin]
                cancel = self._timers.pop(plugin, None)
                if cancel is not None:
                    cancel()
            if self._pending:
                return
            callbacks = self._signal(Status(Code.SUCCESS))
            self._done = True
        self._run(callbacks)

    def reject(self, plugin: str, msg: str) -> bool:
        """Declare the pod unschedulable at ``plugin``; False if its wait had already ended."""
        return self._stop_with_status(Status(Code.UNSCHEDULABLE, msg, plugin=plugin))

    def preempt(self, plugin: str, msg: str) -> bool:
        """End the wait without calling the pod unschedulable (it is retried after backoff), as
        preemption does to a waiting victim; False if its wait had already ended."""
        return self._stop_with_status(Status(Code.ERROR, msg, plugin=plugin))

    def on_done(self, callback: DoneCallback) -> None:
        """Call ``callback(status)`` once with the outcome (Success, or the rejection): at once
        if the wait has ended, else from whichever thread ends it. The callback must not block."""
        with self._lock:
            result = self._result
            if result is None:
                self._callbacks.append(callback)
                return
        callback(result)

    def result(self) -> Status | None:
        """The outcome, or None while the pod still waits."""
        with self._lock:
            return self._result

    def stop_timers(self) -> None:
        with self._lock:
            self._cancel_timers()

    # -- internals -------------------------------------------------------------------------
    def _stop_with_status(self, status: Status) -> bool:
        with self._lock:
            self._cancel_timers()
            callbacks = self._signal(status)
            if self._done:
                return False
            self._done = True
        self._run(callbacks)
        return True

    def _expire(self, plugin: str) -> None:
        """``plugin``'s timer fired: a timer already stopped (allowed, or the wait over) is a no-op."""
        with self._lock:
            seconds = self._pending.get(plugin)
            if seconds is None or self._done:
                return
        self.reject(plugin, timeout_message(plugin, seconds))

    def _cancel_timers(self) -> None:
        timers, self._timers = self._timers, {}
        for cancel in timers.values():
            cancel()

    def _signal(self, status: Status) -> list[DoneCallback]:
        """Keep ``status`` unless an outcome is kept already (a non-blocking send to a full
        one-slot channel is dropped); returns the callbacks to run, outside the lock."""
        if self._result is not None:
            return []
        self._result = status
        callbacks, self._callbacks = self._callbacks, []
        return callbacks

    def _run(self, callbacks: list[DoneCallback]) -> None:
        result = self._result
        assert result is not None
        for cb in callbacks:
            cb(result)


class WaitingPodsMap:
    """Every waiting pod by uid, one map for all profiles (upstream waitingPodsMap, shared by
    the frameworks as kube-scheduler's New does); ``timer`` arms the timeouts of the pods added."""

    __slots__ = ("_lock", "_pods", "timer")

    def __init__(self, timer: PermitTimer | None = None) -> None:
        self.timer = timer
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pods)

    def add(self, wp: WaitingPod) -> None:
        with self._lock:
            self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> WaitingPod | None:
        """Take the pod out; its timers stop (they have, unless its wait was cut short)."""
        with self._lock:
            wp = self._pods.pop(uid, None)
        if wp is not None:
            wp.stop_timers()
        return wp

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def iterate(self, callback: Callable[[WaitingPod], None]) -> None:
        """``callback`` for each waiting pod, over a copy: it may allow, reject or look up pods."""
        with self._lock:
            pods = list(self._pods.values())
        for wp in pods:
            callback(wp)
