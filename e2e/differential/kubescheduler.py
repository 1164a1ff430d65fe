"""The real kube-scheduler as the reference: its configuration and its process.

One KubeSchedulerConfiguration file serves both sides: the binary reads it with ``--config``
and ``python -m scheduler simulate`` reads it with ``--config``. The profile is the upstream
default minus NodeDeclaredFeatures while pyscheduler has no such plugin, every node is scored
(``percentageOfNodesToScore: 100``) and leader election is off.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import random
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from e2e.support.plane import CONTROLPLANE_DIR
from e2e.support.waits import wait_for
from scheduler.plugins import registry as plugin_registry

# Upstream default-profile plugins in v1.36.3 (NodeDeclaredFeatures is in it: its gate is beta
# and on by default) that this suite may have to disable on the binary.
UPSTREAM_EXTRA = ("NodeDeclaredFeatures",)


def binary_path() -> pathlib.Path:
    """Where build.sh puts kube-scheduler (located through lib.sh, as up.sh does)."""
    script = f'source "{CONTROLPLANE_DIR}/lib.sh"; printf %s "$KUBE_SCHEDULER_BIN"'
    out = subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.PIPE, text=True).stdout
    return pathlib.Path(out)


def kube_version() -> str:
    script = f'source "{CONTROLPLANE_DIR}/lib.sh"; printf %s "$KUBE_VERSION"'
    return subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.PIPE, text=True).stdout


def disabled_plugins(node_declared_features: bool | None = None) -> list[str]:
    """Plugins to switch off on both sides: NodeDeclaredFeatures unless pyscheduler has it
    (or *node_declared_features* forces it)."""
    reg = plugin_registry.default_registry()
    out: list[str] = []
    for name in UPSTREAM_EXTRA:
        enabled = name in reg if node_declared_features is None else node_declared_features
        if not enabled:
            out.append(name)
    return out


def config(
    scheduler_name: str, kubeconfig: str, disabled: list[str], varied: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The configuration file both sides read; *varied* is a :func:`varied_profile`."""
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "percentageOfNodesToScore": 100,
        "profiles": [
            {
                "schedulerName": scheduler_name,
                "plugins": {"multiPoint": {"disabled": [{"name": n} for n in disabled]}},
            }
        ],
    }
    if varied:
        prof = cfg["profiles"][0]
        prof["pluginConfig"] = varied["pluginConfig"]
        if varied["weights"]:
            prof["plugins"]["multiPoint"]["enabled"] = [{"name": k, "weight": v} for k, v in varied["weights"].items()]
    return cfg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KubeScheduler:
    """kube-scheduler running with a config file; its stderr (klog text) goes to ``log_path``.

    ``-v=2`` gives the per-pod results ("Successfully bound pod to node", "Unable to schedule
    pod; no fit; waiting"); ``--vmodule=schedule_one=10`` adds "Plugin scored node for pod"
    and "Calculated node's final score for pod" without the client's request dumps;
    ``eventhandlers=3`` adds the node add/delete events (the runner's node barrier).
    """

    def __init__(
        self,
        binary: pathlib.Path,
        config_path: pathlib.Path,
        kubeconfig: str,
        log_path: pathlib.Path,
        extra_args: Sequence[str] = (),
    ):
        self.binary = binary
        self.extra_args = list(extra_args)  # e.g. --feature-gates=...
        self.config_path = config_path
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        # Loopback to a self-signed serving cert.
        self._ctx = ssl.create_default_context()
        self._ctx.check_hostname = False
        self._ctx.verify_mode = ssl.CERT_NONE

    def start(self, timeout: float = 60.0) -> None:
        argv = [
            str(self.binary),
            f"--config={self.config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "-v=2",
            "--vmodule=schedule_one=10,eventhandlers=3",
            *self.extra_args,
        ]
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        ctx = self._ctx

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"kube-scheduler exited with {self.proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", context=ctx, timeout=2) as r:
                    return bool(r.read() == b"ok")
            except (urllib.error.URLError, OSError):
                return False

        wait_for(ready, timeout=timeout, interval=0.1, desc="kube-scheduler /readyz")

    def cache_sizes(self) -> dict[str, int]:
        """scheduler_cache_size by type (nodes, pods, assumed_pods); the binary refreshes it
        every second."""
        with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/metrics", context=self._ctx, timeout=5) as r:
            text = r.read().decode()
        out: dict[str, int] = {}
        for line in text.splitlines():
            if line.startswith("scheduler_cache_size{"):
                labels, _, value = line.rpartition(" ")
                kind = labels.split('type="', 1)[1].split('"', 1)[0]
                out[kind] = int(float(value))
        return out

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def write_config(path: pathlib.Path, cfg: dict[str, Any]) -> pathlib.Path:
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    os.chmod(path, 0o600)
    return path


def wait_log(path: pathlib.Path, needle: str, timeout: float = 30.0) -> str:
    """The log text once it contains *needle* (the line that ends one attempt)."""

    def has() -> str:
        text = path.read_text(errors="replace")
        return text if needle in text else ""

    return wait_for(has, timeout=timeout, interval=0.05, desc=f"kube-scheduler log line {needle!r}")


def varied_profile(seed: int) -> dict[str, Any]:
    """Non-default plugin arguments and weights for one seed (``--vary-args``): the same code
    paths with other numbers, valid for the binary's v1 validation."""
    r = random.Random(seed * 7919 + 17)
    resources = [{"name": "cpu", "weight": r.randint(1, 5)}, {"name": "memory", "weight": r.randint(1, 5)}]
    if r.random() < 0.4:
        resources.append({"name": "example.com/gpu", "weight": r.randint(1, 5)})
    if r.random() < 0.3:
        resources.append({"name": "ephemeral-storage", "weight": r.randint(1, 5)})
    strategy: dict[str, Any] = {"type": r.choice(("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"))}
    strategy["resources"] = resources
    if strategy["type"] == "RequestedToCapacityRatio":
        shape = [{"utilization": 0, "score": r.choice((0, 10))}, {"utilization": 100, "score": r.choice((0, 10))}]
        if r.random() < 0.5:
            shape.insert(1, {"utilization": r.randint(20, 80), "score": r.randint(0, 10)})
        strategy["requestedToCapacityRatio"] = {"shape": shape}
    balanced = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    if r.random() < 0.4:
        balanced.append({"name": "example.com/gpu", "weight": 1})
    plugin_config: list[dict[str, Any]] = [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}},
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": balanced}},
        {
            "name": "InterPodAffinity",
            "args": {
                "hardPodAffinityWeight": r.choice((0, 1, 5, 100)),
                "ignorePreferredTermsOfExistingPods": r.random() < 0.3,
            },
        },
    ]
    if r.random() < 0.5:
        constraints = [
            {
                "maxSkew": r.randint(1, 3),
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
        if r.random() < 0.5:
            constraints.append(
                {
                    "maxSkew": r.randint(1, 2),
                    "topologyKey": "example.com/rack",
                    "whenUnsatisfiable": r.choice(("ScheduleAnyway", "DoNotSchedule")),
                }
            )
        plugin_config.append(
            {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": constraints}}
        )
    if r.random() < 0.4:
        plugin_config.append(
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": r.randint(1, 100),
                                "preference": {
                                    "matchExpressions": [
                                        {
                                            "key": "example.com/disk",
                                            "operator": "In",
                                            "values": [r.choice(("ssd", "hdd"))],
                                        }
                                    ]
                                },
                            }
                        ]
                    }
                },
            }
        )
    weights = {
        name: r.randint(1, 5)
        for name in (
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
            "ImageLocality",
        )
        if r.random() < 0.5
    }
    return {"pluginConfig": plugin_config, "weights": weights}


@contextlib.contextmanager
def running(scheduler_name: str, kubeconfig: str, workdir: pathlib.Path,
            leader_election: dict[str, Any] | None = None, extra_args: Sequence[str] = (),
            **fields: Any) -> Iterator[KubeScheduler]:
    """The binary under profile ``scheduler_name`` (this module's configuration; leader election
    off unless ``leader_election`` gives its section; other top-level ``fields`` as given; more
    command-line flags in ``extra_args``), stopped on exit; its files in ``workdir``."""
    binary = binary_path()
    if not binary.exists():
        raise FileNotFoundError(f"{binary} missing: run e2e/controlplane/build.sh kube-scheduler")
    cfg = config(scheduler_name, kubeconfig, disabled_plugins())
    if leader_election is not None:
        cfg["leaderElection"] = leader_election
    cfg.update(fields)
    ks = KubeScheduler(binary, write_config(workdir / "config.yaml", cfg), kubeconfig, workdir / "kube-scheduler.log",
                       extra_args=extra_args)
    ks.start()
    try:
        yield ks
    finally:
        ks.stop()
