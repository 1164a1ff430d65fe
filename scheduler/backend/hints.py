"""What the queue asks about a cluster event: which plugins registered it and with which hint
(upstream scheduler.go buildQueueingHintMap, framework/types.go MatchClusterEvents)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from scheduler.framework.events import ActionType, ClusterEvent, QueueingHintFn
from scheduler.framework.extender import EXTENDER_NAME
from scheduler.framework.interface import EnqueueExtensions

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework

# Extension points whose plugins' EnqueueExtensions count (upstream shouldHaveEnqueueExtensions).
_REJECTING_POINTS = ("pre_enqueue_plugins", "pre_filter_plugins", "filter_plugins", "reserve_plugins", "permit_plugins")
_EVERY_EVENT = ClusterEvent("*", ActionType.ALL)
_NODE_TAINT = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT)


def is_wildcard(ev: ClusterEvent) -> bool:
    return ev.resource == "*" and ev.action == ActionType.ALL


def matches(registered: ClusterEvent, ev: ClusterEvent) -> bool:
    """Upstream MatchClusterEvents for this package's events, which merge what changed into
    one event: the general pod update matches only registrations covering every update."""
    if is_wildcard(registered):
        return True
    if not registered.matches(ev):
        return False
    return ev.action != ActionType.UPDATE or registered.action & ActionType.UPDATE == ActionType.UPDATE


#: The hints a profile's plugins registered, by event, in registration order (upstream
#: QueueingHintMap); a None hint means always worth a retry.
QueueingHintMap = dict[ClusterEvent, list[tuple[str, QueueingHintFn | None]]]


def build_hint_map(fw: Framework) -> QueueingHintMap:
    """Upstream buildQueueingHintMap: a plugin without EnqueueExtensions is interested in every
    event; one registering none is left out; one registering Node/Add without
    Node/UpdateNodeTaint also gets the latter, always worth a retry (upstream's mitigation for
    kubernetes#109437)."""
    hint_map: QueueingHintMap = {}
    seen: set[str] = set()
    for name, ext in fw.enqueue_extensions():
        if name == EXTENDER_NAME:
            # Registered first (upstream NewFramework): the extenders' every-event extension.
            for e in ext.events_to_register():
                hint_map.setdefault(e.event, []).append((name, e.hint))
            seen.add(name)
    for point in _REJECTING_POINTS:
        for pl in getattr(fw, point, ()):
            name = pl.name
            if name in seen:
                continue
            seen.add(name)
            events: list[tuple[ClusterEvent, QueueingHintFn | None]] | None = None
            if isinstance(pl, EnqueueExtensions):
                with contextlib.suppress(NotImplementedError):
                    events = [(e.event, e.hint) for e in pl.events_to_register()]
            if events is None:
                events = [(_EVERY_EVENT, None)]
            node = [ev.action for ev, _ in events if ev.resource == "Node"]
            if any(a & ActionType.ADD for a in node) and not any(a & ActionType.UPDATE_NODE_TAINT for a in node):
                events.append((_NODE_TAINT, None))
            for ev, hint in events:
                hint_map.setdefault(ev, []).append((name, hint))
    return hint_map
