"""Start-up API discovery: which of the kinds the scheduler is about to watch the cluster serves.

kube-scheduler v1.36.3 starts an informer per kind and waits for all of them to sync before it
schedules; a kind whose group/version the API server does not serve fails its LIST with 404
forever, so the binary never schedules and only its reflector's retries hint at why. pyscheduler
asks the API server first (one GET of each group/version's resource list, as ``kubectl
api-resources`` does) and refuses to start with one line naming every missing kind, its
resource and who needs it.

Pure functions here; the watcher makes the requests.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from scheduler.model.kinds import KINDS, why_watched

# group/version -> the resources it serves (subresources left out); None: not served (404).
Served = Mapping[str, frozenset[str] | None]


def group_versions(kinds: Iterable[str]) -> tuple[str, ...]:
    """The group/versions to ask about, in first-use order."""
    return tuple(dict.fromkeys(KINDS[k].api_version for k in kinds))


def discovery_path(api_version: str) -> str:
    """The APIResourceList's URL: /api/v1, /apis/resource.k8s.io/v1."""
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def resources_of(doc: Any) -> frozenset[str]:
    """The resource names of an APIResourceList (``pods``, not ``pods/status``)."""
    items = doc.get("resources") if isinstance(doc, Mapping) else None
    names = (r.get("name") for r in items or () if isinstance(r, Mapping))
    return frozenset(n for n in names if isinstance(n, str) and "/" not in n)


def unserved(kinds: Iterable[str], served: Served) -> list[str]:
    """The kinds among ``kinds`` whose group/version or resource the API server lacks. A
    group/version absent from ``served`` was not asked about (or could not be): not reported."""
    out = []
    for name in kinds:
        k = KINDS[name]
        if k.api_version not in served:
            continue
        resources = served[k.api_version]
        if resources is None or k.plural not in resources:
            out.append(name)
    return out


def unserved_message(missing: Iterable[str], served: Served, plugins: Collection[str]) -> str:
    """One line: every missing kind with its resource, whether its whole group/version is
    missing, and who needs it."""
    parts = []
    for name in missing:
        k = KINDS[name]
        where = (f"{k.api_version} is not served" if served.get(k.api_version) is None
                 else f"{k.api_version} has no {k.plural}")
        parts.append(f"{name} ({k.resource}: {where}; needed by {why_watched(name, plugins)})")
    return (
        "the API server does not serve kinds kube-scheduler v1.36.3 watches, so no pod could be "
        "scheduled: " + ", ".join(parts)
    )
