"""Builders for raw Kubernetes dicts; they go through the model as in production (upstream:
pkg/scheduler/testing's st.MakePod()/st.MakeNode() wrappers).

``MakePod()`` and ``MakeNode()`` return fluent wrappers: ``.obj()`` gives the raw dict, ``.info()``
the parsed PodInfo/NodeInfo. ``make_pod``/``make_node`` are the keyword forms of the same builders.
A fresh wrapper builds what ``make_pod()``/``make_node()`` build: pod "default/p" with one "pause"
container; node "n" with 4 CPUs, 32Gi and 110 pods, labelled with its hostname."""

from __future__ import annotations

import copy
from typing import Any, Self

from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


class _Wrapper:
    """What pod and node wrappers share: a name, labels, status fields and the setters for them."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._labels: dict[str, str] = {}
        self._spec: dict[str, Any] = {}
        self._status: dict[str, Any] = {}

    def name(self, name: str) -> Self:
        self._name = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._labels[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._labels.update(labels)
        return self

    def status(self, **fields: Any) -> Self:
        self._status.update(fields)
        return self


class PodWrapper(_Wrapper):
    """A Pod under construction; every setter returns the wrapper."""

    def __init__(self) -> None:
        super().__init__("p")
        self._namespace = "default"
        self._uid: str | None = None
        self._annotations: dict[str, str] = {}
        self._owner: tuple[str, str] | None = None
        self._creation: str | None = None
        self._deleting = False
        self._containers: list[dict[str, Any]] | None = None  # None: one "pause" container
        self._init_containers: list[dict[str, Any]] = []
        # self._spec: fields set as given, in the order make_pod always used; then these:
        self._extra: dict[str, Any] = {}

    # -- metadata --------------------------------------------------------------------------------
    def namespace(self, namespace: str) -> Self:
        self._namespace = namespace
        return self

    def uid(self, uid: str) -> Self:
        """Defaults to ``uid-<namespace>-<name>``."""
        self._uid = uid
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._annotations[key] = value
        return self

    def owner_reference(self, kind: str, name: str) -> Self:
        """A controller reference with uid ``uid-<name>``."""
        self._owner = (kind, name)
        return self

    def creation_timestamp(self, ts: str) -> Self:
        self._creation = ts
        return self

    def terminating(self) -> Self:
        self._deleting = True
        return self

    # -- containers ------------------------------------------------------------------------------
    def container(self, requests: dict[str, Any] | None = None, *, image: str = "pause", name: str | None = None,
                  init: bool = False, **fields: Any) -> Self:
        """Appends a container ``c<i>`` (``init``: an init container ``i<i>``; with
        ``restartPolicy="Always"`` a sidecar). Empty ``requests`` leave ``resources`` out."""
        cs = self._init_containers if init else self._containers
        if cs is None:
            cs = self._containers = []
        cs.append(_container(f"{'i' if init else 'c'}{len(cs)}", requests, image, name, fields))
        return self

    def req(self, *requests: dict[str, Any]) -> Self:
        """A container for each request map, as upstream's Req (one container per call)."""
        for r in requests:
            self.container(r)
        return self

    def init_req(self, *requests: dict[str, Any]) -> Self:
        for r in requests:
            self.container(r, init=True)
        return self

    def containers(self, containers: list[dict[str, Any]], *, init: bool = False) -> Self:
        """Exactly these containers (``[]``: none)."""
        if init:
            self._init_containers = list(containers)
        else:
            self._containers = list(containers)
        return self

    def host_port(self, port: int, protocol: str | None = None, host_ip: str | None = None) -> Self:
        """A hostPort on the first container (added if there is none)."""
        if not self._containers:
            self.container()
        assert self._containers is not None
        p: dict[str, Any] = {"containerPort": port, "hostPort": port}
        if protocol is not None:
            p["protocol"] = protocol
        if host_ip is not None:
            p["hostIP"] = host_ip
        self._containers[0].setdefault("ports", []).append(p)
        return self

    # -- spec ------------------------------------------------------------------------------------
    def node(self, name: str) -> Self:
        """Bound to node ``name``; "" leaves the pod unbound."""
        if not name:
            self._spec.pop("nodeName", None)
            return self
        return self._set("nodeName", name)

    def priority(self, value: int) -> Self:
        return self._set("priority", value)

    def scheduler_name(self, name: str) -> Self:
        return self._set("schedulerName", name)

    def node_selector(self, selector: dict[str, str]) -> Self:
        return self._set("nodeSelector", selector)

    def affinity(self, affinity: dict[str, Any]) -> Self:
        return self._set("affinity", affinity)

    def toleration(self, *tolerations: dict[str, Any] | list[dict[str, Any]]) -> Self:
        """Appends tolerations (each given alone or in a list)."""
        _extend(self._spec, "tolerations", _flat(tolerations))
        return self

    def spread_constraint(self, *constraints: dict[str, Any] | list[dict[str, Any]]) -> Self:
        """Appends topologySpreadConstraints (each given alone or in a list)."""
        _extend(self._spec, "topologySpreadConstraints", _flat(constraints))
        return self

    def overhead(self, resources: dict[str, Any]) -> Self:
        return self._set("overhead", resources)

    def res(self, resources: dict[str, Any]) -> Self:
        """Pod-level resources (spec.resources: {"requests": ..., "limits": ...})."""
        return self._set("resources", resources)

    def scheduling_gates(self, gates: list[str]) -> Self:
        self._spec["schedulingGates"] = [{"name": g} for g in gates]
        return self

    def volume(self, *volumes: dict[str, Any]) -> Self:
        _extend(self._extra, "volumes", list(volumes))
        return self

    def pvc(self, claim: str) -> Self:
        """A volume named after the claim it mounts (upstream PVC)."""
        return self.volume({"name": claim, "persistentVolumeClaim": {"claimName": claim}})

    def resource_claim(self, *claims: dict[str, Any]) -> Self:
        """spec.resourceClaims entries ({"name": ..., "resourceClaimName"|"resourceClaimTemplateName": ...})."""
        _extend(self._extra, "resourceClaims", list(claims))
        return self

    def spec(self, **fields: Any) -> Self:
        """Any other spec field, as given."""
        self._extra.update(fields)
        return self

    def _set(self, key: str, value: Any) -> Self:
        self._spec[key] = value
        return self

    # -- status ----------------------------------------------------------------------------------
    def phase(self, phase: str) -> Self:
        return self.status(phase=phase)

    def nominated_node_name(self, name: str) -> Self:
        return self.status(nominatedNodeName=name)

    def start_time(self, ts: str) -> Self:
        return self.status(startTime=ts)

    # -- results ---------------------------------------------------------------------------------
    def obj(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": self._name,
            "namespace": self._namespace,
            "uid": self._uid or f"uid-{self._namespace}-{self._name}",
        }
        if self._labels:
            meta["labels"] = dict(self._labels)
        if self._annotations:
            meta["annotations"] = dict(self._annotations)
        if self._owner:
            kind, name = self._owner
            meta["ownerReferences"] = [{"kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}]
        if self._creation:
            meta["creationTimestamp"] = self._creation
        if self._deleting:
            meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        containers = self._containers if self._containers is not None else [{"name": "c0", "image": "pause"}]
        spec: dict[str, Any] = {"containers": containers}
        if self._init_containers:
            spec["initContainers"] = self._init_containers
        spec.update(self._spec)
        spec.update(self._extra)
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if self._status:
            pod["status"] = dict(self._status)
        return pod

    def info(self) -> PodInfo:
        return PodInfo(self.obj())


def _container(default_name: str, requests: dict[str, Any] | None, image: str, name: str | None,
               fields: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name or default_name, "image": image}
    if requests:
        c["resources"] = {"requests": dict(requests)}
    c.update(fields)
    return c


class NodeWrapper(_Wrapper):
    """A Node under construction; every setter returns the wrapper. Its name is also its
    ``kubernetes.io/hostname`` label, unless ``no_hostname_label``."""

    def __init__(self) -> None:
        super().__init__("n")
        self._capacity: dict[str, Any] = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        self._hostname_label = True
        self._zone: str | None = None
        self._images: list[dict[str, Any]] = []

    def no_hostname_label(self) -> Self:
        """Only the labels given (upstream's MakeNode().Name() sets no hostname label)."""
        self._hostname_label = False
        return self

    def zone(self, zone: str) -> Self:
        """The ``topology.kubernetes.io/zone`` label."""
        self._zone = zone
        return self

    def capacity(self, resources: dict[str, Any]) -> Self:
        """Capacity and allocatable both become exactly ``resources`` (an absent resource is 0)."""
        self._capacity = dict(resources)
        return self

    def taints(self, taints: list[dict[str, Any]]) -> Self:
        self._spec["taints"] = list(taints)
        return self

    def unschedulable(self) -> Self:
        self._spec["unschedulable"] = True
        return self

    def image(self, names: list[str], size_bytes: int) -> Self:
        self._images.append({"names": list(names), "sizeBytes": size_bytes})
        return self

    def declared_features(self, features: list[str]) -> Self:
        return self.status(declaredFeatures=features)

    def obj(self) -> dict[str, Any]:
        lbl: dict[str, str] = {HOSTNAME: self._name} if self._hostname_label else {}
        if self._zone:
            lbl[ZONE] = self._zone
        lbl.update(self._labels)
        status: dict[str, Any] = {"allocatable": dict(self._capacity), "capacity": dict(self._capacity)}
        if self._images:
            status["images"] = list(self._images)
        status.update(self._status)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self._name, "labels": lbl},
            "spec": dict(self._spec),
            "status": status,
        }

    def info(self, *pods: dict[str, Any] | PodInfo) -> NodeInfo:
        """The NodeInfo, holding ``pods`` (raw or parsed)."""
        return node_info(self.obj(), *pods)


def MakePod() -> PodWrapper:  # upstream st.MakePod()
    return PodWrapper()


def MakeNode() -> NodeWrapper:  # upstream st.MakeNode()
    return NodeWrapper()


def make_pod(
    name: str = "p",
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    scheduler_name: str | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    host_ports: list[int | tuple[int, str, str]] | None = None,
    images: list[str] | None = None,
    spread: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
    pod_resources: dict[str, Any] | None = None,
    owner: tuple[str, str] | None = None,
    uid: str | None = None,
    creation: str | None = None,
    gates: list[str] | None = None,
    deleting: bool = False,
    phase: str | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """``MakePod()`` by keywords. ``cpu``/``memory``/``requests``, ``host_ports`` and the first of
    ``images`` go on one container (the others get a container each); ``containers`` replaces them."""
    w = MakePod().name(name).namespace(namespace)
    if containers is not None:
        if cpu or memory or requests or host_ports or images:
            raise ValueError("make_pod: containers= replaces cpu/memory/requests/host_ports/images")
        w.containers(containers)
    else:
        w.container({**(requests or {}), **_given(cpu=cpu, memory=memory)}, image=(images or ["pause"])[0])
        for hp in host_ports or []:
            if isinstance(hp, tuple):
                w.host_port(*hp)
            else:
                w.host_port(hp)
        for img in (images or [])[1:]:
            w.container(image=img)
    # In the order the fields have always appeared in the dict.
    if init_containers:
        w.containers(init_containers, init=True)
    _apply(w, uid=uid, labels=labels, creation_timestamp=creation,
           node=node_name, priority=priority, scheduler_name=scheduler_name, node_selector=node_selector,
           affinity=affinity, toleration=tolerations, spread_constraint=spread, overhead=overhead,
           res=pod_resources, scheduling_gates=gates, phase=phase)
    if owner:
        w.owner_reference(*owner)
    if deleting:
        w.terminating()
    return w.spec(**spec_extra).obj()


def make_node(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    ephemeral: str | None = None,
    extra: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    images: list[tuple[list[str], int]] | None = None,
    zone: str | None = None,
) -> dict[str, Any]:
    """``MakeNode()`` by keywords; ``cpu``/``memory``/``pods``/``ephemeral``/``extra`` make its capacity."""
    w = MakeNode().name(name).capacity(
        {"cpu": cpu, "memory": memory, "pods": str(pods), **_given(**{"ephemeral-storage": ephemeral}), **(extra or {})}
    )
    _apply(w, zone=zone, labels=labels, taints=taints)
    if unschedulable:
        w.unschedulable()
    for names, size in images or []:
        w.image(names, size)
    return w.obj()


def _extend(fields: dict[str, Any], key: str, items: list[dict[str, Any]]) -> None:
    """Appends to the list at ``key``; nothing appended leaves the field out."""
    if items:
        fields.setdefault(key, []).extend(items)


def _flat(items: tuple[dict[str, Any] | list[dict[str, Any]], ...]) -> list[dict[str, Any]]:
    return [x for item in items for x in (item if isinstance(item, list) else [item])]


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _apply(w: _Wrapper, **setters: Any) -> None:
    """Calls ``w.<setter>(value)`` for every value given (not None, not empty)."""
    for setter, value in setters.items():
        if value is not None and value != "" and value != {} and value != []:
            getattr(w, setter)(value)


def make_resource_node(
    name: str, milli_cpu: int, memory: int, extended: dict[str, int] | None = None
) -> dict[str, Any]:
    """The noderesources tests' node (upstream test_util.go makeNode): CPU in milli, memory in
    bytes, 100 pods, extended resources by count."""
    res = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "100"}
    res.update({k: str(v) for k, v in (extended or {}).items()})
    return MakeNode().name(name).capacity(res).obj()


def make_namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def with_resource_version(raw: dict[str, Any], version: int) -> dict[str, Any]:
    """A deep copy of ``raw`` at metadata.resourceVersion ``version``, as a watch would deliver it."""
    out = copy.deepcopy(raw)
    out["metadata"]["resourceVersion"] = str(version)
    return out


def pod_info(name: str = "p", namespace: str = "default", **kw: Any) -> PodInfo:
    """``make_pod(...)`` parsed."""
    return PodInfo(make_pod(name, namespace, **kw))


def node_info(raw: dict[str, Any], *pods: dict[str, Any] | PodInfo) -> NodeInfo:
    """A NodeInfo for ``raw`` holding ``pods`` (raw or parsed)."""
    ni = NodeInfo(raw)
    for p in pods:
        ni.add_pod(p if isinstance(p, PodInfo) else PodInfo(p))
    return ni
