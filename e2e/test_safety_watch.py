"""End-to-end: a watch gap the scheduler cannot resume from must end in a re-list that forgets
what was deleted meanwhile (client-go's Replace), for pods and nodes.

The scheduler is frozen (SIGSTOP) while the API server restarts with its watch cache off and a
short etcd compaction interval, pods and a node are deleted, and etcd compacts past the
scheduler's last resourceVersion. On SIGCONT its watches resume from a compacted revision, get
410 Gone and must re-list. Before the fix the deleted pods kept their capacity ("Insufficient
cpu" forever) and the deleted node stayed schedulable.

Local control plane only (it restarts the kube-apiserver); the original flags are restored at
the end of the module.
"""

from __future__ import annotations

import contextlib
import pathlib
import signal
import subprocess
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.support.objects import make_pod
from e2e.support.plane import ControlPlane, api_reachable, kill_apiserver
from e2e.support.waits import wait_bound, wait_failed_scheduling, wait_for, wait_for_deleted
from scheduler.testing.process import SchedulerProcess

GROUP = "e2e-watch-gap"
GAP_FLAGS = ["--watch-cache=false", "--etcd-compaction-interval=2s"]

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")


def _apiserver_argv(run: pathlib.Path) -> tuple[int, list[str]]:
    pid = int((run / "pids" / "kube-apiserver.pid").read_text().strip())
    argv = [a.decode() for a in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    return pid, argv


def restart_apiserver_with(run: pathlib.Path, kubeconfig: str, argv: list[str]) -> None:
    """restart_apiserver, but with the given command line (flags added or restored)."""
    kill_apiserver(run)
    with open(run / "logs" / "kube-apiserver.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    (run / "pids" / "kube-apiserver.pid").write_text(f"{proc.pid}\n")
    wait_for(lambda: api_reachable(kubeconfig, timeout=2), timeout=90,
                     desc="kube-apiserver to come back")


@pytest.fixture(scope="module")
def original_apiserver(control_plane: ControlPlane) -> Iterator[tuple[pathlib.Path, list[str]]]:
    if control_plane.run_dir is None:
        pytest.skip("restarts the kube-apiserver of the local control plane only")
    run = control_plane.run_dir
    _, argv = _apiserver_argv(run)
    yield run, argv
    _, now = _apiserver_argv(run)
    if now != argv:
        restart_apiserver_with(run, control_plane.kubeconfig, argv)


@pytest.fixture
def no_election_config(scheduler_config_path: str, tmp_path: pathlib.Path) -> str:
    # A frozen leader loses its Lease and exits on waking: this test is about the watch only.
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["leaderElection"] = {"leaderElect": False}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def compacted(core: client.CoreV1Api, rv: str) -> bool:
    """True once etcd no longer serves revision ``rv`` (an exact read of it is 410 Gone)."""
    try:
        core.list_namespace(resource_version=rv, resource_version_match="Exact", limit=1)
    except ApiException as exc:
        if exc.status == 410:
            return True
        raise
    return False


def test_relist_after_compacted_gap_forgets_deleted_pods_and_nodes(
    control_plane: ControlPlane,
    original_apiserver: tuple[pathlib.Path, list[str]],
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    namespace: str,
    node_factory,
    no_election_config: str,
    scheduler_kubeconfig: str,
    tmp_path: pathlib.Path,
) -> None:
    run, argv = original_apiserver
    group = {GROUP: namespace}
    # "small" keeps running; "big" is deleted in the gap. An empty "big" would win the score
    # (more room), so a scheduler that forgot the delete would pick it.
    small = node_factory(1, labels=group, cpu="2")[0]
    big = node_factory(1, labels=group, cpu="8")[0]
    for name, node, cpu in (("hog-small", small, "2"), ("hog-big", big, "8")):
        core_v1.create_namespaced_pod(namespace, make_pod(name, namespace, cpu=cpu, node_name=node))

    sched = SchedulerProcess(no_election_config, scheduler_kubeconfig, tmp_path, "gap", port=free_port())
    try:
        sched.wait_ready(timeout=60)
        core_v1.create_namespaced_pod(namespace, make_pod("waiting", namespace, cpu="2", node_selector=group))
        _, cond = wait_failed_scheduling(api_client, core_v1, namespace, "waiting")
        assert "Insufficient cpu" in cond.message

        # The gap.
        sched.proc.send_signal(signal.SIGSTOP)
        try:
            before = core_v1.list_namespace(limit=1).metadata.resource_version
            gap_argv = [a for a in argv if not a.startswith(("--watch-cache=", "--etcd-compaction-interval="))]
            restart_apiserver_with(run, control_plane.kubeconfig, gap_argv + GAP_FLAGS)
            for name in ("hog-small", "hog-big"):
                core_v1.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
            core_v1.delete_node(big)
            wait_for_deleted(lambda: core_v1.read_node(big), desc=f"node {big}")
            for name in ("hog-small", "hog-big"):
                wait_for_deleted(lambda n=name: core_v1.read_namespaced_pod(n, namespace), desc=name)
            wait_for(lambda: compacted(core_v1, before), timeout=60, desc=f"etcd compaction past {before}")
        finally:
            sched.proc.send_signal(signal.SIGCONT)

        # The room hog-small held is reused, and never on the deleted node.
        assert wait_bound(core_v1, namespace, "waiting", timeout=60) == small
        core_v1.create_namespaced_pod(namespace, make_pod("after", namespace, cpu="1", node_selector=group))
        _, cond = wait_failed_scheduling(api_client, core_v1, namespace, "after", timeout=60)
        # The deleted node is not counted any more: every node the scheduler weighs is one the API lists.
        nodes = len(core_v1.list_node().items)
        assert cond.message.startswith(f"0/{nodes} nodes are available: 1 Insufficient cpu"), cond.message
        bound_to_big = [
            p.metadata.name for p in core_v1.list_namespaced_pod(namespace).items if p.spec.node_name == big
        ]
        assert bound_to_big == []
        assert sched.proc.poll() is None, sched.logs()

        # It was the re-list that did it (the watch could not resume past the compaction).
        deleted = {
            e.get("kind"): e.get("count") for e in sched.log_events() if e.get("event") == "relist_deleted"
        }
        assert deleted.get("Pod", 0) >= 2 and deleted.get("Node", 0) >= 1, deleted
    finally:
        with contextlib.suppress(ProcessLookupError):
            sched.proc.send_signal(signal.SIGCONT)
        sched.stop()
