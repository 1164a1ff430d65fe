"""Preemption asking the extenders (upstream framework/preemption/preemption_test.go
TestCallExtenders, v1.36.3), and the whole PostFilter with an extender that trims candidates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.extender import NodeInfoLister, Victims
from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.preemption import Candidate, Evaluator
from scheduler.framework.status import Code
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import FakeExtender
from scheduler.testing.framework import new_snapshot

PREEMPTOR = PodInfo(make_pod("preemptor", priority=1000))
VICTIM = PodInfo(make_pod("victim", node_name="node1", priority=100))


class PreemptFake:
    """Upstream preemption_test.go fakeExtender."""

    def __init__(
        self, supports: bool = False, err: bool = False, no_victims: bool = False, ignorable: bool = False
    ) -> None:
        self.fake = FakeExtender("fakeExtender", ignorable=ignorable)
        self.supports, self.err, self.no_victims = supports, err, no_victims

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def supports_preemption(self) -> bool:
        return self.supports

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], nodes: NodeInfoLister
    ) -> dict[str, Victims]:
        if self.err:
            raise RuntimeError("extender preempt error")
        if self.no_victims:
            return {"mock": Victims()}
        return dict(victims)


def _candidates() -> list[Candidate]:
    return [Candidate("node1", Victims([VICTIM]))]


@pytest.mark.parametrize(
    ("extenders", "candidates", "want_code", "want_message", "want"),
    [
        ([], _candidates(), None, "", [("node1", 1)]),
        ([PreemptFake(supports=True)], _candidates(), None, "", [("node1", 1)]),
        (
            [PreemptFake(supports=True, no_victims=True)],
            _candidates(),
            Code.ERROR,
            'expected at least one victim pod on node "mock"',
            [],
        ),
        ([PreemptFake(supports=False)], _candidates(), None, "", [("node1", 1)]),
        ([PreemptFake(supports=True, no_victims=True, ignorable=True)], _candidates(), None, "", []),
        ([PreemptFake(supports=True, err=True, ignorable=True)], _candidates(), None, "", [("node1", 1)]),
        ([PreemptFake(supports=True, err=True)], _candidates(), Code.ERROR, "extender preempt error", []),
        ([PreemptFake(supports=True)], [], None, "", []),
    ],
    ids=[
        "no extenders",
        "one extender supports preemption",
        "one extender with return no victims",
        "one extender does not support preemption",
        "one extender with no return victims and is ignorable",
        "one extender returns error and is ignorable",
        "one extender returns error and is not ignorable",
        "one extender with empty victims input",
    ],
)
def test_call_extenders(
    extenders: list[PreemptFake],
    candidates: list[Candidate],
    want_code: Code | None,
    want_message: str,
    want: list[tuple[str, int]],
) -> None:
    snap = new_snapshot([make_node("node1")], [VICTIM])
    ev = Evaluator(Handle(snap, Listers(), extenders=extenders))
    got, st = ev.call_extenders(PREEMPTOR, candidates)
    if want_code is None:
        assert st is None
    else:
        assert st is not None and (st.code, st.message) == (want_code, want_message)
    assert [(c.name, len(c.victims.pods)) for c in got] == want


def test_next_extender_sees_what_the_previous_one_kept() -> None:
    class Keep:
        def __init__(self, keep: str) -> None:
            self.fake = FakeExtender("keep")
            self.keep = keep
            self.seen: list[str] = []

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fake, name)

        def process_preemption(
            self, pod: PodInfo, victims: Mapping[str, Victims], nodes: NodeInfoLister
        ) -> dict[str, Victims]:
            self.seen = sorted(victims)
            return {n: v for n, v in victims.items() if n == self.keep}

    v2 = PodInfo(make_pod("v2", node_name="node2", priority=100))
    snap = new_snapshot([make_node("node1"), make_node("node2")], [VICTIM, v2])
    first, second = Keep("node2"), Keep("node2")
    ev = Evaluator(Handle(snap, Listers(), extenders=[first, second]))
    got, st = ev.call_extenders(PREEMPTOR, [Candidate("node1", Victims([VICTIM])), Candidate("node2", Victims([v2]))])
    assert st is None
    assert (first.seen, second.seen) == (["node1", "node2"], ["node2"])
    assert [c.name for c in got] == ["node2"]
