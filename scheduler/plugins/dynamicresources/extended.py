"""Extended resources backed by DRA (upstream dynamicresources/extendeddynamicresources.go,
DRAExtendedResource, beta and on in v1.36.3).

A pod asking for an extended resource that a DeviceClass maps (its ``extendedResourceName``,
or the implicit ``deviceclass.resource.kubernetes.io/<class>``) and that a node does not
advertise in its allocatable gets its devices through DRA on that node: one special claim per
pod holds a request per container and resource.

PreFilter: the pod's claim from an earlier attempt (annotated, owned by the pod), else an
in-memory claim named ``<extended-resources>`` with no requests and a temporary uid.
Filter: per node, the resources the node lacks become requests of a copy of that claim
(``createRequestsAndMappings``); a claim left from an earlier attempt makes every node fail, so
PostFilter deletes it and the pod starts over. PreBind creates the claim
(``<pod>-extended-resources-`` plus a generated suffix, the annotation, the pod as controller)
and records ``status.extendedResourceClaimStatus`` in the pod.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.model.dra import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ExtendedResourceCache,
    ResourceClaim,
    is_dra_extended_resource_name,
)
from scheduler.model.kinds import as_list, as_map
from scheduler.model.pod import PodInfo, pod_resource_inputs
from scheduler.model.podrequests import pod_requests
from scheduler.model.quantity import QuantityError, parse

# specialClaimInMemName: not a valid object name, so never the name of a real claim.
SPECIAL_CLAIM_NAME = "<extended-resources>"


def is_special_claim_name(name: str) -> bool:
    return name == SPECIAL_CLAIM_NAME


def _is_scalar(name: str) -> bool:
    """schedutil.IsScalarResourceName (framework.Resource keeps only these as scalars)."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def pod_scalar_requests(pod: PodInfo) -> dict[str, int]:
    """The pod's scalar requests as resourcehelper.PodRequests counts them with default options
    (spec only: containers summed, init containers at their peak, sidecars, overhead)."""
    reqs = pod_requests(pod_resource_inputs(pod.raw), use_status=False)
    return {n: q for n, q in reqs.items() if _is_scalar(n)}


def has_mapped_extended_resource(pod: PodInfo, cache: ExtendedResourceCache) -> bool:
    """hasDeviceClassMappedExtendedResource over the pod's requests, cheaply: the scalars the
    pod already carries decide (a request of zero does not count)."""
    for name, q in pod.requests.scalar.items():
        if q != 0 and is_dra_extended_resource_name(name) and cache.get_device_class(name) is not None:
            return True
    return False


def special_claim(pod: PodInfo) -> ResourceClaim:
    """The in-memory claim standing for the one PreBind creates: no requests yet, a temporary
    uid for the in-flight bookkeeping, the name the API server will generate from."""
    return ResourceClaim(
        {
            "metadata": {
                "namespace": pod.namespace,
                "name": SPECIAL_CLAIM_NAME,
                "uid": str(uuid.uuid4()),
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
                ],
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            },
            "spec": {},
        }
    )


def with_requests(claim: ResourceClaim, requests: Sequence[Mapping[str, Any]]) -> ResourceClaim:
    """A copy of the special claim for one node, its requests set (none: an empty spec)."""
    raw = dict(claim.raw)
    raw["spec"] = {"devices": {"requests": [dict(r) for r in requests]}} if requests else {}
    return ResourceClaim(raw)


def creation_body(claim: ResourceClaim) -> dict[str, Any]:
    """What createExtendedResourceClaimInAPI sends: the node's claim without name, uid and
    allocation (the API server names it from generateName)."""
    meta = {k: v for k, v in as_map(claim.raw.get("metadata")).items() if k not in ("name", "uid")}
    return {"metadata": meta, "spec": dict(as_map(claim.raw.get("spec")))}


# ---------------------------------------------------------------------------------------------
# createRequestsAndMappings


def _container_requests(c: Mapping[str, Any]) -> dict[str, Any]:
    """A container's resources.requests as stored (the API server defaults a request from its
    limit when only the limit is given)."""
    res = as_map(c.get("resources"))
    reqs = dict(as_map(res.get("requests")))
    for k, v in as_map(res.get("limits")).items():
        reqs.setdefault(k, v)
    return reqs


class _Request:
    __slots__ = ("class_name", "count", "name")

    def __init__(self, name: str, class_name: str, count: int) -> None:
        self.name = name
        self.class_name = class_name
        self.count = count

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "exactly": {"deviceClassName": self.class_name, "allocationMode": "ExactCount", "count": self.count},
        }


def _mapping(container: str, resource: str, request: str) -> dict[str, str]:
    return {"containerName": container, "resourceName": resource, "requestName": request}


def _request_and_mappings(
    index: int, container: Mapping[str, Any], resource: str, class_name: str, reusable: Sequence[_Request | None]
) -> tuple[_Request | None, list[dict[str, str]]]:
    """createResourceRequestAndMappings: the container's own request for ``resource`` beyond
    what it can take over from ``reusable`` (later long-lived containers' requests, for an init
    container), and the container's mappings."""
    creqs = _container_requests(container)
    if resource not in creqs:
        return None, []
    try:
        q = parse(creqs[resource])
    except (QuantityError, ValueError, TypeError):
        return None, []
    exact = q.exact
    if exact.denominator != 1 or exact == 0:
        return None, []  # AsInt64 fails on a fraction; a zero request asks for nothing
    want = int(exact)
    cname = str(container.get("name") or "")
    mappings: list[dict[str, str]] = []
    have = 0
    for r in reusable:
        if r is None:
            continue
        have += r.count
        mappings.append(_mapping(cname, resource, r.name))
        if have >= want:
            return None, mappings
    # The request's name is the container's index among init + regular containers and the
    # resource's index among the container's sorted request names.
    ridx = sorted(str(k) for k in creqs).index(resource)
    req = _Request(f"container-{index}-request-{ridx}", class_name, want - have)
    mappings.append(_mapping(cname, resource, req.name))
    return req, mappings


def create_requests_and_mappings(
    pod_raw: Mapping[str, Any], extended: Mapping[str, int], cache: ExtendedResourceCache
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """createRequestsAndMappings: the device requests (sorted by name) and the
    container/resource -> request mappings for the resources in ``extended``.

    Long-lived containers (regular ones and sidecars) each get their own request. An init
    container that runs to completion first takes over the requests of the long-lived
    containers after it, and asks only for the rest; of those leftovers one request per
    resource is kept, the largest, and every short-lived mapping points at it."""
    spec = as_map(pod_raw.get("spec"))
    inits = [as_map(c) for c in as_list(spec.get("initContainers"))]
    containers = inits + [as_map(c) for c in as_list(spec.get("containers"))]
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, c in enumerate(containers):
        if i < len(inits) and c.get("restartPolicy") != "Always":
            short_lived.append(i)
        else:
            long_lived.append(i)

    requests: list[_Request] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(extended):
        cls = cache.get_device_class(resource)
        if cls is None:
            continue
        long_reqs: list[_Request | None] = [None] * len(containers)
        long_maps: list[dict[str, str]] = []
        for i in long_lived:
            long_reqs[i], maps = _request_and_mappings(i, containers[i], resource, cls.name, ())
            long_maps += maps
        biggest: _Request | None = None
        short_names: set[str] = set()
        short_maps: list[dict[str, str]] = []
        for i in short_lived:
            req, maps = _request_and_mappings(i, containers[i], resource, cls.name, long_reqs[i:])
            if req is not None:
                short_names.add(req.name)
                if biggest is None or biggest.count < req.count:
                    biggest = req
            short_maps += maps
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            for m in short_maps:
                if m["requestName"] in short_names:
                    m["requestName"] = biggest.name
        if biggest is not None:
            requests.append(biggest)
        requests += [r for r in long_reqs if r is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda r: r.name)
    return [r.as_dict() for r in requests], mappings
