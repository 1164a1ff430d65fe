"""End-to-end: `pyscheduler explain` and the /debug/explain page against `pyscheduler run` on the
local plane.

The scheduler runs as the Deployment would (the manifests' ConfigMap: leader election on, under
the pyscheduler ServiceAccount, so the new RBAC is exercised: the client CA it reads, the
explain-reader role); explain runs with nothing but --kubeconfig (the admin's, a client
certificate): it finds the scheduler through the Lease's holder and the presence file the
process publishes, as it finds `make run`'s (also covered: leader election off, admin
credentials, a profile of its own).

Compared with what the scheduler itself said and with `simulate`:
* a placed pod: every plugin's score and total per node equal to `simulate --output json` on
  the same nodes and pods, and the same table lines as simulate's text;
* a pending pod: the message equal to its FailedScheduling Event, every rejecting plugin with
  its node count, the nodes that fail one plugin only;
* a preempting pod: the attempt that nominated the node and named the victim, then the binding;
* no scheduler running: the what-if recomputes the same FailedScheduling message;
* the page in Debian's chromium through Playwright (screenshots in e2e/out/);
* the in-cluster path: the Lease holder's pod asked through the API server's proxy, with the
  caller's token forwarded and least-privilege RBAC.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.auth import create_sa_token, ensure_service_account, write_token_kubeconfig
from e2e.support.objects import GROUP, create_nodes, make_pod, unique_name
from e2e.support.waits import events_for, wait_bound, wait_failed_scheduling, wait_for
from scheduler.testing.process import (
    REPO,
    SchedulerProcess,
    free_port,
    https_get,
    run_argv,
    scheduler_env,
    stop_process,
)

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

OUT = REPO / "e2e" / "out"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCAL_PROFILE = "pyscheduler-local"


@pytest.fixture(scope="module")
def runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A presence directory of this module's own: other sessions' schedulers on this machine
    stay out of its answers."""
    d = tmp_path_factory.mktemp("runtime")
    old = os.environ.get("PYSCHEDULER_RUNTIME_DIR")
    os.environ["PYSCHEDULER_RUNTIME_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("PYSCHEDULER_RUNTIME_DIR", None)
    else:
        os.environ["PYSCHEDULER_RUNTIME_DIR"] = old


@pytest.fixture(scope="module")
def sched(runtime_dir: pathlib.Path, scheduler_config_path: str, scheduler_kubeconfig: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(scheduler_config_path, scheduler_kubeconfig, tmp_path_factory.mktemp("sched"),
                            "explain", port=free_port())
    try:
        proc.wait_ready(timeout=60)
        wait_for(lambda: list(runtime_dir.glob("*.json")), timeout=30, desc="presence file")
        yield proc
    finally:
        proc.stop(timeout=30)


@pytest.fixture(scope="module")
def group(api_client: client.ApiClient, sched: SchedulerProcess) -> Iterator[tuple[str, list[str]]]:
    """Three nodes of different sizes (no ties) carrying a label the tests' pods select."""
    core = client.CoreV1Api(api_client)
    label = unique_name("explain")
    names: list[str] = []
    for cpu in ("2", "4", "8"):
        names += create_nodes(core, 1, prefix=f"{label}-c{cpu}", cpu=cpu, memory=f"{int(cpu) * 2}Gi",
                              labels={GROUP: label}, wait_ready=True)
    yield label, names
    for n in names:
        with contextlib.suppress(ApiException):
            core.delete_node(n)


@pytest.fixture
def cluster_rbac(api_client: client.ApiClient) -> Iterator[list[tuple[str, str]]]:
    """(kind, name) of cluster-scoped RBAC a test creates: deleted after it."""
    made: list[tuple[str, str]] = []
    yield made
    rbac = client.RbacAuthorizationV1Api(api_client)
    for kind, name in made:
        with contextlib.suppress(ApiException):
            if kind == "ClusterRole":
                rbac.delete_cluster_role(name)
            else:
                rbac.delete_cluster_role_binding(name)


def explain(kubeconfig: str, namespace: str, pod: str, *flags: str,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """`pyscheduler explain` as a user runs it: nothing but the kubeconfig (and the flags given)."""
    env = scheduler_env()
    proc = subprocess.run([sys.executable, "-m", "scheduler", "explain", "-n", namespace, pod,
                           "--kubeconfig", kubeconfig, *flags], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def explain_json(kubeconfig: str, namespace: str, pod: str, *flags: str) -> dict[str, Any]:
    return dict(json.loads(explain(kubeconfig, namespace, pod, "--output", "json", *flags).stdout))


def group_pod(name: str, ns: str, label: str, cpu: str, **kw: Any) -> dict[str, Any]:
    return make_pod(name, ns, cpu=cpu, memory="256Mi", node_selector={GROUP: label}, **kw)


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    obj = {k: v for k, v in obj.items() if k != "status" or obj.get("kind") == "Node"}
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    obj["metadata"] = meta
    return obj


def simulate_json(tmp: pathlib.Path, docs: list[dict[str, Any]], config: str) -> list[dict[str, Any]]:
    cluster = tmp / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(docs))
    out = subprocess.run([sys.executable, "-m", "scheduler", "simulate", "--cluster", str(cluster), "--config",
                          config, "--output", "json", "--seed", "1"], cwd=REPO, env=scheduler_env(),
                         capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def simulate_text(tmp: pathlib.Path, config: str) -> str:
    return subprocess.run([sys.executable, "-m", "scheduler", "simulate", "--cluster", str(tmp / "cluster.yaml"),
                           "--config", config, "--seed", "1"], cwd=REPO, env=scheduler_env(), capture_output=True,
                          text=True, timeout=120, check=True).stdout


# ---------------------------------------------------------------------------------------------
# Placed, pending, preempting


def test_placed_pod_scores_equal_simulates(kubeconfig: str, api_client: client.ApiClient, core_v1: client.CoreV1Api,
                                           namespace: str, group: tuple[str, list[str]], scheduler_config_path: str,
                                           tmp_path: pathlib.Path) -> None:
    label, nodes = group
    core_v1.create_namespaced_pod(namespace, group_pod("web", namespace, label, "500m"))
    node = wait_bound(core_v1, namespace, "web")
    ans = explain_json(kubeconfig, namespace, "web")
    assert ans["source"] == "scheduler" and ans["from"].startswith("local scheduler pid ")
    d = ans["attempts"][0]
    assert (d["outcome"], d["node"]) == ("scheduled", node)
    assert set(d["scores"]) == set(nodes)
    assert d["stages"] == {"Reserve": "Success", "Permit": "Success", "PreBind": "Success", "Bind": "Success"}
    # The same state through simulate: the group's nodes as the API has them, the pod pending.
    api_nodes = [_clean(client.ApiClient().sanitize_for_serialization(core_v1.read_node(n))) for n in nodes]
    for n in api_nodes:
        n.setdefault("kind", "Node")
        n.setdefault("apiVersion", "v1")
    pod = _clean(client.ApiClient().sanitize_for_serialization(core_v1.read_namespaced_pod("web", namespace)))
    pod.update(kind="Pod", apiVersion="v1")
    pod["spec"].pop("nodeName")
    (rec,) = simulate_json(tmp_path, [*api_nodes, pod], scheduler_config_path)
    assert rec["node"] == node
    for n, s in rec["scores"].items():
        assert d["scores"][n]["total"] == s["total"]
        assert {p: {"score": v["score"], "final": v["final"]} for p, v in d["scores"][n]["plugins"].items()} == \
            s["plugins"]
    # The text: simulate's table lines are explain's (the one renderer), after its own header.
    sim_lines = simulate_text(tmp_path, scheduler_config_path).splitlines()
    ours = explain(kubeconfig, namespace, "web").stdout.splitlines()
    table = [line for line in sim_lines[1:] if line.startswith("  ")]
    assert ours[1:1 + len(table)] == table
    assert ours[0].startswith(f"{namespace}/web -> {node}   (evaluated ")


def test_pending_pod_reasons_equal_failed_scheduling(kubeconfig: str, api_client: client.ApiClient,
                                                     core_v1: client.CoreV1Api, namespace: str,
                                                     group: tuple[str, list[str]]) -> None:
    label, nodes = group
    core_v1.create_namespaced_pod(namespace, group_pod("big", namespace, label, "16"))
    event, cond = wait_failed_scheduling(api_client, core_v1, namespace, "big")
    ans = explain_json(kubeconfig, namespace, "big")
    d = ans["attempts"][0]
    assert (d["outcome"], d["message"]) == ("unschedulable", event.note)
    assert cond.message == event.note
    rej = {r["plugin"]: r for r in d["rejections"]}
    total = len(core_v1.list_node().items)
    assert rej["NodeResourcesFit"]["nodes"] == 3 and rej["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 3}
    if total > 3:
        assert rej["NodeAffinity"]["nodes"] == total - 3
    # Every group node fails NodeResourcesFit only: a bigger node, or a smaller pod, would do.
    assert sorted(m["node"] for m in d["nearMisses"]) == sorted(nodes)
    assert ans["queue"]["queue"] == "unschedulable"
    text = explain(kubeconfig, namespace, "big").stdout
    assert f"{namespace}/big: unschedulable\n  {event.note}\n  rejected by:\n" in text
    assert "would fit if one plugin's verdict changed (computed now):" in text
    assert "now: unschedulable, rejected by NodeResourcesFit" in text


@pytest.fixture
def classes(api_client: client.ApiClient) -> Iterator[dict[str, str]]:
    sched = client.SchedulingV1Api(api_client)
    suffix = unique_name("pc")
    names = {}
    for key, value in (("low", 100), ("high", 1000)):
        name = f"{suffix}-{key}"
        sched.create_priority_class({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                     "metadata": {"name": name}, "value": value})
        names[key] = name
    yield names
    for name in names.values():
        with contextlib.suppress(ApiException):
            sched.delete_priority_class(name)


def test_preempting_pod_names_nominated_node_and_victims(kubeconfig: str, core_v1: client.CoreV1Api,
                                                         namespace: str, node_factory: Any,
                                                         classes: dict[str, str], sched: SchedulerProcess) -> None:
    label = unique_name("preempt")
    [node] = node_factory(1, cpu="2", memory="4Gi", labels={GROUP: label})
    core_v1.create_namespaced_pod(namespace, group_pod("victim", namespace, label, "1500m",
                                                       priority_class_name=classes["low"]))
    assert wait_bound(core_v1, namespace, "victim") == node
    core_v1.create_namespaced_pod(namespace, group_pod("preemptor", namespace, label, "1",
                                                       priority_class_name=classes["high"]))
    assert wait_bound(core_v1, namespace, "preemptor", timeout=60) == node
    ans = explain_json(kubeconfig, namespace, "preemptor")
    attempts = ans["attempts"]
    assert attempts[0]["outcome"] == "scheduled" and attempts[0]["node"] == node
    nominating = [a for a in attempts if a.get("nominated")]
    assert nominating, attempts
    assert (nominating[0]["nominated"], nominating[0]["victims"]) == (node, [f"{namespace}/victim"])
    assert nominating[0]["outcome"] == "unschedulable"
    text = explain(kubeconfig, namespace, "preemptor").stdout
    assert f"    preemption: nominated {node}, victims {namespace}/victim" in text


# ---------------------------------------------------------------------------------------------
# `make run`'s scheduler: a local process, no leader election, the admin's credentials


def test_make_run_scheduler_is_found(kubeconfig: str, core_v1: client.CoreV1Api, namespace: str,
                                     group: tuple[str, list[str]], runtime_dir: pathlib.Path,
                                     tmp_path: pathlib.Path) -> None:
    label, _ = group
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration", "leaderElection": {"leaderElect": False},
                                   "profiles": [{"schedulerName": LOCAL_PROFILE}]}))
    proc = SchedulerProcess(str(cfg), kubeconfig, tmp_path, "make-run", port=free_port())
    try:
        proc.wait_ready(timeout=60)
        core_v1.create_namespaced_pod(namespace, make_pod("local", namespace, scheduler_name=LOCAL_PROFILE,
                                                          node_selector={GROUP: label}))
        node = wait_bound(core_v1, namespace, "local")
        ans = explain_json(kubeconfig, namespace, "local")
        assert ans["source"] == "scheduler"
        assert ans["from"] == f"local scheduler pid {proc.proc.pid} at https://127.0.0.1:{proc.port}"
        assert ans["attempts"][0]["node"] == node and ans["attempts"][0]["profile"] == LOCAL_PROFILE
    finally:
        proc.stop(timeout=30)
    assert not (runtime_dir / f"{proc.proc.pid}.json").exists()  # withdrawn on the way out


# ---------------------------------------------------------------------------------------------
# The page in a real browser


def explain_reader_token(api: client.ApiClient, namespace: str, made: list[tuple[str, str]]) -> str:
    core = client.CoreV1Api(api)
    ensure_service_account(core, namespace, "explainer")
    made.append(("ClusterRoleBinding", f"pyscheduler-explain-reader-{namespace}"))
    client.RbacAuthorizationV1Api(api).create_cluster_role_binding({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"pyscheduler-explain-reader-{namespace}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "pyscheduler-explain-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "explainer", "namespace": namespace}]})
    return create_sa_token(core, namespace, "explainer")


def test_page_in_chromium(api_client: client.ApiClient, core_v1: client.CoreV1Api, namespace: str,
                          group: tuple[str, list[str]], sched: SchedulerProcess,
                          cluster_rbac: list[tuple[str, str]]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no chromium at {CHROMIUM} (.ci/run installs Debian's)")
    label, nodes = group
    core_v1.create_namespaced_pod(namespace, group_pod("fits", namespace, label, "1"))
    core_v1.create_namespaced_pod(namespace, group_pod("toobig", namespace, label, "32"))
    core_v1.create_namespaced_pod(namespace, make_pod("held", namespace, schedulingGates=[{"name": "example.com/x"}]))
    fit_node = wait_bound(core_v1, namespace, "fits")
    event, _ = wait_failed_scheduling(api_client, core_v1, namespace, "toobig")
    token = explain_reader_token(api_client, namespace, cluster_rbac)
    wait_for(lambda: https_get(sched.port, "/debug/explain", token=token)[0] == 200, timeout=30,
             desc="the explain-reader binding in effect")
    assert https_get(sched.port, "/debug/explain")[0] == 403  # anonymous
    OUT.mkdir(parents=True, exist_ok=True)
    base = f"https://127.0.0.1:{sched.port}/debug/explain"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            ctx = browser.new_context(ignore_https_errors=True, viewport={"width": 1500, "height": 1000},
                                      extra_http_headers={"Authorization": f"Bearer {token}"})
            page = ctx.new_page()
            assert page.goto(base).status == 200
            queue = page.locator("#queue")
            # The queue as a person reads it: where each pod waits and why.
            row = queue.locator("tr", has_text=f"{namespace}/toobig")
            assert "unschedulable" in row.inner_text()
            assert "rejected by NodeResourcesFit" in row.inner_text()
            assert "gated by SchedulingGates (schedulingGates: example.com/x)" in queue.locator(
                "tr", has_text=f"{namespace}/held").inner_text()
            assert fit_node in page.locator("#recent tr", has_text=f"{namespace}/fits").inner_text()
            # The filter box narrows the tables.
            page.locator("input[data-table=recent]").fill(f"{namespace}/fits")
            assert page.locator("#recent tbody tr:visible").count() == 1
            for n in nodes:
                assert page.locator(".tile", has_text=n).count() == 1
            page.screenshot(path=str(OUT / "explain-index.png"), full_page=True)
            # The pending pod: its message, the rejecting plugin, the tiles without room for it.
            page.locator("#queue a", has_text=f"{namespace}/toobig").click()
            page.wait_for_load_state()
            assert page.locator("pre.message").inner_text() == event.note
            assert "NodeResourcesFit" in page.locator("table", has_text="reasons (a few nodes each)").inner_text()
            for n in nodes:
                assert page.locator(".tile.rejected", has_text=n).locator(".need.over").count() >= 1
            page.screenshot(path=str(OUT / "explain-pending.png"), full_page=True)
            # The placed pod: the score table, switched from weighted to raw scores.
            page.goto(f"{base}/pods/{namespace}/fits")
            chosen = page.locator("#scores tr.chosen")
            assert chosen.locator("td").first.inner_text() == fit_node
            cell = page.locator("#scores td[data-raw]").first
            weighted, raw = cell.get_attribute("data-final"), cell.get_attribute("data-raw")
            assert cell.inner_text() == weighted
            page.locator("input[value=raw]").check()
            assert cell.inner_text() == raw
            assert page.locator(".tile.chosen", has_text=fit_node).count() == 1
            page.screenshot(path=str(OUT / "explain-placed.png"), full_page=True)
        finally:
            browser.close()


# ---------------------------------------------------------------------------------------------
# No scheduler running: what-if


def test_what_if_with_no_scheduler_running(kubeconfig: str, api_client: client.ApiClient,
                                           core_v1: client.CoreV1Api, namespace: str, group: tuple[str, list[str]],
                                           sched: SchedulerProcess, runtime_dir: pathlib.Path) -> None:
    label, _ = group
    core_v1.create_namespaced_pod(namespace, group_pod("later", namespace, label, "12"))
    wait_failed_scheduling(api_client, core_v1, namespace, "later")
    sched.stop(timeout=30)  # the module's scheduler: the last test to use it
    assert list(runtime_dir.glob("*.json")) == []
    proc = explain(kubeconfig, namespace, "later", "--output", "json")
    ans = json.loads(proc.stdout)
    assert ans["source"] == "what-if"
    assert "no scheduler answered with a record: recomputed now from the cluster" in proc.stderr
    d = ans["attempts"][0]
    # Nothing changed since the scheduler's attempt: the same message, recomputed.
    latest = max(events_for(api_client, namespace, "later", "FailedScheduling"),
                 key=lambda e: e.series.last_observed_time if e.series else e.event_time)
    assert (d["outcome"], d["message"]) == ("unschedulable", latest.note)
    assert d["nearMisses"]
    before = [(e.metadata.name, e.series.count if e.series else 1)
              for e in events_for(api_client, namespace, "later", "FailedScheduling")]
    # --what-if asks no scheduler and says so in its text.
    text = explain(kubeconfig, namespace, "later", "--what-if").stdout
    assert "recomputed now (what-if, nothing written)" in text
    # Nothing was written: the pod is still pending, no Event since.
    assert core_v1.read_namespaced_pod("later", namespace).spec.node_name is None
    assert [(e.metadata.name, e.series.count if e.series else 1)
            for e in events_for(api_client, namespace, "later", "FailedScheduling")] == before


# ---------------------------------------------------------------------------------------------
# The in-cluster leader: found through the Lease, asked through the API server's proxy


def _host_ip() -> str | None:
    """An address of this machine the API server may proxy to (not loopback, not link-local)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
        ip = ipaddress.ip_address(s.getsockname()[0])
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
            return str(ip)
    return None


def test_leader_pod_through_the_api_servers_proxy(
        api_client: client.ApiClient, core_v1: client.CoreV1Api, namespace: str, node_factory: Any,
        group: tuple[str, list[str]], scheduler_config_path: str, scheduler_kubeconfig: str,
        sched: SchedulerProcess, tmp_path: pathlib.Path, cluster_rbac: list[tuple[str, str]]) -> None:
    """As with the Deployment: the Lease's holder identity is <pod name>_<uuid>. The scheduler
    runs here, so its "pod" is a hostNetwork pod named as this host on a kwok node whose address
    is this machine's: the API server's proxy then reaches the process. explain (a token, no
    presence file) goes through the proxy; the scheduler authorizes the forwarded token."""
    host, ip = socket.gethostname(), _host_ip()
    if ip is None or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", host):
        pytest.skip(f"no proxyable address ({ip}) or host name {host!r} is no pod name")
    sched.stop(timeout=30)  # the module's scheduler gives the Lease up
    port = free_port()
    [node] = node_factory(1, internal_ip=ip)
    holder = make_pod(host, "pyscheduler", node_name=node, hostNetwork=True)
    holder["spec"]["containers"][0]["ports"] = [{"name": "https", "containerPort": port}]
    # The namespace enforces the restricted Pod Security level, which refuses host networking:
    # lifted for this stand-in pod only (kwok runs nothing of it).
    enforce = "pod-security.kubernetes.io/enforce"
    before = (core_v1.read_namespace("pyscheduler").metadata.labels or {}).get(enforce)
    core_v1.patch_namespace("pyscheduler", {"metadata": {"labels": {enforce: "privileged"}}})
    try:
        core_v1.create_namespaced_pod("pyscheduler", holder)
        wait_for(lambda: core_v1.read_namespaced_pod(host, "pyscheduler").status.pod_ip == ip, timeout=30,
                 desc="the holder pod's address")
        log = (tmp_path / "leader.log").open("wb")
        proc = subprocess.Popen(
            run_argv(scheduler_config_path, "--kubeconfig", scheduler_kubeconfig, "--secure-port", str(port),
                     "--bind-address", "0.0.0.0", "--authentication-kubeconfig", scheduler_kubeconfig,
                     "--authorization-kubeconfig", scheduler_kubeconfig),
            cwd=REPO, env=scheduler_env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: _ready(port, proc), timeout=60, desc="the leader ready")
            label, _ = group
            core_v1.create_namespaced_pod(namespace, group_pod("proxied", namespace, label, "100m"))
            bound = wait_bound(core_v1, namespace, "proxied")
            kc = explain_user_kubeconfig(api_client, namespace, tmp_path, cluster_rbac)
            env = {**scheduler_env(), "PYSCHEDULER_RUNTIME_DIR": str(tmp_path / "no-presence")}
            out = subprocess.run([sys.executable, "-m", "scheduler", "explain", "-n", namespace, "proxied",
                                  "--kubeconfig", kc, "--output", "json", "--no-hints"], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            ans = json.loads(out.stdout)
            assert ans["source"] == "scheduler", out.stderr
            assert ans["from"] == f"leader pod pyscheduler/{host} through the API server's proxy"
            assert ans["attempts"][0]["node"] == bound
        finally:
            stop_process(proc, grace=30)
            log.close()
    finally:
        with contextlib.suppress(ApiException):
            core_v1.delete_namespaced_pod(host, "pyscheduler", grace_period_seconds=0)
        core_v1.patch_namespace("pyscheduler", {"metadata": {"labels": {enforce: before}}})


def _ready(port: int, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, "the scheduler exited"
    with contextlib.suppress(OSError):
        return https_get(port, "/readyz")[0] == 200
    return False


def explain_user_kubeconfig(api: client.ApiClient, namespace: str, tmp: pathlib.Path,
                            made: list[tuple[str, str]]) -> str:
    """A token kubeconfig with exactly what docs/troubleshooting.md lists for explain through
    the proxy (no what-if)."""
    rbac = client.RbacAuthorizationV1Api(api)
    name = f"explain-user-{namespace}"
    made += [("ClusterRole", name), ("ClusterRoleBinding", name)]
    rbac.create_cluster_role({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]},
                  {"nonResourceURLs": ["/debug/explain", "/debug/explain/*"], "verbs": ["get"]}]})
    ensure_service_account(client.CoreV1Api(api), namespace, "explain-user")
    rbac.create_cluster_role_binding({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "explain-user", "namespace": namespace}]})
    return write_token_kubeconfig(api, create_sa_token(client.CoreV1Api(api), namespace, "explain-user"),
                                  tmp / "explain-user.kubeconfig")
