"""Pod groups in ``simulate`` (GenericWorkload gate): each group is tried once, as the live
scheduler's first pod-group cycle for it would, and every pod's outcome plus the group's
(its PodGroupScheduled condition) is reported.

The cycle is the live one (core/podgroup.py). What the live scheduler does asynchronously is
done here at once: a pod the group keeps is bound as soon as Permit lets it go (GangScheduling
holds the first pods of a gang at Permit until the pod completing the quorum allows them), and a
pod still waiting when the group is done times out as its Permit wait would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.config.duration import format_duration
from scheduler.core.cycle import CycleOutcome
from scheduler.core.podgroup import PodGroupOutcome, QueuedPodGroup
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import QueuedPodInfo
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo


class _WaitingPod:
    """A pod held at Permit (upstream waitingPod, reduced to what Permit plugins call here)."""

    def __init__(self, pod: PodInfo, release: Callable[[], None]) -> None:
        self.pod = pod
        self._release = release
        self.done = False

    def allow(self, plugin: str) -> None:
        if not self.done:
            self.done = True
            self._release()


class WaitingPods:
    """uid -> waiting pod, what the handles' ``get_waiting_pod`` reads."""

    def __init__(self) -> None:
        self.pods: dict[str, _WaitingPod] = {}

    def get(self, uid: str) -> _WaitingPod | None:
        return self.pods.get(uid)


@dataclass(slots=True)
class GroupRun:
    """Everything one group's attempt produced, for the output."""

    outcome: PodGroupOutcome | None = None
    pods: list[CycleOutcome] = field(default_factory=list)


class SimGroupHooks:
    """The PodGroupHooks of ``simulate``: binding, failures, the condition."""

    def __init__(
        self,
        bind: Callable[[Framework, CycleOutcome], CycleOutcome],
        forget: Callable[[str], None],
        waiting: WaitingPods,
        on_condition: Callable[[QueuedPodGroup, dict[str, str]], None],
    ) -> None:
        self.bind = bind
        self.forget = forget
        self.waiting = waiting
        self.on_condition = on_condition
        self.run = GroupRun()
        # Pods waiting at Permit: uid -> (framework, outcome, timeout).
        self._held: dict[str, tuple[Framework, CycleOutcome, float]] = {}

    def start(self) -> GroupRun:
        self.run = GroupRun()
        return self.run

    def failure(self, fw: Framework, q: QueuedPodInfo, status: Status, nominating: tuple[str, str]) -> None:
        out = CycleOutcome(q.pod, CycleState(), status=status, nominating=nominating)
        self.run.pods.append(out)

    def assumed(self, fw: Framework, q: QueuedPodInfo, out: CycleOutcome) -> None:
        self.run.pods.append(out)
        if out.permit_timeout is None:
            self.bind(fw, out)
            return
        uid = out.pod.uid
        self._held[uid] = (fw, out, out.permit_timeout)

        def release() -> None:
            self._held.pop(uid, None)
            self.waiting.pods.pop(uid, None)
            self.bind(fw, out)

        self.waiting.pods[uid] = _WaitingPod(out.pod, release)

    def done(self, uid: str) -> None:
        return None

    def condition(self, fw: Framework, group: QueuedPodGroup, condition: dict[str, str]) -> None:
        self.on_condition(group, condition)

    def expire_waiting(self) -> None:
        """The group is done: pods still held at Permit reach their timeout."""
        for uid, (fw, out, timeout) in list(self._held.items()):
            self._held.pop(uid, None)
            self.waiting.pods.pop(uid, None)
            assumed = out.assumed
            if assumed is None:
                continue
            fw.run_unreserve(out.state, assumed, assumed.node_name)
            self.forget(assumed.uid)
            plugin = "GangScheduling"
            out.status = Status(
                Code.UNSCHEDULABLE,
                f"rejected due to timeout after waiting {format_duration(timeout)} at plugin {plugin}",
                plugin=plugin,
            )
            out.assumed = None
