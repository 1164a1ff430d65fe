"""A node plus the pods on it (upstream framework.NodeInfo), read once from its Node object, and
the images the node reports."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.model.kinds import Raw
from scheduler.model.pod import PodInfo
from scheduler.model.quantity import wrap64
from scheduler.model.resource import Resource
from scheduler.model.schema import NODE, FieldError, object_error
from scheduler.model.taints import Taint, parse_taints

# Well-known node labels.
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"


@dataclass(slots=True)
class ImageState:
    size: int
    num_nodes: int = 0


def node_image_entries(raw: Raw | None) -> list[tuple[str, int]]:
    """(name, sizeBytes) for every name of every status.images entry, in status order."""
    if raw is None:
        return []
    out: list[tuple[str, int]] = []
    for img in (raw.get("status") or {}).get("images") or []:
        size = int(img.get("sizeBytes") or 0)
        out.extend((str(n), size) for n in img.get("names") or [])
    return out


# Pods on a node from which its removals look pods up by uid instead of scanning.
POSITIONS_FROM = 64


class NodeInfo:
    """A node plus the aggregate of the pods on it (upstream framework.NodeInfo)."""

    __slots__ = (
        "_pos",
        "allocatable",
        "declared_features",
        "generation",
        "image_sizes",
        "image_states",
        "index",
        "labels",
        "name",
        "non0_cpu",
        "non0_mem",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "raw",
        "requested",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, raw: Raw | None = None, name: str = "") -> None:
        self.raw: Raw | None = raw
        self.pods: list[PodInfo] = []
        # uid -> position in ``pods``, made at the first removal from a node holding many pods
        # (one node can hold thousands: each removal scanned them all, one rich comparison per
        # pod at Python speed) and kept up to date from then on.
        self._pos: dict[str, int] | None = None
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.requested = Resource()
        self.non0_cpu = 0
        self.non0_mem = 0
        self.used_ports: dict[tuple[str, int], set[str]] = {}
        self.generation = 0
        self.index = -1  # position in the snapshot's node list
        # ImageLocality's view, image name -> (size, number of nodes holding it), as the
        # scheduler cache summarised it when this node was last snapshotted; None until then
        # (a Snapshot built without a cache fills it the way upstream NewSnapshot does).
        self.image_states: dict[str, tuple[int, int]] | None = None
        if raw is None:
            self.name = name
            self.labels: dict[str, str] = {}
            self.taints: tuple[Taint, ...] = ()
            self.unschedulable = False
            self.allocatable = Resource()
            self.image_sizes: dict[str, int] = {}
            self.declared_features: tuple[str, ...] = ()
            return
        self.set_node(raw)

    def set_node(self, raw: Raw) -> None:
        """Take a new Node object; on a bad object raise ObjectError and keep the old one."""
        try:
            meta = raw.get("metadata") or {}
            spec = raw.get("spec") or {}
            status = raw.get("status") or {}
            name = str(meta.get("name", ""))
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            taints = parse_taints(spec.get("taints"))
            # API-server defaulting: allocatable defaults to capacity.
            alloc = status.get("allocatable")
            path = "status.allocatable"
            if alloc is None:
                alloc, path = status.get("capacity"), "status.capacity"
            allocatable = Resource.from_list(alloc, path)
            # The node's own report, a later entry winning for a repeated name.
            sizes = dict(node_image_entries(raw))
            # status.declaredFeatures as published (the API keeps it sorted and unique); the
            # NodeDeclaredFeatures plugin maps it onto its feature registry.
            declared = tuple(str(f) for f in status.get("declaredFeatures") or ())
            unschedulable = spec.get("unschedulable")
            if not isinstance(unschedulable, bool | None):
                raise FieldError("spec.unschedulable", f"expected a boolean, got {unschedulable!r}")
        except Exception as exc:
            raise object_error("Node", raw, NODE, exc) from None
        self.raw = raw
        self.name = name
        self.labels = labels
        self.taints = taints
        self.unschedulable = bool(unschedulable)
        self.allocatable = allocatable
        self.image_sizes = sizes
        self.declared_features = declared

    @property
    def node_present(self) -> bool:
        return self.raw is not None

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        if self._pos is not None:
            self._pos[pod.uid] = len(self.pods) - 1
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.anti_affinity_required:
            self.pods_with_required_anti_affinity.append(pod)
        self._account(pod, 1)

    def remove_pod(self, pod: PodInfo) -> bool:
        """Remove the pod with ``pod``'s uid. As upstream's removeFromSlice, the last pod takes
        its place (the order of ``pods`` is upstream's)."""
        pods = self.pods
        pos = self._pos
        if pos is None and len(pods) >= POSITIONS_FROM:
            pos = self._pos = {p.uid: k for k, p in enumerate(pods)}
        if pos is not None:
            i = pos.pop(pod.uid, -1)
        else:
            i = next((k for k, p in enumerate(pods) if p is pod or p.uid == pod.uid), -1)
        if i < 0:
            return False
        old = pods[i]
        last = pods.pop()
        if i < len(pods):
            pods[i] = last
            if pos is not None:
                pos[last.uid] = i
        uid = old.uid
        if old.has_affinity:
            self.pods_with_affinity = [q for q in self.pods_with_affinity if q.uid != uid]
        if old.anti_affinity_required:
            self.pods_with_required_anti_affinity = [q for q in self.pods_with_required_anti_affinity if q.uid != uid]
        self._account(old, -1)
        return True

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.requested.add(pod.requests, sign)
        self.non0_cpu = wrap64(self.non0_cpu + sign * pod.non0_cpu)
        self.non0_mem = wrap64(self.non0_mem + sign * pod.non0_mem)
        for hp in pod.host_ports:
            ip = hp.host_ip or "0.0.0.0"
            k = (hp.protocol, hp.port)
            if sign > 0:
                self.used_ports.setdefault(k, set()).add(ip)
            else:
                ips = self.used_ports.get(k)
                if ips is not None:
                    ips.discard(ip)
                    if not ips:
                        del self.used_ports[k]
        self.generation += 1

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.raw = self.raw
        c.name = self.name
        c.labels = self.labels
        c.taints = self.taints
        c.unschedulable = self.unschedulable
        c.allocatable = self.allocatable
        c.image_sizes = self.image_sizes
        c.declared_features = self.declared_features
        c.image_states = self.image_states
        c.pods = list(self.pods)
        c._pos = None
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.requested = self.requested.clone()
        c.non0_cpu = self.non0_cpu
        c.non0_mem = self.non0_mem
        c.used_ports = {k: set(v) for k, v in self.used_ports.items()}
        c.generation = self.generation
        c.index = self.index
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name} pods={len(self.pods)})"
