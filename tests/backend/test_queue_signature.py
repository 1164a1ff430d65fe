"""The queue signs pods for OpportunisticBatching when they enter it and when they are updated
in it (upstream scheduling_queue_test.go TestPriorityQueue_AddComputesSignature,
TestPriorityQueue_UpdateRecomputesSignature, TestPriorityQueue_SignPod)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scheduler.backend.queue import SchedulingQueue
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_pod
from scheduler.testing.fakes import FakeClock
from tests.backend.queue_helpers import PROFILE, QueueOnlyFramework


class SigningFramework(QueueOnlyFramework):
    """sig-<label "key"> (sig-default without it), as upstream's test signer."""

    def __init__(self, batching: bool) -> None:
        super().__init__()
        self.batch: Any = object() if batching else None

    def sign_pod(self, pod: PodInfo) -> bytes | None:
        return f"sig-{pod.labels.get('key', 'default')}".encode()


def _queue(batching: bool = True) -> SchedulingQueue:
    return SchedulingQueue({PROFILE: SigningFramework(batching)}, FakeClock(), hint_maps={PROFILE: {}})  # type: ignore[dict-item]


def _pod(value: str) -> PodInfo:
    return PodInfo(make_pod("pod1", labels={"key": value}, scheduler_name=PROFILE, uid="pod1"))


@pytest.mark.parametrize(("batching", "expected"), [(True, b"sig-value1"), (False, None)])
def test_add_computes_signature(batching: bool, expected: bytes | None) -> None:
    q = _queue(batching)
    q.add(_pod("value1"))
    info = q.get("pod1")
    assert info is not None and info.signature == expected


def _in_backoff(q: SchedulingQueue, p: PodInfo) -> None:
    q.backoff_q.add(q._new_info(p))


def _in_unschedulable(q: SchedulingQueue, p: PodInfo) -> None:
    q.unschedulable_pods.add_or_update(q._new_info(p))


@pytest.mark.parametrize(
    "prepare",
    [lambda q, p: q.add(p), _in_backoff, _in_unschedulable],
    ids=["pod in activeQ", "pod in backoffQ", "pod in unschedulablePods"],
)
def test_update_recomputes_signature(prepare: Callable[[SchedulingQueue, PodInfo], None]) -> None:
    q = _queue()
    old, new = _pod("value1"), _pod("value2")
    prepare(q, old)
    assert q.get("pod1").signature == b"sig-value1"  # type: ignore[union-attr]
    q.update(old, new)
    assert q.get("pod1").signature == b"sig-value2"  # type: ignore[union-attr]


def test_a_pod_in_flight_keeps_its_signature_until_requeued() -> None:
    # Upstream records the update as an in-flight event and leaves the QueuedPodInfo alone.
    q = _queue()
    old = _pod("value1")
    q.add(old)
    popped = q.pop_nowait()
    assert popped is not None
    q.update(old, _pod("value2"))
    assert popped.signature == b"sig-value1"
