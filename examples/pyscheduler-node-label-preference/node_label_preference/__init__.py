"""An out-of-tree Score plugin: nodes with ``label`` (and, if given, ``value``) score 100, others 0."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, ScorePlugin
from scheduler.framework.snapshot import Snapshot
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo


@dataclass(frozen=True, slots=True)
class Args:
    label: str
    value: str | None = None


class NodeLabelPreference(ScorePlugin):
    name = "NodeLabelPreference"

    def __init__(self, args: Args) -> None:
        self.args = args

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> NodeLabelPreference:
        args = dict(args or {})
        label = args.pop("label", None)
        if not isinstance(label, str) or not label:
            raise ValueError("label: Required value: name of the node label to prefer")
        value = args.pop("value", None)
        if args:
            raise ValueError(f"unknown field(s): {', '.join(sorted(args))}")
        return cls(Args(label, None if value is None else str(value)))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        v = node.labels.get(self.args.label)
        if v is None or (self.args.value is not None and v != self.args.value):
            return 0
        return 100

    # Optional batch form: same answers, one call for many nodes.
    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        infos = snapshot.node_infos
        return np.fromiter((self.score(state, pod, infos[i]) for i in idx.tolist()), dtype=np.int64, count=len(idx))
