"""Helpers shared by several plugins (upstream framework/plugins/helper)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler.framework.interface import Handle, Plugin
from scheduler.framework.status import MAX_NODE_SCORE
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

# helper.DoNotScheduleTaintsFilterFunc: the taint effects a Filter must honour.
DO_NOT_SCHEDULE_EFFECTS: tuple[str, ...] = ("NoSchedule", "NoExecute")


class HandlePlugin(Plugin):
    """Base of a plugin built from its Handle alone: it takes no arguments."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> Plugin:
        if args:
            raise ValueError(f"plugin {cls.name} takes no arguments")
        return cls(handle)


def default_normalize_score(
    scores: np.ndarray, max_priority: int = MAX_NODE_SCORE, reverse: bool = False
) -> np.ndarray:
    """Upstream DefaultNormalizeScore, in place on an int64 array (also returned).

    The maximum starts at 0, so an all-zero (or all-negative) list keeps its values, or becomes
    ``max_priority`` everywhere when ``reverse``. Otherwise each score becomes
    ``max_priority * score / max`` with Go's truncating integer division, then
    ``max_priority - score`` when ``reverse``.
    """
    if scores.size == 0:
        return scores
    top = max(int(scores.max()), 0)
    if top == 0:
        if reverse:
            scores[...] = max_priority
        return scores
    num = scores.astype(np.int64, copy=False) * max_priority
    # Go divides toward zero; numpy's // floors, which differs only for negative numerators.
    out = np.where(num >= 0, num // top, -((-num) // top))
    if reverse:
        out = max_priority - out
    scores[...] = out
    return scores


def as_pod(obj: Any) -> PodInfo | None:
    """A queueing-hint argument as a PodInfo (the queue may hand over PodInfos or raw dicts)."""
    if obj is None or isinstance(obj, PodInfo):
        return obj
    if isinstance(obj, Mapping):
        return PodInfo(obj)
    raise TypeError(f"expected a Pod, got {type(obj).__name__}")


def matching_scheduling_group(a: PodInfo, b: PodInfo) -> bool:
    """Both pods name the same PodGroup (upstream helper.MatchingSchedulingGroup)."""
    return (
        a.namespace == b.namespace
        and a.scheduling_group is not None
        and b.scheduling_group is not None
        and a.scheduling_group == b.scheduling_group
    )


def as_node(obj: Any) -> NodeInfo | None:
    """A queueing-hint argument as a NodeInfo (NodeInfo or raw Node dict)."""
    if obj is None or isinstance(obj, NodeInfo):
        return obj
    if isinstance(obj, Mapping):
        return NodeInfo(obj)
    raise TypeError(f"expected a Node, got {type(obj).__name__}")
