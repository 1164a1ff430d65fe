"""The control plane of pyscheduler's end-to-end tests: find, start, restart and stop it.

The control plane is either

* an existing cluster: ``KUBECONFIG`` is set and its API server answers
  (for example kind, see ``e2e/kind/run.sh``), or
* a local loopback control plane (etcd + kube-apiserver with RBAC +
  kube-controller-manager + kwok, no containers) started with
  ``e2e/controlplane/up.sh`` and stopped with ``down.sh``; the binaries are
  built once by ``e2e/controlplane/build.sh`` into
  ``${PYSCHED_CACHE:-~/.cache/pyscheduler}/bin``.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time

import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from e2e.support.waits import wait_for
from scheduler.live.presence import alive

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTROLPLANE_DIR = REPO_ROOT / "e2e" / "controlplane"
MANIFESTS_DIR = REPO_ROOT / "manifests"


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


def _controlplane_env(run: pathlib.Path, kube_module: str = "k8s") -> dict[str, str]:
    """The scripts' environment: the run dir, and which Kubernetes wrapper module's binaries
    (k8s: the release pyscheduler follows; k8s-prev: the previous minor)."""
    return {**os.environ, "PYSCHED_RUN": str(run), "PYSCHED_KUBE_MODULE": kube_module}


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (killed, not yet reaped) counts as gone."""
    return alive(pid)


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
    wait_for(lambda: not pid_alive(pid) and _port_free(port), timeout=30, desc="kube-apiserver to stop")
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


def reap_orphaned_session_planes(prefix: str = SESSION_RUN_PREFIX) -> None:
    """down.sh --purge for the run dirs ``<tmp>/<prefix><pid>`` whose process is gone
    (a session killed before its teardown)."""
    for d in pathlib.Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            pid = int(d.name[len(prefix) :])
        except ValueError:
            continue
        if pid != os.getpid() and not pid_alive(pid):
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


def local_binaries_present(kube_module: str = "k8s") -> bool:
    """True if build.sh has nothing to build for up.sh (cheap check: runs no Go)."""
    script = (
        f'source "{CONTROLPLANE_DIR}/lib.sh"; '
        'for b in "$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KUBE_CONTROLLER_MANAGER_BIN" "$KWOK_BIN" "$KWOK_STAGES"; do '
        "[[ -e $b ]] || exit 1; done"
    )
    env = {**os.environ, "PYSCHED_KUBE_MODULE": kube_module}
    return subprocess.run(["bash", "-c", script], env=env, check=False).returncode == 0


def build_binaries(kube_module: str = "k8s") -> None:
    # Everything for the release under test (the differential tests need its kube-scheduler);
    # for another release only what up.sh starts.
    parts = [] if kube_module == "k8s" else ["etcd", "kube-apiserver", "kube-controller-manager", "kwok"]
    subprocess.run([str(CONTROLPLANE_DIR / "build.sh"), *parts],
                   env={**os.environ, "PYSCHED_KUBE_MODULE": kube_module}, check=True)


def start_local_control_plane(kube_module: str = "k8s", run: pathlib.Path | None = None) -> ControlPlane:
    """Run up.sh (building the binaries first if needed) and return the plane: Kubernetes from
    wrapper module ``kube_module``, run dir ``run`` (default: this session's)."""
    if not local_binaries_present(kube_module):
        if os.environ.get("PYSCHED_E2E_BUILD", "1") == "0":
            raise RuntimeError("control-plane binaries missing and PYSCHED_E2E_BUILD=0; run e2e/controlplane/build.sh")
        build_binaries(kube_module)
    reap_orphaned_session_planes()
    run = run or run_dir()
    # One retry: a concurrent session can win the race for a default port between up.sh's
    # check and the bind; up.sh then fails (and cleans up) and the next attempt picks again.
    for attempt in (1, 2):
        proc = subprocess.run(
            [str(CONTROLPLANE_DIR / "up.sh")],
            env=_controlplane_env(run, kube_module),
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

