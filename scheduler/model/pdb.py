"""PodDisruptionBudgets as preemption reads them (policy/v1): the selector, the namespace,
``status.disruptionsAllowed`` and ``status.disruptedPods``. Nothing else of a PDB matters to
the scheduler: upstream decides violations from the status the disruption controller writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.labels import LabelSelector
from scheduler.model.schema import PDB, object_error


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    # None: a missing, empty ({}) or invalid selector, all of which match no pod upstream.
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return (
            self.selector is not None and namespace == self.namespace and self.selector.matches(labels)
        )

    @staticmethod
    def parse(raw: Mapping[str, Any]) -> PodDisruptionBudget:
        try:
            return PodDisruptionBudget._parse(raw)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            raise object_error("PodDisruptionBudget", raw, PDB, exc) from None

    @staticmethod
    def _parse(raw: Mapping[str, Any]) -> PodDisruptionBudget:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        sel: LabelSelector | None
        try:
            sel = LabelSelector.parse(spec.get("selector"))
        except (ValueError, TypeError, AttributeError):
            sel = None  # upstream: an invalid selector matches nothing
        if sel is not None and sel.empty:
            sel = None
        return PodDisruptionBudget(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            selector=sel,
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset(str(k) for k in (status.get("disruptedPods") or {})),
        )
