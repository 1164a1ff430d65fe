"""Helpers for pyscheduler's end-to-end tests against a real kube-apiserver.

The control plane is either

* an existing cluster: ``KUBECONFIG`` is set and its API server answers
  (for example kind, see ``e2e/kind/run.sh``), or
* a local loopback control plane (etcd + kube-apiserver with RBAC +
  kube-controller-manager + kwok, no containers) started with
  ``e2e/controlplane/up.sh`` and stopped with ``down.sh``; the binaries are
  built once by ``e2e/controlplane/build.sh`` into
  ``${PYSCHED_CACHE:-~/.cache/pyscheduler}/bin``.

Everything here uses the official ``kubernetes`` Python client and PyYAML.
Nothing in this module is pyscheduler-specific except the defaults of
:func:`make_node` (KWOK-style fake nodes).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTROLPLANE_DIR = REPO_ROOT / "e2e" / "controlplane"
MANIFESTS_DIR = REPO_ROOT / "manifests"

FIELD_MANAGER = "pyscheduler-e2e"

T = TypeVar("T")


# ---------------------------------------------------------------------------
# Control plane lifecycle
# ---------------------------------------------------------------------------


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


SESSION_RUN_PREFIX = "pyscheduler-cp-pytest-"


def run_dir() -> pathlib.Path:
    """Run dir for a control plane this process starts.

    ``$PYSCHED_RUN`` if set; otherwise one per pytest process
    (``/tmp/pyscheduler-cp-pytest-<pid>``), so concurrent sessions on one
    machine never share or stop each other's control plane.
    """
    if os.environ.get("PYSCHED_RUN"):
        return pathlib.Path(os.environ["PYSCHED_RUN"])
    return pathlib.Path(tempfile.gettempdir()) / f"{SESSION_RUN_PREFIX}{os.getpid()}"


def _controlplane_env(run: pathlib.Path) -> dict[str, str]:
    return {**os.environ, "PYSCHED_RUN": str(run)}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) counts as gone
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners do
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def kill_apiserver(run: pathlib.Path) -> list[str]:
    """SIGKILL the local kube-apiserver (a crash, no graceful drain of long-running watches) and
    wait until its port is free; returns its command line. The pid alone is not enough: a
    killed Go process's main thread shows as a zombie while its other threads, which still
    hold the listening socket, are exiting, and a restart then fails "address already in use"."""
    pid = int((run / "pids" / "kube-apiserver.pid").read_text().strip())
    argv = [a.decode() for a in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    port = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--secure-port=")), 6443)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _pid_alive(pid) and _port_free(port), timeout=30, desc="kube-apiserver to stop")
    return argv


def restart_apiserver(run: pathlib.Path, kubeconfig: str, down_seconds: float = 2.0, timeout: float = 90.0) -> None:
    """Kill the local kube-apiserver, leave it down for ``down_seconds``, start it again with the
    same command line (its PID file updated for down.sh), and wait until it answers."""
    pidfile = run / "pids" / "kube-apiserver.pid"
    argv = kill_apiserver(run)
    time.sleep(down_seconds)
    with open(run / "logs" / "kube-apiserver.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    pidfile.write_text(f"{proc.pid}\n")
    wait_for(lambda: api_reachable(kubeconfig, timeout=2), timeout=timeout, desc="kube-apiserver to come back")


def reap_orphaned_session_planes() -> None:
    """down.sh --purge for per-session run dirs whose pytest process is gone
    (a session killed before its teardown)."""
    for d in pathlib.Path(tempfile.gettempdir()).glob(f"{SESSION_RUN_PREFIX}*"):
        try:
            pid = int(d.name[len(SESSION_RUN_PREFIX) :])
        except ValueError:
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            subprocess.run(
                [str(CONTROLPLANE_DIR / "down.sh"), "--purge"],
                env=_controlplane_env(d),
                check=False,
                stdout=subprocess.DEVNULL,
            )


@dataclasses.dataclass
class ControlPlane:
    """A reachable API server and what is known about it."""

    kubeconfig: str
    #: True if this process ran up.sh (and so must run down.sh).
    started_here: bool = False
    #: True if kwok manages the nodes (fake nodes become Ready, bound pods Running).
    kwok: bool = False
    #: True if pyscheduler already runs in the cluster (PYSCHED_E2E_IN_CLUSTER=1).
    in_cluster_scheduler: bool = False
    #: Run dir of the local control plane (pids, logs, pki), if local.
    run_dir: pathlib.Path | None = None

    def api_client(self) -> client.ApiClient:
        return new_api_client(self.kubeconfig)

    def stop(self) -> None:
        """down.sh if this process started the plane (logs stay in run_dir/logs)."""
        if self.started_here and self.run_dir is not None:
            subprocess.run([str(CONTROLPLANE_DIR / "down.sh")], env=_controlplane_env(self.run_dir), check=False)
            self.started_here = False


def new_api_client(kubeconfig: str | os.PathLike[str]) -> client.ApiClient:
    """A fresh ApiClient for *kubeconfig* (no global default configuration)."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.ApiClient(configuration=cfg)


def api_reachable(kubeconfig: str, timeout: float = 5.0) -> bool:
    """True if the API server of *kubeconfig* answers /version."""
    try:
        api = new_api_client(kubeconfig)
    except Exception:
        return False
    try:
        client.VersionApi(api).get_code(_request_timeout=timeout)
        return True
    except (ApiException, urllib3.exceptions.HTTPError, OSError):
        return False
    finally:
        api.close()


def local_binaries_present() -> bool:
    """True if build.sh has nothing to build for up.sh (cheap check: runs no Go)."""
    script = (
        f'source "{CONTROLPLANE_DIR}/lib.sh"; '
        'for b in "$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KUBE_CONTROLLER_MANAGER_BIN" "$KWOK_BIN" "$KWOK_STAGES"; do '
        "[[ -e $b ]] || exit 1; done"
    )
    return subprocess.run(["bash", "-c", script], check=False).returncode == 0


def build_binaries() -> None:
    subprocess.run([str(CONTROLPLANE_DIR / "build.sh")], check=True)


def start_local_control_plane() -> ControlPlane:
    """Run up.sh (building the binaries first if needed) and return the plane."""
    if not local_binaries_present():
        if os.environ.get("PYSCHED_E2E_BUILD", "1") == "0":
            raise RuntimeError("control-plane binaries missing and PYSCHED_E2E_BUILD=0; run e2e/controlplane/build.sh")
        build_binaries()
    reap_orphaned_session_planes()
    run = run_dir()
    # One retry: a concurrent session can win the race for a default port between up.sh's
    # check and the bind; up.sh then fails (and cleans up) and the next attempt picks again.
    for attempt in (1, 2):
        proc = subprocess.run(
            [str(CONTROLPLANE_DIR / "up.sh")],
            env=_controlplane_env(run),
            check=attempt == 2,
            stdout=subprocess.PIPE,
            text=True,
        )
        if proc.returncode == 0:
            break
    out = proc.stdout
    kubeconfig = None
    for line in out.splitlines():
        if line.startswith("export KUBECONFIG="):
            kubeconfig = line.split("=", 1)[1].strip()
    if not kubeconfig:
        raise RuntimeError(f"up.sh printed no KUBECONFIG:\n{out}")
    # "already up" means somebody else owns it: leave it running at the end.
    started = "already up" not in out.splitlines()
    return ControlPlane(kubeconfig=kubeconfig, started_here=started, kwok=True, run_dir=run)


def up_sh_run_dir(kubeconfig: str) -> pathlib.Path | None:
    """The run dir if *kubeconfig* is the admin kubeconfig written by up.sh
    ($RUN/kubeconfig -> $RUN/pki/admin.kubeconfig, next to $RUN/env)."""
    real = pathlib.Path(os.path.realpath(kubeconfig))
    if real.name != "admin.kubeconfig" or real.parent.name != "pki":
        return None
    run = real.parent.parent
    env = run / "env"
    try:
        if "e2e/controlplane/up.sh" in env.read_text():
            return run
    except OSError:
        pass
    return None


def ensure_control_plane() -> ControlPlane:
    """Use a reachable ``$KUBECONFIG``, else start the local control plane.

    ``PYSCHED_E2E_KWOK=1`` declares that kwok manages an external cluster's
    nodes (the local plane always has kwok).
    """
    in_cluster = env_flag("PYSCHED_E2E_IN_CLUSTER")
    kubeconfig = os.environ.get("KUBECONFIG", "")
    if kubeconfig and ":" not in kubeconfig and api_reachable(kubeconfig):
        local_run = up_sh_run_dir(kubeconfig)
        return ControlPlane(
            kubeconfig=kubeconfig,
            kwok=local_run is not None or env_flag("PYSCHED_E2E_KWOK"),
            in_cluster_scheduler=in_cluster,
            run_dir=local_run,
        )
    if in_cluster:
        raise RuntimeError("PYSCHED_E2E_IN_CLUSTER=1 but KUBECONFIG is unset or unreachable")
    return start_local_control_plane()


# ---------------------------------------------------------------------------
# Waiting
# ---------------------------------------------------------------------------


class WaitTimeout(AssertionError):
    pass


def wait_for(
    fn: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.2,
    desc: str = "condition",
) -> T:
    """Call *fn* until it returns something truthy; return that value.

    ApiException 404 counts as "not yet". On timeout raise WaitTimeout with the
    last value or error seen.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except ApiException as exc:
            if exc.status != 404:
                raise
            last = exc
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {desc}; last: {last!r}")
        time.sleep(interval)


def node_is_ready(node: client.V1Node) -> bool:
    """The Ready condition is True (taints not considered; see :func:`node_is_usable`)."""
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


#: Taints the node lifecycle controller (and TaintNodesByCondition admission, on
#: create) puts on a node that is not, or no longer, known to be Ready.
NOT_READY_TAINT_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


def node_is_usable(node: client.V1Node) -> bool:
    """Ready and free of not-ready/unreachable taints.

    A new node is created with ``node.kubernetes.io/not-ready:NoSchedule``
    (TaintNodesByCondition admission); kube-controller-manager's node lifecycle
    controller lifts it shortly after the node turns Ready. Until then a
    scheduler filters the node out, so tests wait for both.
    """
    return node_is_ready(node) and not any(t.key in NOT_READY_TAINT_KEYS for t in node.spec.taints or [])


def pod_condition(pod: client.V1Pod, ctype: str) -> client.V1PodCondition | None:
    for c in pod.status.conditions or []:
        if c.type == ctype:
            return c
    return None


def wait_for_node_ready(core: client.CoreV1Api, name: str, timeout: float = 30.0) -> client.V1Node:
    """Wait until node *name* is Ready and carries no not-ready/unreachable taint."""
    return wait_for(
        lambda: (n := core.read_node(name)) and node_is_usable(n) and n,
        timeout=timeout,
        desc=f"node {name} Ready without not-ready/unreachable taints",
    )


def wait_for_pod(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    predicate: Callable[[client.V1Pod], bool],
    timeout: float = 30.0,
    desc: str | None = None,
) -> client.V1Pod:
    return wait_for(
        lambda: (p := core.read_namespaced_pod(name, namespace)) and predicate(p) and p,
        timeout=timeout,
        desc=desc or f"pod {namespace}/{name}",
    )


def wait_for_pod_phase(
    core: client.CoreV1Api, namespace: str, name: str, phase: str = "Running", timeout: float = 30.0
) -> client.V1Pod:
    return wait_for_pod(
        core,
        namespace,
        name,
        lambda p: p.status.phase == phase,
        timeout,
        desc=f"pod {namespace}/{name} phase {phase}",
    )


def wait_for_pod_scheduled(core: client.CoreV1Api, namespace: str, name: str, timeout: float = 30.0) -> client.V1Pod:
    """Wait until spec.nodeName is set (by whichever scheduler)."""
    return wait_for_pod(
        core,
        namespace,
        name,
        lambda p: bool(p.spec.node_name),
        timeout,
        desc=f"pod {namespace}/{name} bound",
    )


def wait_for_deleted(read: Callable[[], Any], timeout: float = 30.0, desc: str = "object") -> None:
    def gone() -> bool:
        try:
            read()
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(gone, timeout=timeout, desc=f"{desc} deleted")


# ---------------------------------------------------------------------------
# Object builders and creators
# ---------------------------------------------------------------------------


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    zone: str = "zone-a",
    region: str = "region-1",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    extra_resources: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    internal_ip: str | None = None,
) -> dict[str, Any]:
    """A KWOK-style fake node manifest (status is stored on create).

    kwok (``--manage-all-nodes``) adds the Ready condition and nodeInfo. It
    would only add addresses from its own ``--node-ip``/``--node-name`` (one
    value for every node), so the node carries its own: Hostname = name and a
    fake InternalIP in 198.18.0.0/15 (benchmarking range; never contacted).
    Later capacity changes must go through the ``nodes/NAME/status`` subresource.
    """
    if internal_ip is None:
        h = zlib.crc32(name.encode()) % (2 * 65536)
        internal_ip = f"198.{18 + h // 65536}.{(h // 256) % 256}.{h % 256}"
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": region,
        "type": "kwok",
        **(labels or {}),
    }
    node_annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        "kwok.x-k8s.io/node": "fake",
        **(annotations or {}),
    }
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": node_annotations},
        "spec": spec,
        "status": {
            "allocatable": dict(resources),
            "capacity": dict(resources),
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
                "containerRuntimeVersion": "fake",
                "kernelVersion": "fake",
                "osImage": "fake",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "phase": "Running",
        },
    }


def create_nodes(
    core: client.CoreV1Api,
    count: int,
    prefix: str = "kwok-node",
    wait_ready: bool = False,
    timeout: float = 60.0,
    **node_kwargs: Any,
) -> list[str]:
    """Create *count* fake nodes named ``{prefix}-{i}``; return their names.

    ``zone`` may be a callable ``i -> zone`` to spread nodes over zones.
    """
    names = []
    zone = node_kwargs.pop("zone", "zone-a")
    for i in range(count):
        name = f"{prefix}-{i}"
        z = zone(i) if callable(zone) else zone
        core.create_node(make_node(name, zone=z, **node_kwargs))
        names.append(name)
    if wait_ready:
        for name in names:
            wait_for_node_ready(core, name, timeout=timeout)
    return names


def make_pod(
    name: str,
    namespace: str = "default",
    scheduler_name: str | None = "pyscheduler",
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority_class_name: str | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    image: str = "registry.k8s.io/pause:3.10.2",
    **spec_extra: Any,
) -> dict[str, Any]:
    """A bare pod manifest (no owning controller).

    ``scheduler_name=None`` leaves schedulerName unset (default-scheduler).
    Extra keyword arguments go into ``spec`` verbatim (camelCase keys).
    """
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: dict[str, Any] = {"name": "c", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
        **spec_extra,
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
    }


def create_pod(
    core: client.CoreV1Api, namespace: str = "default", name: str | None = None, **kwargs: Any
) -> client.V1Pod:
    name = name or unique_name("pod")
    return core.create_namespaced_pod(namespace, make_pod(name, namespace=namespace, **kwargs))


def create_pods(
    core: client.CoreV1Api, count: int, namespace: str = "default", prefix: str = "pod", **kwargs: Any
) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        core.create_namespaced_pod(namespace, make_pod(name, namespace=namespace, **kwargs))
    return names


def bind_pod(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    """POST pods/NAME/binding, as a scheduler does.

    ``_preload_content=False`` because the client cannot deserialize the
    Status object the API server returns for this subresource.
    """
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    resp = core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
    # Drain the body before returning the connection to the pool, or the next
    # request on it fails with ResponseNotReady. Errors raise ApiException.
    resp.read()
    resp.release_conn()


def ensure_namespace(
    core: client.CoreV1Api,
    name: str,
    labels: Mapping[str, str] | None = None,
    wait_default_sa: bool = True,
    timeout: float = 30.0,
) -> None:
    """Create namespace *name* unless it exists.

    With *wait_default_sa*, also wait for its "default" ServiceAccount: the
    ServiceAccount controller adds it shortly after the namespace appears, and
    ServiceAccount admission rejects pods until then.
    """
    try:
        core.create_namespace(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    if wait_default_sa:
        wait_for(
            lambda: core.read_namespaced_service_account("default", name),
            timeout=timeout,
            desc=f"ServiceAccount {name}/default",
        )


def delete_workloads(api: client.ApiClient, namespace: str) -> None:
    """Delete the Deployments, StatefulSets, ReplicaSets and ReplicationControllers of *namespace*,
    so that their controllers stop replacing pods (the garbage collector removes their pods)."""
    apps = client.AppsV1Api(api)
    apps.delete_collection_namespaced_deployment(namespace)
    apps.delete_collection_namespaced_stateful_set(namespace)
    apps.delete_collection_namespaced_replica_set(namespace)
    client.CoreV1Api(api).delete_collection_namespaced_replication_controller(namespace)


def delete_all_pods(core: client.CoreV1Api, namespace: str, wait: bool = True, timeout: float = 60.0) -> None:
    """Delete every pod of *namespace* (bare pods; a controller would recreate its own).

    Bound pods get a deletionTimestamp; kwok's pod-delete stage finishes them.
    """
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    if wait:
        wait_for(
            lambda: not core.list_namespaced_pod(namespace).items,
            timeout=timeout,
            desc=f"all pods in {namespace} deleted",
        )


# ---------------------------------------------------------------------------
# Applying YAML
# ---------------------------------------------------------------------------


def iter_yaml_documents(path: str | os.PathLike[str], recursive: bool = False) -> Iterator[dict[str, Any]]:
    """Kubernetes objects in a YAML file, or in the *.yaml/*.yml files of a
    directory (sorted; subdirectories only if *recursive*). Empty documents
    and kustomize files (kustomization.yaml, kind Kustomization/Component)
    are skipped; ``kind: List`` is flattened."""
    p = pathlib.Path(path)
    if p.is_dir():
        pattern = "**/*" if recursive else "*"
        files = sorted(f for f in p.glob(pattern) if f.suffix in {".yaml", ".yml"} and f.is_file())
    else:
        files = [p]
    for f in files:
        if f.name in {"kustomization.yaml", "kustomization.yml"}:
            continue
        with f.open() as fh:
            for doc in yaml.safe_load_all(fh):
                if not doc:
                    continue
                if str(doc.get("apiVersion", "")).startswith("kustomize.config.k8s.io"):
                    continue
                if doc.get("kind") == "List":
                    yield from (i for i in doc.get("items") or [] if i)
                else:
                    yield doc


# Namespaces and cluster-scoped RBAC first, workloads last.
_KIND_ORDER = [
    "CustomResourceDefinition",
    "Namespace",
    "PriorityClass",
    "StorageClass",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
]


def _kind_rank(doc: Mapping[str, Any]) -> int:
    kind = doc.get("kind", "")
    return _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)


def apply_objects(
    api: client.ApiClient,
    docs: Iterable[Mapping[str, Any]],
    dry_run: bool = False,
    namespace: str | None = None,
    field_manager: str = FIELD_MANAGER,
    skip_kinds: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Server-side apply each object (force conflicts). ``dry_run`` sends
    ``dryRun=All``. Namespaced objects without a namespace get *namespace*
    (default "default"). Returns the API server's answers as dicts."""
    dyn = DynamicClient(api)
    skip = set(skip_kinds)
    results = []
    for doc in sorted((d for d in docs if d.get("kind") not in skip), key=_kind_rank):
        resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        ns = None
        if resource.namespaced:
            ns = doc.get("metadata", {}).get("namespace") or namespace or "default"
        kwargs: dict[str, Any] = {"field_manager": field_manager, "force_conflicts": True}
        if dry_run:
            kwargs["dry_run"] = "All"
        out = dyn.server_side_apply(resource, body=dict(doc), namespace=ns, **kwargs)
        results.append(out.to_dict())
    return results


def apply_yaml(
    api: client.ApiClient,
    path: str | os.PathLike[str],
    dry_run: bool = False,
    namespace: str | None = None,
    recursive: bool = False,
    field_manager: str = FIELD_MANAGER,
    skip_kinds: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Server-side apply all YAML documents of a file or directory."""
    return apply_objects(
        api,
        list(iter_yaml_documents(path, recursive=recursive)),
        dry_run=dry_run,
        namespace=namespace,
        field_manager=field_manager,
        skip_kinds=skip_kinds,
    )


# ---------------------------------------------------------------------------
# ServiceAccount identities
# ---------------------------------------------------------------------------


def ensure_service_account(core: client.CoreV1Api, namespace: str, name: str) -> None:
    ensure_namespace(core, namespace)
    try:
        core.create_namespaced_service_account(
            namespace, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise


def create_sa_token(core: client.CoreV1Api, namespace: str, name: str, expiration_seconds: int = 3600) -> str:
    """A bound token for ServiceAccount namespace/name (TokenRequest API)."""
    req = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
    )
    return core.create_namespaced_service_account_token(name, namespace, req).status.token


def write_token_kubeconfig(
    api: client.ApiClient,
    token: str,
    path: str | os.PathLike[str],
    user: str = "sa",
) -> str:
    """Write a kubeconfig that reaches *api*'s server with a bearer token.

    The CA is taken from *api*'s configuration (file or, for in-memory data,
    embedded). Returns the path.
    """
    cfg = api.configuration
    cluster: dict[str, Any] = {"server": cfg.host}
    if cfg.ssl_ca_cert:
        cluster["certificate-authority-data"] = base64.b64encode(pathlib.Path(cfg.ssl_ca_cert).read_bytes()).decode()
    elif not cfg.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "e2e", "user": user}}],
        "current-context": user,
    }
    p = pathlib.Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(kc, sort_keys=False))
    p.chmod(0o600)
    return str(p)


def write_sa_kubeconfig(
    api: client.ApiClient,
    namespace: str,
    name: str,
    path: str | os.PathLike[str],
    expiration_seconds: int = 3600,
    create: bool = True,
) -> str:
    """Kubeconfig that authenticates as system:serviceaccount:namespace:name.

    A process started with ``KUBECONFIG=path`` runs with exactly that
    ServiceAccount's RBAC, which is how the ClusterRole in manifests/ is proven.
    """
    core = client.CoreV1Api(api)
    if create:
        ensure_service_account(core, namespace, name)
    token = create_sa_token(core, namespace, name, expiration_seconds)
    return write_token_kubeconfig(api, token, path, user=f"{namespace}-{name}")


def can_i(
    api: client.ApiClient,
    verb: str,
    resource: str,
    group: str = "",
    namespace: str | None = None,
    subresource: str | None = None,
    name: str | None = None,
) -> bool:
    """SelfSubjectAccessReview for the identity of *api*."""
    body = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb,
                resource=resource,
                group=group,
                namespace=namespace,
                subresource=subresource,
                name=name,
            )
        )
    )
    return bool(client.AuthorizationV1Api(api).create_self_subject_access_review(body).status.allowed)


# ---------------------------------------------------------------------------
# The scheduler's HTTPS endpoint (self-signed certificate, delegated auth)
# ---------------------------------------------------------------------------


def https_get(port: int, path: str, token: str | None = None, timeout: float = 5.0) -> tuple[int, str]:
    """GET https://127.0.0.1:<port><path> (certificate not verified: it is self-signed)."""
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metrics_reader_token(api: client.ApiClient, namespace: str, name: str = "metrics-reader") -> str:
    """A token for a ServiceAccount bound to ClusterRole pyscheduler-metrics-reader (manifests/)."""
    core = client.CoreV1Api(api)
    ensure_service_account(core, namespace, name)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"pyscheduler-metrics-reader-{namespace}-{name}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "pyscheduler-metrics-reader",
        },
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    try:
        client.RbacAuthorizationV1Api(api).create_cluster_role_binding(binding)
    except ApiException as exc:
        if exc.status != 409:
            raise
    return create_sa_token(core, namespace, name)
