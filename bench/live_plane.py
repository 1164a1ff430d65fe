"""The live benchmark's control plane: built and started through e2e/support, one RBAC identity
for every contestant, and kwok pausable (``--kwok-paused``).

For bench/live.py (``scheduler_perf=True``) the API server runs as scheduler_perf's does (util.go
``mustSetupCluster``): without the ServiceAccount, TaintNodesByCondition and Priority admission
plugins (pods get no token volume, new nodes no not-ready taint, and a template's ``priority``
is taken as written), plus the flags of the workload (its feature gates); kube-controller-manager
runs up.sh's controllers except the PersistentVolume binder: scheduler_perf has only a fake one
that fills in an empty claim's volume name, and the real one marks a claim Lost when it sees the
claim (created bound, as upstream creates it) before its volume.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

from bench.live_http import Kube
from e2e.support.apply import iter_yaml_documents
from e2e.support.plane import (
    CONTROLPLANE_DIR,
    MANIFESTS_DIR,
    ControlPlane,
    local_binaries_present,
    start_local_control_plane,
)


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Plane:
    cp: ControlPlane
    run: pathlib.Path
    admin: Kube
    sched_kubeconfig: str
    kube_scheduler_bin: str

    def pid(self, name: str) -> int:
        return int((self.run / "pids" / f"{name}.pid").read_text().strip())


def component_paths() -> dict[str, str]:
    script = f'source "{CONTROLPLANE_DIR}/lib.sh"; echo "$KUBE_SCHEDULER_BIN"'
    out = subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.PIPE, text=True).stdout
    return {"kube-scheduler": out.strip()}


# scheduler_perf's API server flags (mustSetupCluster's customFlags).
APISERVER_ARGS = ("--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority",)
NOT_RUN_CONTROLLERS = frozenset({"persistentvolume-binder-controller"})


def kcm_controllers(up_sh: pathlib.Path = CONTROLPLANE_DIR / "up.sh") -> str:
    """up.sh's kube-controller-manager list (its KCM_CONTROLLERS lines) without the ones above."""
    names: list[str] = []
    for m in re.finditer(r"KCM_CONTROLLERS(\+?)=([\w,-]+)", up_sh.read_text()):
        names = ([] if not m.group(1) else names) + [n for n in m.group(2).split(",") if n]
    if not names:
        raise RuntimeError(f"{up_sh}: no KCM_CONTROLLERS list found")
    return ",".join(n for n in names if n not in NOT_RUN_CONTROLLERS)


# What the user set for up.sh, kept under the bench's own additions.
_USER_APISERVER_ARGS = os.environ.get("PYSCHED_APISERVER_EXTRA_ARGS", "")
_USER_KCM_CONTROLLERS = os.environ.get("PYSCHED_KCM_CONTROLLERS")


def start_plane(scheduler_perf: bool = False, apiserver_args: list[str] | None = None) -> Plane:
    """A plane (up.sh in ``$PYSCHED_RUN``). ``scheduler_perf``: set up as scheduler_perf's (see
    the module doc), its API server also given ``apiserver_args``."""
    extra = [*APISERVER_ARGS, *(apiserver_args or [])] if scheduler_perf else []
    os.environ["PYSCHED_APISERVER_EXTRA_ARGS"] = " ".join([_USER_APISERVER_ARGS, *extra]).strip()
    if scheduler_perf:
        os.environ["PYSCHED_KCM_CONTROLLERS"] = kcm_controllers()
    elif _USER_KCM_CONTROLLERS is None:
        os.environ.pop("PYSCHED_KCM_CONTROLLERS", None)
    paths = component_paths()
    missing = [c for c in ("kube-scheduler",) if not os.access(paths[c], os.X_OK)]
    if not local_binaries_present():
        missing = ["etcd", "kube-apiserver", "kwok", *missing]
    if missing:
        say(f"building {' '.join(missing)} (e2e/controlplane/build.sh)")
        subprocess.run([str(CONTROLPLANE_DIR / "build.sh"), *missing], check=True)
    # Other planes on this machine may take a port between up.sh's check and the bind (up.sh
    # then cleans up and fails): a few more tries.
    for attempt in range(1, 4):
        try:
            cp = start_local_control_plane()
            break
        except subprocess.CalledProcessError:
            if attempt == 3:
                raise
            say(f"control plane did not start (attempt {attempt}); trying again")
            time.sleep(2 * attempt)
    assert cp.run_dir is not None
    admin = Kube(cp.kubeconfig)
    # One identity for all contestants: system:kube-scheduler has the upstream role; the
    # pyscheduler ClusterRole (manifests/rbac.yaml) adds what ours also lists.
    role = next(d for d in iter_yaml_documents(MANIFESTS_DIR / "rbac.yaml") if d["kind"] == "ClusterRole")
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "pyscheduler-bench-live"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}],
    }
    base = "/apis/rbac.authorization.k8s.io/v1"
    admin.request("POST", f"{base}/clusterroles", role, ok=(201, 409))
    admin.request("POST", f"{base}/clusterrolebindings", binding, ok=(201, 409))
    return Plane(cp, cp.run_dir, admin, str(cp.run_dir / "pki" / "kube-scheduler.kubeconfig"), paths["kube-scheduler"])


class Kwok:
    """SIGSTOP/SIGCONT of the plane's kwok; always resumed."""

    def __init__(self, plane: Plane, enabled: bool) -> None:
        self.pid = plane.pid("kwok") if enabled else None
        self.paused = False

    def pause(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.paused and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
            self.paused = False
