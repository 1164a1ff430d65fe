"""VolumeBinding's PreBind writes against the API server (upstream volumebinding/binder.go,
bindAPIUpdate): an Update (PUT) of each PersistentVolume the scheduler pre-bound (spec.claimRef)
and of each claim it picked a node for (the selected-node annotation); DynamicResources' claim
reads and writes (with DRAExtendedResource also the creation and deletion of a pod's
extended-resource claim, and the pod's extendedResourceClaimStatus).

The body is the stored object as the binder changed it, so the Update carries the watched
resourceVersion: a PV or claim changed since fails with 409 and the pod is retried, as upstream.
Requests go through the raw transport (KubeCoreAPI's request: same credentials, TLS, Retry-After)
rather than the client's generated APIs: building those imports every model of the group,
which took over half a second of start-up on the way to the first bind. The transport blocks, so
calls run on a lane of their own (as many threads as the Bindings have: each claim pod's PreBind
makes two writes before its Binding, and kube-scheduler's binding goroutines have no cap), through
the token bucket the other writes share (one client-side rate limit, as kube-scheduler's one
clientset). Waiting for the PV controller to finish the binding reads the watched store (the
plugin's ``VolumeBinder.bind``), not the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from scheduler.live.kube.transport import STRATEGIC_MERGE_PATCH, ApiError, KubeCoreAPI, Lane

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}"


def _object(raw: bytes) -> dict[str, Any]:
    out = orjson.loads(raw)
    if not isinstance(out, dict):
        raise ApiError(0, "unexpected reply: not an object")
    return out


class KubeVolumeAPI:
    """The plugin's ``VolumeAPI`` over the raw transport: dicts in and out."""

    def __init__(self, transport: KubeCoreAPI, lane: Lane) -> None:
        self.transport = transport
        self.lane = lane

    @property
    def writes(self) -> int:
        return self.lane.writes

    async def _run(self, method: str, path: str, body: Any = None, content_type: str | None = None) -> dict[str, Any]:
        args: tuple[Any, ...] = (method, path, body) if content_type is None else (method, path, body, content_type)
        return _object(await self.lane.run(self.transport.request, *args))

    async def update_persistent_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        # Listed items carry no kind/apiVersion; the Update body names them.
        body = {**raw, "apiVersion": "v1", "kind": "PersistentVolume"}
        name = str((raw.get("metadata") or {}).get("name", ""))
        return await self._run("PUT", f"/api/v1/persistentvolumes/{name}", body)

    async def update_persistent_volume_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        body = {**raw, "apiVersion": "v1", "kind": "PersistentVolumeClaim"}
        meta = raw.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "default")
        return await self._run("PUT", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}", body)

    # DynamicResources' writes (PreBind, Unreserve, PostFilter): ResourceClaims.
    @staticmethod
    def _claim_args(raw: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        meta = raw.get("metadata") or {}
        body = {**raw, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        path = CLAIMS.format(ns=str(meta.get("namespace") or "default"), name=str(meta.get("name", "")))
        return path, body

    async def get_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        return await self._run("GET", CLAIMS.format(ns=namespace, name=name))

    async def update_resource_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        path, body = self._claim_args(raw)
        return await self._run("PUT", path, body)

    async def update_resource_claim_status(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        path, body = self._claim_args(raw)
        return await self._run("PUT", path + "/status", body)

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        path = CLAIMS.format(ns=namespace, name=name) + "/status"
        return await self._run("PATCH", path, dict(patch), STRATEGIC_MERGE_PATCH)

    # DRAExtendedResource: the claim for a pod's extended resources is created in PreBind (and
    # deleted when the attempt fails); the pod's status names it.
    async def create_resource_claim(self, namespace: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        body = {**raw, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        return await self._run("POST", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", body)

    async def delete_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        return await self._run("DELETE", CLAIMS.format(ns=namespace, name=name))

    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        return await self._run("PATCH", path, dict(patch), STRATEGIC_MERGE_PATCH)
