"""Compiled label selectors and node selectors (apimachinery labels, component-helpers nodeaffinity)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Labels = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement. ``op`` is one of In, NotIn, Exists, DoesNotExist, Gt, Lt."""

    key: str
    op: str
    values: frozenset[str]
    # Gt/Lt only: the integer bound, or None when the value did not parse (then nothing matches).
    bound: int | None = None

    def matches(self, labels: Labels) -> bool:
        op = self.op
        if op == "In":
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == "NotIn":
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op in ("Gt", "Lt"):
            v = labels.get(self.key)
            if v is None or self.bound is None:
                return False
            # strconv.ParseInt semantics: Python's int() would also accept "1_0" or " 1".
            body = v[1:] if v[:1] in "+-" else v
            if not (body.isascii() and body.isdigit()):
                return False
            n = int(v)
            return n > self.bound if op == "Gt" else n < self.bound
        return False


def _requirement(expr: Mapping[str, Any], allowed: tuple[str, ...]) -> Requirement:
    op = expr.get("operator", "")
    if op not in allowed:
        raise ValueError(f"{op!r} is not a valid selector operator")
    values = [str(v) for v in (expr.get("values") or [])]
    bound: int | None = None
    if op in ("Gt", "Lt") and len(values) == 1:
        try:
            bound = int(values[0])
        except ValueError:
            bound = None
    return Requirement(str(expr.get("key", "")), op, frozenset(values), bound)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector compiled once. ``everything`` for ``{}``; ``None`` selectors match nothing."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Labels) -> bool:
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    @staticmethod
    def parse(raw: Mapping[str, Any] | None) -> LabelSelector | None:
        if raw is None:
            return None
        reqs: list[Requirement] = []
        for k, v in sorted((raw.get("matchLabels") or {}).items()):
            reqs.append(Requirement(str(k), "In", frozenset([str(v)])))
        for expr in raw.get("matchExpressions") or []:
            reqs.append(_requirement(expr, ("In", "NotIn", "Exists", "DoesNotExist")))
        return LabelSelector(tuple(reqs))

    def and_(self, extra: tuple[Requirement, ...]) -> LabelSelector:
        return LabelSelector(self.requirements + extra)


NOTHING = LabelSelector((Requirement("", "In", frozenset()),))
EVERYTHING = LabelSelector(())

_NODE_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]  # only metadata.name is supported upstream
    valid: bool = True

    def matches(self, labels: Labels, node_name: str) -> bool:
        # An empty term matches nothing (upstream nodeaffinity helper).
        if not self.valid or (not self.expressions and not self.fields):
            return False
        for r in self.expressions:
            if not r.matches(labels):
                return False
        if self.fields:
            fields = {"metadata.name": node_name}
            for r in self.fields:
                if not r.matches(fields):
                    return False
        return True

    @staticmethod
    def parse(raw: Mapping[str, Any]) -> NodeSelectorTerm:
        valid = True
        exprs: list[Requirement] = []
        fields: list[Requirement] = []
        try:
            for e in raw.get("matchExpressions") or []:
                exprs.append(_requirement(e, _NODE_OPS))
            for f in raw.get("matchFields") or []:
                r = _requirement(f, ("In", "NotIn"))
                if r.key != "metadata.name" or (r.op in ("In", "NotIn") and len(r.values) != 1):
                    valid = False
                fields.append(r)
        except ValueError:
            valid = False
        return NodeSelectorTerm(tuple(exprs), tuple(fields), valid)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """v1.NodeSelector: terms are ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Labels, node_name: str) -> bool:
        for t in self.terms:
            if t.matches(labels, node_name):
                return True
        return False

    @staticmethod
    def parse(raw: Mapping[str, Any] | None) -> NodeSelector | None:
        if raw is None:
            return None
        return NodeSelector(tuple(NodeSelectorTerm.parse(t) for t in raw.get("nodeSelectorTerms") or []))


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    term: NodeSelectorTerm


def parse_preferred_terms(raw: list[Mapping[str, Any]] | None) -> tuple[PreferredSchedulingTerm, ...]:
    out = []
    for p in raw or []:
        out.append(PreferredSchedulingTerm(int(p.get("weight", 0)), NodeSelectorTerm.parse(p.get("preference") or {})))
    return tuple(out)
