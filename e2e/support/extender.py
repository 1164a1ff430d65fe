"""The suite's scheduler extender: a deterministic policy served on loopback
(``scheduler.testing.extender.ExtenderServer``), asked by kube-scheduler v1.36.3 and by
pyscheduler (``run`` and ``simulate``) alike.

Every answer is a pure function of the pod's key (its namespace/name, or its ``KEY_LABEL``
label when it has one, so that two copies of a pod for two schedulers are one case) and the
node's name (a hash): two schedulers asking about the same pod and nodes get the same answer,
whichever asks first and however often. ``HashPolicy`` serves these extenders:

``/a`` filter, prioritize, preempt, bind; not node-cache-capable (whole nodes go back and
   forth, so the scheduler scores the NodeInfos it builds from the answer); some pods get an
   ``Error`` answer, some prioritize calls a 500 (ignored by the scheduler, as upstream).
``/b`` filter, prioritize; node-cache-capable (names only), ignorable, interested only in pods
   that request ``example.com/gpu``; some of its filter calls answer 503 (skipped: ignorable).
``/c`` filter only, passing every node, but ``SLOW_LABEL`` pods wait ``slow_seconds`` first
   (past the extender's httpTimeout when configured so: the pod's attempt fails).

Binding (``/a/bind``) writes the pod's Binding through the API, as a binder extender must.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.testing.extender import Answer, ExtenderServer

GPU = "example.com/gpu"
KEY_LABEL = "extender.e2e/key"
SLOW_LABEL = "extender.e2e/slow"
RESERVED = "node(s) reserved by the extender"
FENCED = "node(s) fenced off by the extender"
NO_GPU_SLOT = "node(s) without a free GPU slot"


def _h(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def _pod_key(body: dict[str, Any]) -> str:
    meta = (body.get("Pod") or {}).get("metadata") or {}
    key = (meta.get("labels") or {}).get(KEY_LABEL)
    return str(key) if key else f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _nodes(body: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]] | None]:
    """Node names and, when the scheduler sent whole nodes, those objects."""
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"]), None
    items = list(((body.get("Nodes") or {}).get("items")) or [])
    return [n["metadata"]["name"] for n in items], items


def pod_error(pod: str) -> str | None:
    """Extender A refuses about one pod in sixteen outright."""
    return f"extender cannot place {pod}: no quota left" if _h("error", pod) % 16 == 0 else None


def filter_a(pod: str, node: str) -> tuple[str, str] | None:
    """("failed"|"unresolvable", message) for a node extender A rejects, else None."""
    r = _h("filter", pod, node) % 10
    if r == 0:
        return "failed", RESERVED
    if r == 1:
        return "unresolvable", FENCED
    return None


def score_a(pod: str, node: str) -> int:
    return _h("score", pod, node) % 11


def prioritize_fails_a(pod: str) -> bool:
    return _h("prioritize-error", pod) % 12 == 0


def keeps_candidate_a(pod: str, node: str) -> bool:
    return _h("preempt", pod, node) % 3 != 0


def filter_b(pod: str, node: str) -> bool:
    return _h("gpu", pod, node) % 4 != 0


def unavailable_b(pod: str) -> bool:
    return _h("gpu-unavailable", pod) % 5 == 0


def score_b(pod: str, node: str) -> int:
    return _h("gpu-score", pod, node) % 11


class HashPolicy:
    """The two extenders' answers; ``api`` (an admin ApiClient) writes the Bindings."""

    def __init__(self, api: client.ApiClient | None = None, slow_seconds: float = 0.0) -> None:
        self.api = api
        self.slow_seconds = slow_seconds
        self.binds: list[tuple[str, str]] = []  # (namespace/name, node) bound through /a/bind

    def handlers(self) -> dict[str, Callable[[Any], Answer]]:
        return {
            "/a/filter": self.a_filter,
            "/a/prioritize": self.a_prioritize,
            "/a/preempt": self.a_preempt,
            "/a/bind": self.a_bind,
            "/b/filter": self.b_filter,
            "/b/prioritize": self.b_prioritize,
            "/c/filter": self.c_filter,
        }

    def serve(self) -> ExtenderServer:
        return ExtenderServer(self.handlers()).start()

    # -- extender A ----------------------------------------------------------------------------
    def a_filter(self, body: dict[str, Any]) -> Answer:
        pod = _pod_key(body)
        err = pod_error(pod)
        if err is not None:
            return 200, {"Error": err}
        names, items = _nodes(body)
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        kept: list[Any] = []
        for i, name in enumerate(names):
            verdict = filter_a(pod, name)
            if verdict is None:
                kept.append(items[i] if items is not None else name)
            elif verdict[0] == "failed":
                failed[name] = verdict[1]
            else:
                unresolvable[name] = verdict[1]
        answer: dict[str, Any] = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable}
        if items is None:
            answer["NodeNames"] = kept
        else:
            answer["Nodes"] = {"metadata": {}, "items": kept}
        return 200, answer

    def a_prioritize(self, body: dict[str, Any]) -> Answer:
        pod = _pod_key(body)
        if prioritize_fails_a(pod):
            return 500, {"error": "scoring backend down"}
        names, _ = _nodes(body)
        return 200, [{"Host": n, "Score": score_a(pod, n)} for n in names]

    def a_preempt(self, body: dict[str, Any]) -> Answer:
        pod = _pod_key(body)
        out: dict[str, Any] = {}
        full = body.get("NodeNameToVictims")
        meta = body.get("NodeNameToMetaVictims")
        for node, v in (full or meta or {}).items():
            if not keeps_candidate_a(pod, node):
                continue
            uids = [p["metadata"]["uid"] if full is not None else p["UID"] for p in v.get("Pods") or []]
            out[node] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": v.get("NumPDBViolations", 0)}
        return 200, {"NodeNameToMetaVictims": out}

    def a_bind(self, body: dict[str, Any]) -> Answer:
        ns, name, node = body["PodNamespace"], body["PodName"], body["Node"]
        if self.api is None:
            return 200, {"Error": "this extender has no API access"}
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": body.get("PodUID")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            client.CoreV1Api(self.api).create_namespaced_pod_binding(name, ns, binding, _preload_content=False)
        except ApiException as exc:
            return 200, {"Error": f"binding {ns}/{name} to {node}: {exc.status} {exc.reason}"}
        self.binds.append((f"{ns}/{name}", node))
        return 200, {"Error": ""}

    # -- extender B ----------------------------------------------------------------------------
    def b_filter(self, body: dict[str, Any]) -> Answer:
        pod = _pod_key(body)
        if unavailable_b(pod):
            return 503, {"error": "gpu inventory unavailable"}
        names, _ = _nodes(body)
        kept = [n for n in names if filter_b(pod, n)]
        return 200, {"NodeNames": kept, "FailedAndUnresolvableNodes": {n: NO_GPU_SLOT for n in names if n not in kept}}

    def b_prioritize(self, body: dict[str, Any]) -> Answer:
        pod = _pod_key(body)
        names, _ = _nodes(body)
        return 200, [{"Host": n, "Score": score_b(pod, n)} for n in names]

    # -- extender C ----------------------------------------------------------------------------
    def c_filter(self, body: dict[str, Any]) -> Answer:
        labels = ((body.get("Pod") or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(SLOW_LABEL) == "true":
            time.sleep(self.slow_seconds)
        names, _ = _nodes(body)
        return 200, {"NodeNames": names}


def extenders_config(url: str) -> list[dict[str, Any]]:
    """The ``extenders`` of a KubeSchedulerConfiguration naming the policy's two extenders."""
    return [
        {
            "urlPrefix": f"{url}/a",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "preemptVerb": "preempt",
            "bindVerb": "bind",
            "weight": 2,
            "httpTimeout": "10s",
        },
        {
            "urlPrefix": f"{url}/b",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 3,
            "nodeCacheCapable": True,
            "ignorable": True,
            "managedResources": [{"name": GPU}],
        },
    ]
