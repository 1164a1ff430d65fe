"""Fixtures of upstream dynamicresources_test.go v1.36.3 (pod "default/my-pod" uid 1234, node
"worker", driver "some-driver", class "my-resource-class") and a fake ResourceClaim API that
behaves like the API server plus informer: what it stores, the plugin's store sees at once."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.listers import DraStore, Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.testing.builders import MakeNode, MakePod

POD_NAME, POD_UID, NAMESPACE = "my-pod", "1234", "default"
NODE = "worker"
DRIVER, DRIVER2 = "some-driver", "some-driver-2"
CLASS = "my-resource-class"
CLAIM_NAME, CLAIM_NAME2 = "my-pod-my-resource", "my-pod-my-resource-2"
GPU, GPU2 = "example.com/gpu", "example.com/gpu2"
IMPLICIT_GPU = "deviceclass.resource.kubernetes.io/my-resource-class"
EXT_ANNOTATION = {"resource.kubernetes.io/extended-resource-claim": "true"}
POD_OWNER = {"apiVersion": "v1", "kind": "Pod", "name": POD_NAME, "uid": POD_UID, "controller": True}


def pod_with(*containers: dict[str, str], claims: tuple[str, ...] = ()) -> PodInfo:
    """st.MakePod().Req(...) per container (named con0, con1, ...) and claims by name."""
    w = MakePod().name(POD_NAME).uid(POD_UID)
    w.containers([])
    for i, req in enumerate(containers):
        w.container(req, name=f"con{i}")
    for i, c in enumerate(claims):
        w.resource_claim({"name": "my-resource" + ("" if i == 0 else f"-{i + 1}"), "resourceClaimName": c})
    return w.info()


def worker(capacity: dict[str, str] | None = None, name: str = NODE) -> NodeInfo:
    caps = {"cpu": "4", "memory": "8Gi", "pods": "110", **(capacity or {})}
    return MakeNode().name(name).capacity(caps).info()


def device_class(name: str = CLASS, ern: str | None = None, created: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {}
    if ern is not None:
        spec["extendedResourceName"] = ern
    return {"metadata": meta, "spec": spec}


def node_slice(*devices: str, node: str = NODE, driver: str = DRIVER, **device_fields: Any) -> dict[str, Any]:
    """st.MakeResourceSlice(node, driver).Device(...): pool = node name."""
    return {
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d, **device_fields} for d in devices],
        },
    }


def fabric_slice(device: str = "instance-1", driver: str = DRIVER) -> dict[str, Any]:
    """fabricSlice: a device with binding conditions, bound to the node by a node selector."""
    return {
        "metadata": {"name": f"fabric-{driver}"},
        "spec": {
            "driver": driver,
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}
                ]
            },
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": device,
                    "bindsToNode": True,
                    "bindingConditions": ["condition"],
                    "bindingFailureConditions": ["failed"],
                }
            ],
        },
    }


NODE_SELECTOR = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}


def result(request: str, device: str = "instance-1", driver: str = DRIVER, **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": driver, "pool": NODE, "device": device, **extra}


def claim(
    name: str = CLAIM_NAME,
    uid: str | None = None,
    requests: list[dict[str, Any]] | None = None,
    allocation: dict[str, Any] | None = None,
    devices: list[dict[str, Any]] | None = None,
    reserved: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid or f"uid-{name}", "resourceVersion": "1",
                     **(meta or {})},
        "spec": {
            "devices": {
                "requests": requests
                if requests is not None
                else [{"name": "req-1", "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount",
                                                    "count": 1}}]
            }
        },
    }
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = allocation
    if devices is not None:
        status["devices"] = devices
    if reserved:
        status["reservedFor"] = reserved
    if status:
        raw["status"] = status
    return raw


def ext_request(name: str, count: int = 1, cls: str = CLASS) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}}


POD_REF = {"resource": "pods", "name": POD_NAME, "uid": POD_UID}


class ApiFailure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class FakeClaimAPI:
    """The ResourceClaim (and pod status) writes of DynamicResources against an in-memory API
    server whose watch delivers to ``store`` at once. Created claims get ``generateName`` + a
    counter, as upstream's tests name them ("my-pod-extended-resources-0")."""

    def __init__(self, store: DraStore) -> None:
        self.store = store
        self.rv = 100
        self.writes: list[tuple[str, Any]] = []
        self.fail_create: str | None = None
        self.fail_pod_patch: str | None = None
        self.generated = 0
        # How the watch delivers a stored claim (the live loop's handler in loop tests).
        self.deliver: Any = store.on_event

    def _check_version(self, raw: Any) -> None:
        """An update carrying an older resourceVersion than the stored object is a conflict."""
        meta = raw["metadata"]
        cur = self.store.claims.get(f"{meta.get('namespace') or 'default'}/{meta['name']}")
        if cur is not None and meta.get("resourceVersion") != cur.resource_version:
            raise ApiFailure(409, "the object has been modified; please apply your changes to the latest version")

    def _stored(self, raw: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        out = copy.deepcopy(dict(raw))
        out["metadata"] = {**out["metadata"], "resourceVersion": str(self.rv)}
        out.pop("apiVersion", None)
        out.pop("kind", None)
        self.deliver("ResourceClaim", "MODIFIED", out)
        return out

    async def create_resource_claim(self, namespace: str, raw: Any) -> dict[str, Any]:
        self.writes.append(("create", raw))
        if self.fail_create is not None:
            raise ApiFailure(400, self.fail_create)
        meta = dict(raw["metadata"])
        meta["name"] = f"{meta['generateName']}{self.generated}"
        meta["uid"] = f"created-{self.generated}"
        self.generated += 1
        return self._stored({**raw, "metadata": meta})

    async def update_resource_claim(self, raw: Any) -> dict[str, Any]:
        self.writes.append(("update", raw))
        self._check_version(raw)
        return self._stored(raw)

    async def update_resource_claim_status(self, raw: Any) -> dict[str, Any]:
        self.writes.append(("status", raw))
        self._check_version(raw)
        return self._stored(raw)

    async def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        c = self.store.get_claim(namespace, name)
        return dict(c.raw)

    async def patch_resource_claim_status(self, namespace: str, name: str, patch: Any) -> dict[str, Any]:
        self.writes.append(("patch", patch))
        return {}

    async def delete_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        self.writes.append(("delete", f"{namespace}/{name}"))
        c = self.store.get_claim(namespace, name)
        self.deliver("ResourceClaim", "DELETED", dict(c.raw))
        return {}

    async def patch_pod_status(self, namespace: str, name: str, patch: Any) -> dict[str, Any]:
        self.writes.append(("pod-status", patch))
        if self.fail_pod_patch is not None:
            raise ApiFailure(500, self.fail_pod_patch)
        return {}

    def kinds(self) -> list[str]:
        return [k for k, _ in self.writes]

    def last(self, kind: str) -> Any:
        return [w for k, w in self.writes if k == kind][-1]


class RecordingEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, pod: PodInfo, controller: str, etype: str, reason: str, action: str, note: str) -> bool:
        self.events.append((etype, reason, action, note))
        return True


class RecordingMetrics:
    """The framework's metrics hooks DynamicResources reports to."""

    enabled = False

    def __init__(self) -> None:
        self.claims: list[str] = []
        self.bc: list[tuple[str, str, str]] = []
        self.bc_wait: list[tuple[str, str, str]] = []

    def resource_claim_created(self, status: str) -> None:
        self.claims.append(status)

    def binding_conditions(self, profile: str, driver: str, status: str) -> None:
        self.bc.append((profile, driver, status))

    def binding_conditions_wait(self, profile: str, driver: str, status: str, seconds: float) -> None:
        self.bc_wait.append((profile, driver, status))


def plugin(
    *objects: tuple[str, dict[str, Any]],
    api: bool = True,
    args: dict[str, Any] | None = None,
    events: RecordingEvents | None = None,
    **gates: bool,
) -> tuple[DynamicResources, FakeClaimAPI, RecordingMetrics]:
    """The plugin over a store holding ``objects`` ((kind, raw) pairs), its writes going to a
    FakeClaimAPI (``api`` False: offline, the store is the API)."""
    from dataclasses import replace

    from scheduler.config.features import DEFAULT_FEATURES

    listers = Listers()
    for kind, raw in objects:
        listers.dra.apply(kind, raw)
    handle = Handle(
        Snapshot(), listers, "default-scheduler", features=replace(DEFAULT_FEATURES, **gates), events=events
    )
    metrics = RecordingMetrics()
    handle.metrics = metrics  # type: ignore[assignment]
    pl = DynamicResources.new(args, handle)
    fake = FakeClaimAPI(listers.dra)
    if api:
        pl._api = fake
    return pl, fake, metrics


def cycle(pl: DynamicResources, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[CycleState, Any, dict[str, Any]]:
    """PreFilter, then Filter on each node when PreFilter let the pod through."""
    state = CycleState()
    pre = pl.pre_filter(state, pod, nodes)
    filt: dict[str, Any] = {}
    if pre is None:
        for n in nodes:
            filt[n.name] = pl.filter(state, pod, n)
    return state, pre, filt
