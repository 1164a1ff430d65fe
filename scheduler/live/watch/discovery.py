"""Start-up API discovery: which of the kinds the scheduler is about to watch the cluster serves.

kube-scheduler v1.36.3 starts an informer per kind and waits for all of them to sync before it
schedules; a kind whose group/version the API server does not serve fails its LIST with 404
forever, so the binary never schedules and only its reflector's retries hint at why. pyscheduler
asks the API server first (one GET of each group/version's resource list, as ``kubectl
api-resources`` does) and refuses to start with one line naming every missing kind, its
resource and who needs it.

A kind to watch is a ``Target``: its group/version and plural. Pure functions here; the watcher
makes the requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Target = tuple[str, str]  # (group/version, plural): ("v1", "pods"), ("resource.k8s.io/v1", "resourceslices")
# group/version -> the resources it serves (subresources left out); None: not served (404).
Served = Mapping[str, frozenset[str] | None]


def group_versions(targets: Iterable[Target]) -> tuple[str, ...]:
    """The group/versions to ask about, in first-use order."""
    return tuple(dict.fromkeys(gv for gv, _ in targets))


def discovery_path(api_version: str) -> str:
    """The APIResourceList's URL: /api/v1, /apis/resource.k8s.io/v1."""
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def rbac_resource(target: Target) -> str:
    """The resource as RBAC and kubectl name it: pods, replicasets.apps, resourceslices.resource.k8s.io."""
    gv, plural = target
    group = gv.rpartition("/")[0]
    return f"{plural}.{group}" if group else plural


def resources_of(doc: Any) -> frozenset[str]:
    """The resource names of an APIResourceList (``pods``, not ``pods/status``)."""
    items = doc.get("resources") if isinstance(doc, Mapping) else None
    names = (r.get("name") for r in items or () if isinstance(r, Mapping))
    return frozenset(n for n in names if isinstance(n, str) and "/" not in n)


def unserved(targets: Mapping[str, Target], served: Served) -> list[str]:
    """The kinds whose group/version or resource the API server lacks. A group/version absent
    from ``served`` was not asked about (or could not be): not reported."""
    out = []
    for name, (gv, plural) in targets.items():
        if gv not in served:
            continue
        resources = served[gv]
        if resources is None or plural not in resources:
            out.append(name)
    return out


def unserved_message(missing: Iterable[str], targets: Mapping[str, Target], served: Served,
                     why: Callable[[str], str]) -> str:
    """One line: every missing kind with its resource, whether its whole group/version is
    missing, and who needs it (``why``)."""
    parts = []
    for name in missing:
        gv, plural = targets[name]
        where = f"{gv} is not served" if served.get(gv) is None else f"{gv} has no {plural}"
        parts.append(f"{name} ({rbac_resource(targets[name])}: {where}; needed by {why(name)})")
    return (
        "the API server does not serve kinds kube-scheduler v1.36.3 watches, so no pod could be "
        "scheduled: " + ", ".join(parts)
    )
