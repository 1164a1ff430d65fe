"""The Helm chart (charts/pyscheduler): rendered by helm, applied to the local plane.

helm is built from Go modules into the plane's cache (e2e/controlplane/build.sh helm), at the
version e2e/controlplane/helm/go.mod pins. The plane has no container runtime, so the chart's
image never runs here. What these tests prove instead:

* rendered with its defaults, the chart makes the objects of manifests/ (same kinds and names,
  the same RBAC rules and bindings, a configuration the scheduler decodes to the same thing,
  the same pod template where it matters);
* the rendered objects are accepted by the API server as they are (server-side apply, no dry
  run), the Deployment's pods pass admission in a namespace enforcing the restricted Pod
  Security Standard (kube-controller-manager creates every replica);
* the scheduler, run out of cluster with the chart's ServiceAccount token and the configuration
  read back from the chart's ConfigMap, takes the chart's Lease and schedules a pod: the chart's
  RBAC is enough for a whole scheduling cycle; the metrics-reader binding lets its subject read
  /metrics and nobody else.
"""

from __future__ import annotations

import contextlib
import functools
import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.apply import apply_objects, iter_yaml_documents
from e2e.support.auth import create_sa_token, ensure_service_account, write_sa_kubeconfig
from e2e.support.objects import create_pod, unique_name
from e2e.support.plane import CONTROLPLANE_DIR, MANIFESTS_DIR, REPO_ROOT
from e2e.support.waits import wait_for, wait_for_pod_scheduled
from scheduler.config.load import parse_config
from scheduler.live.serving.options import DEFAULT_SECURE_PORT
from scheduler.testing.process import SchedulerProcess, free_port

CHART = REPO_ROOT / "charts" / "pyscheduler"


def _lib(var: str) -> str:
    """A setting of e2e/controlplane/lib.sh (paths and versions read from the go.mod files)."""
    out = subprocess.run(
        ["bash", "-c", f'source "{CONTROLPLANE_DIR}/lib.sh"; printf %s "${var}"'],
        check=True, capture_output=True, text=True,
    )
    return out.stdout


@pytest.fixture(scope="module")
def helm() -> str:
    path = _lib("HELM_BIN")
    if not pathlib.Path(path).exists():
        subprocess.run(["bash", str(CONTROLPLANE_DIR / "build.sh"), "helm"], check=True)
    return path


def render(helm: str, release: str, namespace: str, *values: str) -> list[dict[str, Any]]:
    """``helm template`` for the plane's Kubernetes version; ``values`` are --set-json pairs."""
    argv = [helm, "template", release, str(CHART), "--namespace", namespace, "--kube-version", _lib("KUBE_VERSION")]
    for v in values:
        argv += ["--set-json", v]
    out = subprocess.run(argv, check=True, capture_output=True, text=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _key(d: dict[str, Any]) -> tuple[str, str, str]:
    return d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", "")


def _scheduler_config(configmap: dict[str, Any]) -> dict[str, Any]:
    doc = yaml.safe_load(configmap["data"]["config.yaml"])
    assert isinstance(doc, dict)
    return doc


def _args(args: list[str]) -> list[str]:
    """``--flag=value`` as ``--flag value``."""
    return [part for a in args for part in (a.split("=", 1) if a.startswith("--") else [a])]


# ---------------------------------------------------------------------------------------------
# The chart's defaults are manifests/


@functools.cache
def _manifests() -> dict[tuple[str, str, str], dict[str, Any]]:
    return {_key(d): d for d in iter_yaml_documents(MANIFESTS_DIR)}


def test_default_render_makes_the_manifests_objects(helm: str) -> None:
    chart = {_key(d): d for d in render(helm, "pyscheduler", "pyscheduler", "namespace.create=true")}
    manifests = _manifests()
    assert set(chart) == set(manifests)
    for key, want in manifests.items():
        got = chart[key]
        assert want["metadata"]["labels"].items() <= got["metadata"]["labels"].items(), key
        if key[0] in ("ClusterRole", "Role"):
            assert got["rules"] == want["rules"], key
        if key[0] in ("ClusterRoleBinding", "RoleBinding"):
            assert (got["roleRef"], got["subjects"]) == (want["roleRef"], want["subjects"]), key

    cm = ("ConfigMap", "pyscheduler-config", "pyscheduler")
    # The chart writes the Lease timings out; decoded, both are the same configuration.
    assert parse_config(_scheduler_config(chart[cm])) == parse_config(_scheduler_config(manifests[cm]))

    dep = ("Deployment", "pyscheduler", "pyscheduler")
    got_spec, want_spec = chart[dep]["spec"], manifests[dep]["spec"]
    assert got_spec["replicas"] == want_spec["replicas"]
    got_pod, want_pod = got_spec["template"]["spec"], want_spec["template"]["spec"]
    for field in ("serviceAccountName", "securityContext", "volumes"):
        assert got_pod[field] == want_pod[field], field
    affinity = got_pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert affinity[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    (got_c,), (want_c,) = got_pod["containers"], want_pod["containers"]
    for field in ("name", "command", "env", "ports", "livenessProbe", "readinessProbe", "resources",
                  "securityContext", "volumeMounts", "imagePullPolicy"):
        assert got_c[field] == want_c[field], field
    assert got_c["image"].split(":")[0] == want_c["image"].split(":")[0]
    assert _args(got_c["args"]) == [*_args(want_c["args"]), "--secure-port", str(DEFAULT_SECURE_PORT)]


# ---------------------------------------------------------------------------------------------
# The rendered objects on the plane


@pytest.fixture
def release(api_client: client.ApiClient, core_v1: client.CoreV1Api) -> Iterator[str]:
    """A release name (also its namespace); its namespace and cluster-scoped objects go at the end."""
    name = unique_name("helm")
    yield name
    rbac = client.RbacAuthorizationV1Api(api_client)
    full = f"{name}-pyscheduler"
    for n in (full, f"{full}-metrics-reader"):
        with contextlib.suppress(ApiException):
            rbac.delete_cluster_role(n)
    for n in (full, f"{full}-auth-delegator", f"{full}-metrics-reader"):
        with contextlib.suppress(ApiException):
            rbac.delete_cluster_role_binding(n)
    with contextlib.suppress(ApiException):
        core_v1.delete_namespace(name)


def test_rendered_objects_are_accepted_and_run_the_scheduler(
    helm: str,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    node_factory,
    local_scheduler_allowed,
    namespace: str,
    release: str,
    tmp_path: pathlib.Path,
) -> None:
    ns = release
    profile = unique_name("helm-sched")
    scraper = "scraper"
    docs = render(
        helm, release, ns,
        "namespace.create=true",
        f'profiles=[{{"schedulerName": "{profile}"}}]',
        f'metrics.readerSubjects=[{{"kind": "ServiceAccount", "name": "{scraper}", "namespace": "{ns}"}}]',
        "metrics.service.enabled=true",
    )
    full = f"{release}-pyscheduler"
    assert {d["kind"] for d in docs} == {
        "Namespace", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "Service", "Deployment",
    }
    applied = apply_objects(api_client, docs)
    assert sorted(map(_key, applied)) == sorted(map(_key, docs))

    # The restricted Pod Security Standard admits the pod template: every replica is created
    # (a rejected pod would leave the ReplicaSet short, with a FailedCreate event).
    apps = client.AppsV1Api(api_client)

    def replicas_created() -> bool:
        sets = apps.list_namespaced_replica_set(ns).items
        return len(sets) == 1 and (sets[0].status.replicas or 0) == 2

    wait_for(replicas_created, timeout=60, desc="the Deployment's ReplicaSet to create 2 pods")
    labels = core_v1.read_namespace(ns).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"

    # The scheduler as the chart's ServiceAccount, with the configuration the chart stored.
    sa_kc = write_sa_kubeconfig(api_client, ns, full, tmp_path / "sa.kubeconfig", create=False)
    cm = core_v1.read_namespaced_config_map(f"{full}-config", ns)
    cfg = yaml.safe_load(cm.data["config.yaml"])
    assert cfg["leaderElection"]["resourceName"] == full and cfg["leaderElection"]["resourceNamespace"] == ns
    cfg["clientConnection"] = {"kubeconfig": sa_kc}
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    (node,) = node_factory(1)
    proc = SchedulerProcess(str(cfg_path), sa_kc, tmp_path, "helm", port=free_port())
    try:
        proc.wait_ready(timeout=60)
        # Ready means synced, as upstream's readyz: the Lease may be taken a moment later.
        leases = client.CoordinationV1Api(api_client)

        def holder() -> str | None:
            try:
                return leases.read_namespaced_lease(full, ns).spec.holder_identity
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise

        wait_for(holder, timeout=30, desc="the chart's Lease to be held")
        # In the test's own namespace: the release's enforces the restricted standard.
        create_pod(core_v1, namespace, name="p", scheduler_name=profile, node_selector={"kubernetes.io/hostname": node})
        assert wait_for_pod_scheduled(core_v1, namespace, "p", timeout=60).spec.node_name == node

        # /metrics: the bound scraper may read it, another identity of the namespace may not.
        tokens = {}
        for sa in (scraper, "other"):
            ensure_service_account(core_v1, ns, sa)
            tokens[sa] = create_sa_token(core_v1, ns, sa)
        wait_for(lambda: proc.metrics(tokens[scraper]), timeout=30, desc="/metrics for the reader")
        assert proc.get("/metrics", token=tokens["other"])[0] == 403
    finally:
        proc.stop()
