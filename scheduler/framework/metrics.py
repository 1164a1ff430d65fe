"""What the framework and its plugins report for metrics: calls on a recorder the
edge supplies (``scheduler.live.metrics``); the default records nothing, so ``simulate`` and the
tests pay nothing. The core never imports a metrics library.

Per-plugin timing is sampled as upstream samples it (schedule_one.go pluginMetricsSamplePercent):
one scheduling cycle in ten, one PreEnqueue run in ten. A batch form that decides many nodes in
one call reports its time once with the number of nodes it covered; the recorder spreads it.
"""

from __future__ import annotations

import random

# Upstream pluginMetricsSamplePercent.
PLUGIN_METRICS_SAMPLE_PERCENT = 10


class MetricsRecorder:
    """The no-op recorder. ``enabled`` False tells the framework not to sample at all."""

    enabled = False

    def __init__(self) -> None:
        self._rng = random.Random()

    def sample(self) -> bool:
        """Whether this cycle (or PreEnqueue run) times its plugins."""
        return self.enabled and self._rng.random() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT

    def plugin(self, point: str, plugin: str, status: str, seconds: float, count: int = 1) -> None:
        """One plugin ran at ``point`` ``count`` times (once per node for a batch form) in
        ``seconds`` all told, each ending in ``status``."""

    def batch_hint(self, profile: str, seconds: float, hinted: bool) -> None:
        """OpportunisticBatching looked for a node hint (scheduler_get_node_hint_duration_seconds)."""

    def batch_attempt(self, profile: str, result: str) -> None:
        """A batching attempt ended: no_hint, hint_used or hint_not_used."""

    def batch_flushed(self, profile: str, reason: str) -> None:
        """The kept batch was found unusable or dropped, for ``reason``."""

    def batch_stored(self, profile: str, seconds: float) -> None:
        """A cycle's results were handed to the batch (scheduler_store_schedule_results_duration_seconds)."""

    def volume_stage_error(self, operation: str) -> None:
        """VolumeBinding's binder failed at ``operation``: predicate, assume or bind."""

    def resource_claim_created(self, status: str) -> None:
        """DynamicResources created a claim for extended resources: ``status`` success or failure."""

    def binding_conditions(self, profile: str, driver: str, status: str) -> None:
        """A device with binding conditions in an allocation PreBind waited for (status success,
        failed, timeout, error): scheduler_dra_bindingconditions_allocations_total."""

    def binding_conditions_wait(self, profile: str, driver: str, status: str, seconds: float) -> None:
        """PreBind's wait for binding conditions, once per allocated device of each claim:
        scheduler_dra_bindingconditions_wait_duration_seconds."""


NOOP = MetricsRecorder()

