"""The plugin author's example, examples/pyscheduler-approval-gate: a Permit plugin that holds a
pod until its name is "approved" in a ConfigMap it watches through the Handle's informer.
Found through its entry point, run in the live loop (Harness) and in ``simulate``."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from scheduler.backend.queue import ACTIVE, UNSCHEDULABLE
from scheduler.config import parse_config
from scheduler.core.profiles import FrameworkError, build_frameworks, plugin_resources
from scheduler.framework.informers import GroupVersionResource
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.registry import GROUP, default_registry
from scheduler.simulate.simulator import Simulator, build_cluster
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.harness import Harness

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pyscheduler-approval-gate"
LABEL = {"approval.example.com/required": "true"}
CONFIGMAPS = "configmaps.v1."


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield default_registry([EntryPoint("ApprovalGate", "approval_gate:ApprovalGate", GROUP)])
    sys.modules.pop("approval_gate", None)


def config(args: dict[str, Any] | None = None) -> Any:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler",
                               "plugins": {"permit": {"enabled": [{"name": "ApprovalGate"}]}}}
    if args is not None:
        profile["pluginConfig"] = [{"name": "ApprovalGate", "args": args}]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [profile]})


def approvals(data: dict[str, str], rv: str = "1", namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "approvals", "namespace": namespace, "resourceVersion": rv}, "data": data}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"configMap": ""}, "configMap: Invalid value: must be a ConfigMap name"),
        ({"timeoutSeconds": 0}, "timeoutSeconds: Invalid value: 0: must be in (0, 900]"),
        ({"timeoutSeconds": 901}, "timeoutSeconds: Invalid value: 901: must be in (0, 900]"),
        ({"colour": "red"}, "unknown field(s): colour"),
    ],
)
def test_bad_args_are_refused(registry, args, error) -> None:
    with pytest.raises(FrameworkError, match=re.escape(f'initializing plugin "ApprovalGate": {error}')):
        build_frameworks(config(args), Snapshot(), Listers(), registry=registry)


def test_configmaps_are_watched_because_the_plugin_asked(registry) -> None:
    fws = build_frameworks(config(), Snapshot(), Listers(), registry=registry)
    assert plugin_resources(fws) == [GroupVersionResource("", "v1", "configmaps")]
    assert GroupVersionResource("", "v1", "configmaps").path == "/api/v1/configmaps"


async def test_live_waits_for_approval_then_binds(registry) -> None:
    h = Harness(config=config({"timeoutSeconds": 120}), registry=registry)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("web", labels=LABEL))
    h.sched.on_pod("ADDED", make_pod("plain"))
    await h.step()
    assert h.bound() == {} and h.waiting_pods().get("uid-default-web") is not None
    [ev] = h.events("WaitingForApproval")
    assert ev["note"] == "n1 is held for the pod until web is approved in ConfigMap default/approvals"
    await h.step()
    assert h.bound() == {"plain": "n1"}  # unlabelled pods pass
    # An answer for another pod, or in another namespace, does not let it go.
    h.sched.on_resource(CONFIGMAPS, "ADDED", approvals({"other": "approved"}))
    h.sched.on_resource(CONFIGMAPS, "ADDED", approvals({"web": "approved"}, namespace="elsewhere"))
    await h.settle()
    assert "web" not in h.bound()
    h.sched.on_resource(CONFIGMAPS, "MODIFIED", approvals({"other": "approved", "web": "approved"}, rv="2"))
    await h.settle()
    assert h.bound() == {"plain": "n1", "web": "n1"}


async def test_live_denied_then_approved_is_requeued_by_the_configmap_event(registry) -> None:
    h = Harness(config=config(), registry=registry)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("web", labels=LABEL))
    await h.step()
    h.sched.on_resource(CONFIGMAPS, "ADDED", approvals({"web": "denied"}))
    await h.settle()
    msg = "0/1 nodes are available: 1 denied in ConfigMap default/approvals."
    assert h.events("FailedScheduling")[-1]["note"] == msg
    assert h.queue.where("uid-default-web") == UNSCHEDULABLE
    assert h.queue.get("uid-default-web").unschedulable_plugins == {"ApprovalGate"}
    h.clock.step(20)
    # Still denied: the hint skips; approved: the pod moves, and Permit lets it through at once.
    h.sched.on_resource(CONFIGMAPS, "MODIFIED", approvals({"web": "denied", "x": "y"}, rv="2"))
    assert h.queue.where("uid-default-web") == UNSCHEDULABLE
    h.sched.on_resource(CONFIGMAPS, "MODIFIED", approvals({"web": "approved"}, rv="3"))
    assert h.queue.where("uid-default-web") == ACTIVE
    await h.step()
    assert h.bound() == {"web": "n1"}


async def test_live_timeout(registry) -> None:
    h = Harness(config=config({"timeoutSeconds": 90}), registry=registry)
    h.sched.on_node(None, make_node("n1"))
    h.sched.on_pod("ADDED", make_pod("web", labels=LABEL))
    await h.step()
    h.permit_timer.advance(90)
    await h.settle()
    assert h.events("FailedScheduling")[-1]["note"] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1m30s at plugin ApprovalGate."
    )


def test_simulate_reads_the_configmap_from_the_cluster_file(registry) -> None:
    docs = [make_node("n1", cpu="2"), approvals({"ok": "approved", "no": "denied"}),
            make_pod("ok", cpu="1", labels=LABEL), make_pod("no", cpu="1", labels=LABEL),
            make_pod("later", cpu="1", labels=LABEL)]
    sim = Simulator(build_cluster(docs), config(), seed=0, registry=registry)
    assert sim.ignored_kinds == set()
    got = [(o.pod.name, o.node, o.message) for o in sim.attempts()]
    assert got == [
        ("ok", "n1", ""),
        ("no", None, "0/1 nodes are available: 1 denied in ConfigMap default/approvals."),
        ("later", None,
         "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin ApprovalGate."),
    ]
