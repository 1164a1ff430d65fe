"""`make run` (e2e/run_local.py) against the session's control plane: the newcomer's path."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")


def test_make_run_places_the_example_pods(kubeconfig: str, node_factory) -> None:
    node_factory(count=2, prefix="make-run")
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    proc = subprocess.run(
        [sys.executable, "e2e/run_local.py", "--once", "--timeout", "45"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert f"using the cluster of {kubeconfig}" in out
    for pod in ("web-1", "web-2", "batch", "tiny"):
        assert f"pyscheduler-demo/{pod} -> " in out
    # The StatefulSet's claim (WaitForFirstConsumer, local PV) is placed and bound.
    pv_node = re.search(r"local PV pyscheduler-demo-local-pv is on node (\S+)", out)
    assert pv_node, out[-3000:]
    assert (
        f"pyscheduler-demo/db-0 -> {pv_node.group(1)} (claim data-db-0 Bound to PV pyscheduler-demo-local-pv)" in out
    ), out[-3000:]
