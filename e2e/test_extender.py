"""End-to-end, side by side: pyscheduler ``run`` and the real kube-scheduler v1.36.3 on the same
plane, asking the same scheduler extenders served by the suite (e2e/support/extender.py).

Extender A (filter, prioritize, preempt, bind; whole nodes) decides with a hash of the pod's
``extender.e2e/key`` label and the node's name, so the two copies of a case (one per
schedulerName, the same key) get the same answers; extender C (filter; names only; httpTimeout
1s) makes pods labelled ``extender.e2e/slow`` wait past that timeout. Each case creates the pod
twice and requires the same outcome from both schedulers: the same node (the one the extender's
scores make best, bound by the extender), or the same FailedScheduling message, character for
character. The differential suite (test_differential.py, extender mode) compares every score.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.differential import kubescheduler
from e2e.support import extender as ext
from e2e.support.objects import make_pod
from e2e.support.waits import pod_condition, wait_bound, wait_for
from scheduler.testing.extender import ExtenderServer
from scheduler.testing.process import SchedulerProcess, free_port

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

OURS = "pyscheduler"
REFERENCE = "kube-reference"
GROUP = "extender.e2e/group"
SLOW_SECONDS = 3.0


@pytest.fixture(scope="module")
def policy(api_client: client.ApiClient) -> Iterator[tuple[ext.HashPolicy, ExtenderServer]]:
    p = ext.HashPolicy(api_client, slow_seconds=SLOW_SECONDS)
    server = p.serve()
    try:
        yield p, server
    finally:
        server.stop()


def _extenders(url: str) -> list[dict[str, Any]]:
    a, _ = ext.extenders_config(url)
    c = {"urlPrefix": f"{url}/c", "filterVerb": "filter", "nodeCacheCapable": True, "httpTimeout": "1s"}
    return [a, c]


@pytest.fixture(scope="module")
def ours(
    policy: tuple[ext.HashPolicy, ExtenderServer],
    scheduler_config_path: str,
    scheduler_kubeconfig: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SchedulerProcess]:
    d = pathlib.Path(tmp_path_factory.mktemp("ours"))
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["extenders"] = _extenders(policy[1].url)
    path = d / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    with SchedulerProcess(str(path), scheduler_kubeconfig, d, "extender", port=free_port()) as p:
        yield p


@pytest.fixture(scope="module")
def reference(
    policy: tuple[ext.HashPolicy, ExtenderServer], kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kubescheduler.KubeScheduler]:
    d = pathlib.Path(tmp_path_factory.mktemp("kube-reference"))
    with kubescheduler.running(REFERENCE, kubeconfig, d, extenders=_extenders(policy[1].url)) as ks:
        yield ks


def _find_key(accept: Callable[[str], bool]) -> str:
    """The first case key (a label value) the policy answers as ``accept`` wants."""
    for i in range(100000):
        key = f"case-{i}"
        if accept(key):
            return key
    raise AssertionError("no key found")


def _pods(core: client.CoreV1Api, namespace: str, key: str, **labels: str) -> None:
    for name, sched in (("ours", OURS), ("ref", REFERENCE)):
        pod = make_pod(name, namespace, scheduler_name=sched, labels={ext.KEY_LABEL: key, **labels},
                       node_selector={GROUP: namespace})
        core.create_namespaced_pod(namespace, pod)


def _failure(core: client.CoreV1Api, namespace: str, pod: str) -> tuple[str, str]:
    """(PodScheduled reason, message) once the pod's first attempt failed; the FailedScheduling
    event says the same."""

    def failed() -> Any:
        evs = core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.kind=Pod,involvedObject.name={pod},reason=FailedScheduling"
        ).items
        cond = pod_condition(core.read_namespaced_pod(pod, namespace), "PodScheduled")
        return evs and cond is not None and cond.status == "False" and (evs[0], cond)

    ev, cond = wait_for(failed, timeout=60, desc=f"FailedScheduling of {namespace}/{pod}")
    assert ev.message == cond.message
    return str(cond.reason), str(cond.message)


def _both_fail(core: client.CoreV1Api, namespace: str) -> tuple[str, str]:
    ours, ref = _failure(core, namespace, "ours"), _failure(core, namespace, "ref")
    assert ours == ref, f"\npyscheduler:    {ours}\nkube-scheduler: {ref}"
    for name in ("ours", "ref"):
        assert core.read_namespaced_pod(name, namespace).spec.node_name is None
    print(f"both schedulers: {ours}")
    return ours


def _group(node_factory: Callable[..., list[str]], namespace: str, count: int) -> list[str]:
    return node_factory(count, labels={GROUP: namespace})


@pytest.mark.usefixtures("ours", "reference")
def test_extender_scores_choose_the_node_and_the_extender_binds(
    core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str,
    policy: tuple[ext.HashPolicy, ExtenderServer],
) -> None:
    nodes = _group(node_factory, namespace, 4)

    def clear_winner(key: str) -> bool:
        if ext.pod_error(key) or ext.prioritize_fails_a(key):
            return False
        kept = [n for n in nodes if ext.filter_a(key, n) is None]
        scores = sorted((ext.score_a(key, n) for n in kept), reverse=True)
        return len(kept) < len(nodes) and len(scores) >= 2 and scores[0] > scores[1]

    key = _find_key(clear_winner)
    best = max((n for n in nodes if ext.filter_a(key, n) is None), key=lambda n: ext.score_a(key, n))
    _pods(core_v1, namespace, key)
    got = {name: wait_bound(core_v1, namespace, name, timeout=60) for name in ("ours", "ref")}
    assert got == {"ours": best, "ref": best}
    # Bound by the extender (bindVerb), not by DefaultBinder.
    assert {(f"{namespace}/ours", best), (f"{namespace}/ref", best)} <= set(policy[0].binds)


@pytest.mark.usefixtures("ours", "reference")
def test_extender_rejections_in_the_same_words(
    core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str
) -> None:
    nodes = _group(node_factory, namespace, 3)

    def all_rejected(key: str) -> bool:
        verdicts = {ext.filter_a(key, n) for n in nodes}
        return not ext.pod_error(key) and None not in verdicts and len(verdicts) == 2

    _pods(core_v1, namespace, _find_key(all_rejected))
    reason, msg = _both_fail(core_v1, namespace)
    assert reason == "Unschedulable"
    assert ext.RESERVED in msg and ext.FENCED in msg


@pytest.mark.usefixtures("ours", "reference")
def test_extender_error_in_the_same_words(
    core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str
) -> None:
    _group(node_factory, namespace, 2)
    key = _find_key(lambda k: ext.pod_error(k) is not None)
    _pods(core_v1, namespace, key)
    assert _both_fail(core_v1, namespace) == ("SchedulerError", ext.pod_error(key))


@pytest.mark.usefixtures("ours", "reference")
def test_extender_timeout_in_the_same_words(
    core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str,
    policy: tuple[ext.HashPolicy, ExtenderServer],
) -> None:
    nodes = _group(node_factory, namespace, 2)
    key = _find_key(lambda k: not ext.pod_error(k) and all(ext.filter_a(k, n) is None for n in nodes))
    _pods(core_v1, namespace, key, **{ext.SLOW_LABEL: "true"})
    reason, msg = _both_fail(core_v1, namespace)
    assert (reason, msg) == (
        "SchedulerError",
        f'Post "{policy[1].url}/c/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
    )
