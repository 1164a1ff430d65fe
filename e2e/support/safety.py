"""What the safety and fault e2e modules share: a control plane of the module's own with the
kube-apiserver audit log on, replicas as ServiceAccounts of their own, the load (nodes of 10 pod
slots, pods of 100m cpu and 128Mi memory), and the invariants read back from the API.

Invariants (all from what the API shows):
* no node holds more than its allocatable cpu, memory or pod count (``tally``);
* every pod is bound or reported Unschedulable (``settled``);
* no Binding from a replica whose last successful Lease write is older than the lease duration
  (15 s) when the Binding arrives (``binds_without_lease``);
* no pod bound twice (``binds_per_pod``: successful Bindings per pod in the audit log).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.utils.quantity import parse_quantity

from e2e.controlplane.freeport import free_port
from e2e.support.apply import apply_objects, apply_yaml, ensure_namespace, iter_yaml_documents
from e2e.support.auth import ensure_service_account, write_sa_kubeconfig
from e2e.support.objects import make_node, make_pod, unique_name
from e2e.support.plane import (
    CONTROLPLANE_DIR,
    MANIFESTS_DIR,
    env_flag,
    local_binaries_present,
    reap_orphaned_session_planes,
)
from e2e.support.waits import WaitTimeout, node_is_ready, pod_condition, wait_for
from scheduler.testing.process import SchedulerProcess

LEASE_NS = "pyscheduler"
LEASE_NAME = "pyscheduler"
LEASE_SECONDS = 15.0
# Replicas run as ServiceAccounts of their own: the audit log tells them apart, and from any
# other scheduler that might reach this API server.
USERS = {"a": "pyscheduler-a", "b": "pyscheduler-b"}

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update"]
  resources:
  - group: ""
    resources: ["pods/binding"]
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
"""



# ---------------------------------------------------------------------------------------------
# The module's own control plane (audit log on)


@dataclasses.dataclass
class Plane:
    run: pathlib.Path
    kubeconfig: str
    env: dict[str, str]
    api: client.ApiClient
    core: client.CoreV1Api
    kubeconfigs: dict[str, str]
    config_path: str

    @property
    def audit_log(self) -> pathlib.Path:
        return self.run / "logs" / "audit.log"


def admin_client(kubeconfig: str) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = 16  # parallel pod creation
    return client.ApiClient(cfg)


def replica_service_account(api: client.ApiClient, name: str) -> None:
    """A ServiceAccount with the same roles as pyscheduler's (the audit log tells replicas apart)."""
    ensure_service_account(client.CoreV1Api(api), LEASE_NS, name)
    subject = {"kind": "ServiceAccount", "name": name, "namespace": LEASE_NS}
    apply_objects(api, [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pyscheduler"},
         "subjects": [subject]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{name}-leader-election", "namespace": LEASE_NS},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "pyscheduler-leader-election"},
         "subjects": [subject]},
    ])


@contextlib.contextmanager
def start_plane(run_prefix: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A local control plane of its own (kernel-picked ports, the audit log on) with the
    manifests applied and a ServiceAccount kubeconfig per replica; down.sh at the end."""
    if env_flag("PYSCHED_E2E_IN_CLUSTER"):
        pytest.skip("PYSCHED_E2E_IN_CLUSTER=1: this module runs its own local control plane")
    if not local_binaries_present():
        pytest.skip("control-plane binaries missing (run e2e/controlplane/build.sh)")
    reap_orphaned_session_planes(run_prefix)
    run = pathlib.Path(tempfile.gettempdir()) / f"{run_prefix}{os.getpid()}"
    (run / "logs").mkdir(parents=True, exist_ok=True)
    policy = run / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    env = {
        **os.environ,
        "PYSCHED_RUN": str(run),
        "PYSCHED_APISERVER_EXTRA_ARGS": f"--audit-policy-file={policy} --audit-log-path={run}/logs/audit.log "
        "--audit-log-maxsize=2000 --audit-log-maxbackup=1",
    }
    # Ports the kernel picks, not the defaults: other sessions' planes use the defaults, and one
    # restarting its API server frees its port for a moment (a plane started then takes it,
    # and the other session's clients end up talking to this one).
    for port in ("ETCD_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "KWOK_PORT"):
        env[f"PYSCHED_{port}"] = str(free_port())
    out = subprocess.run([str(CONTROLPLANE_DIR / "up.sh")], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    kubeconfig = next(ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("export KUBECONFIG="))
    api = admin_client(kubeconfig)
    try:
        apply_yaml(api, MANIFESTS_DIR, skip_kinds={"Deployment"})
        for sa in USERS.values():
            replica_service_account(api, sa)
        sa_dir = tmp_path_factory.mktemp("safety-sa")
        kubeconfigs = {
            replica: write_sa_kubeconfig(api, LEASE_NS, sa, sa_dir / f"{sa}.kubeconfig",
                                                 expiration_seconds=6 * 3600, create=False)
            for replica, sa in USERS.items()
        }
        cm = next(d for d in iter_yaml_documents(MANIFESTS_DIR)
                  if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == "pyscheduler-config")
        cfg_path = sa_dir / "config.yaml"
        cfg_path.write_text(cm["data"]["config.yaml"])
        yield Plane(run, kubeconfig, env, api, client.CoreV1Api(api), kubeconfigs, str(cfg_path))
    finally:
        api.close()
        subprocess.run([str(CONTROLPLANE_DIR / "down.sh")], env=env, check=False)


@contextlib.contextmanager
def fresh_namespace(plane: Plane, prefix: str = "safety") -> Iterator[str]:
    name = unique_name(prefix)
    ensure_namespace(plane.core, name)
    try:
        yield name
    finally:
        with contextlib.suppress(ApiException):
            plane.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)


@contextlib.contextmanager
def replica_starter(plane: Plane, tmp_path: pathlib.Path) -> Iterator[Callable[..., SchedulerProcess]]:
    """``start(name, qps=None, ready=True, kubeconfig=None)`` runs replica ``name`` (its own
    ServiceAccount, or ``kubeconfig``); every replica started is stopped (thawed first) at the end."""
    procs: list[SchedulerProcess] = []

    def start(name: str = "a", qps: float | None = None, ready: bool = True,
              kubeconfig: str | None = None) -> SchedulerProcess:
        cfg = yaml.safe_load(pathlib.Path(plane.config_path).read_text())
        if qps is not None:
            cfg.setdefault("clientConnection", {}).update(qps=qps, burst=1)
        path = tmp_path / f"config-{name}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        p = SchedulerProcess(str(path), kubeconfig or plane.kubeconfigs[name], tmp_path, name, port=free_port())
        procs.append(p)
        if ready:
            p.wait_ready(timeout=60)
        return p

    try:
        yield start
    finally:
        for p in procs:
            if p.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.proc.send_signal(signal.SIGCONT)
            p.stop()


# ---------------------------------------------------------------------------------------------
# What the API shows


def make_nodes(core: client.CoreV1Api, prefix: str, count: int, group: dict[str, str]) -> list[str]:
    """``count`` nodes of 10 pod slots each, limited in turn by cpu, by pod count, by memory
    (pods request 100m cpu and 128Mi memory)."""
    shapes = [dict(cpu="1", memory="32Gi", pods=110), dict(cpu="4", memory="32Gi", pods=10),
              dict(cpu="4", memory="1280Mi", pods=110)]
    names = [f"{prefix}-{i}" for i in range(count)]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: core.create_node(make_node(names[i], labels=group, **shapes[i % 3])),
                    range(count)))
    wait_for(lambda: all(node_is_ready(n) for n in core.list_node(
        label_selector=",".join(f"{k}={v}" for k, v in group.items())).items) and True, timeout=60,
        desc="nodes Ready")
    return names


def make_pods(core: client.CoreV1Api, namespace: str, count: int, group: dict[str, str], prefix: str = "p",
              **kwargs: Any) -> None:
    def one(i: int) -> None:
        core.create_namespaced_pod(namespace, make_pod(f"{prefix}-{i}", namespace, node_selector=group,
                                                               **kwargs))

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(one, range(count)))


@dataclasses.dataclass
class Tally:
    pods: int
    bound: int
    unschedulable: int
    overcommitted: list[str]
    # Unbound pods that preemption nominated to a node: not settled until they bind.
    nominated: int = 0
    bound_prefixes: Counter[str] = dataclasses.field(default_factory=Counter)


def tally(core: client.CoreV1Api, namespace: str, nodes: list[str]) -> Tally:
    pods = core.list_namespaced_pod(namespace).items
    used: dict[str, Counter[str]] = defaultdict(Counter)
    bound = unsched = nominated = 0
    prefixes: Counter[str] = Counter()
    for p in pods:
        if p.spec.node_name:
            bound += 1
            prefixes[p.metadata.name.split("-", 1)[0]] += 1
            if p.status.phase in ("Succeeded", "Failed"):
                continue
            u = used[p.spec.node_name]
            u["pods"] += 1
            for c in p.spec.containers:
                req = (c.resources and c.resources.requests) or {}
                for r in ("cpu", "memory"):
                    if r in req:
                        u[r] += parse_quantity(req[r])
        else:
            cond = pod_condition(p, "PodScheduled")
            if cond is not None and cond.status == "False" and cond.reason == "Unschedulable":
                unsched += 1
            if p.status.nominated_node_name:
                nominated += 1
    over = []
    for name in nodes:
        alloc = core.read_node(name).status.allocatable
        u = used.get(name, Counter())
        for r in ("cpu", "memory", "pods"):
            if u[r] > parse_quantity(alloc[r]):
                over.append(f"{name}:{r} {u[r]}>{alloc[r]}")
    return Tally(len(pods), bound, unsched, over, nominated, prefixes)


def audit_time(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def audit_records(plane: Plane) -> list[dict[str, Any]]:
    out = []
    for path in sorted(plane.audit_log.parent.glob("audit*.log")):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def binds_without_lease(plane: Plane, namespace: str, since: float = 0.0) -> tuple[int, int, list[str]]:
    """(binds, binds after the binder's own lease had expired, details) for ``namespace``.

    A Binding arriving at t from replica U is legitimate only if U's latest successful Lease
    write (create/update answered 2xx) arrived after t - 15 s: otherwise U's lease had
    expired and another replica may have been scheduling."""
    renewals: dict[str, list[float]] = defaultdict(list)
    binds: list[tuple[str, float, str]] = []
    for e in audit_records(plane):
        if e.get("stage") != "ResponseComplete":
            continue
        ref = e.get("objectRef") or {}
        code = (e.get("responseStatus") or {}).get("code", 0)
        user = (e.get("user") or {}).get("username", "")
        t = audit_time(e["requestReceivedTimestamp"])
        if ref.get("resource") == "leases" and ref.get("name") == LEASE_NAME and 200 <= code < 300:
            renewals[user].append(t)
        elif (ref.get("subresource") == "binding" and ref.get("namespace") == namespace and 200 <= code < 300
              and t >= since):
            binds.append((user, t, str(ref.get("name"))))
    ours = {f"system:serviceaccount:{LEASE_NS}:{sa}" for sa in USERS.values()}
    foreign = sorted({user for user, _, _ in binds if user not in ours})
    assert not foreign, f"pods of this test bound by another client: {foreign}"
    bad = []
    for user, t, pod in binds:
        last = max((r for r in renewals[user] if r <= t), default=None)
        if last is None or t - last >= LEASE_SECONDS:
            bad.append(f"{pod} by {user} {t - last if last else float('inf'):.1f}s after its last renewal")
    return len(binds), len(bad), bad


def lease_holder(api: client.ApiClient) -> str:
    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(LEASE_NAME, LEASE_NS).spec.holder_identity or ""
    except ApiException as exc:
        if exc.status == 404:
            return ""
        raise


def identity(proc: SchedulerProcess) -> str | None:
    for e in proc.log_events():
        if e.get("event") == "lease_acquired":
            return str(e.get("identity"))
    return None


def bound_count(core: client.CoreV1Api, namespace: str) -> int:
    return sum(1 for p in core.list_namespaced_pod(namespace).items if p.spec.node_name)


def result(case: str, t: Tally, binds: int, after_loss: int, **extra: Any) -> None:
    more = " ".join(f"{k}={v}" for k, v in extra.items())
    print(f"\nRESULT {case} pods={t.pods} bound={t.bound} unschedulable={t.unschedulable} "
          f"overcommitted_nodes={len(t.overcommitted)} binds={binds} binds_after_lease_loss={after_loss} {more}",
          file=sys.stderr)


def settled(core: client.CoreV1Api, namespace: str, nodes: list[str], want_bound: int | None = None) -> Tally | None:
    """The tally once every pod is bound or marked Unschedulable (and at least ``want_bound`` bound),
    with no preemptor still waiting for its nominated node."""
    t = tally(core, namespace, nodes)
    done = (t.bound + t.unschedulable >= t.pods and t.nominated == 0
            and (want_bound is None or t.bound >= want_bound))
    return t if done else None




def replica_report(procs: dict[str, SchedulerProcess]) -> str:
    """What the replicas' logs say about leadership and unfinished Bindings (failure messages)."""
    lines = []
    for name, p in procs.items():
        events = p.log_events()
        lease = [f"{e.get('event')}@{e.get('timestamp', '')[11:19]}" for e in events
                 if e.get("event") in ("lease_acquired", "lease_lost", "leader_election_lost", "lease_fence_closed")]
        unknown = [e for e in events if e.get("event") == "bind_outcome_unknown"]
        stuck = sorted({str(e.get("pod")) for e in unknown})
        last = unknown[-1].get("error") if unknown else None
        lines.append(f"{name}: exit={p.proc.poll()} lease={lease} scheduled="
                     f"{sum(1 for e in events if e.get('event') == 'pod_scheduled')} "
                     f"bind_outcome_unknown_pods={len(stuck)} last_error={last!r}")
    return "\n".join(lines)


def wait_progressing(fn: Callable[[], Tally | None], progress: Callable[[], int], *, stall: float, cap: float,
                     desc: str, report: Callable[[], str]) -> Tally:
    """wait_for ``fn`` for as long as ``progress()`` keeps growing: fail after ``stall`` seconds
    without progress, or after ``cap`` seconds in all. A loaded machine only makes it slower; a
    stuck scheduler still fails within ``stall``."""
    start = last_change = time.monotonic()
    best = -1
    while True:
        t = fn()
        if t is not None:
            return t
        now = time.monotonic()
        p = progress()
        if p > best:
            best, last_change = p, now
        if now - last_change > stall or now - start > cap:
            why = f"no progress for {now - last_change:.0f}s" if now - last_change > stall else f"{cap:.0f}s cap"
            raise WaitTimeout(f"{desc}: {why} (progress {best}, {now - start:.0f}s)\n{report()}")
        time.sleep(1.0)


def binds_per_pod(plane: Plane, namespace: str) -> Counter[str]:
    """Successful Bindings per pod of ``namespace`` in the audit log (more than one: bound twice)."""
    out: Counter[str] = Counter()
    for e in audit_records(plane):
        ref = e.get("objectRef") or {}
        code = (e.get("responseStatus") or {}).get("code", 0)
        if (e.get("stage") == "ResponseComplete" and ref.get("subresource") == "binding"
                and ref.get("namespace") == namespace and 200 <= code < 300):
            out[str(ref.get("name"))] += 1
    return out
