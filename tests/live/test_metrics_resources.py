"""/metrics/resources (upstream pkg/scheduler/metrics/resources/resources_test.go): the
collector's table, each case's pods and the exposition upstream expects, and the handler's
byte-for-byte output."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.live.metrics.resources import FAMILIES, exposition

LIMIT_HEAD = (f"# HELP kube_pod_resource_limit {FAMILIES['kube_pod_resource_limit']}\n"
              "# TYPE kube_pod_resource_limit gauge\n")
REQUEST_HEAD = (f"# HELP kube_pod_resource_request {FAMILIES['kube_pod_resource_request']}\n"
                "# TYPE kube_pod_resource_request gauge\n")


def pod(name: str = "foo", *, node: str = "", containers: list[dict[str, Any]] | None = None,
        init: list[dict[str, Any]] | None = None, phase: str | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": containers or [], **spec}
    if node:
        s["nodeName"] = node
    if init is not None:
        s["initContainers"] = init
    raw: dict[str, Any] = {"metadata": {"namespace": "test", "name": name}, "spec": s}
    if phase:
        raw["status"] = {"phase": phase}
    return raw


def c(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "resources": res}


def series(family: str, value: str, *, pod_name: str = "foo", node: str = "", resource: str, unit: str,
           priority: str = "", scheduler: str = "") -> str:
    return (f'{family}{{namespace="test",node="{node}",pod="{pod_name}",priority="{priority}",resource="{resource}",'
            f'scheduler="{scheduler}",unit="{unit}"}} {value}\n')


def req(value: str, resource: str, unit: str, **kw: str) -> str:
    return series("kube_pod_resource_request", value, resource=resource, unit=unit, **kw)


def lim(value: str, resource: str, unit: str, **kw: str) -> str:
    return series("kube_pod_resource_limit", value, resource=resource, unit=unit, **kw)


INIT_AND_REGULAR = dict(
    node="node-one",
    init=[c({"cpu": "2", "custom": "3"}, {"memory": "1G", "custom": "5"})],
    containers=[c({"cpu": "1", "custom": "0"}, {"memory": "2G", "custom": "6"})],
)

CASES: list[tuple[str, list[dict[str, Any]], str]] = [
    ("empty", [], ""),
    ("no containers", [pod()], ""),
    ("request only", [pod(containers=[c({"cpu": "1"})])], REQUEST_HEAD + req("1", "cpu", "cores")),
    ("limits only", [pod(containers=[c(limits={"cpu": "1"})])], LIMIT_HEAD + lim("1", "cpu", "cores")),
    ("terminal pods are excluded", [
        pod("foo-unscheduled-succeeded", containers=[c({"cpu": "1"})], phase="Succeeded"),
        pod("foo-succeeded", node="node-one", containers=[c({"cpu": "1"})], phase="Succeeded"),
        pod("foo-failed", node="node-one", containers=[c({"cpu": "1"})], phase="Failed"),
        pod("foo-unknown", node="node-one", containers=[c({"cpu": "1"})], phase="Unknown"),
        pod("foo-pending", node="node-one", init=[c({"cpu": "1"})], containers=[c({"cpu": "1"})], phase="Pending"),
    ], REQUEST_HEAD
        + req("1", "cpu", "cores", pod_name="foo-unscheduled-succeeded")
        + req("1", "cpu", "cores", pod_name="foo-pending", node="node-one")
        + req("1", "cpu", "cores", pod_name="foo-unknown", node="node-one")),
    ("zero resource should be excluded", [pod(
        init=[c({"cpu": "0", "custom": "0", "test.com/custom-metric": "0"},
                {"cpu": "0", "custom": "0", "test.com/custom-metric": "0"})],
        containers=[c({"cpu": "0", "custom": "0", "test.com/custom-metric": "0"},
                      {"cpu": "0", "custom": "0", "test.com/custom-metric": "0"})])], ""),
    ("optional field labels", [pod(node="node-one", schedulerName="default-scheduler", priority=0,
                                   containers=[c({"cpu": "1"})])],
     REQUEST_HEAD + req("1", "cpu", "cores", node="node-one", priority="0", scheduler="default-scheduler")),
    ("init containers and regular containers", [pod(**INIT_AND_REGULAR)],  # type: ignore[arg-type]
     LIMIT_HEAD + lim("6", "custom", "", node="node-one") + lim("2e+09", "memory", "bytes", node="node-one")
     + REQUEST_HEAD + req("2", "cpu", "cores", node="node-one") + req("3", "custom", "", node="node-one")),
    ("aggregate container requests and limits", [pod(containers=[
        c({"cpu": "1"}, {"cpu": "2"}), c({"memory": "1G"}, {"memory": "2G"}),
        c({"cpu": "0.5"}, {"cpu": "1.25"}), c(limits={"memory": "2G"})])],
     LIMIT_HEAD + lim("3.25", "cpu", "cores") + lim("4e+09", "memory", "bytes")
     + REQUEST_HEAD + req("1.5", "cpu", "cores") + req("1e+09", "memory", "bytes")),
    ("overhead added to requests and limits", [pod(
        overhead={"cpu": "0.25", "memory": "0.75G", "custom": "0.5"},
        init=[c({"cpu": "2", "custom": "3"}, {"memory": "1G", "custom": "5"})],
        containers=[c({"cpu": "1", "custom": "0"}, {"memory": "2G", "custom": "6"})])],
     LIMIT_HEAD + lim("6.5", "custom", "") + lim("2.75e+09", "memory", "bytes")
     + REQUEST_HEAD + req("2.25", "cpu", "cores") + req("3.5", "custom", "") + req("7.5e+08", "memory", "bytes")),
    ("units for standard resources", [pod(containers=[c(
        {"storage": "5", "ephemeral-storage": "6"},
        {"hugepages-x": "1", "hugepages-": "2", "attachable-volumes-aws": "3", "attachable-volumes-": "4"})])],
     LIMIT_HEAD + lim("4", "attachable-volumes-", "integer") + lim("3", "attachable-volumes-aws", "integer")
     + lim("2", "hugepages-", "bytes") + lim("1", "hugepages-x", "bytes")
     + REQUEST_HEAD + req("6", "ephemeral-storage", "bytes") + req("5", "storage", "bytes")),
    ("pod level resources", [pod(
        resources={"requests": {"cpu": "4", "memory": "8G"}, "limits": {"cpu": "4", "memory": "8G"}},
        containers=[c({"cpu": "2", "memory": "4G"}, {"cpu": "2", "memory": "4G"}),
                    c({"cpu": "0", "memory": "0"}, {"cpu": "0", "memory": "0"})])],
     LIMIT_HEAD + lim("4", "cpu", "cores") + lim("8e+09", "memory", "bytes")
     + REQUEST_HEAD + req("4", "cpu", "cores") + req("8e+09", "memory", "bytes")),
    ("pod level resources with unsupported resource type", [pod(
        resources={"requests": {"custom": "2"}, "limits": {"custom": "2"}},
        containers=[c({"custom": "1"}, {"custom": "1"})])],
     LIMIT_HEAD + lim("1", "custom", "") + REQUEST_HEAD + req("1", "custom", "")),
    ("pod level resources with aggregated container limits", [pod(
        resources={"requests": {"cpu": "2", "memory": "4G"}},
        containers=[c(limits={"cpu": "1", "memory": "2G"}), c(limits={"cpu": "2", "memory": "3G"})])],
     LIMIT_HEAD + lim("3", "cpu", "cores") + lim("5e+09", "memory", "bytes")
     + REQUEST_HEAD + req("2", "cpu", "cores") + req("4e+09", "memory", "bytes")),
    ("pod level resources with missing requests", [pod(
        resources={"limits": {"cpu": "2", "memory": "4G"}},
        containers=[c({"cpu": "1", "memory": "2G"}, {"cpu": "1", "memory": "2G"})])],
     LIMIT_HEAD + lim("2", "cpu", "cores") + lim("4e+09", "memory", "bytes")
     + REQUEST_HEAD + req("1", "cpu", "cores") + req("2e+09", "memory", "bytes")),
]


@pytest.mark.parametrize(("name", "pods", "want"), CASES, ids=[c[0] for c in CASES])
def test_collect_with_stability(name: str, pods: list[dict[str, Any]], want: str) -> None:
    assert exposition(pods).decode() == want


def test_handler_output() -> None:
    # Test_podResourceCollector_Handler: 2.5Gi of memory is written 2.68435456e+09.
    p = pod(node="node-one", init=[c({"cpu": "2", "custom": "3"}, {"memory": "1G", "custom": "5"})],
            containers=[c({"cpu": "1", "custom": "0"}, {"memory": "2.5Gi", "custom": "6"})])
    want = (LIMIT_HEAD + lim("6", "custom", "", node="node-one")
            + lim("2.68435456e+09", "memory", "bytes", node="node-one")
            + REQUEST_HEAD + req("2", "cpu", "cores", node="node-one") + req("3", "custom", "", node="node-one"))
    assert exposition([p]).decode() == want


def test_sidecars_run_beside_the_containers() -> None:
    # AggregateContainerRequests: a restartable init container adds to the containers.
    p = pod(init=[{**c({"cpu": "1"}), "restartPolicy": "Always"}, c({"cpu": "2"})], containers=[c({"cpu": "1"})])
    assert exposition([p]).decode() == REQUEST_HEAD + req("3", "cpu", "cores")
