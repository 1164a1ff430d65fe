"""`make run`: the scheduler in the foreground on a working default.

Uses the current kubeconfig when it reaches a cluster; otherwise builds (once) and starts the
local control plane (etcd, kube-apiserver, controllers, KWOK on 127.0.0.1) with three fake nodes. Then it
starts ``pyscheduler run`` (profile ``pyscheduler``), submits the example pods and the example
StatefulSet with a WaitForFirstConsumer claim on a local PV
(manifests/examples/statefulset-local-volume.yaml), and prints where they land and what the
claim is bound to. Ctrl-C stops the scheduler and whatever this script started. ``--once`` exits after
the pods are placed (used by the e2e suite to prove this very path).

A cluster that is not the local plane (e2e/controlplane/up.sh) gets a namespace, pods and
bindings only after a yes on the terminal; ``--yes`` or ``PYSCHED_RUN_YES=1`` answers it for
scripts, and without a terminal to ask on the script refuses.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

# Run as a script (make run): the repository root makes e2e.support and scheduler importable.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.apply import apply_objects, ensure_namespace, iter_yaml_documents
from e2e.support.objects import create_nodes
from e2e.support.plane import (
    ControlPlane,
    api_reachable,
    env_flag,
    new_api_client,
    start_local_control_plane,
    up_sh_run_dir,
)
from e2e.support.waits import node_is_usable, wait_for, wait_for_deleted
from scheduler.testing.process import run_argv, scheduler_env, stop_process

REPO = pathlib.Path(__file__).resolve().parent.parent
NAMESPACE = "pyscheduler-demo"
SCHEDULER_NAME = "pyscheduler"

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [{"schedulerName": SCHEDULER_NAME}],
}

# Example pods of different sizes; the big one shows spreading by LeastAllocated.
EXAMPLE_PODS = [("web-1", "500m", "256Mi"), ("web-2", "500m", "256Mi"), ("batch", "2", "1Gi"), ("tiny", "50m", "16Mi")]

# StorageClass, local PV and a one-replica StatefulSet with a volumeClaimTemplate: the claim is
# placed by VolumeBinding and bound by the cluster's PV controller.
VOLUME_EXAMPLE = REPO / "manifests" / "examples" / "statefulset-local-volume.yaml"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def say(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def current_kubeconfig() -> str | None:
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    if path and os.path.exists(path.split(os.pathsep)[0]) and api_reachable(path.split(os.pathsep)[0]):
        return path.split(os.pathsep)[0]
    return None


def cluster_description(kubeconfig: str) -> str:
    from kubernetes import config as kconfig

    try:
        _, current = kconfig.list_kube_config_contexts(config_file=kubeconfig)
        name = (current or {}).get("name", "?")
    except Exception:
        name = "?"
    server = new_api_client(kubeconfig).configuration.host
    return f"{server} (context {name}, kubeconfig {kubeconfig})"


def confirm_foreign_cluster(kubeconfig: str, assume_yes: bool) -> bool:
    """True when writing to this cluster is fine: the local plane, or a yes (flag, env or terminal)."""
    if up_sh_run_dir(kubeconfig) is not None:
        return True
    where = cluster_description(kubeconfig)
    if assume_yes or env_flag("PYSCHED_RUN_YES"):
        say(f"writing to {where} (confirmed by --yes/PYSCHED_RUN_YES)")
        return True
    refusal = (
        f"error: refusing to write to {where} without confirmation: it is not the local control plane; "
        "pass --yes or set PYSCHED_RUN_YES=1"
    )
    if sys.stdin is None or sys.stdin.closed:
        print(refusal, file=sys.stderr)
        return False
    say(
        f"this creates namespace {NAMESPACE}, {len(EXAMPLE_PODS)} pods and their bindings, and the StorageClass, "
        f"PersistentVolume and StatefulSet of {VOLUME_EXAMPLE.relative_to(REPO)} in {where}"
    )
    print("Write to this cluster? [y/N] ", end="", flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        answer = ""
    if not answer:  # end of input: nobody to ask
        print(file=sys.stdout)
        print(refusal, file=sys.stderr)
        return False
    if answer.strip().lower() in ("y", "yes"):
        return True
    say("not confirmed: nothing written")
    return False


def example_pod(name: str, cpu: str, memory: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "pyscheduler-demo"}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.2",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }


def volume_example(core: client.CoreV1Api) -> list[dict]:
    """The example's objects, its PV moved to an existing schedulable node when the one it
    names is not in this cluster."""
    docs = list(iter_yaml_documents(VOLUME_EXAMPLE))
    nodes = sorted(
        n.metadata.name
        for n in core.list_node().items
        if node_is_usable(n)
        and not n.spec.unschedulable
        and not any(t.effect in ("NoSchedule", "NoExecute") for t in n.spec.taints or [])
    )
    for d in docs:
        if d["kind"] != "PersistentVolume" or not nodes:
            continue
        (expr,) = d["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"]
        if expr["values"][0] not in nodes:
            expr["values"] = [nodes[len(nodes) // 2]]
    return docs


def remove_volume_example(api: client.ApiClient, docs: list[dict], wait: bool) -> None:
    """Delete what an earlier run left (pod, claim, StatefulSet, PV; the StorageClass stays):
    a claim keeps its protection finalizer until its pod is gone, the PV until the claim is."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    pv = next(d for d in docs if d["kind"] == "PersistentVolume")["metadata"]["name"]
    name = sts["metadata"]["name"]
    claims = [f"{t['metadata']['name']}-{name}-{i}" for t in sts["spec"]["volumeClaimTemplates"]
              for i in range(sts["spec"]["replicas"])]
    pods = [f"{name}-{i}" for i in range(sts["spec"]["replicas"])]
    steps = [(lambda: apps.delete_namespaced_stateful_set(name, NAMESPACE),
              lambda: apps.read_namespaced_stateful_set(name, NAMESPACE))]
    steps += [(lambda p=p: core.delete_namespaced_pod(p, NAMESPACE, grace_period_seconds=0),
               lambda p=p: core.read_namespaced_pod(p, NAMESPACE)) for p in pods]
    steps += [(lambda c=c: core.delete_namespaced_persistent_volume_claim(c, NAMESPACE),
               lambda c=c: core.read_namespaced_persistent_volume_claim(c, NAMESPACE)) for c in claims]
    steps += [(lambda: core.delete_persistent_volume(pv), lambda: core.read_persistent_volume(pv))]
    for delete, read in steps:
        try:
            delete()
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        if wait:
            wait_for_deleted(read, timeout=60)


def submit_volume_example(api: client.ApiClient, docs: list[dict]) -> list[tuple[str, str]]:
    """Create the example's objects; returns the (pod, claim) pairs to watch."""
    remove_volume_example(api, docs, wait=True)
    apply_objects(api, docs)
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    name = sts["metadata"]["name"]
    return [(f"{name}-{i}", f"{t['metadata']['name']}-{name}-{i}")
            for t in sts["spec"]["volumeClaimTemplates"] for i in range(sts["spec"]["replicas"])]


def bound_claim(core: client.CoreV1Api, name: str) -> client.V1PersistentVolumeClaim | None:
    c = core.read_namespaced_persistent_volume_claim(name, NAMESPACE)
    return c if c.status.phase == "Bound" else None


def submit_and_watch(core: client.CoreV1Api, timeout: float) -> bool:
    ensure_namespace(core, NAMESPACE)
    volume_docs = volume_example(core)
    with_claims = submit_volume_example(core.api_client, volume_docs)
    pv = next(d for d in volume_docs if d["kind"] == "PersistentVolume")
    pv_node = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0]
    say(f"submitted StatefulSet {NAMESPACE}/{with_claims[0][0].rsplit('-', 1)[0]} whose claim waits for its "
        f"first consumer; local PV {pv['metadata']['name']} is on node {pv_node}")
    for name, cpu, mem in EXAMPLE_PODS:
        try:
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
            wait_for_deleted(lambda n=name: core.read_namespaced_pod(n, NAMESPACE), timeout=30)
        except ApiException as exc:
            if exc.status != 404:
                raise
        core.create_namespaced_pod(NAMESPACE, example_pod(name, cpu, mem))
    say(f"submitted {len(EXAMPLE_PODS)} pods with schedulerName {SCHEDULER_NAME} in namespace {NAMESPACE}")
    deadline = time.monotonic() + timeout
    placed: dict[str, str] = {}
    wanted = [n for n, _, _ in EXAMPLE_PODS] + [p for p, _ in with_claims]
    claim_of = dict(with_claims)
    while time.monotonic() < deadline and len(placed) < len(wanted):
        for name in wanted:
            if name in placed:
                continue
            with contextlib.suppress(ApiException):  # the StatefulSet's pod may not exist yet
                node = core.read_namespaced_pod(name, NAMESPACE).spec.node_name
                if not node:
                    continue
                placed[name] = node
                if name not in claim_of:
                    say(f"{NAMESPACE}/{name} -> {node}")
                    continue
                # Bound before the pod (PreBind waits for it); its phase may lag a moment.
                c = wait_for(
                    lambda n=claim_of[name]: bound_claim(core, n), timeout=10, desc=f"claim {claim_of[name]} Bound"
                )
                say(f"{NAMESPACE}/{name} -> {node} (claim {c.metadata.name} Bound to PV {c.spec.volume_name})")
        time.sleep(0.5)
    if len(placed) < len(wanted):
        say(f"not placed within {timeout:.0f}s: {sorted(set(wanted) - set(placed))}")
        return False
    return True


def _stop_on_sigterm(signum: int, frame: object) -> None:
    # `kill` or a supervisor's SIGTERM ends the run as Ctrl-C does: the scheduler drains and the
    # local control plane stops (Python's default for SIGTERM would skip the clean-up).
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    ap = argparse.ArgumentParser()
    ap.add_argument("--once", action="store_true", help="exit once the example pods are placed")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--yes", action="store_true", help="do not ask before writing to a cluster that is not local")
    args = ap.parse_args()

    plane: ControlPlane | None = None
    kubeconfig = current_kubeconfig()
    if kubeconfig:
        say(f"using the cluster of {kubeconfig}")
        if not confirm_foreign_cluster(kubeconfig, args.yes):
            return 2
    else:
        say("no reachable cluster: starting the local control plane (first run builds it; cached afterwards)")
        plane = start_local_control_plane()
        kubeconfig = plane.kubeconfig
        core = client.CoreV1Api(new_api_client(kubeconfig))
        existing = {n.metadata.name for n in core.list_node().items}
        wanted = [f"pyscheduler-node-{i}" for i in range(3)]
        if not set(wanted) <= existing:
            create_nodes(
                core, 3, prefix="pyscheduler-node", wait_ready=True, zone=lambda i: f"zone-{'abc'[i % 3]}"
            )
        say(f"local control plane up with fake nodes {', '.join(wanted)}; KUBECONFIG={kubeconfig}")

    core = client.CoreV1Api(new_api_client(kubeconfig))
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="pyscheduler-run-"))
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    say(f"starting: pyscheduler run --config {cfg} --kubeconfig {kubeconfig}")
    argv = run_argv(
        cfg,
        "--kubeconfig",
        kubeconfig,
        "--secure-port",
        "10259",
        "--bind-address",
        "127.0.0.1",
        # /metrics checks tokens and permissions through this cluster, as kube-scheduler does.
        "--authentication-kubeconfig",
        kubeconfig,
        "--authorization-kubeconfig",
        kubeconfig,
        # a line per pod bound or left unschedulable (kube-scheduler's V(2) lines)
        "-v=2",
    )
    sched = subprocess.Popen(argv, env=scheduler_env(keep_kubeconfig=True))
    rc = 0
    try:
        ok = submit_and_watch(core, args.timeout)
        if args.once:
            rc = 0 if ok else 1
        else:
            say("the scheduler keeps running; create pods with schedulerName: pyscheduler. Ctrl-C stops.")
            say("health: curl -k https://127.0.0.1:10259/healthz  (metrics need a token allowed to get /metrics)")
            sched.wait()
            rc = sched.returncode or 0
    except KeyboardInterrupt:
        rc = 0
    finally:
        stop_process(sched, grace=20)
        if args.once:
            for name, _, _ in EXAMPLE_PODS:
                with contextlib.suppress(ApiException):
                    core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
            with contextlib.suppress(ApiException):
                remove_volume_example(core.api_client, list(iter_yaml_documents(VOLUME_EXAMPLE)), wait=False)
        if plane is not None:
            say("stopping the local control plane")
            plane.stop()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
