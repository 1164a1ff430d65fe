"""Where the scheduling algorithm asks the scheduler extenders (upstream schedule_one.go:
findNodesThatPassExtenders, the extender half of prioritizeNodes, extendersBinding).

The extenders are the frameworks' (``fw.extenders``, non-ignorable ones first); they are called
one after the other, each on what the previous one left. What an extender raises is the
attempt's error unless it is ignorable: then it is logged and skipped (Filter, Bind), as
upstream. A Prioritize failure is never an error: that extender just adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import structlog

from scheduler.framework.extender import MAX_EXTENDER_PRIORITY, Binding, Extender
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.runtime import ExtenderScores
from scheduler.framework.status import MAX_NODE_SCORE, Code, Status, StatusError
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

log = structlog.get_logger(__name__)

# An extender's 0..10 becomes the framework's 0..100 (integer division, as upstream).
EXTENDER_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


def has_extender_filters(extenders: Sequence[Extender]) -> bool:
    return any(e.is_filter() for e in extenders)


def has_extender_prioritizers(extenders: Sequence[Extender]) -> bool:
    return any(e.is_prioritizer() for e in extenders)


def error_status(exc: Exception) -> StatusError:
    """An extender's failure as the attempt's error (upstream AsStatus(err): its text as is)."""
    return StatusError(Status(Code.ERROR, str(exc), err=exc))


def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender], pod: PodInfo, nodes: list[NodeInfo], statuses: NodeToStatus
) -> list[NodeInfo]:
    """The nodes every interested extender keeps. The nodes an extender rejects get its
    message as their status: Unschedulable, or UnschedulableAndUnresolvable (which wins for a
    node in both maps), so preemption knows which it may help. Raises StatusError."""
    for ext in extenders:
        if not nodes:
            break
        if not ext.is_interested(pod):
            continue
        try:
            kept, failed, unresolvable = ext.filter(pod, nodes)
        except Exception as exc:
            if ext.is_ignorable():
                log.info("extender_skipped", point="filter", extender=ext.name(), pod=pod.key, error=str(exc))
                continue
            raise error_status(exc) from None
        out = statuses.statuses
        for name, msg in unresolvable.items():
            out[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
        for name, msg in failed.items():
            if name not in unresolvable:
                out[name] = Status(Code.UNSCHEDULABLE, msg)
        nodes = kept
    return nodes


def prioritize_with_extenders(
    extenders: Sequence[Extender], pod: PodInfo, nodes: Sequence[NodeInfo], totals: np.ndarray
) -> list[ExtenderScores]:
    """Each interested extender's scores, times its weight and EXTENDER_SCALE, added to
    ``totals`` (aligned with ``nodes``); hosts outside ``nodes`` add nothing. An extender that
    fails adds nothing at all (upstream logs it at V(5))."""
    where: dict[str, list[int]] = {}
    for k, ni in enumerate(nodes):
        where.setdefault(ni.name, []).append(k)
    out: list[ExtenderScores] = []
    for ext in extenders:
        if not ext.is_interested(pod):
            continue
        try:
            priorities, weight = ext.prioritize(pod, nodes)
        except Exception as exc:
            log.debug("extender_prioritize_failed", extender=ext.name(), pod=pod.key, error=str(exc))
            continue
        final = np.zeros(len(nodes), dtype=np.int64)
        for hp in priorities:
            for k in where.get(hp.host, ()):
                final[k] = _int64(int(final[k]) + hp.score * weight * EXTENDER_SCALE)
        totals += final
        out.append(ExtenderScores(ext.name(), weight, list(priorities), final))
    return out


def _int64(v: int) -> int:
    """Go's int64 arithmetic wraps; an extender's out-of-range score must not raise here."""
    return ((v + 2**63) % 2**64) - 2**63


def extenders_binding(extenders: Sequence[Extender], pod: PodInfo, node: str) -> tuple[bool, Status | None]:
    """Upstream extendersBinding: the first binder interested in the pod binds it; (True, its
    outcome) then, else (False, None) and the Bind plugins run. An ignorable binder that fails
    is skipped. Blocking: the live binding cycle runs it off the event loop."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            ext.bind(Binding(pod.namespace, pod.name, pod.uid, node))
        except Exception as exc:
            if ext.is_ignorable():
                log.info("extender_skipped", point="bind", extender=ext.name(), pod=pod.key, error=str(exc))
                continue
            return True, Status(Code.ERROR, str(exc), err=exc)
        return True, None
    return False, None
