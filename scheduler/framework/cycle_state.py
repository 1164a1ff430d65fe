"""Per-attempt state shared between a plugin's extension points."""

from __future__ import annotations

from typing import Any, TypeVar

from scheduler.framework.status import Code, Status, StatusError, go_quote

T = TypeVar("T")


class CycleState:
    __slots__ = (
        "_data",
        "parallel_pre_bind_plugins",
        "pod_group_cycle",
        "record_plugin_metrics",
        "skip_all_post_filter",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # This cycle times each plugin (upstream samples one cycle in ten: framework/metrics.py).
        self.record_plugin_metrics = record_plugin_metrics
        # In a pod-group cycle: the group's own state (upstream SetPodGroupSchedulingCycle).
        self.pod_group_cycle: CycleState | None = None
        # WorkloadAwarePreemption's dry runs skip every PostFilter plugin.
        self.skip_all_post_filter = False
        # Set by PreBindPreFlight: PreBind plugins with nothing to do, and those that may run
        # side by side with their neighbours (upstream Set{Skip,Parallel}PreBindPlugins).
        self.skip_pre_bind_plugins: frozenset[str] = frozenset()
        self.parallel_pre_bind_plugins: frozenset[str] = frozenset()

    def is_pod_group_scheduling_cycle(self) -> bool:
        return self.pod_group_cycle is not None

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str, kind: type[T]) -> T:
        """Read a value written by an earlier phase; a missing key is an Error status, as upstream."""
        try:
            value = self._data[key]
        except KeyError:
            raise StatusError(Status(Code.ERROR, f"error reading {go_quote(key)} from cycleState: not found")) from None
        if not isinstance(value, kind):
            raise StatusError(Status(Code.ERROR, f"{go_quote(key)} in cycleState has type {type(value).__name__}"))
        return value

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState(self.record_plugin_metrics)
        # Values that know how to copy themselves are copied (preemption mutates the clone).
        c._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.pod_group_cycle = self.pod_group_cycle
        c.skip_all_post_filter = self.skip_all_post_filter
        c.skip_pre_bind_plugins = self.skip_pre_bind_plugins
        c.parallel_pre_bind_plugins = self.parallel_pre_bind_plugins
        return c
