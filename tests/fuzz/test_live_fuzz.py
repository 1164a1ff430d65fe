"""Malformed watch events through the live edge: the watcher's store, the event handlers and the
scheduling loop (the testing Harness: real Binder, fake API, virtual time).

For every broken object (a mutated seed of any kind, or an arbitrary value, as an add or as an
update of a good object):

* nothing escapes ``Watcher.dispatch`` (the watch of every other object goes on);
* when the handlers refuse it, it is refused as an ``ObjectError`` (one line naming the object
  and field, logged ``object_rejected``), never a traceback (``watch_event_failed``);
* no scheduling cycle crashes;
* when it is refused, every other pod is scheduled exactly as without it (same node, or the
  same FailedScheduling message).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from scheduler.live.kube.clients import Credentials
from scheduler.live.watch.informer import DELETED, MODIFIED
from scheduler.live.watch.watcher import Watcher
from scheduler.model.kinds import WATCHED_KINDS
from scheduler.testing.fuzz import identity, json_values, mutated, seed_objects
from scheduler.testing.harness import Harness

SEEDS = seed_objects()


def _seed(kind: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in SEEDS if o["kind"] == kind and o["metadata"]["name"] == name))


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    at: Any = obj
    for p in parents:
        at = at[p]
    at[last] = value
    obj["metadata"]["resourceVersion"] = "2"
    return obj
BAD_LOGS = ("watch_event_failed", "scheduling_cycle_crashed")


def _event_kind(raw: dict[str, Any]) -> str:
    return raw["kind"]


async def _run(bad: tuple[str, str, Any] | None, at: int) -> tuple[dict[str, str], list[dict[str, Any]], int]:
    """The world's pods scheduled with ``bad`` (kind, event type, body) delivered after the
    first ``at`` seed objects. Returns (outcome per pod, log records, objects refused)."""
    h = Harness()
    w = Watcher(h.sched, lambda: Credentials(server="https://unused"), kinds=WATCHED_KINDS)
    events: list[tuple[str, str, Any]] = [(_event_kind(o), "ADDED", copy.deepcopy(o)) for o in SEEDS]
    if bad is not None:
        events.insert(at, bad)
    with capture_logs() as logs:
        for kind, etype, raw in events:
            w.dispatch(kind, etype, raw)
        for _ in range(4 * len(SEEDS)):
            if not await h.step():
                break
    outcome = dict(h.bound())
    for e in h.events("FailedScheduling"):
        name = e["regarding"]["name"]
        outcome.setdefault(name, f"unschedulable: {e['note']}")
    return outcome, logs, w.errors


BASELINE, _, _ = asyncio.run(_run(None, 0))


def _check(bad: tuple[str, str, Any], at: int) -> None:
    kind, _, raw = bad
    outcome, logs, refused = asyncio.run(_run(bad, at))
    failures = [r for r in logs if r["event"] in BAD_LOGS]
    assert not failures, f"{identity(raw)} broke containment: {failures[0]}"
    for r in logs:
        if r["event"] == "object_rejected":
            assert "\n" not in r["error"], r
    name = identity(raw)[1]
    if refused:
        others = {p: o for p, o in outcome.items() if p != name or kind != "Pod"}
        base = {p: o for p, o in BASELINE.items() if p != name or kind != "Pod"}
        assert others == base, f"refused {kind} {name} changed other pods' scheduling"


def test_baseline_is_interesting() -> None:
    # Most pods bound, on more than one node, one unschedulable: a comparison that can fail.
    bound = {p: n for p, n in BASELINE.items() if not n.startswith("unschedulable")}
    assert len(bound) >= 9 and len(set(bound.values())) >= 3, BASELINE
    assert BASELINE["huge"].startswith("unschedulable: 0/4 nodes are available"), BASELINE


@given(st.data(), st.sampled_from(range(len(SEEDS))), st.booleans())
def test_mutated_object(data: st.DataObject, i: int, as_update: bool) -> None:
    """A seed object broken in one to three places, as a new object or as an update of itself."""
    seed = SEEDS[i]
    raw = data.draw(mutated(seed))
    if not as_update and isinstance(raw, dict) and isinstance(raw.get("metadata"), dict):
        raw["metadata"]["name"] = f"{raw['metadata'].get('name')}-bad"
        raw["metadata"]["uid"] = f"{raw['metadata'].get('uid')}-bad"
    at = len(SEEDS) if as_update else data.draw(st.integers(0, len(SEEDS)))
    if isinstance(raw, dict) and isinstance(raw.get("metadata"), dict) and as_update:
        raw["metadata"]["resourceVersion"] = "2"
    _check((seed["kind"], MODIFIED if as_update else "ADDED", raw), at)


@given(st.sampled_from(sorted({o["kind"] for o in SEEDS})), json_values(max_leaves=12),
       st.sampled_from(["ADDED", MODIFIED, DELETED]), st.integers(0, len(SEEDS)))
def test_arbitrary_body(kind: str, body: Any, etype: str, at: int) -> None:
    """Any decoded JSON at all, as the body of an event of any watched kind."""
    if isinstance(body, dict):
        body.setdefault("metadata", {"name": "junk", "namespace": "fz", "uid": "junk"})
    _check((kind, etype, body), at)


# What the fuzzing above found, each fixed: (id, kind, event, body). Every case ran into a
# traceback (watch_event_failed) or escaped the watcher before its fix.
FOUND: list[tuple[str, str, str, Any]] = [
    # Watcher.dispatch read the body before any containment: the watch of the kind stopped.
    ("body-not-an-object", "Node", MODIFIED, None),
    ("body-a-list", "Pod", "ADDED", [{"metadata": {"name": "x"}}]),
    # The node handler, the cache and the pod delete handler read metadata.name with .get on
    # whatever metadata was.
    ("node-metadata-a-list", "Node", "ADDED", {"kind": "Node", "metadata": [["name", "n9"]], "spec": {}}),
    ("pod-delete-metadata-a-list", "Pod", DELETED, {"kind": "Pod", "metadata": [["name", "plain"]]}),
    # A quantity with a line break was quoted raw into the error: two lines (now Go's %q).
    ("node-quantity-line-break", "Node", MODIFIED,
     _with(_seed("Node", "n0"), "status.allocatable", {"cpu": "a\nb", "memory": "4Gi", "pods": "20"})),
    # The store's tombstone of a pod read spec with .get on whatever spec was.
    ("pod-update-spec-a-boolean", "Pod", MODIFIED, _with(_seed("Pod", "plain"), "spec", True)),
    # PodInfo's own error path read metadata.namespace with .get on whatever metadata was.
    ("pod-metadata-a-boolean", "Pod", MODIFIED, {**_seed("Pod", "bound"), "metadata": True}),
    # A refused Node update had already re-indexed the node's images from the bad body.
    ("node-update-status-a-list", "Node", MODIFIED,
     _with(_seed("Node", "n2"), "status", [["images", [{"names": ["img2:1"], "sizeBytes": 1}]]])),
    # A PodDisruptionBudget's parse had no containment at all (metadata not an object).
    ("pdb-metadata-a-boolean", "PodDisruptionBudget", MODIFIED, {**_seed("PodDisruptionBudget", "web"),
                                                                 "metadata": True}),
    # DRA objects were refused with a bare ValueError (a traceback) instead of an ObjectError.
    ("slice-generation-a-list", "ResourceSlice", MODIFIED,
     _with(_seed("ResourceSlice", "n2-gpu"), "spec.pool", {"name": "n2", "generation": [1],
                                                            "resourceSliceCount": 1})),
]


@pytest.mark.parametrize(("kind", "etype", "body"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_found(kind: str, etype: str, body: Any) -> None:
    outcome, logs, refused = asyncio.run(_run((kind, etype, copy.deepcopy(body)), len(SEEDS)))
    assert [r["event"] for r in logs if r["event"] in (*BAD_LOGS, "object_rejected")] == ["object_rejected"] * refused
    assert all("\n" not in r["error"] for r in logs if r["event"] == "object_rejected")
    assert outcome == BASELINE
