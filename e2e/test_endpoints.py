"""End-to-end: pyscheduler's kube-scheduler endpoints and log lines next to the real
kube-scheduler v1.36.3's, both on the local plane with the same configuration file (only the
profile's name differs), both behind delegated authentication and authorization.

Compared: /configz (the whole effective configuration), /flagz and /statusz (text page and
structured objects), /metrics/slis, the named health checks, /debug/flags/v, /debug/pprof's
refusals, the 406 for an unknown media type, the SIGUSR2 dump, and the V(10) score lines
(``--vmodule=schedule_one=10`` on both, read with the same klog parser).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.differential.kslog import FINAL, SCORED, parse_line
from e2e.differential.kubescheduler import binary_path
from e2e.support.auth import create_sa_token, ensure_service_account
from e2e.support.objects import create_nodes, make_pod, unique_name
from e2e.support.waits import wait_for, wait_for_pod_scheduled
from scheduler.testing.process import REPO, free_port, run_argv, scheduler_env, stop_process

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed")

PATHS = ["/configz", "/flagz", "/statusz", "/metrics/slis", "/debug/*", "/metrics"]
STRUCTURED = "application/json;as={kind};v=v1beta1;g=config.k8s.io"


def _config(name: str, kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
    }


class Endpoint:
    """One scheduler process and HTTPS calls to it with a token."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: pathlib.Path, token: str, name: str) -> None:
        self.proc, self.port, self.log, self.token, self.name = proc, port, log, token, name
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def call(self, path: str, method: str = "GET", accept: str | None = None,
             data: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}", method=method, data=data)
        req.add_header("Authorization", f"Bearer {self.token}")
        if accept:
            req.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()

    def ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
        try:
            return self.call("/readyz")[0] == 200
        except OSError:
            return False


@pytest.fixture(scope="module")
def token(api_client: client.ApiClient) -> Iterator[str]:
    """A ServiceAccount allowed to get (and put) the debugging paths, nothing else."""
    ns, name = "default", unique_name("endpoints-reader")
    core = client.CoreV1Api(api_client)
    rbac = client.RbacAuthorizationV1Api(api_client)
    ensure_service_account(core, ns, name)
    rbac.create_cluster_role({"metadata": {"name": name},
                              "rules": [{"nonResourceURLs": PATHS, "verbs": ["get", "put"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    })
    yield create_sa_token(core, ns, name)
    for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
        with contextlib.suppress(ApiException):
            delete(name)


@pytest.fixture(scope="module")
def pair(kubeconfig: str, scheduler_kubeconfig: str, token: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Endpoint]]:
    """The binary and ours, same file but the profile's name, both at --vmodule=schedule_one=10."""
    work = tmp_path_factory.mktemp("endpoints")
    procs: dict[str, Endpoint] = {}
    names = {"binary": unique_name("ks"), "ours": unique_name("py")}
    try:
        for side, name in names.items():
            cfg_path = work / f"{side}.yaml"
            cfg_path.write_text(yaml.safe_dump(_config(name, kubeconfig if side == "binary" else scheduler_kubeconfig)))
            os.chmod(cfg_path, 0o600)
            port = free_port()
            log = work / f"{side}.log"
            review = kubeconfig if side == "binary" else scheduler_kubeconfig
            common = ["--bind-address=127.0.0.1", f"--secure-port={port}", f"--authentication-kubeconfig={review}",
                      f"--authorization-kubeconfig={review}", "--vmodule=schedule_one=10"]
            if side == "binary":
                argv = [str(binary_path()), f"--config={cfg_path}", *common]
            else:
                argv = [*run_argv(cfg_path, *common), "--logging-format=text"]
            with open(log, "wb") as fh:
                proc = subprocess.Popen(argv, cwd=REPO, env=scheduler_env(), stdin=subprocess.DEVNULL, stdout=fh,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            procs[side] = Endpoint(proc, port, log, token, name)
        for ep in procs.values():
            wait_for(ep.ready, timeout=90, interval=0.2, desc="scheduler /readyz")
        yield procs
    finally:
        for ep in procs.values():
            stop_process(ep.proc, grace=20, group=True)


def _json(body: bytes) -> Any:
    return json.loads(body)


# ---------------------------------------------------------------------------------------------


def test_configz_equals_the_binarys(pair: dict[str, Endpoint]) -> None:
    got = {}
    for side, ep in pair.items():
        code, headers, body = ep.call("/configz")
        assert (code, headers["content-type"]) == (200, "application/json"), body
        cc = _json(body)["componentconfig"]
        cc["clientConnection"]["kubeconfig"] = "<kubeconfig>"
        for prof in cc["profiles"]:
            prof["schedulerName"] = "<name>"
        got[side] = cc
    assert got["ours"] == got["binary"]


def test_flagz_shape(pair: dict[str, Endpoint]) -> None:
    texts, objs = {}, {}
    for side, ep in pair.items():
        code, headers, body = ep.call("/flagz")
        assert (code, headers["content-type"]) == (200, "text/plain; charset=utf-8")
        texts[side] = body.decode()
        code, headers, body = ep.call("/flagz", accept=STRUCTURED.format(kind="Flagz"))
        assert (code, headers["content-type"]) == (200, "application/json;g=config.k8s.io;v=v1beta1;as=Flagz")
        objs[side] = _json(body)
    assert texts["ours"].split("\n")[:3] == texts["binary"].split("\n")[:3]
    assert {k: v for k, v in objs["ours"].items() if k != "flags"} == {
        k: v for k, v in objs["binary"].items() if k != "flags"}
    # Every flag we have is one of kube-scheduler's, and shows the same value where both run the same.
    ours, theirs = objs["ours"]["flags"], objs["binary"]["flags"]
    assert set(ours) <= set(theirs), set(ours) - set(theirs)
    for flag in ("bind-address", "leader-elect", "leader-elect-lease-duration", "leader-elect-resource-name",
                 "authorization-always-allow-paths", "authentication-token-webhook-cache-ttl", "logging-format",
                 "vmodule", "profiling", "version", "help"):
        assert ours[flag] == theirs[flag], flag


def test_statusz_shape(pair: dict[str, Endpoint]) -> None:
    objs, pages = {}, {}
    for side, ep in pair.items():
        code, _, body = ep.call("/statusz")
        assert code == 200
        pages[side] = body.decode().split("\n")
        code, _, body = ep.call("/statusz", accept=STRUCTURED.format(kind="Statusz"))
        assert code == 200
        objs[side] = _json(body)
    assert list(objs["ours"]) == list(objs["binary"])
    assert objs["ours"]["paths"] == objs["binary"]["paths"]
    assert objs["ours"]["emulationVersion"] == objs["binary"]["emulationVersion"]
    # Same lines (Started, Up, Go version, Binary version, Emulation version, Paths), each starting
    # with its label; the separator after it is random on both sides.
    assert len(pages["ours"]) == len(pages["binary"])
    assert [ln.split(" ")[0].rstrip(":=") for ln in pages["ours"][1:]] == [
        ln.split(" ")[0].rstrip(":=") for ln in pages["binary"][1:]]


def test_unacceptable_media_type(pair: dict[str, Endpoint]) -> None:
    answers = {side: ep.call("/flagz", accept="application/json") for side, ep in pair.items()}
    assert {s: (a[0], _json(a[2])) for s, a in answers.items()}["ours"] == (
        answers["binary"][0], _json(answers["binary"][2]))


def test_health_checks_and_slis(pair: dict[str, Endpoint]) -> None:
    bodies, slis = {}, {}
    for side, ep in pair.items():
        bodies[side] = [ep.call(p)[2].decode() for p in ("/healthz?verbose", "/livez?verbose", "/readyz?verbose")]
        text = ep.call("/metrics/slis")[2].decode()
        # The gauges (one per check and path); the counters' error series depend on how often
        # each side's readiness was polled before it synced.
        slis[side] = sorted(ln.rsplit(" ", 1)[0] for ln in text.splitlines()
                            if ln.startswith("kubernetes_healthcheck{"))
        assert 'kubernetes_healthchecks_total{name="ping",status="success",type="livez"}' in text, side
    assert bodies["ours"] == bodies["binary"]
    assert slis["ours"] == slis["binary"]


def test_debug_flags_v(pair: dict[str, Endpoint]) -> None:
    for method, data in (("PUT", b"3"), ("PUT", b"abc"), ("GET", None), ("PUT", b"0")):
        answers = {side: ep.call("/debug/flags/v", method=method, data=data) for side, ep in pair.items()}
        assert (answers["ours"][0], answers["ours"][2]) == (answers["binary"][0], answers["binary"][2])


def test_pprof_index_and_unknown_profile(pair: dict[str, Endpoint]) -> None:
    for ep in pair.values():
        code, headers, _ = ep.call("/debug/pprof/")
        assert (code, headers["content-type"]) == (200, "text/html; charset=utf-8")
    answers = {side: ep.call("/debug/pprof/nosuch") for side, ep in pair.items()}
    assert (answers["ours"][0], answers["ours"][2]) == (answers["binary"][0], answers["binary"][2])


def test_score_lines_read_the_same(pair: dict[str, Endpoint], core_v1: client.CoreV1Api, kwok: None) -> None:
    """One pod per scheduler on the same three nodes: the same V(10) lines, keys and scores.

    The pods go one after the other: the second scheduler sees the first pod on its node, so
    that node is left out of the comparison (every pod counts in NodeResourcesFit's score)."""
    nodes = create_nodes(core_v1, 3, prefix=unique_name("ep-node"), wait_ready=True)
    pods: dict[str, str] = {}
    try:
        for side, ep in pair.items():
            pod = unique_name(side)
            core_v1.create_namespaced_pod("default", make_pod(pod, scheduler_name=ep.name))
            pods[side] = pod
            bound = wait_for_pod_scheduled(core_v1, "default", pod, timeout=60).spec.node_name
            if len(pods) == 1 and bound in nodes:
                nodes = [n for n in nodes if n != bound]

        def scored(side: str) -> dict[tuple[str, str], str]:
            out = {}
            for line in pair[side].log.read_text(errors="replace").splitlines():
                parsed = parse_line(line)
                if parsed and parsed[1] == SCORED and parsed[2].get("pod") == f"default/{pods[side]}":
                    kv = parsed[2]
                    out[(kv["node"], kv["plugin"])] = kv["score"]
            return out

        wait_for(lambda: all(len(scored(s)) >= 3 for s in pair), timeout=60, interval=0.5, desc="score lines")
        time.sleep(1.0)
        ours, theirs = scored("ours"), scored("binary")
        assert {k for k in ours if k[0] in nodes} == {k for k in theirs if k[0] in nodes}
        for key in theirs:
            if key[0] in nodes:
                assert ours[key] == theirs[key], key
        for side in pair:
            finals = [parse_line(ln) for ln in pair[side].log.read_text(errors="replace").splitlines()]
            assert any(f and f[1] == FINAL and f[2].get("pod") == f"default/{pods[side]}" for f in finals)
    finally:
        for pod in pods.values():
            with contextlib.suppress(ApiException):
                core_v1.delete_namespaced_pod(pod, "default", grace_period_seconds=0)
        for node in nodes:
            with contextlib.suppress(ApiException):
                core_v1.delete_node(node)


def test_sigusr2_compares_and_dumps(pair: dict[str, Endpoint]) -> None:
    for ep in pair.values():
        os.kill(ep.proc.pid, signal.SIGUSR2)
    for ep in pair.values():
        wait_for(lambda ep=ep: '"Dump of scheduling queue"' in ep.log.read_text(errors="replace"),
                 timeout=30, interval=0.2, desc="the SIGUSR2 dump")
    for side, ep in pair.items():
        lines = [parse_line(ln) for ln in ep.log.read_text(errors="replace").splitlines()]
        queue = [p for p in lines if p and p[1] == "Dump of scheduling queue"]
        assert queue and queue[-1][2]["summary"].startswith("activeQ:"), side
        assert any(p and p[1] == "Dump of cached NodeInfo" for p in lines), side
