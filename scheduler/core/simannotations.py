"""A Decision as kube-scheduler-simulator's result annotations, for the users of its tooling
(sigs.k8s.io/kube-scheduler-simulator: simulator/scheduler/plugin/annotation and
resultstore, storereflector's result-history).

Each value is a JSON object in the simulator's shape, values as strings:

* exact from the record: ``filter-result`` (node -> plugin -> "passed" or the rejection; the
  plugins after a node's rejecting one did not run and are absent, as are skipped ones),
  ``score-result`` (node -> plugin -> what Score returned), ``finalscore-result`` (normalized and
  weighted), ``postfilter-result`` (every filtered node, the nominated one marked
  "preemption victim"), ``selected-node``;
* per extension point, from the stage's outcome: ``prefilter-result-status``,
  ``prescore-result``, ``reserve-result``, ``permit-result``, ``prebind-result``,
  ``bind-result`` (each plugin "success", "" when it skipped, the stage's message on the
  plugin that refused, and nothing for the plugins after it);
* ``result-history``: a list of the maps above, newest last, oldest dropped to stay within the
  API's 256 KiB for all annotations of an object.

Not written: ``prefilter-result`` (which nodes each PreFilter plugin allowed is not recorded)
and ``permit-result-timeout``. A compacted record holds only its best nodes' scores, so a
pod whose annotations are written late carries fewer nodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scheduler.core.decision import Decision

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = PREFIX + "prefilter-result-status"
FILTER = PREFIX + "filter-result"
POSTFILTER = PREFIX + "postfilter-result"
PRESCORE = PREFIX + "prescore-result"
SCORE = PREFIX + "score-result"
FINALSCORE = PREFIX + "finalscore-result"
RESERVE = PREFIX + "reserve-result"
PERMIT = PREFIX + "permit-result"
PREBIND = PREFIX + "prebind-result"
BIND = PREFIX + "bind-result"
SELECTED_NODE = PREFIX + "selected-node"
RESULT_HISTORY = PREFIX + "result-history"

PASSED = "passed"
SUCCESS = "success"
WAIT = "wait"
NOMINATED = "preemption victim"
# apimachinery's TotalAnnotationSizeLimitB.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


def _stage(plugins: list[str], answer: str | None, skipped: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """Per plugin of one extension point, from the stage's answer ("Success", or "<Code> (<plugin>):
    <message>"); None: the stage did not run (empty map)."""
    if answer is None:
        return {}
    out: dict[str, str] = {}
    refused = "" if answer == "Success" else answer
    who, message = _split(refused)
    for p in plugins:
        if p in skipped:
            out[p] = ""
        elif refused and (p == who or not who):
            out[p] = WAIT if answer.startswith("Wait") else message
            break
        else:
            out[p] = SUCCESS
    return out


def _split(answer: str) -> tuple[str, str]:
    """("<plugin>", "<message>") of "<Code> (<plugin>): <message>"."""
    head, _, message = answer.partition(": ")
    if "(" in head and head.endswith(")"):
        return head[head.index("(") + 1 : -1], message
    return "", message or head


def result_annotations(d: Decision) -> dict[str, str]:
    """The simulator's annotations of one attempt (without ``result-history``)."""
    skipped = set(d.skipped_filter)
    filt: dict[str, dict[str, str]] = {}
    for row in d.scores:
        filt[row.node] = {p: PASSED for p in d.filter_plugins if p not in skipped}
    if d.node is not None and d.node not in filt and d.placed:
        filt[d.node] = {p: PASSED for p in d.filter_plugins if p not in skipped}
    for node, v in d.filtered.items():
        per: dict[str, str] = {}
        for p in d.filter_plugins:
            if p in skipped:
                continue
            if p == v.plugin:
                per[p] = ", ".join(v.reasons)
                break
            per[p] = PASSED
        filt[node] = per
    post: dict[str, dict[str, str]] = {}
    if d.nominated or not d.placed:
        post = {node: {} for node in d.filtered}
        if d.nominated:
            plugin = "DefaultPreemption" if "DefaultPreemption" in d.points.get("postFilter", ()) else (
                (d.points.get("postFilter") or [""])[0])
            post[d.nominated] = {plugin: NOMINATED}
    ext = set(d.extenders)  # the simulator writes extenders' results under names of their own
    score = {row.node: {p: str(v) for p, v in zip(d.plugins, row.raw) if p not in ext} for row in d.scores}
    final = {row.node: {p: str(v) for p, v in zip(d.plugins, row.final) if p not in ext} for row in d.scores}
    prefilter_failed = not d.placed and d.filtered_total == d.num_nodes and any(
        r.plugin in d.points.get("preFilter", ()) and r.plugin not in d.filter_plugins for r in d.rejections)
    prefilter_answer = "Success"
    if prefilter_failed:
        r = d.rejections[0]
        prefilter_answer = f"Unschedulable ({r.plugin}): {', '.join(r.reasons)}"
    scored = bool(d.scores)
    out = {
        PREFILTER_STATUS: _compact(_stage(d.points.get("preFilter", []), prefilter_answer, skipped)),
        FILTER: _compact(filt),
        POSTFILTER: _compact(post),
        PRESCORE: _compact(_stage(d.points.get("preScore", []), "Success" if scored else None,
                                  set(d.skipped_score))),
        SCORE: _compact(score),
        FINALSCORE: _compact(final),
        RESERVE: _compact(_stage(d.points.get("reserve", []), d.stages.get("Reserve"))),
        PERMIT: _compact(_stage(d.points.get("permit", []), d.stages.get("Permit"))),
        PREBIND: _compact(_stage(d.points.get("preBind", []), d.stages.get("PreBind"))),
        BIND: _compact(_stage(d.points.get("bind", []), d.stages.get("Bind"))),
        SELECTED_NODE: d.node if d.node is not None and "Reserve" in d.stages else "",
    }
    return out


def with_history(current: Mapping[str, str], previous: Mapping[str, str]) -> dict[str, str]:
    """``current`` plus ``result-history``: the pod's ``previous`` history (its annotations as
    last seen) with ``current`` appended, the oldest entries dropped to fit the size limit."""
    try:
        history = json.loads(previous.get(RESULT_HISTORY) or "[]")
        if not isinstance(history, list):
            history = []
    except ValueError:
        history = []
    history.append(dict(current))
    others = sum(len(k) + len(v) for k, v in previous.items() if k != RESULT_HISTORY and not k.startswith(PREFIX))
    others += sum(len(k) + len(v) for k, v in current.items())
    while history:
        text = json.dumps(history, separators=(",", ":"))
        if others + len(RESULT_HISTORY) + len(text) <= TOTAL_ANNOTATION_SIZE_LIMIT:
            return {**current, RESULT_HISTORY: text}
        history = history[1:]
    return dict(current)
