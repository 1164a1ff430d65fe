"""Pod groups in ``simulate`` (GenericWorkload gate): each group gets the live scheduler's
pod-group cycles, the first and, while one ends waiting on its PodGroup preemption, the next
(the victims are gone at once here); every cycle's pod outcomes plus the group's (its
PodGroupScheduled condition) are reported.

The cycle is the live one (core/podgroup.py). A pod the group keeps goes through the simulator's
own Permit handling: bound at once, or held at Permit (GangScheduling holds the first pods of a
gang until the pod completing the quorum allows them) and bound when its wait ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.core.cycle import CycleOutcome
from scheduler.core.podgroup import PodGroupOutcome, QueuedPodGroup
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import QueuedPodInfo
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status


@dataclass(slots=True)
class GroupRun:
    """What one group's attempt produced, for the output: the cycle's outcome and the outcome
    of each pod whose attempt ended (a pod held at Permit is reported when its wait ends)."""

    outcome: PodGroupOutcome | None = None
    pods: list[CycleOutcome] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)  # pods evicted by PodGroup preemption
    cycle: int = 1  # the group's how-manieth cycle


class SimGroupHooks:
    """The PodGroupHooks of ``simulate``."""

    def __init__(
        self,
        park_or_bind: Callable[[Framework, CycleOutcome], CycleOutcome | None],
        on_condition: Callable[[QueuedPodGroup, dict[str, str]], None],
    ) -> None:
        self.park_or_bind = park_or_bind
        self.on_condition = on_condition
        self.run = GroupRun()

    def start(self) -> GroupRun:
        self.run = GroupRun()
        return self.run

    def failure(self, fw: Framework, q: QueuedPodInfo, status: Status, nominating: tuple[str, str]) -> None:
        self.run.pods.append(CycleOutcome(q.pod, CycleState(), status=status, nominating=nominating))

    def assumed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome) -> None:
        done = self.park_or_bind(fw, out)
        if done is not None:
            self.run.pods.append(done)

    def done(self, uid: str) -> None:
        return None

    def condition(self, fw: Framework, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        self.on_condition(group, condition)
