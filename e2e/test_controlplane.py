"""The e2e control plane itself works: RBAC, kwok, binding, manifests, and the controllers of
kube-controller-manager (workloads, namespaces, ServiceAccounts, PDB status, claims, node lifecycle)."""

from __future__ import annotations

import contextlib
import datetime

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.support.apply import apply_objects, apply_yaml, ensure_namespace, iter_yaml_documents
from e2e.support.auth import can_i, write_sa_kubeconfig
from e2e.support.objects import bind_pod, create_pod, make_node, make_pod, unique_name
from e2e.support.plane import MANIFESTS_DIR, api_reachable, new_api_client
from e2e.support.waits import (
    NOT_READY_TAINT_KEYS,
    node_is_ready,
    pod_condition,
    wait_for,
    wait_for_deleted,
    wait_for_node_ready,
    wait_for_pod,
    wait_for_pod_phase,
)
from scheduler.testing.process import SchedulerProcess


def test_apiserver_reachable_with_rbac(api_client: client.ApiClient, tmp_path) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major and version.git_version.startswith("v")

    # An unprivileged ServiceAccount (no bindings) is authenticated but forbidden.
    ns = unique_name("rbac")
    sa = "nobody"
    kc = write_sa_kubeconfig(api_client, ns, sa, tmp_path / "nobody.kubeconfig", expiration_seconds=600)
    sa_api = new_api_client(kc)
    try:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(sa_api).list_secret_for_all_namespaces()
        assert err.value.status == 403, err.value
        assert f"system:serviceaccount:{ns}:{sa}" in err.value.body
        assert not can_i(sa_api, "list", "secrets")
        # ...while the admin (system:masters) may.
        assert can_i(api_client, "list", "secrets")
    finally:
        sa_api.close()


def test_fake_node_becomes_ready(core_v1: client.CoreV1Api, kwok, node_factory) -> None:
    (name,) = node_factory(1, wait_ready=True, timeout=30)
    node = core_v1.read_node(name)
    assert node_is_ready(node)
    assert node.status.allocatable["cpu"] == "4"
    assert node.status.allocatable["memory"] == "32Gi"
    assert node.status.allocatable["pods"] == "110"
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "zone-a"
    # Created tainted not-ready (TaintNodesByCondition); wait_ready waited for the taint to go.
    assert not node.spec.taints, node.spec.taints
    types = {a.type for a in node.status.addresses or []}
    assert {"InternalIP", "Hostname"} <= types


def test_manually_bound_pod_runs(core_v1: client.CoreV1Api, kwok, node_factory, namespace: str) -> None:
    (node,) = node_factory(1, wait_ready=True)
    # schedulerName nobody serves: only our manual binding can place it.
    pod = create_pod(core_v1, namespace, name="bound-by-hand", scheduler_name="no-such-scheduler")
    assert not pod.spec.node_name
    bind_pod(core_v1, namespace, "bound-by-hand", node)
    pod = wait_for_pod_phase(core_v1, namespace, "bound-by-hand", "Running", timeout=30)
    assert pod.spec.node_name == node
    assert pod.status.pod_ip
    ready = pod_condition(pod, "Ready")
    assert ready is not None and ready.status == "True"

    # Graceful deletion of a bound pod is finished by kwok (no kubelet).
    core_v1.delete_namespaced_pod("bound-by-hand", namespace)
    wait_for_deleted(lambda: core_v1.read_namespaced_pod("bound-by-hand", namespace), timeout=30, desc="pod")


def test_manifests_server_side_dry_run(api_client: client.ApiClient, core_v1: client.CoreV1Api) -> None:
    docs = list(iter_yaml_documents(MANIFESTS_DIR))
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
            ensure_namespace(core_v1, d["metadata"]["name"])
    out = apply_objects(api_client, docs, dry_run=True)
    assert len(out) == len(docs)
    example = apply_yaml(api_client, MANIFESTS_DIR / "examples" / "pod.yaml", dry_run=True)
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
    # A Binding whose answer was lost: the binder reads the pod to learn whether it was stored.
    ("", "pods", "get"),
    # DefaultPreemption (scheduler/preemptor.py deletes victims; the watcher reads PDBs).
    ("", "pods", "delete"),
    ("policy", "poddisruptionbudgets", "list"),
    ("policy", "poddisruptionbudgets", "watch"),
    # Workload-aware scheduling (GenericWorkload): PodGroups watched, their condition patched.
    ("scheduling.k8s.io", "podgroups", "list"),
    ("scheduling.k8s.io", "podgroups", "watch"),
    ("scheduling.k8s.io", "podgroups/status", "patch"),
    # DynamicResources: the watcher's three informers; PreBind/Unreserve/PostFilter writes of
    # claims (scheduler/volumeapi.py), the binding subresource for allocation/reservedFor.
    *[("resource.k8s.io", r, v) for r in ("resourceclaims", "deviceclasses", "resourceslices")
      for v in ("list", "watch")],
    ("resource.k8s.io", "resourceclaims", "get"),
    ("resource.k8s.io", "resourceclaims", "update"),
    # DRAExtendedResource: the claim for a pod's extended resources is created, and deleted
    # when its attempt fails.
    ("resource.k8s.io", "resourceclaims", "create"),
    ("resource.k8s.io", "resourceclaims", "delete"),
    *[("resource.k8s.io", f"resourceclaims/{sub}", v) for sub in ("status", "binding") for v in ("update", "patch")],
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
    ("delete", "pods", ""),
    ("get", "pods", ""),
    ("watch", "poddisruptionbudgets", "policy"),
]
DENIED = [
    # Writes the code never makes.
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
    ("get", "nodes", ""),
    ("list", "secrets", ""),
    ("get", "configmaps", ""),
    *[(v, r, "") for r in ("persistentvolumes", "persistentvolumeclaims") for v in ("get", "patch", "delete")],
    ("get", "storageclasses", "storage.k8s.io"),
    ("update", "csinodes", "storage.k8s.io"),
    ("get", "poddisruptionbudgets", "policy"),
    ("list", "priorityclasses", "scheduling.k8s.io"),
    ("list", "resourceclaimtemplates", "resource.k8s.io"),  # kube-scheduler never reads them
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
    sa_api = new_api_client(scheduler_kubeconfig)
    # What every authenticated identity gets (system:basic-user...) is not ours to check.
    nobody_kc = write_sa_kubeconfig(api_client, unique_name("rbac"), "nobody", tmp_path / "n.kc")
    nobody_api = new_api_client(nobody_kc)
    try:
        # The exact set, from the API server's own evaluation of the bindings.
        baseline = {ns: _rules(nobody_api, ns) for ns in ("default", "pyscheduler")}
        cluster = {(g, r, v) for g, r, v, n in _rules(sa_api, "default") - baseline["default"] if not n}
        assert cluster == EXPECTED_CLUSTER_RULES
        in_ns = _rules(sa_api, "pyscheduler") - baseline["pyscheduler"]
        leases = {x for x in in_ns if (x[0], x[1], x[2]) not in EXPECTED_CLUSTER_RULES}
        assert leases == EXPECTED_LEASE_RULES

        wrong = [a for a in ALLOWED if not can_i(sa_api, a[0], a[1], a[2], namespace="default")]
        wrong += [d for d in DENIED if can_i(sa_api, d[0], d[1], d[2], namespace="default")]
        for verb, sub in (("create", "binding"), ("patch", "status")):
            if not can_i(sa_api, verb, "pods", namespace="default", subresource=sub):
                wrong.append((verb, f"pods/{sub}", ""))
        for verb, sub in DENIED_SUBRESOURCES:
            if can_i(sa_api, verb, "pods", namespace="default", subresource=sub):
                wrong.append((verb, f"pods/{sub} (should be denied)", ""))
        lease = dict(resource="leases", group="coordination.k8s.io", namespace="pyscheduler")
        for verb in ("get", "update"):
            if not can_i(sa_api, verb, name="pyscheduler", **lease):
                wrong.append((verb, "lease pyscheduler/pyscheduler", ""))
            if can_i(sa_api, verb, name="other", **lease):
                wrong.append((verb, "lease pyscheduler/other (should be denied)", ""))
        if not can_i(sa_api, "create", **lease):
            wrong.append(("create", "leases in pyscheduler", ""))
        if can_i(sa_api, "delete", name="pyscheduler", **lease):
            wrong.append(("delete", "lease pyscheduler/pyscheduler (should be denied)", ""))
        if can_i(sa_api, "create", "leases", "coordination.k8s.io", namespace="default"):
            wrong.append(("create", "leases in default (should be denied)", ""))
        if can_i(sa_api, "get", name="kube-scheduler", **dict(lease, namespace="kube-system")):
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
    create_pod(core_v1, namespace, name="p", scheduler_name="no-such-scheduler")
    sa_api = new_api_client(scheduler_kubeconfig)
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
        bind_pod(sa_core, namespace, "p", node)
        client.EventsV1Api(sa_api).create_namespaced_event(
            namespace,
            client.EventsV1Event(
                metadata=client.V1ObjectMeta(name=unique_name("p.e2e")),
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
    wait_for_pod_phase(core_v1, namespace, "p", "Running", timeout=30)


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
    assert api_reachable(scheduler_kubeconfig)


# ---------------------------------------------------------------------------------------------
# kube-controller-manager: the local plane behaves like a real cluster (issue 11).
# Workload pods name schedulerName pyscheduler and are placed by our scheduler (there is no
# default scheduler); their nodes carry a label unique to the test that the pods select.

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


@pytest.fixture
def pyscheduler(scheduler_config_path: str, scheduler_kubeconfig: str, local_scheduler_allowed, tmp_path):
    proc = SchedulerProcess(scheduler_config_path, scheduler_kubeconfig, tmp_path, "kcm", port=free_port())
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def _pod_template(group: dict[str, str], app: str) -> dict:
    pod = make_pod("unused", labels={"app": app}, node_selector=group, cpu="100m", memory="64Mi")
    return {"metadata": {"labels": {"app": app}}, "spec": pod["spec"]}


def _owned_pods(core: client.CoreV1Api, namespace: str, app: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod(namespace, label_selector=f"app={app}").items


def test_new_node_loses_not_ready_taint(core_v1: client.CoreV1Api, kwok) -> None:
    """TaintNodesByCondition admission taints a new node not-ready; once kwok reports it Ready the
    node lifecycle controller lifts the taint."""
    prefix = unique_name("taint")
    created = core_v1.create_node(make_node(f"{prefix}-0"))
    try:
        taints = {(t.key, t.effect) for t in created.spec.taints or []}
        assert (NOT_READY_TAINT, "NoSchedule") in taints, created.spec.taints
        node = wait_for_node_ready(core_v1, created.metadata.name, timeout=60)
        assert node_is_ready(node)
        assert not [t for t in node.spec.taints or [] if t.key in NOT_READY_TAINT_KEYS]

        # kwok holds the node's Lease (renewed every 10 s), which keeps the node lifecycle
        # controller from marking the node NotReady/unreachable after its grace period.
        coord = client.CoordinationV1Api(core_v1.api_client)
        lease = wait_for(
            lambda: coord.read_namespaced_lease(created.metadata.name, "kube-node-lease"),
            timeout=30,
            desc="node lease",
        )
        assert lease.spec.lease_duration_seconds == 40 and lease.spec.holder_identity and lease.spec.renew_time
        assert [o.kind for o in lease.metadata.owner_references or []] == ["Node"]
    finally:
        with contextlib.suppress(ApiException):
            core_v1.delete_node(created.metadata.name)


def test_namespace_gets_default_service_account(core_v1: client.CoreV1Api) -> None:
    ns = unique_name("sa")
    ensure_namespace(core_v1, ns, wait_default_sa=False)
    try:
        sa = wait_for(
            lambda: core_v1.read_namespaced_service_account("default", ns), timeout=30, desc="default SA"
        )
        assert sa.metadata.name == "default"
        cm = wait_for(
            lambda: core_v1.read_namespaced_config_map("kube-root-ca.crt", ns), timeout=30, desc="root CA map"
        )
        assert "BEGIN CERTIFICATE" in cm.data["ca.crt"]
        # ServiceAccount admission fills in the account and its projected token volume.
        pod = create_pod(core_v1, ns, name="p", scheduler_name="no-such-scheduler")
        assert pod.spec.service_account_name == "default"
        assert any(v.name.startswith("kube-api-access-") and v.projected for v in pod.spec.volumes or [])
    finally:
        with contextlib.suppress(ApiException):
            core_v1.delete_namespace(ns)


def test_namespace_deletes_completely(core_v1: client.CoreV1Api, kwok, node_factory) -> None:
    (node,) = node_factory(1)
    ns = unique_name("nsdel")
    ensure_namespace(core_v1, ns)
    create_pod(core_v1, ns, name="bound", scheduler_name="no-such-scheduler")
    bind_pod(core_v1, ns, "bound", node)
    create_pod(core_v1, ns, name="pending", scheduler_name="no-such-scheduler")
    core_v1.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"k": "v"}})
    wait_for_pod_phase(core_v1, ns, "bound", "Running", timeout=30)

    core_v1.delete_namespace(ns)
    wait_for_deleted(lambda: core_v1.read_namespace(ns), timeout=90, desc=f"namespace {ns}")


def test_deployment_creates_pods_and_cascades(
    api_client: client.ApiClient, core_v1: client.CoreV1Api, kwok, node_factory, namespace: str, pyscheduler
) -> None:
    group = {"e2e-group": namespace}
    nodes = set(node_factory(2, labels=group))
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": _pod_template(group, "web"),
            },
        },
    )
    wait_for(
        lambda: (apps.read_namespaced_deployment("web", namespace).status.available_replicas or 0) == 3,
        timeout=60,
        desc="deployment web 3 available",
    )
    pods = _owned_pods(core_v1, namespace, "web")
    assert len(pods) == 3
    for p in pods:
        assert p.spec.node_name in nodes, p.spec.node_name
        assert p.spec.scheduler_name == "pyscheduler"
        (owner,) = p.metadata.owner_references
        assert owner.kind == "ReplicaSet" and owner.controller

    # Scale down: the ReplicaSet controller deletes pods, kwok finishes their deletion.
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 1}})
    wait_for(lambda: len(_owned_pods(core_v1, namespace, "web")) == 1, timeout=60, desc="scaled to 1")

    # Deleting the Deployment: the garbage collector removes its ReplicaSet and pods.
    apps.delete_namespaced_deployment("web", namespace, propagation_policy="Background")
    wait_for(
        lambda: not apps.list_namespaced_replica_set(namespace).items and not _owned_pods(core_v1, namespace, "web"),
        timeout=60,
        desc="ReplicaSet and pods garbage-collected",
    )


def test_statefulset_creates_pods(
    api_client: client.ApiClient, core_v1: client.CoreV1Api, kwok, node_factory, namespace: str, pyscheduler
) -> None:
    group = {"e2e-group": namespace}
    nodes = set(node_factory(2, labels=group))
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_stateful_set(
        namespace,
        {
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": _pod_template(group, "db"),
            },
        },
    )
    wait_for(
        lambda: (apps.read_namespaced_stateful_set("db", namespace).status.ready_replicas or 0) == 2,
        timeout=60,
        desc="statefulset db 2 ready",
    )
    pods = {p.metadata.name: p for p in _owned_pods(core_v1, namespace, "db")}
    assert sorted(pods) == ["db-0", "db-1"]
    assert all(p.spec.node_name in nodes for p in pods.values())

    # A deleted pod comes back under the same name; the garbage collector removes the rest.
    old_uid = pods["db-1"].metadata.uid
    core_v1.delete_namespaced_pod("db-1", namespace)
    wait_for_pod(
        core_v1, namespace, "db-1", lambda p: p.metadata.uid != old_uid and p.status.phase == "Running", timeout=60
    )
    apps.delete_namespaced_stateful_set("db", namespace, propagation_policy="Background")
    wait_for(lambda: not _owned_pods(core_v1, namespace, "db"), timeout=60, desc="pods garbage-collected")


def test_pdb_status_is_computed(
    api_client: client.ApiClient, core_v1: client.CoreV1Api, kwok, node_factory, namespace: str
) -> None:
    """The disruption controller fills in PDB status; integer minAvailable needs no owning controller."""
    (node,) = node_factory(1)
    for name in ("a", "b"):
        create_pod(core_v1, namespace, name=name, labels={"app": "guarded"}, scheduler_name="nobody")
        bind_pod(core_v1, namespace, name, node)
    for name in ("a", "b"):
        wait_for_pod(
            core_v1,
            namespace,
            name,
            lambda p: (c := pod_condition(p, "Ready")) is not None and c.status == "True",
            timeout=30,
        )
    policy = client.PolicyV1Api(api_client)
    policy.create_namespaced_pod_disruption_budget(
        namespace,
        {"metadata": {"name": "guard"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}},
    )
    status = wait_for(
        lambda: (
            (s := policy.read_namespaced_pod_disruption_budget("guard", namespace).status)
            and s.observed_generation
            and s.current_healthy == 2
            and s
        ),
        timeout=30,
        desc="PDB status",
    )
    assert (status.current_healthy, status.desired_healthy, status.expected_pods, status.disruptions_allowed) == (
        2,
        1,
        2,
        1,
    )


def test_claim_binds_to_volume(api_client: client.ApiClient, core_v1: client.CoreV1Api, namespace: str) -> None:
    """The PV controller binds a claim to a matching PersistentVolume (Immediate binding mode)."""
    storage = client.StorageV1Api(api_client)
    sc = unique_name("e2e-immediate")
    storage.create_storage_class(
        {"metadata": {"name": sc}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"}
    )
    pv = unique_name("pv")
    try:
        core_v1.create_persistent_volume(
            {
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": sc,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": "/tmp/e2e"},
                },
            }
        )
        core_v1.create_namespaced_persistent_volume_claim(
            namespace,
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": sc,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        claim = wait_for(
            lambda: (
                (c := core_v1.read_namespaced_persistent_volume_claim("data", namespace)).status.phase == "Bound" and c
            ),
            timeout=60,
            desc="claim Bound",
        )
        assert claim.spec.volume_name == pv
        assert core_v1.read_persistent_volume(pv).status.phase == "Bound"
        # The protection controller lets an unused claim go (its finalizer came from admission).
        assert "kubernetes.io/pvc-protection" in (claim.metadata.finalizers or [])
        core_v1.delete_namespaced_persistent_volume_claim("data", namespace)
        wait_for_deleted(
            lambda: core_v1.read_namespaced_persistent_volume_claim("data", namespace), timeout=60, desc="claim"
        )
    finally:
        with contextlib.suppress(ApiException):
            core_v1.delete_persistent_volume(pv)
        with contextlib.suppress(ApiException):
            storage.delete_storage_class(sc)
