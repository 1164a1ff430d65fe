"""Waiting on what the API server shows: a generic poll, nodes Ready and usable, pods bound or
failed, objects gone, and the events.k8s.io Events a scheduler writes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException

T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


def wait_for(
    fn: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.2,
    desc: str = "condition",
) -> T:
    """Call *fn* until it returns something truthy; return that value.

    ApiException 404 counts as "not yet". On timeout raise WaitTimeout with the
    last value or error seen.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except ApiException as exc:
            if exc.status != 404:
                raise
            last = exc
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {desc}; last: {last!r}")
        time.sleep(interval)


def node_is_ready(node: client.V1Node) -> bool:
    """The Ready condition is True (taints not considered; see :func:`node_is_usable`)."""
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


#: Taints the node lifecycle controller (and TaintNodesByCondition admission, on
#: create) puts on a node that is not, or no longer, known to be Ready.
NOT_READY_TAINT_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


def node_is_usable(node: client.V1Node) -> bool:
    """Ready and free of not-ready/unreachable taints.

    A new node is created with ``node.kubernetes.io/not-ready:NoSchedule``
    (TaintNodesByCondition admission); kube-controller-manager's node lifecycle
    controller lifts it shortly after the node turns Ready. Until then a
    scheduler filters the node out, so tests wait for both.
    """
    return node_is_ready(node) and not any(t.key in NOT_READY_TAINT_KEYS for t in node.spec.taints or [])


def pod_condition(pod: client.V1Pod, ctype: str) -> client.V1PodCondition | None:
    for c in pod.status.conditions or []:
        if c.type == ctype:
            return c
    return None


def wait_for_node_ready(core: client.CoreV1Api, name: str, timeout: float = 30.0) -> client.V1Node:
    """Wait until node *name* is Ready and carries no not-ready/unreachable taint."""
    return wait_for(
        lambda: (n := core.read_node(name)) and node_is_usable(n) and n,
        timeout=timeout,
        desc=f"node {name} Ready without not-ready/unreachable taints",
    )


def wait_for_pod(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    predicate: Callable[[client.V1Pod], bool],
    timeout: float = 30.0,
    desc: str | None = None,
) -> client.V1Pod:
    return wait_for(
        lambda: (p := core.read_namespaced_pod(name, namespace)) and predicate(p) and p,
        timeout=timeout,
        desc=desc or f"pod {namespace}/{name}",
    )


def wait_for_pod_phase(
    core: client.CoreV1Api, namespace: str, name: str, phase: str = "Running", timeout: float = 30.0
) -> client.V1Pod:
    return wait_for_pod(
        core,
        namespace,
        name,
        lambda p: p.status.phase == phase,
        timeout,
        desc=f"pod {namespace}/{name} phase {phase}",
    )


def wait_for_pod_scheduled(core: client.CoreV1Api, namespace: str, name: str, timeout: float = 30.0) -> client.V1Pod:
    """Wait until spec.nodeName is set (by whichever scheduler)."""
    return wait_for_pod(
        core,
        namespace,
        name,
        lambda p: bool(p.spec.node_name),
        timeout,
        desc=f"pod {namespace}/{name} bound",
    )


def wait_for_deleted(read: Callable[[], Any], timeout: float = 30.0, desc: str = "object") -> None:
    def gone() -> bool:
        try:
            read()
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(gone, timeout=timeout, desc=f"{desc} deleted")


def events_for(
    api_client: client.ApiClient, namespace: str, pod: str | None = None, reason: str | None = None
) -> list[client.EventsV1Event]:
    evs = client.EventsV1Api(api_client).list_namespaced_event(namespace).items
    return [e for e in evs if (pod is None or e.regarding.name == pod) and (reason is None or e.reason == reason)]


def wait_bound(core: client.CoreV1Api, namespace: str, name: str, timeout: float = 30.0) -> str:
    return wait_for_pod_scheduled(core, namespace, name, timeout).spec.node_name


def wait_failed_scheduling(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str, pod: str, timeout: float = 30.0
) -> tuple[client.EventsV1Event, client.V1PodCondition]:
    """Wait for a FailedScheduling Event and PodScheduled=False on the pod; return both."""

    def both() -> Any:
        evs = events_for(api_client, namespace, pod, "FailedScheduling")
        cond = pod_condition(core.read_namespaced_pod(pod, namespace), "PodScheduled")
        return evs and cond is not None and cond.status == "False" and (evs[0], cond)

    return wait_for(both, timeout=timeout, desc=f"FailedScheduling for {namespace}/{pod}")
