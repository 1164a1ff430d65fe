"""End-to-end: quantities past int64 (issue 9). A node with ``cpu: 1E`` and a bound pod asking for
``cpu: 1E`` (the API server accepts both) must cost nothing but themselves, and pyscheduler must
treat them as kube-scheduler v1.36.3 does.

What v1.36.3 does (apimachinery Quantity.MilliValue: 1E is an int64 mantissa 1 with scale 18, and
scaling it to milli-units overflows, which MilliValue reports as 0): the 1E node offers 0
milli-CPU, so every pod that asks for CPU gets "Insufficient cpu" there, while pods that ask for
no CPU fit and score there like on any node; a pod asking for 1E CPU asks for 0. Observed with
the real binary (kube-scheduler --v=10 "Plugin scored node" lines) on these shapes of nodes and
pods: the CPU pod avoided the 1E node, the no-request, memory-only and 1E pods went to it, and the
pinned CPU pod failed with "1 Insufficient cpu". ``test_same_decisions_as_kube_scheduler`` repeats
that comparison live when the binary is built.
"""

from __future__ import annotations

import contextlib
import pathlib
import subprocess
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from e2e.support.apply import delete_all_pods, ensure_namespace
from e2e.support.objects import GROUP, SCHEDULER, make_pod
from e2e.support.plane import CONTROLPLANE_DIR, ControlPlane
from e2e.support.waits import wait_bound, wait_failed_scheduling
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture
def pysched(
    scheduler_config_path: str, scheduler_kubeconfig: str, tmp_path: pathlib.Path
) -> Iterator[SchedulerProcess]:
    with SchedulerProcess.ready(scheduler_config_path, scheduler_kubeconfig, tmp_path, "sched") as p:
        yield p


@pytest.fixture
def labels(namespace: str) -> dict[str, str]:
    """A label unique to this test: its nodes carry it, its pods select it."""
    return {GROUP: namespace}


def build_cluster(
    core: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str, labels: dict[str, str]
) -> dict[str, str]:
    """Nodes a, b (normal; different memory so no score ties) and big (1E cpu), plus a pod with a
    1E cpu request already bound to a. Returns role -> node name."""
    roles = {
        # 24Gi: with 32Gi, a and b tie for p-cpu under v1.36.3's BalancedAllocation (85+70 vs
        # 86+69), and a random tie-break would make the comparison with the binary a coin toss.
        "a": node_factory(1, cpu="4", memory="24Gi", labels=labels)[0],
        "b": node_factory(1, cpu="4", memory="12Gi", labels=labels)[0],
        "big": node_factory(1, cpu="1E", memory="64Gi", labels=labels)[0],
    }
    assert core.read_node(roles["big"]).status.allocatable["cpu"] == "1E"  # the API took it as is
    bound = make_pod("huge", namespace, scheduler_name=None, cpu="1E", memory="1Gi", node_name=roles["a"])
    core.create_namespaced_pod(namespace, bound)
    return roles


# (pod, cpu, memory, pinned to the 1E node)
PENDING: list[tuple[str, str | None, str | None, bool]] = [
    ("p-cpu", "1", "128Mi", False),
    ("p-none", None, None, False),
    ("p-1e", "1E", "128Mi", False),
    ("p-mem", None, "1Gi", False),
    ("p-stuck", "1", "128Mi", True),
    ("p-ok-0", "500m", "256Mi", False),
    ("p-ok-1", "500m", "256Mi", False),
]


def run_pods(
    api_client: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    labels: dict[str, str],
    roles: dict[str, str],
    scheduler_name: str,
) -> dict[str, str]:
    """Create the pending pods one at a time (the same order for every scheduler); return
    pod -> role of its node, or the first sentence of its FailedScheduling message."""
    by_node = {v: k for k, v in roles.items()}
    out: dict[str, str] = {}
    for name, cpu, mem, pinned in PENDING:
        selector = dict(labels)
        if pinned:
            selector[HOSTNAME] = roles["big"]
        pod = make_pod(name, namespace, scheduler_name=scheduler_name, cpu=cpu, memory=mem,
                               node_selector=selector)
        core.create_namespaced_pod(namespace, pod)
        if pinned:
            ev, _ = wait_failed_scheduling(api_client, core, namespace, name, timeout=60)
            out[name] = (ev.note or "").split(".")[0]  # the Filter diagnosis; PostFilter text follows
        else:
            out[name] = by_node[wait_bound(core, namespace, name, timeout=60)]
    return out


def test_one_exa_node_and_pod_are_contained(pysched, api_client, core_v1, node_factory, namespace, labels):
    roles = build_cluster(core_v1, node_factory, namespace, labels)
    got = run_pods(api_client, core_v1, namespace, labels, roles, SCHEDULER)
    # What the v1.36.3 binary did with the same shapes (module docstring).
    assert got["p-cpu"] != "big"
    assert (got["p-none"], got["p-1e"], got["p-mem"]) == ("big", "big", "big")
    assert got["p-ok-0"] in ("a", "b") and got["p-ok-1"] in ("a", "b")
    total = len(core_v1.list_node().items)
    assert got["p-stuck"] == (
        f"0/{total} nodes are available: 1 Insufficient cpu, {total - 1} node(s) didn't match Pod's node "
        "affinity/selector"
    )
    # The scheduler kept going: nothing was rejected or crashed on the way.
    logs = pysched.logs()
    assert "scheduling_cycle_crashed" not in logs and "node_columns_failed" not in logs


# ---------------------------------------------------------------------------------------------
# The same scenario under the real kube-scheduler v1.36.3, when it is built


REF_PROFILE = "kube-ref"


def _kube_scheduler_bin() -> pathlib.Path | None:
    out = subprocess.run(
        ["bash", "-c", f'source "{CONTROLPLANE_DIR}/lib.sh"; echo "$KUBE_SCHEDULER_BIN"'],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    path = pathlib.Path(out) if out else None
    return path if path is not None and path.is_file() else None


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane, tmp_path: pathlib.Path) -> Iterator[str]:
    """The real binary with one profile, ``kube-ref``: it schedules only the pods that name it."""
    binary = _kube_scheduler_bin()
    run = control_plane.run_dir
    if binary is None or run is None or not (run / "pki" / "kube-scheduler.kubeconfig").is_file():
        pytest.skip("kube-scheduler v1.36.3 not built (e2e/controlplane/build.sh kube-scheduler) or no local plane")
    config = tmp_path / "kube-ref.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection:\n  kubeconfig: {run / 'pki' / 'kube-scheduler.kubeconfig'}\n"
        "leaderElection:\n  leaderElect: false\n"
        f"profiles:\n- schedulerName: {REF_PROFILE}\n"
    )
    log = open(tmp_path / "kube-scheduler.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(binary), f"--config={config}", "--bind-address=127.0.0.1", "--secure-port=0"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield REF_PROFILE
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(20)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()


def test_same_decisions_as_kube_scheduler(
    pysched, kube_scheduler, api_client, core_v1, node_factory, namespace, labels
):
    ours_labels = dict(labels)
    ref_labels = {k: f"{v}-ref" for k, v in labels.items()}
    ours = build_cluster(core_v1, node_factory, namespace, ours_labels)
    ref_ns = f"{namespace}-ref"
    ensure_namespace(core_v1, ref_ns, labels={"pyscheduler-e2e": "true"})
    try:
        ref = build_cluster(core_v1, node_factory, ref_ns, ref_labels)
        want = run_pods(api_client, core_v1, ref_ns, ref_labels, ref, kube_scheduler)
        got = run_pods(api_client, core_v1, namespace, ours_labels, ours, SCHEDULER)
    finally:
        with contextlib.suppress(Exception):
            delete_all_pods(core_v1, ref_ns, wait=True, timeout=30)
        with contextlib.suppress(Exception):
            core_v1.delete_namespace(ref_ns)
    assert got == want
    assert want["p-none"] == "big"  # the scenario does exercise the 1E node

