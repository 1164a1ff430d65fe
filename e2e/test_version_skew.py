"""End-to-end: pyscheduler (following kube-scheduler v1.36.3) against the previous minor's
control plane, kube-apiserver and kube-controller-manager v1.35 (e2e/controlplane/k8s-prev,
built from Go modules on first use and cached beside the v1.36 binaries).

A plane of its own (its own run dir and ports, discarded at the end), whatever the session's
plane is; pyscheduler runs under manifests/rbac.yaml's ServiceAccount, discovers every kind it
watches (resource.k8s.io/v1 is served since 1.34) and binds pods: plain, a FailedScheduling
Event, a DRA claim.
"""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.controlplane.freeport import free_port
from e2e.support.apply import apply_yaml, ensure_namespace
from e2e.support.auth import write_sa_kubeconfig
from e2e.support.objects import GROUP, create_nodes, make_pod, unique_name
from e2e.support.plane import MANIFESTS_DIR, ControlPlane, env_flag, start_local_control_plane
from e2e.support.waits import wait_bound, wait_failed_scheduling
from scheduler.testing.process import SchedulerProcess

PREVIOUS = "k8s-prev"
MINOR = "35"


@pytest.fixture(scope="module")
def previous_plane() -> Iterator[ControlPlane]:
    if env_flag("PYSCHED_E2E_IN_CLUSTER"):
        pytest.skip("PYSCHED_E2E_IN_CLUSTER=1: no local planes")
    run = pathlib.Path(tempfile.mkdtemp(prefix="pyscheduler-cp-prev-"))
    plane = start_local_control_plane(PREVIOUS, run)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def api(previous_plane: ControlPlane) -> Iterator[client.ApiClient]:
    a = previous_plane.api_client()
    yield a
    a.close()


def test_schedules_against_the_previous_minor(api: client.ApiClient, tmp_path: pathlib.Path) -> None:
    version = client.VersionApi(api).get_code()
    assert (version.major, version.minor) == ("1", MINOR), version.git_version
    core = client.CoreV1Api(api)
    apply_yaml(api, MANIFESTS_DIR, skip_kinds={"Deployment"})
    kubeconfig = write_sa_kubeconfig(api, "pyscheduler", "pyscheduler", tmp_path / "sa.kubeconfig", create=False)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"resourceNamespace": "pyscheduler", "resourceName": "pyscheduler"},
        "profiles": [{"schedulerName": "pyscheduler"}],
    }))
    ns = unique_name("skew")
    ensure_namespace(core, ns)
    nodes = create_nodes(core, 2, prefix=unique_name("node"), labels={GROUP: ns})
    proc = SchedulerProcess(str(config), kubeconfig, tmp_path, "skew", port=free_port())
    try:
        proc.wait_ready(timeout=60)
        discovered = [e for e in proc.log_events() if e.get("event") == "api_discovered"]
        assert discovered and "resource.k8s.io/v1" in discovered[0]["group_versions"]

        def pod(name: str, **kw: Any) -> dict[str, Any]:
            return make_pod(name, ns, node_selector={GROUP: ns, **kw.pop("selector", {})}, **kw)

        for i in range(4):
            core.create_namespaced_pod(ns, pod(f"p{i}"))
        assert {wait_bound(core, ns, f"p{i}") for i in range(4)} <= set(nodes)
        core.create_namespaced_pod(ns, pod("nowhere", selector={"kubernetes.io/hostname": "no-such-node"}))
        ev, _ = wait_failed_scheduling(api, core, ns, "nowhere")
        assert ev.note.startswith("0/")

        resource = client.ResourceV1Api(api)
        driver, cls = f"{ns}.dra.example.com", unique_name("gpu")
        resource.create_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": cls},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
        slice_name = unique_name("slice")
        resource.create_resource_slice({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                        "metadata": {"name": slice_name}, "spec": {
                                            "driver": driver, "nodeName": nodes[1],
                                            "pool": {"name": nodes[1], "generation": 1, "resourceSliceCount": 1},
                                            "devices": [{"name": "gpu-0"}]}})
        resource.create_namespaced_resource_claim(ns, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}})
        core.create_namespaced_pod(ns, pod("claims", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}]))
        assert wait_bound(core, ns, "claims") == nodes[1]
        claim = resource.read_namespaced_resource_claim("gpu", ns)
        assert claim.status.allocation is not None and [r.name for r in claim.status.reserved_for] == ["claims"]
        assert not [e for e in proc.log_events() if e.get("event") in ("watch_forbidden", "watch_not_served")]
    finally:
        code = proc.stop()
    assert code == 0, proc.logs()
