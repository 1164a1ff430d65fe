"""Drive one seed: build its cluster in the API server, start kube-scheduler on it, submit the
pending pods one at a time, and compare every decision with ``simulate`` on the state the
binary saw.

Why the order of things matters:

* Namespaces and owners exist before the binary starts; nodes are created after it runs, in
  name order (see run_seed: the first node to report an image fixes its size), then the bound
  pods; the first pending pod waits until the binary's cache (scheduler_cache_size) holds
  every node and bound pod.
* Before each pending pod the cluster is listed (every node, pod, namespace and owner in the
  API server, not only this seed's), then the pod is created; the stored object returned by the
  create call (admission applied: RuntimeClass overhead, matchLabelKeys merged into selectors)
  is the pending pod of the cluster file. Pods the binary bound earlier are in that listing
  because each decision is awaited before the next pod is created.
* A pod the binary cannot place is deleted once its FailedScheduling event is read, so it is
  never retried behind the suite's back and never appears in later cluster files.

Living with kube-controller-manager (e2e/controlplane/up.sh):

* Every generated pod has a controller ownerReference to a ConfigMap of its namespace, so the
  ReplicaSet (or ReplicationController) controller never adopts it and, with replicas 0,
  deletes it; the garbage collector leaves it alone while the ConfigMap exists. Scheduling is
  unchanged: v1.36.3 default spreading (framework/plugins/helper/spread.go, DefaultSelector)
  matches Services by selector and only reads an RC/RS/StatefulSet named by the pod's
  controller reference, which a ConfigMap is not, exactly as for an unowned pod.
* Pods are created only once the namespace's "default" ServiceAccount exists (ServiceAccount
  admission rejects them before that and adds a projected token volume, which the stored pod
  in the cluster file carries).
* Nodes start with the not-ready taint (TaintNodesByCondition admission) and unschedulable
  ones get the unschedulable taint later (node lifecycle controller): each node is awaited in
  its final form, then a barrier node is created and deleted, and its delete event in the
  binary's log proves every earlier node update reached the binary's cache. After each
  decision the nodes are listed again: a node that changed under the decision is an error,
  not a silent mismatch.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.extender import HashPolicy, extenders_config
from e2e.support.objects import make_node
from e2e.support.waits import node_is_usable, wait_for, wait_for_deleted, wait_for_pod_scheduled

from . import dra_gen, generator, kubescheduler, preemption
from .compare import Decision, Tally, compare
from .kslog import LogReader

SCHEDULER_NAME = "differential"
# The ConfigMap in each namespace that every generated pod names as its controller.
OWNER_CONFIGMAP = "differential-owner"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass
class SeedResult:
    seed: int
    tally: Tally
    features: dict[str, int] = field(default_factory=dict)
    workdir: pathlib.Path | None = None


def _raw(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The API server's JSON for a list/read call (no client model objects: they drop fields
    newer than the client, e.g. pod-level resources or image volumes)."""
    resp = call(*args, _preload_content=False, **kwargs)
    return json.loads(resp.data)


def dump_cluster(api: client.ApiClient) -> list[dict[str, Any]]:
    """Everything kube-scheduler reads, as the API server stores it now."""
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    out: list[dict[str, Any]] = []
    for kind, api_version, call in (
        ("Namespace", "v1", core.list_namespace),
        ("Node", "v1", core.list_node),
        ("Pod", "v1", core.list_pod_for_all_namespaces),
        ("Service", "v1", core.list_service_for_all_namespaces),
        ("ReplicationController", "v1", core.list_replication_controller_for_all_namespaces),
        ("ReplicaSet", "apps/v1", apps.list_replica_set_for_all_namespaces),
        ("StatefulSet", "apps/v1", apps.list_stateful_set_for_all_namespaces),
    ):
        for item in _raw(call)["items"]:
            item["kind"] = kind
            item["apiVersion"] = api_version
            if kind == "Pod" and item.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue  # the binary's pod informer filters terminal pods out
            out.append(item)
    out.extend(preemption.dump_pdbs(_raw, api))  # DefaultPreemption's PDB lister
    # DynamicResources' informers (resource.k8s.io/v1).
    res = client.ResourceV1Api(api)
    for kind, call in (
        ("DeviceClass", res.list_device_class),
        ("ResourceSlice", res.list_resource_slice),
        ("ResourceClaim", res.list_resource_claim_for_all_namespaces),
        ("ResourceClaimTemplate", res.list_resource_claim_template_for_all_namespaces),
    ):
        for item in _raw(call)["items"]:
            item["kind"] = kind
            item["apiVersion"] = "resource.k8s.io/v1"
            out.append(item)
    return out


def run_simulate(cluster_file: pathlib.Path, config_file: pathlib.Path, subprocess_cli: bool) -> list[dict[str, Any]]:
    """``python -m scheduler simulate --output json`` on the file; one record per attempt."""
    argv = ["simulate", "--cluster", str(cluster_file), "--config", str(config_file), "--output", "json"]
    if subprocess_cli:
        proc = subprocess.run(
            [sys.executable, "-m", "scheduler", *argv],
            check=False,
            capture_output=True,
            text=True,
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        from scheduler.cli import main as cli_main

        buf, ebuf = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(ebuf):
            rc = cli_main(argv)
        out, err = buf.getvalue(), ebuf.getvalue()
    if rc != 0:
        raise RuntimeError(f"simulate exited {rc} on {cluster_file}: {err.strip()}")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _create(api: client.ApiClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Create one object; return what the API server stored."""
    core = client.CoreV1Api(api)
    kind = obj["kind"]
    ns = obj["metadata"].get("namespace")
    try:
        if kind == "Namespace":
            resp = core.create_namespace(obj, _preload_content=False)
        elif kind == "Node":
            resp = core.create_node(obj, _preload_content=False)
        elif kind == "Pod":
            resp = core.create_namespaced_pod(ns, obj, _preload_content=False)
        elif kind == "Service":
            resp = core.create_namespaced_service(ns, obj, _preload_content=False)
        elif kind == "ReplicaSet":
            resp = client.AppsV1Api(api).create_namespaced_replica_set(ns, obj, _preload_content=False)
        elif kind == "StatefulSet":
            resp = client.AppsV1Api(api).create_namespaced_stateful_set(ns, obj, _preload_content=False)
        elif kind == "ReplicationController":
            resp = core.create_namespaced_replication_controller(ns, obj, _preload_content=False)
        elif kind == "ConfigMap":
            resp = core.create_namespaced_config_map(ns, obj, _preload_content=False)
        elif kind == "RuntimeClass":
            resp = client.NodeV1Api(api).create_runtime_class(obj, _preload_content=False)
        elif kind == "DeviceClass":
            resp = client.ResourceV1Api(api).create_device_class(obj, _preload_content=False)
        elif kind == "ResourceSlice":
            resp = client.ResourceV1Api(api).create_resource_slice(obj, _preload_content=False)
        elif kind == "ResourceClaim":
            resp = client.ResourceV1Api(api).create_namespaced_resource_claim(ns, obj, _preload_content=False)
        else:
            raise ValueError(f"cannot create {kind}")
    except ApiException as exc:
        body = exc.body.decode() if isinstance(exc.body, bytes) else exc.body
        raise RuntimeError(
            f"API server refused generated {kind} {ns or ''}/{obj['metadata']['name']}: {body}"
        ) from None
    stored: dict[str, Any] = json.loads(resp.data)
    stored.setdefault("kind", kind)
    stored.setdefault("apiVersion", obj["apiVersion"])
    return stored


def _ensure_runtime_class(api: client.ApiClient) -> None:
    try:
        _create(api, generator.runtime_class())
    except RuntimeError as exc:
        if "AlreadyExists" not in str(exc):
            raise


def _prepare_namespaces(api: client.ApiClient, sc: generator.Scenario) -> dict[str, dict[str, Any]]:
    """Create the namespaces, wait for their default ServiceAccounts, and create the owner
    ConfigMap of each; return namespace -> the ownerReference its pods carry."""
    core = client.CoreV1Api(api)
    for obj in sc.namespaces:
        _create(api, obj)
    refs: dict[str, dict[str, Any]] = {}
    for ns in sc.namespace_names:
        wait_for(
            lambda ns=ns: core.read_namespaced_service_account("default", ns),
            timeout=60,
            desc=f"ServiceAccount {ns}/default",
        )
        cm = _create(
            api,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": OWNER_CONFIGMAP, "namespace": ns, "labels": {generator.MARK: "true"}},
            },
        )
        refs[ns] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": OWNER_CONFIGMAP,
            "uid": cm["metadata"]["uid"],
            "controller": True,
        }
    return refs


def _owned(pod: dict[str, Any], refs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """*pod* with its namespace's owner ConfigMap as controller (see the module docstring)."""
    meta = {**pod["metadata"], "ownerReferences": [dict(refs[pod["metadata"]["namespace"]])]}
    return {**pod, "metadata": meta}


def _node_settled(node: client.V1Node) -> bool:
    """Ready, no not-ready/unreachable taint, and the unschedulable taint present iff the node is
    cordoned: the form the node keeps for the rest of the seed."""
    if not node_is_usable(node):
        return False
    has_unsched = any(t.key == UNSCHEDULABLE_TAINT for t in node.spec.taints or [])
    return bool(node.spec.unschedulable) == has_unsched


def _wait_nodes_settled(api: client.ApiClient, sc: generator.Scenario, ks: kubescheduler.KubeScheduler) -> None:
    """Every node of the seed in its final form, in the API server and in the binary's cache."""
    core = client.CoreV1Api(api)
    for name in sc.node_names:
        wait_for(
            lambda name=name: _node_settled(core.read_node(name)),
            timeout=60,
            desc=f"node {name} Ready, untainted by the node lifecycle controller",
        )
    # Barrier: node watch events reach the binary in resourceVersion order, so once it logs the
    # delete of a node created after every settling update, it has applied all of them.
    barrier = f"{sc.prefix}-zbarrier"
    _create(api, make_node(barrier, labels={generator.MARK: "true"}))
    core.delete_node(barrier)
    needle = f'"Delete event for node" node="{barrier}"'
    wait_for(
        lambda: needle in ks.log_path.read_text(errors="replace"),
        timeout=30,
        interval=0.05,
        desc=f"kube-scheduler to see barrier node {barrier} deleted",
    )


def _node_fingerprints(docs: list[dict[str, Any]]) -> dict[str, str]:
    """What the plugins read of each node, to notice a node changing under a decision."""
    out: dict[str, str] = {}
    for d in docs:
        if d.get("kind") != "Node":
            continue
        st = d.get("status", {})
        out[d["metadata"]["name"]] = json.dumps(
            [
                d["metadata"].get("labels"),
                d.get("spec"),
                st.get("allocatable"),
                st.get("images"),
                st.get("declaredFeatures"),
                sorted((c.get("type"), c.get("status")) for c in st.get("conditions") or []),
            ],
            sort_keys=True,
        )
    return out


def _nodes_now(api: client.ApiClient) -> dict[str, str]:
    items = _raw(client.CoreV1Api(api).list_node)["items"]
    for n in items:
        n["kind"] = "Node"
    return _node_fingerprints(items)


def _failed_scheduling_message(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    events = _raw(
        core.list_namespaced_event, namespace, field_selector=f"involvedObject.name={name},reason=FailedScheduling"
    )["items"]
    if not events:
        return None
    events.sort(key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
    return str(events[0].get("message") or "")


def _delete_pod_now(core: client.CoreV1Api, namespace: str, name: str) -> None:
    with contextlib.suppress(ApiException):
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    wait_for_deleted(
        lambda: core.read_namespaced_pod(name, namespace), timeout=30, desc=f"pod {namespace}/{name}"
    )


def sweep_leftovers(api: client.ApiClient) -> None:
    """Remove what an interrupted run left behind (marked nodes, pods of marked namespaces):
    otherwise its pods would sit in every later cluster file and in the binary's cache."""
    core = client.CoreV1Api(api)
    sel = f"{generator.MARK}=true"
    namespaces = {n["metadata"]["name"] for n in _raw(core.list_namespace, label_selector=sel)["items"]}
    for pod in _raw(core.list_pod_for_all_namespaces)["items"]:
        meta = pod["metadata"]
        if meta["namespace"] in namespaces:
            with contextlib.suppress(ApiException):
                core.delete_namespaced_pod(meta["name"], meta["namespace"], grace_period_seconds=0)
    for node in _raw(core.list_node, label_selector=sel)["items"]:
        with contextlib.suppress(ApiException):
            core.delete_node(node["metadata"]["name"])
    _delete_dra(api)
    wait_for(
        lambda: (
            not any(p["metadata"]["namespace"] in namespaces for p in _raw(core.list_pod_for_all_namespaces)["items"])
        ),
        timeout=60,
        desc="leftover pods gone",
    )


def _delete_dra(api: client.ApiClient) -> None:
    """The generated DeviceClasses and ResourceSlices (claims go with their namespaces)."""
    res = client.ResourceV1Api(api)
    sel = f"{generator.MARK}=true"
    with contextlib.suppress(ApiException):
        res.delete_collection_resource_slice(label_selector=sel)
    with contextlib.suppress(ApiException):
        res.delete_collection_device_class(label_selector=sel)


def cleanup(api: client.ApiClient, sc: generator.Scenario) -> None:
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    for ns in sc.namespace_names:
        with contextlib.suppress(ApiException):
            core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    for o in sc.owners:
        with contextlib.suppress(ApiException):
            name, ns = o["metadata"]["name"], o["metadata"]["namespace"]
            if o["kind"] == "Service":
                core.delete_namespaced_service(name, ns)
            elif o["kind"] == "ReplicaSet":
                apps.delete_namespaced_replica_set(name, ns)
            elif o["kind"] == "StatefulSet":
                apps.delete_namespaced_stateful_set(name, ns)
            else:
                core.delete_namespaced_replication_controller(name, ns)
    for n in sc.node_names:
        with contextlib.suppress(ApiException):
            core.delete_node(n)
    _delete_dra(api)
    for ns in sc.namespace_names:
        with contextlib.suppress(ApiException):
            core.delete_namespace(ns)
    for ns in sc.namespace_names:
        wait_for(
            lambda ns=ns: not _raw(core.list_namespaced_pod, ns)["items"], timeout=60, desc=f"pods of {ns} gone"
        )


def _wait_cache_synced(api: client.ApiClient, ks: kubescheduler.KubeScheduler) -> None:
    """Until the binary's cache holds every node and every assigned pod the API server has."""
    core = client.CoreV1Api(api)

    def synced() -> bool:
        nodes = len(_raw(core.list_node)["items"])
        pods = sum(
            1
            for p in _raw(core.list_pod_for_all_namespaces)["items"]
            if p["spec"].get("nodeName") and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        )
        sizes = ks.cache_sizes()
        return sizes.get("nodes") == nodes and sizes.get("pods") == pods

    wait_for(synced, timeout=30, interval=0.2, desc="kube-scheduler cache to hold every node and bound pod")


def run_seed(
    api: client.ApiClient,
    kubeconfig: str,
    seed: int,
    workdir: pathlib.Path,
    run_id: str,
    node_declared_features: bool | None = None,
    pending: int | None = None,
    subprocess_cli: bool = False,
    ours_weights: dict[str, int] | None = None,
    vary_args: bool = False,
    log: Callable[[str], None] = print,
    dra: bool = False,
    extender: bool = False,
) -> SeedResult:
    """One seed end to end. *ours_weights* gives simulate other score weights than the binary
    (only to prove that the comparison notices). *vary_args* gives both sides non-default plugin
    arguments and weights drawn from the seed. *dra* adds devices and claims (dra_gen).
    *extender* serves the suite's two extenders (e2e/support/extender.py) for the run and puts
    them in the one configuration file: the binary asks them live, simulate asks them offline."""
    core = client.CoreV1Api(api)
    workdir.mkdir(parents=True, exist_ok=True)
    sc = generator.generate(seed, f"df{run_id}s{seed}", SCHEDULER_NAME, pending=pending)
    prio = preemption.decorate(sc, seed)
    devices = dra_gen.add(sc) if dra else dra_gen.DraScenario()
    disabled = kubescheduler.disabled_plugins(node_declared_features)
    varied = kubescheduler.varied_profile(seed) if vary_args else None
    cfg = kubescheduler.config(SCHEDULER_NAME, kubeconfig, disabled, varied)
    ext_server = None
    if extender:
        policy = HashPolicy(api)
        ext_server = policy.serve()
        cfg["extenders"] = extenders_config(ext_server.url)
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    ours_config = config_file
    if ours_weights:
        enabled = {e["name"]: e["weight"] for e in cfg["profiles"][0]["plugins"]["multiPoint"].get("enabled", [])}
        enabled.update(ours_weights)
        cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"] = [{"name": k, "weight": v} for k, v in enabled.items()]
        ours_config = workdir / "config-simulate.yaml"
        ours_config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    tally = Tally()
    ks: kubescheduler.KubeScheduler | None = None
    try:
        sweep_leftovers(api)
        _ensure_runtime_class(api)
        refs = _prepare_namespaces(api, sc)
        for obj in sc.owners:
            _create(api, obj)
        if prio is not None:
            preemption.create(api, prio)
        ks = kubescheduler.KubeScheduler(
            kubescheduler.binary_path(), config_file, kubeconfig, workdir / "kube-scheduler.log"
        )
        ks.start()
        # Nodes only after the binary runs, one by one: its initial LIST hands it the nodes in
        # map order, and the first node to report an image name fixes that image's size for
        # ImageLocality. Watch events arrive in creation order, which is also the order of the
        # names and so of every cluster file.
        for obj in sc.nodes:
            _create(api, obj)
        _wait_nodes_settled(api, sc, ks)
        for obj in devices.cluster:
            _create(api, obj)
        for pod in sc.bound_pods:
            _create(api, _owned(pod, refs))
        if prio is not None:
            preemption.wait_budgets_counted(api, prio)
        _wait_cache_synced(api, ks)
        reader = LogReader(ks.log_path)
        preempted: set[str] = set()
        for i, pod in enumerate(sc.pending_pods):
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            key = f"{ns}/{name}"
            if key in devices.claims:
                _create(api, devices.claims[key])
            docs = dump_cluster(api)
            stored = _create(api, _owned(pod, refs))
            stored.pop("status", None)
            cluster_file = workdir / f"cluster-{i:02d}-{name}.yaml"
            cluster_file.write_text(yaml.safe_dump_all([*docs, stored], sort_keys=False))
            attempt = wait_for(
                lambda key=key: reader.first_done(key),
                timeout=60,
                interval=0.05,
                desc=f"kube-scheduler decision for {key}",
            )
            api_node: str | None = None
            event: str | None = None
            nominated: str | None = None
            victims: list[str] | None = None
            if attempt.node:
                got = wait_for_pod_scheduled(core, ns, name, timeout=30)
                api_node = got.spec.node_name
                if api_node != attempt.node:
                    raise RuntimeError(f"{key}: log says {attempt.node}, API says {api_node}")
            else:
                event = wait_for(
                    lambda ns=ns, name=name: _failed_scheduling_message(core, ns, name),
                    timeout=30,
                    desc=f"FailedScheduling of {key}",
                )
                _delete_pod_now(core, ns, name)  # before the binary retries it on the nominated node
                errored = (attempt.error or "").startswith("error: ")  # not a fit error: no PostFilter
                if prio is not None and "preemption: " not in event and not errored:
                    # PostFilter succeeded (its message would follow the FitError otherwise).
                    ours = [r for r in run_simulate(cluster_file, ours_config, subprocess_cli) if r["pod"] == key]
                    expected = len(ours[0].get("victims") or []) if ours else 1
                    nominated, victims = preemption.observe(api, stored["metadata"]["uid"], expected)
                    preempted.add(key)  # may be retried on its nominated node before the delete lands
                    log(f"seed {seed}: {key} preempted {victims} on {nominated}")
                    _wait_cache_synced(api, ks)  # the binary has seen the victims go
                elif prio is not None and not errored:
                    nominated, victims = "", []
            now = _nodes_now(api)
            changed = sorted(n for n, fp in _node_fingerprints(docs).items() if now.get(n, fp) != fp)
            if changed:
                raise RuntimeError(f"{key}: node(s) {', '.join(changed)} changed while the binary decided")
            records = [r for r in run_simulate(cluster_file, ours_config, subprocess_cli) if r["pod"] == key]
            if not records:
                raise RuntimeError(f"simulate made no attempt for {key} ({cluster_file})")
            t = compare(seed, Decision(key, attempt, api_node, event, nominated, victims), records[0])
            for m in t.mismatches:
                log(f"MISMATCH {m}  [{cluster_file}]")
            tally.merge(t)
        # A pod the suite counted as unschedulable must not have been bound by a retry.
        for pod in sc.pending_pods:
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            done = [a for a in reader.all_attempts(key) if a.done]
            if len(done) > 1 and any(a.node for a in done[1:]) and key not in preempted:
                raise RuntimeError(f"{key} was retried and bound after the suite recorded its decision")
    finally:
        if ks is not None:
            ks.stop()
        if ext_server is not None:
            ext_server.stop()
        cleanup(api, sc)
        if prio is not None:
            preemption.delete(api, prio)
    return SeedResult(seed, tally, dict(sc.features), workdir)
