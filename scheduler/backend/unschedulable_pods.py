"""unschedulablePods (upstream backend/queue/unschedulable_pods.go): pods a plugin rejected,
waiting for an event that may help, and pods a PreEnqueue plugin holds (gated). The two are
counted apart, as upstream's pending_pods gauge reports them ("unschedulable", "gated")."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from scheduler.framework.interface import QueuedPodInfo


class UnschedulablePods:
    """The pods by uid, with the gated ones also grouped by their gating plugin and the others
    apart: a cluster event looks at a gated pod only when its gating plugin registered for the
    event, so thousands of gated pods cost an unrelated event nothing (it used to walk them all,
    about a microsecond each, for every pod bound)."""

    __slots__ = ("_gated_by", "_group", "_plain", "pods")

    def __init__(self) -> None:
        self.pods: dict[str, QueuedPodInfo] = {}  # by uid, in the order they came
        self._plain: dict[str, QueuedPodInfo] = {}
        self._gated_by: dict[str, dict[str, QueuedPodInfo]] = {}
        # Where each uid is filed: None with the plain pods, else its gating plugin. Kept apart
        # from the entry, which callers change in place before filing it again.
        self._group: dict[str, str | None] = {}

    def add_or_update(self, q: QueuedPodInfo) -> bool:
        """Add or replace; True when the pod was not here (upstream counts it as incoming)."""
        uid = q.pod.uid
        fresh = uid not in self.pods
        group = q.gating_plugin if q.gated else None
        if not fresh and self._group[uid] != group:
            self._unfile(uid)
            del self.pods[uid]  # it comes again, at the end
        self.pods[uid] = q
        self._group[uid] = group
        if group is None:
            self._plain[uid] = q
        else:
            self._gated_by.setdefault(group, {})[uid] = q
        return fresh

    def _unfile(self, uid: str) -> None:
        group = self._group.pop(uid, None)
        if group is None:
            self._plain.pop(uid, None)
            return
        members = self._gated_by.get(group)
        if members is not None:
            members.pop(uid, None)
            if not members:
                del self._gated_by[group]

    def delete(self, uid: str) -> QueuedPodInfo | None:
        q = self.pods.pop(uid, None)
        if q is not None:
            self._unfile(uid)
        return q

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self.pods.get(uid)

    def is_gated(self, uid: str) -> bool:
        return self._group.get(uid) is not None

    def candidates(self, gating_interested: Callable[[str], bool]) -> list[QueuedPodInfo]:
        """The pods an event may move, in the order they came: every pod no PreEnqueue plugin
        holds, and the gated pods of the gating plugins ``gating_interested`` names."""
        plugins = {p for p in self._gated_by if gating_interested(p)}
        if not plugins:
            return list(self._plain.values())
        group = self._group
        return [q for uid, q in self.pods.items() if group[uid] is None or group[uid] in plugins]

    def __contains__(self, uid: str) -> bool:
        return uid in self.pods

    def __len__(self) -> int:
        return len(self.pods)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self.pods.values())

    def gated_count(self) -> int:
        return len(self.pods) - len(self._plain)

    def clear(self) -> None:
        self.pods.clear()
        self._plain.clear()
        self._gated_by.clear()
        self._group.clear()
