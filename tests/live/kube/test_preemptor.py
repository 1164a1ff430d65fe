"""Preemption around the plugin: the nominator and RunFilterPluginsWithNominatedPods, the async
PreEnqueue gate, the live loop's API writes (fake API behind the real Binder), and ``simulate``
(the contract's nominated/victims line and the retry).

Upstream sources: framework/runtime/framework.go (RunFilterPluginsWithNominatedPods,
addGENominatedPods), backend/queue/nominator.go, preemption/executor.go (PreemptPod,
prepareCandidateAsync), schedule_one.go (handleSchedulingFailure: nominatingInfo)."""

from __future__ import annotations

import asyncio
import io
import json
import random
from pathlib import Path
from typing import Any

import yaml

from scheduler.backend.cache import Cache
from scheduler.backend.nominator import OVERRIDE, PodNominator
from scheduler.backend.queue import ACTIVE, GATED
from scheduler.config import PluginRef, PluginSet, Profile
from scheduler.config.features import FeatureGates
from scheduler.core.algorithm import Algorithm
from scheduler.core.cycle import scheduling_cycle
from scheduler.core.profiles import new_framework
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle, NodeToStatus, PostFilterPlugin, PostFilterResult
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.live.kube.preemptor import LivePreemption
from scheduler.live.kube.transport import ApiError
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry
from scheduler.simulate.simulator import run
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.fakes import FakeCoreAPI
from scheduler.testing.harness import Harness

NOT_HELPFUL = "Preemption is not helpful for scheduling"


# ---------------------------------------------------------------------------------------------
# Nominator


def test_nominator_override_noop_and_update() -> None:
    nom = PodNominator()
    p = PodInfo(make_pod("p", priority=10))
    nom.add(p, OVERRIDE, "n1")
    assert [x.name for x in nom.nominated_pods_for_node("n1")] == ["p"]
    # An update without status.nominatedNodeName keeps the scheduler's own nomination.
    nom.update(p, PodInfo(make_pod("p", priority=10)))
    assert nom.node_of(p.uid) == "n1"
    # noop: the pod's own status decides; none -> no nomination.
    nom.add(PodInfo(make_pod("p", priority=10)))
    assert nom.node_of(p.uid) == "" and not nom.nominated_nodes()
    raw = make_pod("p", priority=10)
    raw["status"] = {"nominatedNodeName": "n2"}
    nom.add(PodInfo(raw))
    assert nom.node_of(p.uid) == "n2"
    # A bound pod is never nominated; override with "" clears.
    nom.add(PodInfo(make_pod("p", node_name="n2")), OVERRIDE, "n2")
    assert nom.node_of(p.uid) == ""
    nom.add(p, OVERRIDE, "n1")
    nom.add(p, OVERRIDE, "")
    assert len(nom) == 0


def _nominated_harness() -> tuple[Harness, PodInfo]:
    h = Harness()
    h.sched.on_node(None, make_node("n1", cpu="2"))
    high = PodInfo(make_pod("high", cpu="1500m", priority=100))
    h.queue.nominator.add(high, OVERRIDE, "n1")
    for fw in h.sched.frameworks.values():
        fw.handle.nominator = h.queue.nominator
    return h, high


async def test_lower_priority_pod_cannot_take_a_nominated_nodes_room() -> None:
    # addGENominatedPods: the nominated pod (priority 100) counts on n1 for a priority-0 pod.
    h, _ = _nominated_harness()
    h.sched.on_pod("ADDED", make_pod("low", cpu="1"))
    await h.step()
    assert h.bound() == {}
    [ev] = h.events("FailedScheduling")
    assert ev["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


async def test_higher_priority_pod_ignores_lower_nominated_pods() -> None:
    h, _ = _nominated_harness()
    h.sched.on_pod("ADDED", make_pod("higher", cpu="1", priority=1000))
    await h.step()
    assert h.bound() == {"higher": "n1"}


async def test_nominated_pod_itself_is_not_counted_twice() -> None:
    h, high = _nominated_harness()
    h.sched.on_pod("ADDED", make_pod("high", cpu="1500m", priority=100))
    await h.step()
    assert h.bound() == {"high": "n1"}
    assert h.queue.nominator.node_of(high.uid) == ""  # assumed: the nomination is dropped


def test_filter_with_nominated_pods_runs_twice_only_when_pods_were_added() -> None:
    h, _ = _nominated_harness()
    fw = h.sched.frameworks["default-scheduler"]
    h.cache.update_snapshot(h.sched.snapshot)
    ni = h.sched.snapshot.get("n1")
    assert ni is not None
    pod = PodInfo(make_pod("x", cpu="100m"))
    state = CycleState()
    fw.run_pre_filter(state, pod, h.sched.snapshot.node_infos)
    assert fw.run_filter_with_nominated_pods(state, pod, ni) is None
    big = PodInfo(make_pod("y", cpu="1"))
    state = CycleState()
    fw.run_pre_filter(state, big, h.sched.snapshot.node_infos)
    s = fw.run_filter_with_nominated_pods(state, big, ni)
    assert s is not None and s.reasons == ("Insufficient cpu",)


# ---------------------------------------------------------------------------------------------
# The live loop: nominate, patch, evict, gate, retry


def _live(h: Harness) -> LivePreemption:
    lp = LivePreemption(h.binder, h.sched.recorder, h.cache, h.queue.nominator, h.metrics, clock=lambda: 1.7e9)
    for fw in h.sched.frameworks.values():
        fw.handle.nominator = h.queue.nominator
        fw.handle.preemption = lp
    return lp


async def test_live_preemption_writes_and_retry() -> None:
    h = Harness()
    lp = _live(h)
    h.sched.on_node(None, make_node("n1", cpu="2"))
    victim = make_pod("victim", cpu="1500m", node_name="n1", priority=0)
    victim["metadata"]["generation"] = 3
    h.sched.on_pod("ADDED", victim)
    h.sched.on_pod("ADDED", make_pod("pre", cpu="1", priority=100))
    await h.step()
    await lp.drain()
    await h.settle()
    assert h.bound() == {}
    # FailedScheduling: the FitError only (PostFilter succeeded), and the nomination patched with it.
    [ev] = h.events("FailedScheduling")
    assert ev["note"] == "0/1 nodes are available: 1 Insufficient cpu."
    status_patches = [(name, body) for _, name, body in h.api.status_patches]
    pre = [b for n, b in status_patches if n == "pre"]
    assert pre and pre[-1]["status"]["nominatedNodeName"] == "n1"
    # The victim: DisruptionTarget (observedGeneration = its generation), deleted, Preempted event.
    [vbody] = [b for n, b in status_patches if n == "victim"]
    [cond] = vbody["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionTarget", "True", "PreemptionByScheduler")
    assert cond["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
    assert cond["observedGeneration"] == 3
    assert h.api.deleted == [("default", "victim")]
    [pe] = h.events("Preempted")
    assert (pe["type"], pe["action"], pe["reportingController"]) == ("Normal", "Preempting", "default-scheduler")
    assert pe["note"] == "Preempted by pod uid-default-pre on node n1"
    assert "related" not in pe
    assert h.metrics.registry.get_sample_value("scheduler_preemption_attempts_total") == 1.0
    assert h.metrics.registry.get_sample_value("scheduler_preemption_victims_count") == 1.0
    assert h.metrics.registry.get_sample_value(
        "scheduler_preemption_goroutines_execution_total", {"result": "success"}
    ) == 1.0
    # The nominator holds the preemptor on n1 until it is assumed.
    assert h.queue.nominator.node_of("uid-default-pre") == "n1"
    # The victim goes away (watch): the preemptor is retried on its nominated node and bound.
    h.sched.on_pod("DELETED", victim)
    h.clock.step(2)
    raw = make_pod("pre", cpu="1", priority=100)
    raw["status"] = {"nominatedNodeName": "n1"}
    h.sched.on_pod("MODIFIED", raw)
    assert await h.step()
    assert h.bound() == {"pre": "n1"}


async def test_preemptor_is_gated_while_its_preemption_runs() -> None:
    h = Harness()
    lp = _live(h)
    lp._running.add("uid-default-pre")  # as between PostFilter and the last victim's deletion
    h.sched.on_pod("ADDED", make_pod("pre", cpu="1", priority=100))
    assert h.queue.where("uid-default-pre") == GATED
    q = h.queue.get("uid-default-pre")
    assert q is not None and q.gating_plugin == "DefaultPreemption"
    lp._running.discard("uid-default-pre")
    raw = make_pod("pre", cpu="1", priority=100)
    raw["metadata"]["labels"] = {"x": "y"}
    h.sched.on_pod("MODIFIED", raw)
    # Upstream Update asks the hints: DefaultPreemption registered only Pod/Delete, so a label
    # change leaves the pod held; the end of its preemption (Activate or release) lets it go.
    assert h.queue.where("uid-default-pre") == GATED
    h.queue.activate({"pre": PodInfo(raw)})
    assert h.queue.where("uid-default-pre") == ACTIVE


class _VictimAlreadyGone(FakeCoreAPI):
    """The API side when a concurrent preemptor has already deleted the victim."""

    def patch_pod_status(self, namespace: str, name: str, body: dict) -> None:
        if name == "victim":
            raise ApiError(404, 'pods "victim" not found')
        super().patch_pod_status(namespace, name, body)


async def test_gated_preemptor_is_released_when_its_preemption_ends() -> None:
    # executor.go prepareCandidateAsync + PreEnqueue: the victim's deletion event arrived while
    # the preemptor was gated and before its task had registered the last victim (a concurrent
    # preemptor deleted it: PreemptPod treats 404 as done). No event will follow; the end of
    # the task itself must let the preemptor through, not the 5-minute leftover flush.
    h = Harness(api=_VictimAlreadyGone())
    lp = _live(h)
    lp.release = lambda pod: h.queue.release_gated(pod.uid, "DefaultPreemption", "PreemptionFinished")
    h.sched.on_node(None, make_node("n1", cpu="2"))
    victim = make_pod("victim", cpu="1500m", node_name="n1", priority=0)
    h.sched.on_pod("ADDED", victim)
    pre = PodInfo(make_pod("pre", cpu="1", priority=100))
    lp._running.add(pre.uid)
    h.sched.on_pod("ADDED", make_pod("pre", cpu="1", priority=100))
    h.sched.on_pod("DELETED", victim)  # the deletion event: still running, so it stays gated
    assert h.queue.where(pre.uid) == GATED
    lp._running.discard(pre.uid)
    await lp._run(pre, "n1", [PodInfo(victim)], "DefaultPreemption")
    assert h.api.deleted == []  # the 404 ended it: nothing deleted by us, no error
    assert h.metrics.registry.get_sample_value(
        "scheduler_preemption_goroutines_execution_total", {"result": "success"}
    ) == 1.0
    assert h.queue.where(pre.uid) not in (GATED, "")
    h.clock.step(2)
    h.queue.flush_backoff_completed()
    assert await h.step()
    assert h.bound() == {"pre": "n1"}


async def test_release_leaves_pods_gated_by_other_plugins() -> None:
    # SchedulingGates gates are lifted only by the pod's own update, never by a preemption.
    h = Harness()
    raw = make_pod("gated", cpu="1")
    raw["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    h.sched.on_pod("ADDED", raw)
    uid = PodInfo(raw).uid
    assert h.queue.where(uid) == GATED
    assert h.queue.release_gated(uid, "DefaultPreemption", "PreemptionFinished") == GATED


async def test_never_policy_message() -> None:
    h = Harness()
    _live(h)
    h.sched.on_node(None, make_node("n1", cpu="2"))
    h.sched.on_pod("ADDED", make_pod("victim", cpu="1500m", node_name="n1"))
    h.sched.on_pod("ADDED", make_pod("never", cpu="1", priority=100, preemptionPolicy="Never"))
    await h.step()
    [ev] = h.events("FailedScheduling")
    assert ev["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert not h.api.deleted


# ---------------------------------------------------------------------------------------------
# simulate


def _sim(tmp_path: Path, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(p), None, 1, "json", stream=buf) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _pc(name: str, value: int, **kw: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **kw}


def test_simulate_preemption_line_and_retry(tmp_path: Path) -> None:
    docs = [
        make_node("a", cpu="2"),
        make_node("b", cpu="2"),
        _pc("low", 10),
        _pc("high", 1000),
        make_pod("va", cpu="1500m", node_name="a", labels={"app": "guarded"}, priorityClassName="low"),
        make_pod("vb", cpu="1500m", node_name="b", priority=20),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "guarded"}}},
            "status": {"disruptionsAllowed": 0},
        },
        make_pod("pre", cpu="1", priorityClassName="high"),
    ]
    first, second = _sim(tmp_path, docs)
    # Without the budget node a would win (its victim has the lower priority).
    assert first["node"] is None
    assert first["nominated"] == "b" and first["victims"] == ["default/vb"]
    assert first["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert second["pod"] == "default/pre" and second["node"] == "b"
    assert "nominated" not in second


def test_simulate_priority_class_resolution_and_never(tmp_path: Path) -> None:
    docs = [
        make_node("a", cpu="2"),
        _pc("base", 5, globalDefault=True),
        _pc("never", 1000, preemptionPolicy="Never"),
        make_pod("v", cpu="1500m", node_name="a"),  # gets the global default: 5
        make_pod("n", cpu="1", priorityClassName="never"),
        make_pod("peer", cpu="1"),  # global default too: equal priority, nothing to preempt
    ]
    n, peer = _sim(tmp_path, docs)
    assert n["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert peer["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


def test_simulate_unknown_priority_class_is_an_input_error(tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump_all([make_node("a"), make_pod("x", priorityClassName="nope")]))
    assert run(str(p), None, 1, "json", stream=io.StringIO()) == 2
    assert "no PriorityClass with name nope was found" in capsys.readouterr().err


def test_async_preemption_runs_off_the_loop() -> None:
    # preempt() only records and schedules a task: nothing is awaited by the caller.
    async def go() -> None:
        h = Harness()
        lp = _live(h)
        h.sched.on_node(None, make_node("n1", cpu="2"))
        v = PodInfo(make_pod("v", node_name="n1"))
        pre = PodInfo(make_pod("pre", priority=5))
        lp.preempt(pre, "n1", [v], "DefaultPreemption")
        assert lp.is_running(pre.uid) and h.api.deleted == []
        await lp.drain()
        assert not lp.is_running(pre.uid) and h.api.deleted == [("default", "v")]

    asyncio.run(go())


# ---------------------------------------------------------------------------------------------
# SchedulerAsyncPreemption off: upstream prepareCandidate, inside the scheduling cycle


SYNC_GATES = FeatureGates({"SchedulerAsyncPreemption": False})


class _DeleteFails(FakeCoreAPI):
    def delete_pod(self, namespace: str, name: str) -> None:
        raise ApiError(500, f'pods "{name}": etcd is unhappy')


def _sync_live(h: Harness) -> LivePreemption:
    lp = _live(h)
    lp.sync = True
    return lp


async def test_sync_preemption_deletes_before_the_cycle_ends() -> None:
    # executor.go actuatePodPreemption without the gate: the victims are deleted (in parallel)
    # before PostFilter returns; nothing gates the preemptor; the lower-priority nominated pod
    # on the node loses its nomination afterwards.
    h = Harness(gates=SYNC_GATES)
    lp = _sync_live(h)
    h.sched.on_node(None, make_node("n1", cpu="4"))
    for i in range(3):
        h.sched.on_pod("ADDED", make_pod(f"victim-{i}", cpu="1200m", node_name="n1", priority=0))
    low = make_pod("low", cpu="100m", priority=1)
    low["status"] = {"nominatedNodeName": "n1"}
    h.queue.nominator.add(PodInfo(low), "n1")
    h.sched.on_pod("ADDED", make_pod("pre", cpu="3", priority=100))
    await h.step()
    # No drain: the writes were done when the cycle returned.
    assert sorted(h.api.deleted) == [("default", f"victim-{i}") for i in range(3)]
    assert not lp.tasks and not lp.is_running("uid-default-pre")
    assert len(h.events("Preempted")) == 3
    cleared = [n for _, n, b in h.api.status_patches if b == {"status": {"nominatedNodeName": None}}]
    assert cleared == ["low"]
    assert h.metrics.registry.get_sample_value("scheduler_preemption_victims_sum") == 3.0
    assert h.metrics.registry.get_sample_value(
        "scheduler_preemption_goroutines_execution_total", {"result": "success"}
    ) in (None, 0.0)  # no goroutine upstream either
    assert h.queue.where("uid-default-pre") not in (GATED, "")
    assert h.queue.nominator.node_of("uid-default-pre") == "n1"


async def test_sync_preemption_error_fails_the_post_filter() -> None:
    # prepareCandidate returns AsStatus(err): the PostFilter fails with the write's error, and
    # no node is nominated.
    h = Harness(api=_DeleteFails(), gates=SYNC_GATES)
    _sync_live(h)
    h.sched.on_node(None, make_node("n1", cpu="2"))
    h.sched.on_pod("ADDED", make_pod("victim", cpu="1500m", node_name="n1", priority=0))
    h.sched.on_pod("ADDED", make_pod("pre", cpu="1", priority=100))
    await h.step()
    assert h.api.deleted == [] and h.events("Preempted") == []
    assert h.queue.nominator.node_of("uid-default-pre") == ""
    [ev] = h.events("FailedScheduling")
    assert "etcd is unhappy" in ev["note"]


# ---------------------------------------------------------------------------------------------
# RunPostFilterPlugins: a rejection before DefaultPreemption's composes as the binary writes it


def test_post_filter_reasons_compose_like_the_binary() -> None:
    class NoClaims(PostFilterPlugin):
        """Stands in for DynamicResources' PostFilter when there is no claim to deallocate."""

        name = "NoClaims"

        def post_filter(
            self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
        ) -> tuple[PostFilterResult | None, Status | None]:
            return None, Status(Code.UNSCHEDULABLE, "no new claims to deallocate")

    reg = {**default_registry(), "NoClaims": NoClaims}
    plugins = {
        "queueSort": (PluginRef("PrioritySort"),),
        "preFilter": (PluginRef("NodeResourcesFit"),),
        "filter": (PluginRef("NodeResourcesFit"),),
        "postFilter": (PluginRef("NoClaims"), PluginRef("DefaultPreemption")),
        "bind": (PluginRef("DefaultBinder"),),
    }
    cache = Cache()
    for n in ("n1", "n2"):
        cache.add_node(make_node(n, cpu="1"))
        cache.add_pod(PodInfo(make_pod(f"on-{n}", cpu="800m", node_name=n)))
    snap = Snapshot()
    prof = Profile("default-scheduler", {p: PluginSet(refs) for p, refs in plugins.items()}, {}, None)
    fw = new_framework(prof, reg, Handle(snap, Listers()))
    out = scheduling_cycle(fw, Algorithm(random.Random(0)), cache, snap, PodInfo(make_pod("p", cpu="500m")))
    # The binary's text for this situation (the brief of issue 12): reasons joined with ", ".
    assert out.message == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod."
    )
    assert out.status is not None and out.status.code == Code.UNSCHEDULABLE
    assert out.nominating == ("override", "")

