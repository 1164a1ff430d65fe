"""Pod signatures for OpportunisticBatching (upstream kube-scheduler framework/signers.go and
the SignPod of each plugin; KEP-5598).

A plugin that filters or scores may sign a pod: it returns fragments, (key, value) pairs whose
values are JSON-able, or a Status when it refuses (the pod is then not batchable). Two pods
whose fragments are all equal must get the same feasibility and scores on the same nodes. The
framework joins every signer's fragments into one canonical JSON document (keys sorted, as Go
marshals a map), so equal signatures are equal bytes.

The common signers read the pod's spec as the API server stored it; lists whose order does not
matter are sorted, so equal specs sign equally.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from scheduler.model.pod import PodInfo

# A plugin's piece of a signature: (key, JSON-able value).
SignFragment = tuple[str, Any]

# The fragment keys (upstream signers.go).
DYNAMIC_RESOURCES_SIGNER = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES_SIGNER = "v1.Pod.Spec.CanonicalImageNames()"
LABELS_SIGNER = "v1.Pod.Labels"
NODE_NAME_SIGNER = "v1.Pod.Spec.NodeName"
NODE_AFFINITY_SIGNER = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR_SIGNER = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS_SIGNER = "v1.Pod.Spec.HostPorts()"
RESOURCES_SIGNER = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"
TOLERATIONS_SIGNER = "v1.Pod.Spec.Tolerations"
VOLUMES_SIGNER = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES_SIGNER = "v1.Pod.Spec.RequiredFeatures()"


def _canonical(value: Any) -> str:
    # orjson writes what json.dumps does with these options (compact, keys sorted, UTF-8 as
    # is) several times faster; what it refuses (an integer past 64 bits) goes the slow way.
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def encode_signature(fragments: Mapping[str, Any]) -> bytes:
    """The signature's bytes: one JSON object, keys sorted."""
    return _canonical(dict(fragments)).encode()


def pod_spec(pod: PodInfo) -> Mapping[str, Any]:
    spec = pod.raw.get("spec") if isinstance(pod.raw, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str | bytes) else []


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in (*_list(spec.get("containers")), *_list(spec.get("initContainers"))) if isinstance(c, Mapping)]


def host_ports_signer(pod: PodInfo) -> list[int]:
    """The distinct non-zero host ports of the containers and init containers, sorted."""
    ports: set[int] = set()
    for c in _containers(pod_spec(pod)):
        for p in _list(c.get("ports")):
            hp = p.get("hostPort") if isinstance(p, Mapping) else None
            if isinstance(hp, int) and hp != 0:
                ports.add(hp)
    return sorted(ports)


def _requirements(reqs: Any) -> list[str]:
    out = []
    for r in _list(reqs):
        if not isinstance(r, Mapping):
            continue
        r = dict(r)
        if "values" in r:
            r["values"] = sorted(str(v) for v in _list(r["values"]))
        out.append(_canonical(r))
    return sorted(out)


def _term(term: Any) -> dict[str, list[str]]:
    t = term if isinstance(term, Mapping) else {}
    return {
        "MatchExpressions": _requirements(t.get("matchExpressions")),
        "MatchFields": _requirements(t.get("matchFields")),
    }


def node_affinity_signer(pod: PodInfo) -> dict[str, list[str]] | None:
    """The node affinity with every list put in a canonical order (None without one)."""
    aff = pod_spec(pod).get("affinity")
    na = aff.get("nodeAffinity") if isinstance(aff, Mapping) else None
    if not isinstance(na, Mapping):
        return None
    preferred = sorted(
        _canonical({"Weight": p.get("weight", 0), "Preference": _term(p.get("preference"))})
        for p in _list(na.get("preferredDuringSchedulingIgnoredDuringExecution"))
        if isinstance(p, Mapping)
    )
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = req.get("nodeSelectorTerms") if isinstance(req, Mapping) else None
    required = sorted(_canonical(_term(t)) for t in _list(terms))
    return {"Required": required, "Preferred": preferred}


def node_selector_signer(pod: PodInfo) -> Any:
    return pod_spec(pod).get("nodeSelector")


def tolerations_signer(pod: PodInfo) -> list[Any]:
    """The tolerations ordered by key, then value."""
    tols = [t for t in _list(pod_spec(pod).get("tolerations")) if isinstance(t, Mapping)]
    return sorted(tols, key=lambda t: (str(t.get("key") or ""), str(t.get("value") or "")))


# Four volume plugins sign with the same fragment, one after the other for the same pod: the
# last pod's answer is kept (every API pod has at least its projected service-account volume).
# PodInfo is immutable once parsed, so the pod itself is the key.
_last_volumes: tuple[PodInfo | None, list[str]] = (None, [])


def volumes_signer(pod: PodInfo) -> list[str]:
    """Each volume's source but ConfigMap and Secret ones (they never matter to scheduling and
    differ from pod to pod), sorted; the volume's name is not part of it."""
    global _last_volumes
    last, kept = _last_volumes
    if last is pod:
        return kept
    kept = _volumes(pod)
    _last_volumes = (pod, kept)
    return kept


def _volumes(pod: PodInfo) -> list[str]:
    out = []
    for v in _list(pod_spec(pod).get("volumes")):
        if not isinstance(v, Mapping) or "configMap" in v or "secret" in v:
            continue
        out.append(_canonical({k: x for k, x in v.items() if k != "name"}))
    return sorted(out)
