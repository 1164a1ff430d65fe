"""Opt-in result annotations (``run --result-annotations``): after each attempt's outcome is
final, its record is written to the pod as kube-scheduler-simulator's annotations
(core/simannotations.py says which and in what shape). Off by default: it costs one write per
attempt.

One pending write per pod (a newer attempt replaces one not yet written), written in order
through the events lane (its client, rate limit and threads): a busy API delays annotations,
never bindings. The patch carries the pod's uid, so a pod deleted and recreated under its name
is left alone; a write that fails is logged and dropped (annotations are informational).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Protocol

import structlog

from scheduler.core.decision import Attempt, explain
from scheduler.core.simannotations import TOTAL_ANNOTATION_SIZE_LIMIT, result_annotations, with_history
from scheduler.live.kube.transport import ApiError, Lane
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

MAX_QUEUED = 10000
# A record with more nodes than fit the API's annotation budget is written compacted.
COMPACT_TOP = 20
COMPACT_FILTERED = 100


class PodPatcher(Protocol):
    def patch_pod(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...


def annotation_patch(att: Attempt, pod: PodInfo) -> dict[str, Any]:
    """The merge patch for ``att`` of ``pod`` (the version it was made with): its annotations
    and result-history, within the size limit."""
    current = result_annotations(explain(att))
    if sum(len(k) + len(v) for k, v in current.items()) > TOTAL_ANNOTATION_SIZE_LIMIT // 2:
        current = result_annotations(explain(att, top=COMPACT_TOP, filtered_limit=COMPACT_FILTERED))
    meta = pod.raw.get("metadata") or {}
    merged = with_history(current, meta.get("annotations") or {})
    return {"metadata": {"uid": pod.uid, "annotations": merged}}


class ResultAnnotator:
    def __init__(self, api: PodPatcher, lane: Lane, max_queued: int = MAX_QUEUED) -> None:
        self.api = api
        self.lane = lane
        self.max_queued = max_queued
        self._queue: OrderedDict[str, tuple[Attempt, PodInfo]] = OrderedDict()
        self._wake = asyncio.Event()
        self.written = 0
        self.dropped = 0

    def submit(self, att: Attempt) -> None:
        """Queue ``att``'s annotations (the store calls this when an outcome is final, while the
        attempt still has its pod's PodInfo)."""
        pod = att.pod
        if not isinstance(pod, PodInfo):
            return  # never: the store calls this before it keeps only the pod's names
        self._queue.pop(pod.uid, None)
        if len(self._queue) >= self.max_queued:
            self._queue.popitem(last=False)
            self.dropped += 1
        self._queue[pod.uid] = (att, pod)
        self._wake.set()

    def pending(self) -> int:
        return len(self._queue)

    async def write_one(self) -> bool:
        """Write the oldest queued attempt's annotations; False when nothing was queued."""
        if not self._queue:
            return False
        _, (att, pod) = self._queue.popitem(last=False)
        try:
            body = annotation_patch(att, pod)
            await self.lane.run(self.api.patch_pod, pod.namespace, pod.name, body)
            self.written += 1
        except ApiError as exc:
            level = log.info if exc.status in (404, 409) else log.warning
            level("result_annotations_not_written", pod=pod.key, status=exc.status, error=str(exc))
        except Exception as exc:  # informational: a failure must not stop the writer
            log.warning("result_annotations_not_written", pod=pod.key, error=f"{type(exc).__name__}: {exc}")
        return True

    async def run(self) -> None:
        while True:
            if not await self.write_one():
                self._wake.clear()
                await self._wake.wait()
