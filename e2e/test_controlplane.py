"""The e2e control plane itself works: RBAC, kwok, binding, manifests."""

from __future__ import annotations

import contextlib
import datetime

import harness
import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException


def test_apiserver_reachable_with_rbac(api_client: client.ApiClient, tmp_path) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major and version.git_version.startswith("v")

    # An unprivileged ServiceAccount (no bindings) is authenticated but forbidden.
    ns = harness.unique_name("rbac")
    sa = "nobody"
    kc = harness.write_sa_kubeconfig(api_client, ns, sa, tmp_path / "nobody.kubeconfig", expiration_seconds=600)
    sa_api = harness.new_api_client(kc)
    try:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(sa_api).list_secret_for_all_namespaces()
        assert err.value.status == 403, err.value
        assert f"system:serviceaccount:{ns}:{sa}" in err.value.body
        assert not harness.can_i(sa_api, "list", "secrets")
        # ...while the admin (system:masters) may.
        assert harness.can_i(api_client, "list", "secrets")
    finally:
        sa_api.close()


def test_fake_node_becomes_ready(core_v1: client.CoreV1Api, kwok, node_factory) -> None:
    (name,) = node_factory(1, wait_ready=True, timeout=30)
    node = core_v1.read_node(name)
    assert harness.node_is_ready(node)
    assert node.status.allocatable["cpu"] == "4"
    assert node.status.allocatable["memory"] == "32Gi"
    assert node.status.allocatable["pods"] == "110"
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "zone-a"
    assert not node.spec.taints, "TaintNodesByCondition must be disabled"
    types = {a.type for a in node.status.addresses or []}
    assert {"InternalIP", "Hostname"} <= types


def test_manually_bound_pod_runs(core_v1: client.CoreV1Api, kwok, node_factory, namespace: str) -> None:
    (node,) = node_factory(1, wait_ready=True)
    # schedulerName nobody serves: only our manual binding can place it.
    pod = harness.create_pod(core_v1, namespace, name="bound-by-hand", scheduler_name="no-such-scheduler")
    assert not pod.spec.node_name
    harness.bind_pod(core_v1, namespace, "bound-by-hand", node)
    pod = harness.wait_for_pod_phase(core_v1, namespace, "bound-by-hand", "Running", timeout=30)
    assert pod.spec.node_name == node
    assert pod.status.pod_ip
    ready = harness.pod_condition(pod, "Ready")
    assert ready is not None and ready.status == "True"

    # Graceful deletion of a bound pod is finished by kwok (no kubelet).
    core_v1.delete_namespaced_pod("bound-by-hand", namespace)
    harness.wait_for_deleted(lambda: core_v1.read_namespaced_pod("bound-by-hand", namespace), timeout=30, desc="pod")


def test_manifests_server_side_dry_run(api_client: client.ApiClient, core_v1: client.CoreV1Api) -> None:
    docs = list(harness.iter_yaml_documents(harness.MANIFESTS_DIR))
    kinds = {d["kind"] for d in docs}
    assert {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    } <= kinds
    # Dry-run creation of namespaced objects needs their namespace to exist.
    for d in docs:
        if d["kind"] == "Namespace":
            harness.ensure_namespace(core_v1, d["metadata"]["name"])
    out = harness.apply_objects(api_client, docs, dry_run=True)
    assert len(out) == len(docs)
    example = harness.apply_yaml(api_client, harness.MANIFESTS_DIR / "examples" / "pod.yaml", dry_run=True)
    assert example[0]["spec"]["schedulerName"] == "pyscheduler"


WATCHED_CORE = (
    "pods", "nodes", "namespaces", "services", "replicationcontrollers", "persistentvolumes", "persistentvolumeclaims",
)
WATCHED_STORAGE = ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments")

# Exactly the API calls scheduler/ makes (manifests/rbac.yaml lists who makes which), as
# (apiGroup, resource, verb) over all namespaces...
EXPECTED_CLUSTER_RULES = {
    *[("", r, v) for r in WATCHED_CORE for v in ("list", "watch")],
    *[("apps", r, v) for r in ("replicasets", "statefulsets") for v in ("list", "watch")],
    *[("storage.k8s.io", r, v) for r in WATCHED_STORAGE for v in ("list", "watch")],
    # VolumeBinding PreBind (scheduler/volumeapi.py).
    ("", "persistentvolumes", "update"),
    ("", "persistentvolumeclaims", "update"),
    ("", "pods/binding", "create"),
    ("", "pods/status", "patch"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    # system:auth-delegator: delegated authentication/authorization of /metrics.
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
}
# ...plus, in namespace pyscheduler only, the leader-election Lease (name "" = any name).
EXPECTED_LEASE_RULES = {
    ("coordination.k8s.io", "leases", "create", ""),
    ("coordination.k8s.io", "leases", "get", "pyscheduler"),
    ("coordination.k8s.io", "leases", "update", "pyscheduler"),
}

# Spot checks through SubjectAccessReview (verb, resource, group[, subresource]).
ALLOWED = [
    *[(v, r, "") for r in WATCHED_CORE for v in ("list", "watch")],
    ("list", "replicasets", "apps"),
    ("watch", "statefulsets", "apps"),
    *[("list", r, "storage.k8s.io") for r in WATCHED_STORAGE],
    ("update", "persistentvolumes", ""),
    ("update", "persistentvolumeclaims", ""),
    ("create", "events", "events.k8s.io"),
    ("patch", "events", "events.k8s.io"),
    ("create", "tokenreviews", "authentication.k8s.io"),
    ("create", "subjectaccessreviews", "authorization.k8s.io"),
]
DENIED = [
    # Writes the code never makes.
    ("delete", "pods", ""),
    ("update", "pods", ""),
    ("patch", "pods", ""),
    ("create", "pods", ""),
    ("create", "events", ""),  # core-group events: the code writes events.k8s.io only
    ("patch", "events", ""),
    ("delete", "events", "events.k8s.io"),
    ("patch", "nodes", ""),
    ("delete", "nodes", ""),
    ("create", "deployments", "apps"),
    # Reads the code never makes.
    ("get", "pods", ""),
    ("get", "nodes", ""),
    ("list", "secrets", ""),
    ("get", "configmaps", ""),
    *[(v, r, "") for r in ("persistentvolumes", "persistentvolumeclaims") for v in ("get", "patch", "delete")],
    ("get", "storageclasses", "storage.k8s.io"),
    ("update", "csinodes", "storage.k8s.io"),
    ("watch", "poddisruptionbudgets", "policy"),
    ("list", "priorityclasses", "scheduling.k8s.io"),
]
DENIED_SUBRESOURCES = [("update", "status"), ("get", "status"), ("create", "eviction")]


def _rules(api: client.ApiClient, namespace: str) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, resourceName) granted to *api*'s identity in *namespace*."""
    review = client.AuthorizationV1Api(api).create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace))
    )
    out = set()
    for r in review.status.resource_rules or []:
        for g in r.api_groups or [""]:
            for res in r.resources or []:
                for v in r.verbs:
                    for name in r.resource_names or [""]:
                        out.add((g, res, v, name))
    return out


def test_scheduler_service_account_rbac(
    api_client: client.ApiClient, scheduler_kubeconfig: str, in_cluster: bool, tmp_path
) -> None:
    sa_api = harness.new_api_client(scheduler_kubeconfig)
    # What every authenticated identity gets (system:basic-user...) is not ours to check.
    nobody_kc = harness.write_sa_kubeconfig(api_client, harness.unique_name("rbac"), "nobody", tmp_path / "n.kc")
    nobody_api = harness.new_api_client(nobody_kc)
    try:
        # The exact set, from the API server's own evaluation of the bindings.
        baseline = {ns: _rules(nobody_api, ns) for ns in ("default", "pyscheduler")}
        cluster = {(g, r, v) for g, r, v, n in _rules(sa_api, "default") - baseline["default"] if not n}
        assert cluster == EXPECTED_CLUSTER_RULES
        in_ns = _rules(sa_api, "pyscheduler") - baseline["pyscheduler"]
        leases = {x for x in in_ns if (x[0], x[1], x[2]) not in EXPECTED_CLUSTER_RULES}
        assert leases == EXPECTED_LEASE_RULES

        wrong = [a for a in ALLOWED if not harness.can_i(sa_api, a[0], a[1], a[2], namespace="default")]
        wrong += [d for d in DENIED if harness.can_i(sa_api, d[0], d[1], d[2], namespace="default")]
        for verb, sub in (("create", "binding"), ("patch", "status")):
            if not harness.can_i(sa_api, verb, "pods", namespace="default", subresource=sub):
                wrong.append((verb, f"pods/{sub}", ""))
        for verb, sub in DENIED_SUBRESOURCES:
            if harness.can_i(sa_api, verb, "pods", namespace="default", subresource=sub):
                wrong.append((verb, f"pods/{sub} (should be denied)", ""))
        lease = dict(resource="leases", group="coordination.k8s.io", namespace="pyscheduler")
        for verb in ("get", "update"):
            if not harness.can_i(sa_api, verb, name="pyscheduler", **lease):
                wrong.append((verb, "lease pyscheduler/pyscheduler", ""))
            if harness.can_i(sa_api, verb, name="other", **lease):
                wrong.append((verb, "lease pyscheduler/other (should be denied)", ""))
        if not harness.can_i(sa_api, "create", **lease):
            wrong.append(("create", "leases in pyscheduler", ""))
        if harness.can_i(sa_api, "delete", name="pyscheduler", **lease):
            wrong.append(("delete", "lease pyscheduler/pyscheduler (should be denied)", ""))
        if harness.can_i(sa_api, "create", "leases", "coordination.k8s.io", namespace="default"):
            wrong.append(("create", "leases in default (should be denied)", ""))
        if harness.can_i(sa_api, "get", name="kube-scheduler", **dict(lease, namespace="kube-system")):
            wrong.append(("get", "lease kube-system/kube-scheduler (should be denied)", ""))
        assert not wrong, f"RBAC mismatches: {wrong}"

        # And for real: list nodes, create/update the leader-election Lease
        # (not when the real scheduler holds it).
        client.CoreV1Api(sa_api).list_node()
        if in_cluster:
            return
        coord = client.CoordinationV1Api(sa_api)
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name="pyscheduler"),
            spec=client.V1LeaseSpec(holder_identity="e2e", lease_duration_seconds=1),
        )
        try:
            coord.create_namespaced_lease("pyscheduler", body)
        except ApiException as exc:
            assert exc.status == 409, exc
        lease_obj = coord.read_namespaced_lease("pyscheduler", "pyscheduler")
        coord.replace_namespaced_lease("pyscheduler", "pyscheduler", lease_obj)
    finally:
        sa_api.close()
        nobody_api.close()
        if not in_cluster:
            with contextlib.suppress(ApiException):
                client.CoordinationV1Api(api_client).delete_namespaced_lease("pyscheduler", "pyscheduler")


def test_service_account_binds_pod(
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    kwok,
    node_factory,
    namespace: str,
    scheduler_kubeconfig: str,
) -> None:
    """The scheduler's identity can do a whole scheduling cycle's writes."""
    (node,) = node_factory(1)
    harness.create_pod(core_v1, namespace, name="p", scheduler_name="no-such-scheduler")
    sa_api = harness.new_api_client(scheduler_kubeconfig)
    try:
        sa_core = client.CoreV1Api(sa_api)
        sa_core.patch_namespaced_pod_status(
            "p",
            namespace,
            {
                "status": {
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "e2e"}
                    ]
                }
            },
        )
        harness.bind_pod(sa_core, namespace, "p", node)
        client.EventsV1Api(sa_api).create_namespaced_event(
            namespace,
            client.EventsV1Event(
                metadata=client.V1ObjectMeta(name=harness.unique_name("p.e2e")),
                event_time=datetime.datetime.now(datetime.UTC),
                reporting_controller="pyscheduler",
                reporting_instance="e2e",
                action="Binding",
                reason="Scheduled",
                type="Normal",
                note=f"bound to {node}",
                regarding=client.V1ObjectReference(kind="Pod", namespace=namespace, name="p", api_version="v1"),
            ),
        )
    finally:
        sa_api.close()
    harness.wait_for_pod_phase(core_v1, namespace, "p", "Running", timeout=30)


def test_scheduler_config_fixture(scheduler_config_path: str, scheduler_kubeconfig: str) -> None:
    with open(scheduler_config_path) as fh:
        cfg = yaml.safe_load(fh)
    assert cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in cfg["profiles"]] == ["pyscheduler"]
    assert cfg["leaderElection"] == {
        "leaderElect": True,
        "resourceLock": "leases",
        "resourceNamespace": "pyscheduler",
        "resourceName": "pyscheduler",
    }
    assert cfg["clientConnection"]["kubeconfig"] == scheduler_kubeconfig
    assert harness.api_reachable(scheduler_kubeconfig)
