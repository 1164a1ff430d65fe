"""One decision of kube-scheduler against the same decision of ``simulate``.

Checks (each counted per decision where it applies):

``outcome``   both scheduled the pod, or both found it unschedulable
``feasible``  the same set of feasible nodes (and the binary's evaluated/feasible counts)
``scores``    every plugin's weighted score on every feasible node, and every extender's answer
``totals``    every node's total score
``chosen``    the binary's node is one of simulate's top-scored nodes
``message``   the FailedScheduling event text equals simulate's message
``preemption`` (seeds with priorities) the nominated node and the victims of an unschedulable
              pod equal simulate's "nominated"/"victims"
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .kslog import Attempt

CHECKS = ("outcome", "feasible", "scores", "totals", "chosen", "message", "preemption")

# The errors a preemption dry run aggregates, "[a, b]" at the end of the message: the binary
# checks nodes in parallel and lists the errors as its goroutines finish, in no fixed order.
_AGGREGATE = re.compile(r"^(.*preemption: )\[(.*)\]$", re.DOTALL)


def same_message(theirs: str | None, ours: str | None) -> bool:
    """Equal messages; an aggregate of preemption errors compares as a set of errors."""
    if theirs == ours or theirs is None or ours is None:
        return theirs == ours
    a, b = _AGGREGATE.match(theirs), _AGGREGATE.match(ours)
    if a is None or b is None or a.group(1) != b.group(1):
        return False
    # Compared as multisets of ", "-separated pieces: a reordering of whole errors keeps them.
    return sorted(a.group(2).split(", ")) == sorted(b.group(2).split(", "))


@dataclass
class Mismatch:
    seed: int
    pod: str
    check: str
    node: str = ""
    plugin: str = ""
    kube_scheduler: Any = None
    pyscheduler: Any = None

    def __str__(self) -> str:
        where = " ".join(
            p for p in (f"node={self.node}" if self.node else "", f"plugin={self.plugin}" if self.plugin else "") if p
        )
        return (
            f"seed={self.seed} pod={self.pod} check={self.check} {where}".rstrip()
            + f": kube-scheduler={self.kube_scheduler!r} pyscheduler={self.pyscheduler!r}"
        )


@dataclass
class Decision:
    """What the reference did with one pod, from its log and the API."""

    pod: str
    attempt: Attempt
    api_node: str | None  # spec.nodeName once bound
    event_message: str | None  # FailedScheduling event text
    nominated: str | None = None  # status.nominatedNodeName after the attempt (None: not observed)
    victims: list[str] | None = None  # pods the binary preempted for it


@dataclass
class Tally:
    decisions: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    scored: int = 0
    applicable: Counter[str] = field(default_factory=Counter)
    agreed: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)
    plugin_values: Counter[str] = field(default_factory=Counter)  # plugin score values compared

    def merge(self, other: Tally) -> None:
        self.decisions += other.decisions
        self.scheduled += other.scheduled
        self.unschedulable += other.unschedulable
        self.scored += other.scored
        self.applicable.update(other.applicable)
        self.agreed.update(other.agreed)
        self.mismatches.extend(other.mismatches)
        self.plugin_values.update(other.plugin_values)

    def summary(self) -> str:
        lines = [
            f"decisions: {self.decisions} (scheduled {self.scheduled}, unschedulable {self.unschedulable}, "
            f"scored with >=2 feasible nodes {self.scored})"
        ]
        # The pod checks, then any other check this tally counted (the workload mode's).
        for c in (*CHECKS, *sorted(set(self.applicable) - set(CHECKS))):
            n = self.applicable[c]
            ok = self.agreed[c]
            pct = f"{100.0 * ok / n:.1f}%" if n else "n/a"
            lines.append(f"  {c:<9} {ok}/{n} agree ({pct})")
        if self.plugin_values:
            lines.append(
                "  plugin scores compared: " + ", ".join(f"{k} {v}" for k, v in sorted(self.plugin_values.items()))
            )
        return "\n".join(lines)


def _ours_feasible(rec: dict[str, Any]) -> set[str]:
    if rec.get("scores"):
        return set(rec["scores"])
    return {rec["node"]} if rec.get("node") else set()


def _theirs_feasible(d: Decision) -> set[str]:
    a = d.attempt
    if a.totals:
        return set(a.totals)
    if a.plugin_scores:
        return set(a.plugin_scores)
    return {a.node} if a.node else set()


def compare(seed: int, d: Decision, rec: dict[str, Any]) -> Tally:
    """Tally of one decision: *d* from the binary, *rec* the simulate json line of the same pod."""
    t = Tally(decisions=1)
    pod = d.pod
    a = d.attempt

    def check(name: str, ok: bool, **kw: Any) -> None:
        t.applicable[name] += 1
        if ok:
            t.agreed[name] += 1
        else:
            t.mismatches.append(Mismatch(seed, pod, name, **kw))

    theirs_node = a.node
    ours_node = rec.get("node")
    if theirs_node:
        t.scheduled += 1
    else:
        t.unschedulable += 1
    check("outcome", bool(theirs_node) == bool(ours_node), kube_scheduler=theirs_node, pyscheduler=ours_node)

    tf, of = _theirs_feasible(d), _ours_feasible(rec)
    # The binary's counts (logged only when it binds) must match too.
    theirs_counts = (a.evaluated, a.feasible)
    ours_counts = (rec.get("evaluated"), rec.get("feasible"))
    same_counts = a.feasible is None or theirs_counts == ours_counts
    check(
        "feasible",
        tf == of and same_counts,
        kube_scheduler=sorted(tf) if tf != of else f"evaluated/feasible {theirs_counts}",
        pyscheduler=sorted(of) if tf != of else f"evaluated/feasible {ours_counts}",
        node=",".join(sorted(tf ^ of)),
    )

    if a.totals or rec.get("scores"):
        t.scored += 1
        ok = True
        our_scores: dict[str, Any] = rec.get("scores") or {}
        for node in sorted(set(a.plugin_scores) & set(our_scores)):
            theirs = a.plugin_scores[node]
            ours = {p: v["final"] for p, v in our_scores[node]["plugins"].items()}
            for plugin in sorted(set(theirs) | set(ours)):
                t.plugin_values[plugin] += 1
                if theirs.get(plugin) != ours.get(plugin):
                    ok = False
                    t.mismatches.append(
                        Mismatch(seed, pod, "scores", node, plugin, theirs.get(plugin), ours.get(plugin))
                    )
        for node in sorted(set(a.extender_scores) | {n for n, v in our_scores.items() if v.get("extenders")}):
            theirs = a.extender_scores.get(node, {})
            ours = {e: v["score"] for e, v in (our_scores.get(node, {}).get("extenders") or {}).items()}
            for ext in sorted(set(theirs) | set(ours)):
                t.plugin_values["extender"] += 1
                if theirs.get(ext) != ours.get(ext):
                    ok = False
                    t.mismatches.append(Mismatch(seed, pod, "scores", node, ext, theirs.get(ext), ours.get(ext)))
        t.applicable["scores"] += 1
        t.agreed["scores"] += ok
        ok = True
        for node in sorted(set(a.totals) & set(our_scores)):
            if a.totals[node] != our_scores[node]["total"]:
                ok = False
                t.mismatches.append(Mismatch(seed, pod, "totals", node, "", a.totals[node], our_scores[node]["total"]))
        t.applicable["totals"] += 1
        t.agreed["totals"] += ok

    if theirs_node:
        our_scores = rec.get("scores") or {}
        if our_scores:
            best = max(v["total"] for v in our_scores.values())
            top = sorted(n for n, v in our_scores.items() if v["total"] == best)
        else:
            top = [ours_node] if ours_node else []
        check("chosen", theirs_node in top, node=theirs_node, kube_scheduler=theirs_node, pyscheduler=top)
    else:
        check(
            "message",
            same_message(d.event_message, rec.get("message")),
            kube_scheduler=d.event_message,
            pyscheduler=rec.get("message"),
        )
        if d.nominated is not None:
            theirs_p = (d.nominated, sorted(d.victims or []))
            ours_p = (rec.get("nominated", ""), sorted(rec.get("victims") or []))
            check("preemption", theirs_p == ours_p, node=d.nominated, kube_scheduler=theirs_p, pyscheduler=ours_p)
    return t
