"""The opt-in result annotations' writer: one merge patch per final attempt, the pod's uid as
a precondition, newest attempt per pod, failures dropped without stopping the writer."""

from __future__ import annotations

import json

from scheduler.config import load_config
from scheduler.core.decision import Attempt
from scheduler.core.simannotations import FILTER, RESULT_HISTORY, SELECTED_NODE
from scheduler.live.kube.annotator import ResultAnnotator
from scheduler.live.kube.transport import ApiError, Lane, TokenBucket
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.fakes import FakeCoreAPI


def _attempts(*names: str) -> list[Attempt]:
    docs = [make_node("n1", cpu="2"), *(make_pod(n, cpu="1") for n in names)]
    sim = Simulator(build_cluster(docs), load_config(None), 1)
    fw = next(iter(sim.frameworks.values()))
    return [Attempt(o.pod, fw, o, sim.snapshot.node_infos, 1, 0.0, 0.0) for o in sim.attempts()]


async def test_one_patch_per_pod_with_uid_and_history() -> None:
    api = FakeCoreAPI()
    w = ResultAnnotator(api, Lane(TokenBucket(0, 1)))
    a, b = _attempts("a", "b")
    w.submit(a)
    w.submit(b)
    w.submit(a)  # newer for a: replaces the one queued
    assert w.pending() == 2
    while await w.write_one():
        pass
    assert [(ns, name) for ns, name, _ in api.pod_patches] == [("default", "b"), ("default", "a")]
    body = api.pod_patches[1][2]
    assert body["metadata"]["uid"] == "uid-default-a"
    ann = body["metadata"]["annotations"]
    assert ann[SELECTED_NODE] == "n1" and "n1" in json.loads(ann[FILTER])
    assert len(json.loads(ann[RESULT_HISTORY])) == 1


async def test_a_failed_write_is_dropped_and_the_next_goes_on() -> None:
    class Failing(FakeCoreAPI):
        def patch_pod(self, namespace: str, name: str, body: dict) -> None:
            if name == "a":
                raise ApiError(404, "gone")
            super().patch_pod(namespace, name, body)

    api = Failing()
    w = ResultAnnotator(api, Lane(TokenBucket(0, 1)), max_queued=1)
    a, b = _attempts("a", "b")
    w.submit(a)
    assert await w.write_one() and api.pod_patches == []
    w.submit(a)
    w.submit(b)  # the queue holds one: a is dropped
    assert w.dropped == 1
    assert await w.write_one() and [n for _, n, _ in api.pod_patches] == ["b"]
    assert not await w.write_one()
