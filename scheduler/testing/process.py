"""``python -m scheduler run`` as a child process: start it, reach its HTTPS endpoint, read its
JSON log, stop it. Shared by the e2e suite and the live benchmarks."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import IO, Any

from prometheus_client.parser import text_string_to_metric_families

#: The directory holding the ``scheduler`` package: the child imports this very tree.
REPO = pathlib.Path(__file__).resolve().parents[2]

#: /metrics samples keyed by (sample name, sorted labels).
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def run_argv(config: str | os.PathLike[str], *flags: str) -> list[str]:
    """The command line of ``scheduler run --config CONFIG FLAGS...`` under this interpreter, its
    log in JSON lines (what ``read_log_events`` reads)."""
    return [sys.executable, "-m", "scheduler", "run", "--config", str(config), "--logging-format=json", *flags]


def scheduler_env(keep_kubeconfig: bool = False) -> dict[str, str]:
    """This environment with the tree first on PYTHONPATH; without ``KUBECONFIG`` unless kept, so
    that the child has only the credentials its flags name."""
    env = dict(os.environ)
    if not keep_kubeconfig:
        env.pop("KUBECONFIG", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that the kernel had free just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_log_events(path: pathlib.Path) -> list[dict[str, Any]]:
    """The JSON records of a scheduler log; lines that are not JSON (tracebacks) are skipped."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def stop_process(
    proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 40.0, group: bool = False
) -> int | None:
    """Send ``sig`` and wait ``grace`` seconds, then SIGKILL. With ``group``, signal the whole
    process group (a child started in its own session) and kill what is left of it at the end."""

    def send(s: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, s)
            else:
                proc.send_signal(s)

    if proc.poll() is None:
        send(sig)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            proc.wait(10)
    if group:
        send(signal.SIGKILL)  # leftover members of its group (none expected)
    return proc.returncode


def https_get(port: int, path: str, token: str | None = None, timeout: float = 5.0) -> tuple[int, str]:
    """GET https://127.0.0.1:<port><path> (certificate not verified: it is self-signed)."""
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


def parse_metrics(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


class SchedulerProcess:
    """``scheduler run`` with ``config`` and ``kubeconfig``, serving HTTPS on 127.0.0.1:``port``
    (a free one if not given), its output in ``log_dir/<name>-<port>.log``.

    With ``delegated_auth`` (the default) /metrics checks tokens and permissions through the
    API server of ``kubeconfig``, as kube-scheduler does."""

    @classmethod
    @contextlib.contextmanager
    def ready(
        cls, config: str, kubeconfig: str, log_dir: pathlib.Path, name: str = "sched", **kw: Any
    ) -> Iterator[SchedulerProcess]:
        """Started and ready (healthz), stopped on the way out whatever happened."""
        p = cls(config, kubeconfig, log_dir, name, **kw)
        try:
            p.wait_ready()
            yield p
        finally:
            p.stop()

    def __init__(
        self,
        config: str,
        kubeconfig: str,
        log_dir: pathlib.Path,
        name: str = "sched",
        *,
        port: int | None = None,
        delegated_auth: bool = True,
        extra_flags: Sequence[str] = (),
    ) -> None:
        self.port = free_port() if port is None else port
        self.log_path = log_dir / f"{name}-{self.port}.log"
        self._log: IO[bytes] = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        # -v=2: the per-pod lines (pod_scheduled, pod_unschedulable) that the e2e suite reads;
        # --vmodule would select just those, but upstream allows it only with the text format.
        flags = ["--kubeconfig", kubeconfig, "--port", str(self.port), "--bind-address", "127.0.0.1", "-v=2"]
        if delegated_auth:
            flags += ["--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig]
        flags += list(extra_flags)
        self.proc = subprocess.Popen(
            run_argv(config, *flags),
            cwd=REPO,
            env=scheduler_env(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        return https_get(self.port, path, token=token, timeout=2)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Poll /readyz until 200; fail at once if the process exits."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"scheduler exited early:\n{self.logs()}"
            with contextlib.suppress(OSError):
                if self.get("/readyz")[0] == 200:
                    return
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for scheduler /readyz:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def log_events(self) -> list[dict[str, Any]]:
        return read_log_events(self.log_path)

    def metrics(self, token: str) -> Samples | None:
        """The /metrics samples; None unless 200 (the token's review may not have reached the
        API server's RBAC yet: callers wait for it)."""
        try:
            status, text = self.get("/metrics", token=token)
        except OSError:
            return None
        return parse_metrics(text) if status == 200 else None

    def last_failures(self, namespace: str, names: list[str]) -> dict[str, dict[str, Any]]:
        """The latest ``pod_unschedulable`` record the scheduler logged for each pod that has one."""
        keys = {f"{namespace}/{n}": n for n in names}
        out: dict[str, dict[str, Any]] = {}
        for e in self.log_events():
            if e.get("event") == "pod_unschedulable" and e.get("pod") in keys:
                out[keys[e["pod"]]] = e
        return out

    def __enter__(self) -> SchedulerProcess:
        """Ready (``wait_ready``) for the ``with`` block; stopped after it."""
        self.wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40.0) -> int | None:
        code = stop_process(self.proc, sig, timeout)
        self._log.close()
        return code
