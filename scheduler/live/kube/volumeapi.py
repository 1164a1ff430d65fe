"""VolumeBinding's PreBind writes against the API server (upstream volumebinding/binder.go,
bindAPIUpdate): an Update (PUT) of each PersistentVolume the scheduler pre-bound (spec.claimRef)
and of each claim it picked a node for (the selected-node annotation). DynamicResources' writes
of ResourceClaims (and of the pod's extendedResourceClaimStatus) go through the same client.

The body is the stored object as the binder changed it, so the Update carries the watched
resourceVersion: a PV or claim changed since fails with 409 and the pod is retried, as upstream.
The kubernetes client blocks, so calls run in the app's API executor, through the token bucket
the other writes share (one client-side rate limit, as kube-scheduler's one clientset).
Waiting for the PV controller to finish the binding reads the watched store (the plugin's
``VolumeBinder.bind``), not the API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

import orjson

from scheduler.live.kube.transport import REQUEST_TIMEOUT, ApiError, TokenBucket


def _api_error(exc: BaseException) -> ApiError:
    """The API server's Status message (what client-go's error prints), else the exception."""
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None)
    message = ""
    if body:
        try:
            message = str(orjson.loads(body).get("message") or "")
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            message = ""
    if not isinstance(status, int):
        return ApiError(0, f"{type(exc).__name__}: {exc}")
    return ApiError(status, message or str(getattr(exc, "reason", None) or exc))


class KubeVolumeAPI:
    """The plugin's ``VolumeAPI`` over the kubernetes client: raw dicts in and out."""

    def __init__(self, api_client: Any, limiter: TokenBucket, executor: Executor) -> None:
        from kubernetes import client  # the client stays at the API edge

        self.core = client.CoreV1Api(api_client)
        self.resource = client.ResourceV1Api(api_client)
        self.limiter = limiter
        self.executor = executor
        self.writes = 0

    def _call(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        try:
            # _preload_content=False: the reply as JSON bytes, no client model objects.
            resp = fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
            data = resp.read()
            resp.release_conn()
        except Exception as exc:
            raise _api_error(exc) from exc
        out = orjson.loads(data)
        if not isinstance(out, dict):
            raise ApiError(0, "unexpected reply: not an object")
        return out

    async def _run(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        await self.limiter.take()
        self.writes += 1
        return await asyncio.get_running_loop().run_in_executor(self.executor, self._call, fn, *args)

    async def update_persistent_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        # Listed items carry no kind/apiVersion; the Update body names them.
        body = {**raw, "apiVersion": "v1", "kind": "PersistentVolume"}
        name = str((raw.get("metadata") or {}).get("name", ""))
        return await self._run(self.core.replace_persistent_volume, name, body)

    async def update_persistent_volume_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        body = {**raw, "apiVersion": "v1", "kind": "PersistentVolumeClaim"}
        meta = raw.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "default")
        return await self._run(self.core.replace_namespaced_persistent_volume_claim, name, namespace, body)

    # DynamicResources' writes (PreBind, Unreserve, PostFilter): ResourceClaims.
    @staticmethod
    def _claim_args(raw: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
        meta = raw.get("metadata") or {}
        body = {**raw, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        return str(meta.get("name", "")), str(meta.get("namespace") or "default"), body

    async def get_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        return await self._run(self.resource.read_namespaced_resource_claim, name, namespace)

    async def update_resource_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._run(self.resource.replace_namespaced_resource_claim, *self._claim_args(raw))

    async def update_resource_claim_status(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._run(self.resource.replace_namespaced_resource_claim_status, *self._claim_args(raw))

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        def call(*args: Any, **kw: Any) -> Any:
            kw["_content_type"] = "application/strategic-merge-patch+json"
            return self.resource.patch_namespaced_resource_claim_status(*args, **kw)

        return await self._run(call, name, namespace, dict(patch))

    # DRAExtendedResource: the claim for a pod's extended resources is created in PreBind (and
    # deleted when the attempt fails); the pod's status names it.
    async def create_resource_claim(self, namespace: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        body = {**raw, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        return await self._run(self.resource.create_namespaced_resource_claim, namespace, body)

    async def delete_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        return await self._run(self.resource.delete_namespaced_resource_claim, name, namespace)

    async def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        def call(*args: Any, **kw: Any) -> Any:
            kw["_content_type"] = "application/strategic-merge-patch+json"
            return self.core.patch_namespaced_pod_status(*args, **kw)

        return await self._run(call, name, namespace, dict(patch))
