"""/metrics/resources: kube_pod_resource_request and kube_pod_resource_limit, what each pod asks
for and is limited to as the scheduler and kubelet count it (upstream
pkg/scheduler/metrics/resources: component-helpers' PodRequests and PodLimits with no options,
so pod overhead and pod-level resources count and status resources do not).

Read from the scheduler's view of the pods when scraped: every pod the pod informer holds
(terminal pods excluded, and a bound pod in phase Succeeded or Failed), one series per pod and
resource with a non-zero amount. The text is written as the Go client writes it (families by
name, series sorted, values in Go's float format) so scrapes compare byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from scheduler.live.metrics.kit import STABLE, go_float, helptext
from scheduler.model.quantity import QuantityError, parse_quantity

Raw = Mapping[str, Any]
Amounts = dict[str, Fraction]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LABELS = ("namespace", "pod", "node", "scheduler", "priority", "resource", "unit")
_SORTED = sorted(range(len(_LABELS)), key=lambda i: _LABELS[i])  # the Go client sorts by label name
_TEXT = ("workloads on the cluster, broken down by pod. This shows the resource usage the scheduler and kubelet "
         "expect per pod for resources along with the unit for the resource if any.")
FAMILIES = {
    "kube_pod_resource_limit": helptext(STABLE, "Resources limit for " + _TEXT),
    "kube_pod_resource_request": helptext(STABLE, "Resources requested by " + _TEXT),
}
_POD_LEVEL = ("cpu", "memory")


def _pod_level(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith("hugepages-")


def _unit(name: str) -> str:
    if name == "cpu":
        return "cores"
    if name in ("memory", "storage", "ephemeral-storage") or name.startswith("hugepages-"):
        return "bytes"
    if name.startswith("attachable-volumes-"):
        return "integer"
    return ""


def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    out: Amounts = {}
    for name, value in (raw or {}).items():
        try:
            out[str(name)] = parse_quantity(value)
        except QuantityError:
            continue  # the API server refuses such a pod; nothing to count
    return out


def _add(acc: Amounts, other: Amounts) -> None:
    for k, v in other.items():
        acc[k] = acc.get(k, Fraction(0)) + v


def _max(acc: Amounts, other: Amounts) -> None:
    for k, v in other.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


def _aggregate(spec: Mapping[str, Any], field: str) -> Amounts:
    """Aggregate container requests or limits: containers and sidecars add up; each init
    container needs itself plus the sidecars before it; the pod, the larger of the two."""
    total: Amounts = {}
    for c in spec.get("containers") or ():
        _add(total, _amounts((c.get("resources") or {}).get(field)))
    sidecars: Amounts = {}
    init_max: Amounts = {}
    for c in spec.get("initContainers") or ():
        own = _amounts((c.get("resources") or {}).get(field))
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            need = dict(sidecars)
        else:
            need = dict(own)
            _add(need, sidecars)
        _max(init_max, need)
    _max(total, init_max)
    return total


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    reqs = _aggregate(spec, "requests")
    level = _amounts((spec.get("resources") or {}).get("requests"))
    if any(_pod_level(n) for n in level):
        reqs.update({n: q for n, q in level.items() if _pod_level(n)})
    _add(reqs, _amounts(spec.get("overhead")))
    return reqs


def pod_limits(spec: Mapping[str, Any]) -> Amounts:
    limits = _aggregate(spec, "limits")
    res = spec.get("resources") or {}
    level = _amounts(res.get("limits"))
    # Pod-level limits replace the containers' once pod-level requests *or* limits are set.
    if any(_pod_level(n) for n in (*_amounts(res.get("requests")), *level)):
        limits.update({n: q for n, q in level.items() if _pod_level(n)})
    for name, q in _amounts(spec.get("overhead")).items():
        if limits.get(name):
            limits[name] += q  # overhead counts only where a non-zero limit exists
    return limits


def samples(pods: Iterable[Raw]) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """Family name -> (label values in _LABELS order, value) for ``pods``."""
    out: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name in FAMILIES}
    for pod in pods:
        spec = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        node = str(spec.get("nodeName") or "")
        if node and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue  # terminal pods use nothing
        prio = spec.get("priority")
        base = (str(meta.get("namespace") or ""), str(meta.get("name") or ""), node,
                str(spec.get("schedulerName") or ""), "" if prio is None else str(int(prio)))
        for family, amounts in (("kube_pod_resource_request", pod_requests(spec)),
                                ("kube_pod_resource_limit", pod_limits(spec))):
            for name, q in amounts.items():
                if q:
                    out[family].append(((*base, name, _unit(name)), float(q)))
    return out


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(pods: Iterable[Raw]) -> bytes:
    lines: list[str] = []
    for family, series in sorted(samples(pods).items()):
        if not series:
            continue
        lines.append(f"# HELP {family} {FAMILIES[family]}")
        lines.append(f"# TYPE {family} gauge")
        for values, value in sorted(series, key=lambda s: [s[0][i] for i in _SORTED]):
            labels = ",".join(f'{_LABELS[i]}="{_escape(values[i])}"' for i in _SORTED)
            lines.append(f"{family}{{{labels}}} {go_float(value)}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


class PodResources:
    """The /metrics/resources handler's data: ``pods`` lists the raw pods when scraped."""

    def __init__(self, pods: Callable[[], Iterable[Raw]]) -> None:
        self.pods = pods

    def exposition(self) -> tuple[bytes, str]:
        return exposition(self.pods()), CONTENT_TYPE
