"""pytest fixtures for pyscheduler's end-to-end tests (``pytest e2e/``).

Control plane
    If ``KUBECONFIG`` is set and its API server answers, that cluster is used
    as is. Otherwise the session starts a local loopback control plane
    (etcd + kube-apiserver with RBAC + kube-controller-manager + kwok; no
    kubelet, no default scheduler) with ``e2e/controlplane/up.sh`` and stops it with
    ``down.sh`` at the end. Missing binaries are built first by
    ``e2e/controlplane/build.sh`` (tens of minutes cold; set
    ``PYSCHED_E2E_BUILD=0`` to fail instead). Its run dir (pids, logs, PKI)
    is ``$PYSCHED_RUN`` or else ``/tmp/pyscheduler-cp-pytest-<pid>``, one per
    session, so concurrent sessions never share one; busy default ports are
    replaced by free ones; dirs of sessions killed before teardown are
    cleaned up by the next session. To keep one control plane across runs:
    ``eval "$(e2e/controlplane/up.sh | grep ^export)"``.

Environment
    ``PYSCHED_E2E_IN_CLUSTER=1``  pyscheduler already runs in the cluster
        (e2e/kind/run.sh). Tests must not start their own scheduler: check the
        ``in_cluster`` fixture (or use ``local_scheduler_allowed``).
    ``PYSCHED_E2E_KWOK=1``  kwok manages the nodes of an external cluster.

Local control-plane facts that tests must live with
    * kube-controller-manager runs the ReplicaSet, Deployment, StatefulSet,
      disruption (PDB status), garbage-collector, namespace, ServiceAccount(s),
      root-CA publisher, PV binder + PV/PVC protection, node-lifecycle and
      resourceclaim (claims of ResourceClaimTemplates) controllers (no
      Job/DaemonSet/CronJob, no pod GC, no taint eviction).
      Their pods are only scheduled if the template names ``pyscheduler`` and a
      test runs it. A ReplicaSet adopts (and, above its replica count, deletes)
      bare pods matching its selector.
    * ServiceAccount admission is on: a pod is rejected until its namespace's
      "default" ServiceAccount exists (``ensure_namespace`` and the
      ``namespace`` fixture wait for it); pods get a projected token volume.
      Deleted namespaces go away completely.
    * TaintNodesByCondition admission is on: a new node starts with
      ``node.kubernetes.io/not-ready:NoSchedule``, lifted by the node lifecycle
      controller once kwok reports it Ready (``wait_for_node_ready`` and
      ``node_factory(wait_ready=True)`` wait for that). Unschedulable nodes get
      ``node.kubernetes.io/unschedulable:NoSchedule``. ``Priority`` and
      ``DefaultTolerationSeconds`` admission are on.
    * kwok sets fake nodes Ready, renews their Leases (so they stay Ready),
      turns *bound* pods on its nodes Running, and finishes graceful deletion
      of bound pods.

Session fixtures
    ``control_plane``    ControlPlane (kubeconfig, kwok, in_cluster_scheduler, run_dir)
    ``kubeconfig``       admin kubeconfig path (str)
    ``api_client``       kubernetes.client.ApiClient (admin)
    ``core_v1``          kubernetes.client.CoreV1Api (admin)
    ``in_cluster``       bool, PYSCHED_E2E_IN_CLUSTER
    ``kwok``             skips the test unless kwok manages nodes
    ``scheduler_rbac``   applies manifests/ for real except the Deployment
                         (Namespace, ServiceAccount, RBAC, ConfigMap); returns
                         the list of applied objects
    ``scheduler_kubeconfig``  kubeconfig path for ServiceAccount
                         pyscheduler/pyscheduler (TokenRequest token): run the
                         scheduler process with it to prove the ClusterRole
    ``scheduler_config_path`` path of a KubeSchedulerConfiguration file equal
                         to the ConfigMap's, with clientConnection.kubeconfig
                         pointing at ``scheduler_kubeconfig``

Function fixtures
    ``namespace``        fresh namespace name (its "default" ServiceAccount exists);
                         its workloads, pods and then the namespace are deleted afterwards
    ``node_factory``     ``node_factory(count=1, prefix=None, wait_ready=True,
                         **make_node_kwargs) -> [names]``; with wait_ready, returns
                         once every node is Ready and has no not-ready/unreachable
                         taint; nodes deleted afterwards.
                         Skips (via ``kwok``) when kwok does not manage the nodes
    ``local_scheduler_allowed``  skips the test when PYSCHED_E2E_IN_CLUSTER=1

Helpers (``e2e.support``)
    ``plane``    find, start, restart and stop the control plane
    ``waits``    wait_for, wait_for_pod_phase, wait_for_pod_scheduled, wait_bound,
                 wait_failed_scheduling, wait_for_node_ready, events_for
    ``objects``  make_node, make_pod, create_pod(s), create_nodes, bind_pod, unique_name
    ``apply``    ensure_namespace, apply_yaml, apply_objects, cleanup
    ``auth``     write_sa_kubeconfig, create_sa_token, can_i, metrics_reader_token
The scheduler under test runs as ``scheduler.testing.process.SchedulerProcess``.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.differential import kubescheduler
from e2e.support.apply import apply_yaml, delete_all_pods, delete_workloads, ensure_namespace, iter_yaml_documents
from e2e.support.auth import write_sa_kubeconfig
from e2e.support.objects import REFERENCE, create_nodes, unique_name
from e2e.support.plane import MANIFESTS_DIR, ControlPlane, ensure_control_plane


def _uncaptured(request: pytest.FixtureRequest) -> contextlib.AbstractContextManager[None]:
    """Let build.sh/up.sh/down.sh progress reach the terminal (a cold build takes minutes)."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    return capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    try:
        with _uncaptured(request):
            cp = ensure_control_plane()
    except Exception as exc:
        pytest.fail(f"no usable control plane: {exc}", pytrace=False)
    try:
        yield cp
    finally:
        with _uncaptured(request):
            cp.stop()


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> str:
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    api = control_plane.api_client()
    yield api
    api.close()


@pytest.fixture(scope="session")
def core_v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def in_cluster(control_plane: ControlPlane) -> bool:
    return control_plane.in_cluster_scheduler


@pytest.fixture(scope="session")
def kwok(control_plane: ControlPlane) -> None:
    if not control_plane.kwok:
        pytest.skip("kwok does not manage this cluster's nodes (set PYSCHED_E2E_KWOK=1 if it does)")


@pytest.fixture
def local_scheduler_allowed(in_cluster: bool) -> None:
    if in_cluster:
        pytest.skip("PYSCHED_E2E_IN_CLUSTER=1: the scheduler already runs in the cluster")


@pytest.fixture
def namespace(core_v1: client.CoreV1Api) -> Iterator[str]:
    name = unique_name("e2e")
    ensure_namespace(core_v1, name, labels={"pyscheduler-e2e": "true"})
    yield name
    try:
        delete_workloads(core_v1.api_client, name)
        delete_all_pods(core_v1, name, wait=True, timeout=30)
    except (ApiException, AssertionError) as exc:  # best effort
        print(f"cleanup of namespace {name} failed: {exc}", file=sys.stderr)
    with contextlib.suppress(ApiException):
        core_v1.delete_namespace(name)


@pytest.fixture
def node_factory(core_v1: client.CoreV1Api, kwok: None) -> Iterator[Callable[..., list[str]]]:
    # Depends on ``kwok``: fake nodes are never created in a cluster whose
    # nodes kwok does not manage (e.g. somebody's real cluster in KUBECONFIG).
    created: list[str] = []

    def factory(
        count: int = 1, prefix: str | None = None, wait_ready: bool = True, timeout: float = 60.0, **kwargs: Any
    ) -> list[str]:
        names = create_nodes(
            core_v1,
            count,
            prefix=prefix or unique_name("node"),
            wait_ready=wait_ready,
            timeout=timeout,
            **kwargs,
        )
        created.extend(names)
        return names

    yield factory
    for name in created:
        try:
            core_v1.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                print(f"cleanup of node {name} failed: {exc}", file=sys.stderr)


@pytest.fixture(scope="session")
def priority_classes(api_client: client.ApiClient) -> Iterator[tuple[str, str]]:
    """Two PriorityClasses, (low: 10, high: 1000), for the preemption and priority cases."""
    sched = client.SchedulingV1Api(api_client)
    low, high = unique_name("low"), unique_name("high")
    for name, value in ((low, 10), (high, 1000)):
        sched.create_priority_class({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                     "metadata": {"name": name}, "value": value})
    yield low, high
    for name in (low, high):
        with contextlib.suppress(ApiException):
            sched.delete_priority_class(name)


@pytest.fixture(scope="session")
def scheduler_rbac(api_client: client.ApiClient) -> list[dict[str, Any]]:
    return apply_yaml(api_client, MANIFESTS_DIR, skip_kinds={"Deployment"})


@pytest.fixture(scope="session")
def scheduler_kubeconfig(
    api_client: client.ApiClient,
    scheduler_rbac: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    path = tmp_path_factory.mktemp("sa") / "pyscheduler.kubeconfig"
    return write_sa_kubeconfig(
        api_client, "pyscheduler", "pyscheduler", path, expiration_seconds=6 * 3600, create=False
    )


@pytest.fixture(scope="session")
def scheduler_config_path(scheduler_kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    cm = next(
        d
        for d in iter_yaml_documents(MANIFESTS_DIR)
        if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == "pyscheduler-config"
    )
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    cfg.setdefault("clientConnection", {})["kubeconfig"] = scheduler_kubeconfig
    path = pathlib.Path(tmp_path_factory.mktemp("sched-config")) / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)

@pytest.fixture(scope="module")
def reference(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubescheduler.KubeScheduler]:
    binary = kubescheduler.binary_path()
    if not binary.exists():
        pytest.fail(f"{binary} missing: run e2e/controlplane/build.sh kube-scheduler", pytrace=False)
    d = pathlib.Path(tmp_path_factory.mktemp("kube-reference"))
    cfg = kubescheduler.config(REFERENCE, kubeconfig, kubescheduler.disabled_plugins())
    ks = kubescheduler.KubeScheduler(binary, kubescheduler.write_config(d / "config.yaml", cfg), kubeconfig,
                                     d / "kube-scheduler.log")
    ks.start()
    try:
        yield ks
    finally:
        ks.stop()
