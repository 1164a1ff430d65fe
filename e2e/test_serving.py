"""End-to-end: the scheduler's HTTPS endpoint with delegated authentication/authorization,
against the real API server (TokenReview, SubjectAccessReview, RBAC from manifests/), and
`make run`'s refusal to write to a cluster that is not the local plane without a yes.

Expected answers follow kube-scheduler v1.36.3 (k8s.io/apiserver delegating filters with
anonymous auth on): no token is system:anonymous, so /metrics answers 403, not 401; a token
the API server does not accept answers 401 on every path; health paths need nothing.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys

import pytest
import yaml
from cryptography import x509
from kubernetes import client

from e2e.controlplane.freeport import free_port
from e2e.support.auth import create_sa_token, ensure_service_account, metrics_reader_token
from e2e.support.objects import unique_name
from scheduler.testing.process import SchedulerProcess, https_get

REPO = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed")


@pytest.fixture(scope="module")
def serving(scheduler_config_path: str, scheduler_kubeconfig: str, tmp_path_factory: pytest.TempPathFactory):
    """``pyscheduler run`` under the pyscheduler ServiceAccount, reviews through the same identity
    (in a cluster they come from the in-cluster config); no leader election, so it does not
    compete with other tests for the Lease."""
    work = tmp_path_factory.mktemp("serving")
    cfg = yaml.safe_load(pathlib.Path(scheduler_config_path).read_text())
    cfg["leaderElection"] = {"leaderElect": False}
    cfg_path = work / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    proc = SchedulerProcess(str(cfg_path), scheduler_kubeconfig, work, "serving", port=free_port())
    try:
        proc.wait_ready(timeout=60)
        yield proc.port
    finally:
        proc.stop(timeout=30)


@pytest.fixture(scope="module")
def tokens(api_client: client.ApiClient) -> dict[str, str]:
    ns = unique_name("serving")
    core = client.CoreV1Api(api_client)
    ensure_service_account(core, ns, "no-metrics")
    return {
        "reader": metrics_reader_token(api_client, ns),
        "no-metrics": create_sa_token(core, ns, "no-metrics"),
    }


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_health_paths_open_over_https_without_token(serving: int, path: str) -> None:
    assert https_get(serving, path) == (200, "ok")


def test_serving_certificate_is_self_signed_for_localhost(serving: int) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", serving), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    assert cert.subject.rfc4514_string().startswith("CN=localhost@")
    assert cert.issuer.rfc4514_string().startswith("CN=localhost-ca@")
    # And a client that verifies certificates against the system roots refuses it.
    verifying = ssl.create_default_context()
    addr = ("127.0.0.1", serving)
    with pytest.raises(ssl.SSLCertVerificationError), socket.create_connection(addr, timeout=5) as raw:
        verifying.wrap_socket(raw, server_hostname="localhost")


def test_plain_http_is_not_served(serving: int) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{serving}/healthz", timeout=5)


def _status(body: str) -> dict:
    st = json.loads(body)
    assert (st["kind"], st["status"]) == ("Status", "Failure"), body
    return st


def test_metrics_without_token_is_forbidden_for_anonymous(serving: int) -> None:
    code, body = https_get(serving, "/metrics")
    assert code == 403, body
    st = _status(body)
    assert st["reason"] == "Forbidden"
    assert st["message"].startswith('forbidden: User "system:anonymous" cannot get path "/metrics"')


@pytest.mark.parametrize("path", ["/metrics", "/healthz"])
def test_token_the_api_server_rejects_is_401(serving: int, path: str) -> None:
    code, body = https_get(serving, path, token="not-a-token")
    assert code == 401, body
    st = _status(body)
    assert (st["reason"], st["message"], st["code"]) == ("Unauthorized", "Unauthorized", 401)


def test_metrics_token_without_permission_is_403(serving: int, tokens: dict[str, str]) -> None:
    code, body = https_get(serving, "/metrics", token=tokens["no-metrics"])
    assert code == 403, body
    msg = _status(body)["message"]
    assert msg.startswith('forbidden: User "system:serviceaccount:')
    assert ':no-metrics" cannot get path "/metrics"' in msg


def test_metrics_with_permission_is_200(serving: int, tokens: dict[str, str]) -> None:
    code, body = https_get(serving, "/metrics", token=tokens["reader"])
    assert code == 200, body
    assert "scheduler_pending_pods" in body
    # The reader may read health paths as well, with its token.
    assert https_get(serving, "/healthz", token=tokens["reader"]) == (200, "ok")


# ---------------------------------------------------------------------------------------------
# `make run` (e2e/run_local.py) asks before writing to a cluster that is not the local plane


def test_make_run_refuses_foreign_cluster_without_confirmation(
    kubeconfig: str, core_v1: client.CoreV1Api, tmp_path: pathlib.Path
) -> None:
    # A copy of the admin kubeconfig elsewhere is, to run_local.py, some other cluster.
    foreign = tmp_path / "other-cluster.kubeconfig"
    shutil.copy(kubeconfig, foreign)
    env = {k: v for k, v in os.environ.items() if k != "PYSCHED_RUN_YES"}
    env["KUBECONFIG"] = str(foreign)
    before = {p.metadata.uid for p in core_v1.list_namespaced_pod("pyscheduler-demo").items}
    proc = subprocess.run(
        [sys.executable, "e2e/run_local.py", "--once", "--timeout", "5"],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: refusing to write to "), proc.stderr
    assert "--yes" in err[0] and "PYSCHED_RUN_YES=1" in err[0]
    assert "starting: pyscheduler run" not in proc.stdout
    after = {p.metadata.uid for p in core_v1.list_namespaced_pod("pyscheduler-demo").items}
    assert after == before


def test_make_run_answer_no_writes_nothing(kubeconfig: str, core_v1: client.CoreV1Api, tmp_path: pathlib.Path) -> None:
    foreign = tmp_path / "other-cluster.kubeconfig"
    shutil.copy(kubeconfig, foreign)
    env = {k: v for k, v in os.environ.items() if k != "PYSCHED_RUN_YES"}
    env["KUBECONFIG"] = str(foreign)
    proc = subprocess.run(
        [sys.executable, "e2e/run_local.py", "--once", "--timeout", "5"],
        cwd=REPO, env=env, input="n\n", capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Write to this cluster? [y/N]" in proc.stdout
    assert "starting: pyscheduler run" not in proc.stdout
