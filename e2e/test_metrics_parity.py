"""End-to-end, side by side: the metric families of the real kube-scheduler v1.36.3 and of
pyscheduler, both running on the plane with leader election and driven through the same
scenarios (pods bound, a pod that fits nowhere until a node comes, a gated pod, a preemption),
then scraped over HTTPS with a ServiceAccount token.

Every family the binary exposes must be ours with the same type, label names, help text and,
for a histogram, the same bucket bounds (as strings: dashboards select ``le`` by string), except
those docs/operations.md lists as left out: the Go runtime's ``go_*`` and the kube-apiserver
library internals kube-scheduler links for its serving (``apiserver_*``, ``aggregator_*``,
``workqueue_*``). /metrics/resources is compared the same way.
"""

from __future__ import annotations

import contextlib
import pathlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from e2e.differential import kubescheduler
from e2e.support.auth import path_reader_token
from e2e.support.objects import make_pod, unique_name
from e2e.support.waits import wait_bound, wait_for
from scheduler.testing.process import SchedulerProcess, free_port, https_get

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

REFERENCE = "kube-reference"
OURS = "pyscheduler"
GROUP = "metrics-parity.e2e.pyscheduler.io/group"
# Left out (docs/operations.md, Metrics): no Go runtime here, no kube-apiserver libraries (their
# certificate controllers' workqueues, the delegated reviews' apiserver_delegated_* clients).
LEFT_OUT = ("go_", "apiserver_", "aggregator_", "workqueue_")
# The delegated authentication and authorization filters' and the TokenReview cache's families
# (k8s.io/apiserver): a scrape with a token shows every one of them on both sides.
AUTH_FAMILIES = (
    "authenticated_user_requests_total", "authentication_attempts_total", "authentication_duration_seconds",
    "authorization_attempts_total", "authorization_duration_seconds", "authentication_token_cache_request_total",
    "authentication_token_cache_request_duration_seconds", "authentication_token_cache_fetch_total",
    "authentication_token_cache_active_fetch_count",
)


@dataclass(frozen=True)
class Family:
    type: str
    help: str
    labels: frozenset[str]
    buckets: tuple[str, ...]


def families(text: str) -> dict[str, Family]:
    """name -> what the comparison looks at; counters by their exposed ``_total`` name."""
    out: dict[str, Family] = {}
    for fam in text_string_to_metric_families(text):
        labels: set[str] = set()
        les: list[str] = []
        first: dict[str, str] | None = None
        for s in fam.samples:
            labels.update(k for k in s.labels if k != "le")
            if s.name.endswith("_bucket"):
                rest = {k: v for k, v in s.labels.items() if k != "le"}
                if first is None:
                    first = rest
                if rest == first:
                    les.append(s.labels["le"])
        name = fam.name + ("_total" if fam.type == "counter" else "")
        out[name] = Family(fam.type, fam.documentation, frozenset(labels), tuple(les))
    return out


def differences(ref: dict[str, Family], ours: dict[str, Family]) -> list[str]:
    problems = []
    for name, want in sorted(ref.items()):
        if name.startswith(LEFT_OUT):
            continue
        got = ours.get(name)
        if got is None:
            problems.append(f"{name}: missing ({want.type}, labels {sorted(want.labels)})")
            continue
        for field in ("type", "labels", "help", "buckets"):
            w, g = getattr(want, field), getattr(got, field)
            if field == "labels":
                w, g = sorted(w), sorted(g)
            if w != g:
                problems.append(f"{name}: {field} differs\n    kube-scheduler: {w}\n    pyscheduler:    {g}")
    return problems


@pytest.fixture(scope="module")
def reader_token(api_client: client.ApiClient) -> Iterator[str]:
    """A ServiceAccount allowed to get /metrics and /metrics/resources, as a Prometheus would be."""
    with path_reader_token(api_client, unique_name("metrics-parity"), ["/metrics", "/metrics/resources"]) as token:
        yield token


@pytest.fixture(scope="module")
def reference(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubescheduler.KubeScheduler]:
    """The binary under profile kube-reference, leading its own Lease (leader_election_* appear)."""
    lease = {"leaderElect": True, "resourceNamespace": "kube-system", "resourceName": unique_name("kube-reference")}
    try:
        with kubescheduler.running(REFERENCE, kubeconfig, pathlib.Path(tmp_path_factory.mktemp("kube-reference")),
                                   lease) as ks:
            yield ks
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def ours(scheduler_config_path: str, scheduler_kubeconfig: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerProcess]:
    log_dir = pathlib.Path(tmp_path_factory.mktemp("metrics-parity"))
    p = SchedulerProcess(scheduler_config_path, scheduler_kubeconfig, log_dir, "metrics", port=free_port())
    try:
        p.wait_ready(timeout=60)
        yield p
    finally:
        p.stop()


def scrape(port: int, path: str, token: str) -> str:
    def ok() -> str:
        with contextlib.suppress(OSError):
            status, text = https_get(port, path, token=token, timeout=5)
            if status == 200:
                return text
        return ""

    return wait_for(ok, timeout=30, interval=0.5, desc=f"GET {path} on port {port}")


def drive(core: client.CoreV1Api, node_factory: Callable[..., list[str]], namespace: str, scheduler: str,
          classes: tuple[str, str], has_sampled: Callable[[], bool]) -> None:
    """The scenarios, for one scheduler on its own nodes."""
    group = {GROUP: scheduler}
    nodes = node_factory(2, labels=group, cpu="4")
    pod = lambda name, **kw: make_pod(f"{scheduler}-{name}", namespace, scheduler_name=scheduler,  # noqa: E731
                                      node_selector=group, **kw)
    # Bound pods, until a sampled cycle has timed the plugins (one cycle in ten).
    for batch in range(10):
        names = []
        for i in range(20):
            body = pod(f"small-{batch}-{i}", cpu="10m", memory="8Mi")
            core.create_namespaced_pod(namespace, body)
            names.append(body["metadata"]["name"])
        for n in names:
            wait_bound(core, namespace, n, timeout=60)
        if has_sampled():
            break
    # Fits nowhere until a node big enough comes: unschedulable, then requeued by a hint.
    core.create_namespaced_pod(namespace, pod("big", cpu="6"))
    # Held by a scheduling gate.
    core.create_namespaced_pod(namespace, pod("gated", schedulingGates=[{"name": "example.com/hold"}]))
    time.sleep(2)
    node_factory(1, labels=group, cpu="8")
    wait_bound(core, namespace, f"{scheduler}-big", timeout=60)
    # A preemption: a high-priority pod takes a low-priority one's room on a one-CPU node.
    small = node_factory(1, labels={GROUP: f"{scheduler}-preempt"}, cpu="1")[0]
    sel = {GROUP: f"{scheduler}-preempt"}
    core.create_namespaced_pod(namespace, make_pod(f"{scheduler}-victim", namespace, scheduler_name=scheduler,
                                                   node_selector=sel, cpu="800m", priority_class_name=classes[0]))
    assert wait_bound(core, namespace, f"{scheduler}-victim", timeout=60) == small
    core.create_namespaced_pod(namespace, make_pod(f"{scheduler}-preemptor", namespace, scheduler_name=scheduler,
                                                   node_selector=sel, cpu="800m", priority_class_name=classes[1]))
    assert wait_bound(core, namespace, f"{scheduler}-preemptor", timeout=90) == small
    del nodes


@dataclass(frozen=True)
class Sides:
    """The two schedulers' secure ports and a token that may read both."""

    reference: int
    ours: int
    token: str


@pytest.fixture(scope="module")
def sides(reference: kubescheduler.KubeScheduler, ours: SchedulerProcess, reader_token: str) -> Sides:
    return Sides(reference.port, ours.port, reader_token)


def test_metric_families_match_kube_scheduler(core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]],
                                              namespace: str, sides: Sides, priority_classes: tuple[str, str],
                                              tmp_path: pathlib.Path) -> None:
    def sampled(port: int) -> Callable[[], bool]:
        return lambda: "scheduler_plugin_execution_duration_seconds_bucket" in scrape(port, "/metrics", sides.token)

    drive(core_v1, node_factory, namespace, REFERENCE, priority_classes, sampled(sides.reference))
    drive(core_v1, node_factory, namespace, OURS, priority_classes, sampled(sides.ours))
    time.sleep(2)  # the binary flushes its asynchronously recorded metrics every second
    ref_text, our_text = scrape(sides.reference, "/metrics", sides.token), scrape(sides.ours, "/metrics", sides.token)
    (tmp_path / "kube-scheduler.metrics").write_text(ref_text)
    (tmp_path / "pyscheduler.metrics").write_text(our_text)
    print(f"scrapes in {tmp_path}")
    ref, mine = families(ref_text), families(our_text)
    compared = sorted(n for n in ref if not n.startswith(LEFT_OUT))
    print(f"{len(compared)} families compared:\n  " + "\n  ".join(compared))
    extra = sorted(n for n in mine if n not in ref and not n.startswith("pyscheduler_"))
    print("ours only (not shown by the binary in this run):\n  " + "\n  ".join(extra))
    assert "_created" not in our_text
    assert len(compared) > 40  # the scenarios made the binary show its families
    for name in AUTH_FAMILIES:
        assert name in ref and name in mine, name
    # Two counters are named without _total in Go, and their samples too.
    for text in (ref_text, our_text):
        assert "# TYPE authenticated_user_requests counter" in text
        assert "\nauthentication_attempts{result=" in text
    problems = differences(ref, mine)
    assert not problems, "\n".join(problems)


def test_metrics_resources_match_kube_scheduler(core_v1: client.CoreV1Api, node_factory: Callable[..., list[str]],
                                                namespace: str, sides: Sides) -> None:
    node_factory(1, labels={GROUP: "resources"}, cpu="4")
    for scheduler in (REFERENCE, OURS):
        body = make_pod(f"{scheduler}-res", namespace, scheduler_name=scheduler, node_selector={GROUP: "resources"},
                        cpu="250m", memory="64Mi")
        body["spec"]["containers"][0]["resources"]["limits"] = {"memory": "128Mi"}
        core_v1.create_namespaced_pod(namespace, body)
        wait_bound(core_v1, namespace, f"{scheduler}-res", timeout=60)

    def leading(port: int) -> str:
        # Served only by the leader: empty until the Lease is held.
        return wait_for(lambda: scrape(port, "/metrics/resources", sides.token).strip(), timeout=60,
                        interval=0.5, desc="a /metrics/resources body")

    ref_text, our_text = leading(sides.reference), leading(sides.ours)
    assert not differences(families(ref_text), families(our_text))
    assert set(families(ref_text)) == {"kube_pod_resource_request", "kube_pod_resource_limit"}

    def series(text: str) -> set[tuple[Any, ...]]:
        return {(s.name, tuple(sorted(s.labels.items())), s.value)
                for f in text_string_to_metric_families(text) for s in f.samples
                if s.labels.get("namespace") == namespace}

    # Every pod both see, with the same values (each lists every pod of the cluster); the
    # watches may lag a moment behind the bindings.
    def same() -> bool:
        return series(leading(sides.reference)) == series(leading(sides.ours))

    wait_for(same, timeout=30, interval=1.0, desc="the same kube_pod_resource_* series from both")
    got = series(leading(sides.ours))
    assert {dict(labels)["pod"] for _, labels, _ in got} == {f"{REFERENCE}-res", f"{OURS}-res"}
