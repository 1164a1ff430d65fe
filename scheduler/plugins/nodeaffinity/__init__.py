"""NodeAffinity (upstream plugins/nodeaffinity/node_affinity.go, component-helpers nodeaffinity)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.config.pluginargs import is_qualified_name, is_valid_label_value
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.signers import (
    NODE_AFFINITY_SIGNER,
    NODE_SELECTOR_SIGNER,
    SignFragment,
    node_affinity_signer,
    node_selector_signer,
)
from scheduler.framework.status import MAX_NODE_SCORE, SKIP, Code, Status, unresolvable
from scheduler.model.labels import NodeSelector, PreferredSchedulingTerm, parse_preferred_terms
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.helper import as_node, default_normalize_score

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

NAME = "NodeAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REJECT_POD = unresolvable(ERR_REASON_POD)
_REJECT_ENFORCED = unresolvable(ERR_REASON_ENFORCED)
_OBJECT_NAME_FIELD = "metadata.name"


# ---------------------------------------------------------------------------------------------
# Required affinity of a pod: nodeSelector AND required node affinity


def _raw_node_affinity(pod: PodInfo) -> Mapping[str, Any]:
    spec = pod.raw.get("spec") or {}
    return (spec.get("affinity") or {}).get("nodeAffinity") or {}


def _checked_required_terms(pod: PodInfo) -> NodeSelector | None:
    """The pod's required terms, with the ones upstream fails to parse marked invalid.

    The model compiles the terms without label key/value validation; upstream's lazy node
    selector drops a term that does not parse, so such a term must never match.
    """
    terms = pod.node_affinity_required
    if terms is None:
        return None
    raw = (_raw_node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    fixed = list(terms.terms)
    changed = False
    for i, raw_term in enumerate(raw):
        if i < len(fixed) and fixed[i].valid and raw_term and _term_errors(raw_term, ""):
            fixed[i] = dataclasses.replace(fixed[i], valid=False)
            changed = True
    return NodeSelector(tuple(fixed)) if changed else terms


class RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity: the pod's nodeSelector ANDed with its required terms."""

    __slots__ = ("selector", "terms")

    def __init__(self, pod: PodInfo) -> None:
        self.selector: tuple[tuple[str, str], ...] = tuple(pod.node_selector.items())
        self.terms: NodeSelector | None = _checked_required_terms(pod)

    def matches(self, node: NodeInfo) -> bool:
        labels = node.labels
        for k, v in self.selector:
            if labels.get(k) != v:
                return False
        if self.terms is not None:
            return self.terms.matches(labels, node.name)
        return True


def _preferred_errors(pod: PodInfo) -> str | None:
    """NewPreferredSchedulingTerms' parse errors for the pod's preferred terms (PreScore fails on them)."""
    errs: list[str] = []
    for i, p in enumerate(
        _raw_node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ):
        pref = p.get("preference") or {}
        if int(p.get("weight", 0)) != 0 and not _is_empty_term(pref):
            errs.extend(_term_errors(pref, f"[{i}]"))
    return _aggregate(errs) if errs else None


def _prefilter_node_names(pod: PodInfo) -> set[str] | Status | None:
    """Node names pinned by matchFields metadata.name In, or None for "all nodes".

    Read from the raw spec so that terms the compiled selector rejected still count exactly
    as upstream counts them.
    """
    na = _raw_node_affinity(pod)
    terms = (na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    if not terms:
        return None
    names: set[str] | None = None
    for term in terms:
        term_names: set[str] | None = None
        for req in (term or {}).get("matchFields") or []:
            if req.get("key") == _OBJECT_NAME_FIELD and req.get("operator") == "In":
                values = {str(v) for v in req.get("values") or []}
                # Requirements inside a term are ANDed.
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            # A term without a node-name requirement admits every node (terms are ORed).
            return None
        names = set(term_names) if names is None else names | term_names
    if names is not None and not names:
        return unresolvable(ERR_REASON_CONFLICT)
    return names or None


# ---------------------------------------------------------------------------------------------
# Args


def _go_strings(values: Any) -> str:
    # How Go's %#v prints a []string, as field.Invalid shows it.
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go_quote(str(v)) for v in values) + "}"


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPS = ("In", "NotIn")

def _go_int64(s: str) -> bool:
    # strconv.ParseInt(s, 10, 64): optional sign, decimal digits only, in int64 range.
    body = s[1:] if s[:1] in "+-" else s
    if not body or not body.isascii() or not body.isdigit():
        return False
    return -(1 << 63) <= int(s) < (1 << 63)


def _term_errors(term: Mapping[str, Any], path: str) -> list[str]:
    """Parse errors of one NodeSelectorTerm, worded and ordered like component-helpers/apimachinery."""
    errs: list[str] = []
    for j, expr in enumerate(term.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{j}]"
        op = str(expr.get("operator", ""))
        key = str(expr.get("key", ""))
        vals = expr.get("values")
        strs = [str(v) for v in vals or []]
        if op not in _LABEL_OPS:
            supported = ", ".join(_go_quote(o) for o in _LABEL_OPS)
            errs.append(f"{p}.operator: Unsupported value: {_go_quote(op)}: supported values: {supported}")
            continue
        key_errs = is_qualified_name(key)
        if key_errs:
            errs.append(f"{p}.key: Invalid value: {_go_quote(key)}: " + "; ".join(key_errs))
        bad = f"{p}.values: Invalid value: {_go_strings(vals)}: "
        if op in ("In", "NotIn") and not strs:
            errs.append(bad + "for 'in', 'notin' operators, values set can't be empty")
        elif op in ("Exists", "DoesNotExist") and strs:
            errs.append(bad + "values set must be empty for exists and does not exist")
        elif op in ("Gt", "Lt"):
            if len(strs) != 1:
                errs.append(bad + "for 'Gt', 'Lt' operators, exactly one value is required")
            for i, v in enumerate(strs):
                if not _go_int64(v):
                    errs.append(
                        f"{p}.values[{i}]: Invalid value: {_go_quote(v)}: "
                        "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
        for i, v in enumerate(strs):
            val_errs = is_valid_label_value(v)
            if val_errs:
                errs.append(f"{p}.values[{i}][{key}]: Invalid value: {_go_quote(v)}: " + "; ".join(val_errs))
    for j, req in enumerate(term.get("matchFields") or []):
        p = f"{path}.matchFields[{j}]"
        op = str(req.get("operator", ""))
        vals = req.get("values")
        if op not in _FIELD_OPS:
            supported = ", ".join(_go_quote(o) for o in _FIELD_OPS)
            errs.append(f"{p}.operator: Unsupported value: {_go_quote(op)}: supported values: {supported}")
        elif len(vals or []) != 1:
            errs.append(f"{p}.values: Invalid value: {_go_strings(vals)}: must have one element")
    return errs


def _is_empty_term(term: Mapping[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def _aggregate(errs: list[str]) -> str:
    # utilerrors.Aggregate: one error prints alone, several as "[a, b]" (duplicates dropped).
    uniq = list(dict.fromkeys(errs))
    return uniq[0] if len(uniq) == 1 else "[" + ", ".join(uniq) + "]"


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    added_required: NodeSelector | None = None
    added_preferred: tuple[PreferredSchedulingTerm, ...] | None = None

    @staticmethod
    def parse(args: Mapping[str, Any] | None) -> NodeAffinityArgs:
        if not args:
            return NodeAffinityArgs()
        for key in args:
            if key not in ("addedAffinity", "apiVersion", "kind"):
                raise ValueError(f'unknown field "{key}"')
        added = args.get("addedAffinity")
        if added is None:
            return NodeAffinityArgs()
        errs: list[str] = []
        required: NodeSelector | None = None
        raw_req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        if raw_req is not None:
            base = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            for i, term in enumerate(raw_req.get("nodeSelectorTerms") or []):
                if not _is_empty_term(term or {}):
                    errs.extend(_term_errors(term, f"{base}[{i}]"))
            required = NodeSelector.parse(raw_req)
        preferred: tuple[PreferredSchedulingTerm, ...] | None = None
        raw_pref = added.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        if raw_pref:
            base = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            for i, p in enumerate(raw_pref):
                pref = p.get("preference") or {}
                # Upstream does not even parse zero-weight or empty terms.
                if int(p.get("weight", 0)) != 0 and not _is_empty_term(pref):
                    errs.extend(_term_errors(pref, f"{base}[{i}]"))
            preferred = parse_preferred_terms(raw_pref)
        if errs:
            raise ValueError(_aggregate(errs))
        return NodeAffinityArgs(required, preferred)


def _preferred_score(terms: tuple[PreferredSchedulingTerm, ...], node: NodeInfo) -> int:
    total = 0
    for p in terms:
        if p.weight != 0 and p.term.matches(node.labels, node.name):
            total += p.weight
    return total


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: tuple[PreferredSchedulingTerm, ...]) -> None:
        self.preferred = preferred


# ---------------------------------------------------------------------------------------------
# Plugin


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    """Required node affinity and nodeSelector as a Filter; preferred terms as a Score."""

    name = NAME
    has_normalize = True

    # -- Sign (OpportunisticBatching) ----------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> list[SignFragment] | Status:
        """Upstream NodeAffinity.SignPod: the node affinity and the node selector."""
        return [(NODE_AFFINITY_SIGNER, node_affinity_signer(pod)), (NODE_SELECTOR_SIGNER, node_selector_signer(pod))]

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        self.args = args or NodeAffinityArgs()
        self._added_required = self.args.added_required
        self._added_preferred = self.args.added_preferred

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Handle) -> NodeAffinity:
        return cls(NodeAffinityArgs.parse(args))

    # -- PreFilter / Filter --------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> PreFilterResult | Status | None:
        no_affinity = pod.node_affinity_required is None
        if no_affinity and self._added_required is None and not pod.node_selector:
            return SKIP
        state.write(PRE_FILTER_KEY, RequiredNodeAffinity(pod))
        if no_affinity:
            return None
        names = _prefilter_node_names(pod)
        if isinstance(names, Status):
            return names
        return None if names is None else PreFilterResult(names)

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        s = state.get(PRE_FILTER_KEY)
        # Without PreFilter (disabled), compute it here like upstream's fallback.
        return s if isinstance(s, RequiredNodeAffinity) else RequiredNodeAffinity(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        added = self._added_required
        if added is not None and not added.matches(node.labels, node.name):
            return _REJECT_ENFORCED
        if not self._required(state, pod).matches(node):
            return _REJECT_POD
        return None

    def filter_batch(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray:
        added = self._added_required
        if added is None and pod.node_affinity_required is None and not pod.node_selector:
            return np.ones(len(idx), dtype=bool)
        req = self._required(state, pod)
        infos = snapshot.node_infos
        out = np.empty(len(idx), dtype=bool)
        for j, i in enumerate(np.asarray(idx).tolist()):
            ni = infos[i]
            out[j] = (added is None or added.matches(ni.labels, ni.name)) and req.matches(ni)
        return out

    # -- PreScore / Score ----------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        msg = _preferred_errors(pod)
        if msg is not None:
            return Status(Code.ERROR, msg)
        preferred = pod.node_affinity_preferred
        if not preferred and self._added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_KEY, _PreScoreState(preferred))
        return None

    def _preferred(self, state: CycleState, pod: PodInfo) -> tuple[PreferredSchedulingTerm, ...]:
        s = state.get(PRE_SCORE_KEY)
        return s.preferred if isinstance(s, _PreScoreState) else pod.node_affinity_preferred

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        total = 0
        if self._added_preferred is not None:
            total += _preferred_score(self._added_preferred, node)
        return total + _preferred_score(self._preferred(state, pod), node)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        terms = (self._added_preferred or ()) + self._preferred(state, pod)
        out = np.zeros(len(idx), dtype=np.int64)
        if not terms:
            return out
        infos = snapshot.node_infos
        for j, i in enumerate(np.asarray(idx).tolist()):
            out[j] = _preferred_score(terms, infos[i])
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> Status | None:
        default_normalize_score(scores, MAX_NODE_SCORE, reverse=False)
        return None

    # -- queueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._after_node_change
            )
        ]

    def _after_node_change(self, pod: PodInfo, old_obj: Any, new_obj: Any) -> QueueingHint:
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None:
            return QueueingHint.QUEUE_SKIP
        added = self._added_required
        if added is not None and not added.matches(new.labels, new.name):
            return QueueingHint.QUEUE_SKIP
        req = RequiredNodeAffinity(pod)
        if not req.matches(new):
            return QueueingHint.QUEUE_SKIP
        # A new matching node, or an update that turned a non-matching node into a matching one.
        if old is None or not req.matches(old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
