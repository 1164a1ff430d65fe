"""ResourceClaims from ResourceClaimTemplates, offline: the part of kube-controller-manager
that simulate stands in for."""

from __future__ import annotations

from typing import Any

from scheduler.framework.listers import DraStore
from scheduler.model.kinds import as_list, as_map, metadata


def instantiate_templates(store: DraStore, pod_raw: dict[str, Any]) -> None:
    """What kube-controller-manager's resourceclaim-controller does for a pod, offline: a claim
    for each ``resourceClaimTemplateName`` without one yet (owned by the pod, named
    ``<pod>-<claim>`` where the controller adds a random suffix), recorded in the pod's
    ``status.resourceClaimStatuses``. A missing template leaves the pod waiting, as live."""
    meta = metadata(pod_raw)
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    uid = str(meta.get("uid") or f"{ns}/{name}")
    status = pod_raw.setdefault("status", {})
    statuses: list[Any] = status.setdefault("resourceClaimStatuses", [])
    have = {str(as_map(s).get("name") or "") for s in statuses}
    for pc in as_list(as_map(pod_raw.get("spec")).get("resourceClaims")):
        pc = as_map(pc)
        tmpl_name = pc.get("resourceClaimTemplateName")
        pc_name = str(pc.get("name") or "")
        if tmpl_name is None or pc_name in have:
            continue
        tmpl = store.templates.get(f"{ns}/{tmpl_name}")
        if tmpl is None:
            continue
        claim_name = f"{name}-{pc_name}"
        store.apply(
            "ResourceClaim",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": ns,
                    "uid": f"{uid}/{pc_name}",
                    "annotations": {"resource.kubernetes.io/pod-claim-name": pc_name},
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": name,
                            "uid": uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": dict(as_map(as_map(tmpl.raw.get("spec")).get("spec"))),
            },
        )
        statuses.append({"name": pc_name, "resourceClaimName": claim_name})
    if not statuses:
        del status["resourceClaimStatuses"]
