"""What-if: one pod's decision recomputed now, from the cluster's objects (as ``explain`` read
them through the API) and the scheduler's configuration, with nothing written anywhere.

The pod is taken as pending (a bound pod leaves its node first, so the answer is where it would
go now); every other pod stays where it is, other pending pods are not placed. The same Cache,
Snapshot, Framework and scheduling cycle as the live scheduler (simulator.py), one attempt, so
a preemption shows as the node it would nominate and the victims it would take. For a pod that
fits nowhere, ``near_misses`` adds the nodes that exactly one Filter plugin rejects.

Unlike the live scheduler, the pods nominated to nodes are not held for them, and the binding
cycle is not run (Permit's answer is the last thing known).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config import ConfigError, SchedulerConfig
from scheduler.core.decision import SOURCE_WHAT_IF, WAITING, Decision, from_outcome, near_misses
from scheduler.core.profiles import FrameworkError
from scheduler.model.schema import ObjectError
from scheduler.simulate.simulator import InputError, Simulator, build_cluster

GATED = "gated"


class WhatIfError(Exception):
    """The cluster's objects or the configuration cannot be simulated (one line)."""


def _key(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def as_pending(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as if it had not been placed yet."""
    out = copy.deepcopy(dict(pod))
    spec = out.setdefault("spec", {})
    spec.pop("nodeName", None)
    status = out.setdefault("status", {})
    status["phase"] = "Pending"
    status.pop("conditions", None)
    return out


def what_if(
    docs: Sequence[Mapping[str, Any]], config: SchedulerConfig, pod_key: str, *, seed: int | None = None,
    hints: bool = True,
) -> Decision:
    """The decision for ``pod_key`` now (see the module docstring). WhatIfError when the pod is
    not among ``docs``, has no profile here, or the objects cannot be read."""
    target: dict[str, Any] | None = None
    rest: list[dict[str, Any]] = []
    for doc in docs:
        if doc.get("kind") == "Pod" and _key(doc) == pod_key:
            target = as_pending(doc)
        elif doc.get("kind") == "Pod" and not (doc.get("spec") or {}).get("nodeName"):
            continue  # other pending pods are not placed in a what-if
        else:
            rest.append(dict(doc))
    if target is None:
        raise WhatIfError(f"pod {pod_key} not found")
    try:
        sim = Simulator(build_cluster([*rest, target]), config, seed)
    except (InputError, ObjectError, FrameworkError, ConfigError) as exc:
        raise WhatIfError(str(exc)) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise WhatIfError(f"{type(exc).__name__}: {exc}") from None
    now = time.time()
    for pod, why in sim.gated:
        if pod.key == pod_key:
            return Decision(pod_key, pod.uid, outcome=GATED, message=why, time=now, source=SOURCE_WHAT_IF,
                            num_nodes=len(sim.snapshot.node_infos) or len(sim.cache.nodes))
    pending = next((q.pod for q in sim.pending if q.pod.key == pod_key), None)
    if pending is None:
        name = (target.get("spec") or {}).get("schedulerName") or "default-scheduler"
        raise WhatIfError(f"pod {pod_key}: no profile for schedulerName {name} in the scheduler's configuration")
    fw = sim.frameworks[pending.scheduler_name]
    started = time.perf_counter()
    out = sim.attempt(pending)
    seconds = time.perf_counter() - started
    if out is None:
        # Waits at Permit: what the cycle decided is known, the wait's end is not.
        waiting = sim.waiting_attempt(pending.uid)
        assert waiting is not None
        d = from_outcome(waiting, fw, sim.snapshot.node_infos, at=now, seconds=seconds, source=SOURCE_WHAT_IF)
        d.outcome = WAITING
        return d
    d = from_outcome(out, fw, sim.snapshot.node_infos, at=now, seconds=seconds, source=SOURCE_WHAT_IF)
    if hints and not d.placed:
        d.near_misses = near_misses(fw, pending, sim.snapshot)
    return d
