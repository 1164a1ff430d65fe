"""End-to-end: a Permit plugin that makes pods wait, live. The plugin author's example
(examples/pyscheduler-approval-gate, found through its entry point) runs in ``pyscheduler run``
under the pyscheduler ServiceAccount; its informer watches ConfigMaps (the example's RBAC adds
list/watch); pods labelled for approval are held on their node until a ConfigMap answers.

What the API server shows: the pod unbound while it waits (the WaitingForApproval Event from the
plugin's event recorder), bound once approved; "denied" and the timeout as FailedScheduling with
upstream's wording; a later answer brings a rejected pod back (the plugin's ConfigMap event)."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.support.apply import apply_yaml
from e2e.support.objects import GROUP, make_pod
from e2e.support.waits import events_for, wait_bound, wait_failed_scheduling, wait_for
from scheduler.testing.process import REPO, SchedulerProcess

EXAMPLE = REPO / "examples" / "pyscheduler-approval-gate"
LABEL = {"approval.example.com/required": "true"}
TIMEOUT = 6  # the plugin's timeoutSeconds: short, so the timeout case is quick

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")


@pytest.fixture
def plugin_on_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example importable and its entry point visible to the scheduler process, without
    installing it: the package directory plus a minimal .dist-info on PYTHONPATH (what
    ``pip install -e`` would give importlib.metadata)."""
    site = tmp_path / "site"
    info = site / "pyscheduler_approval_gate-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pyscheduler-approval-gate\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[scheduler.plugins]\nApprovalGate = approval_gate:ApprovalGate\n")
    paths = [str(EXAMPLE), str(site)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


@pytest.fixture
def approval_config(scheduler_config_path: str, api_client: client.ApiClient, tmp_path: pathlib.Path) -> str:
    apply_yaml(api_client, EXAMPLE / "rbac.yaml")
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    profile = next(p for p in cfg["profiles"] if p["schedulerName"] == "pyscheduler")
    profile.setdefault("plugins", {})["permit"] = {"enabled": [{"name": "ApprovalGate"}]}
    profile["pluginConfig"] = [{"name": "ApprovalGate", "args": {"timeoutSeconds": TIMEOUT}}]
    path = tmp_path / "approval-config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


@pytest.fixture
def scheduler(plugin_on_path: None, approval_config: str, scheduler_kubeconfig: str, tmp_path: pathlib.Path):
    proc = SchedulerProcess(approval_config, scheduler_kubeconfig, tmp_path, "approval")
    try:
        proc.wait_ready(timeout=60)
        yield proc
    finally:
        proc.stop()


def answer(core: client.CoreV1Api, namespace: str, data: dict[str, str]) -> None:
    body = {"metadata": {"name": "approvals", "namespace": namespace}, "data": data}
    try:
        core.create_namespaced_config_map(namespace, body)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        core.replace_namespaced_config_map("approvals", namespace, body)


def waiting_event(api_client: client.ApiClient, namespace: str, pod: str) -> Any:
    return wait_for(
        lambda: events_for(api_client, namespace, pod, "WaitingForApproval"),
        timeout=30, desc=f"WaitingForApproval for {pod}",
    )[0]


def test_waits_until_approved(scheduler, api_client, core_v1, node_factory, namespace):
    group = {GROUP: namespace}
    [node] = node_factory(1, labels=group)
    core_v1.create_namespaced_pod(namespace, make_pod("web", namespace, labels=LABEL, node_selector=group))
    core_v1.create_namespaced_pod(namespace, make_pod("plain", namespace, node_selector=group))
    ev = waiting_event(api_client, namespace, "web")
    # NominatedNodeNameForExpectation: the waiting pod says where it is going.
    wait_for(lambda: core_v1.read_namespaced_pod("web", namespace).status.nominated_node_name == node,
             timeout=10, desc="nominatedNodeName of the waiting pod")
    assert ev.note == f"{node} is held for the pod until web is approved in ConfigMap {namespace}/approvals"
    assert (ev.type, ev.reporting_controller) == ("Normal", "pyscheduler")
    # Unlabelled pods pass at once; the waiting one stays unbound while nobody answers.
    assert wait_bound(core_v1, namespace, "plain") == node
    time.sleep(2)
    assert core_v1.read_namespaced_pod("web", namespace).spec.node_name is None
    answer(core_v1, namespace, {"web": "approved"})
    assert wait_bound(core_v1, namespace, "web", timeout=20) == node
    assert events_for(api_client, namespace, "web", "FailedScheduling") == []


def test_denied_then_approved(scheduler, api_client, core_v1, node_factory, namespace):
    group = {GROUP: namespace}
    node_factory(1, labels=group)
    core_v1.create_namespaced_pod(namespace, make_pod("web", namespace, labels=LABEL, node_selector=group))
    waiting_event(api_client, namespace, "web")
    answer(core_v1, namespace, {"web": "denied"})
    ev, cond = wait_failed_scheduling(api_client, core_v1, namespace, "web")
    msg = f"0/1 nodes are available: 1 denied in ConfigMap {namespace}/approvals."
    assert (ev.note, cond.reason, cond.message) == (msg, "Unschedulable", msg)
    # The plugin's event on configmaps.v1. (its hint: the answer changed) brings it back.
    answer(core_v1, namespace, {"web": "approved"})
    wait_bound(core_v1, namespace, "web", timeout=30)


def test_times_out_with_upstreams_message(scheduler, api_client, core_v1, node_factory, namespace):
    group = {GROUP: namespace}
    node_factory(1, labels=group)
    core_v1.create_namespaced_pod(namespace, make_pod("web", namespace, labels=LABEL, node_selector=group))
    ev, cond = wait_failed_scheduling(api_client, core_v1, namespace, "web", timeout=TIMEOUT + 30)
    msg = f"0/1 nodes are available: 1 rejected due to timeout after waiting {TIMEOUT}s at plugin ApprovalGate."
    assert (ev.note, cond.message) == (msg, msg)
    answer(core_v1, namespace, {"web": "approved"})
    wait_bound(core_v1, namespace, "web", timeout=30)
