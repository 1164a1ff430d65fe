"""Seeded random scenarios: a cluster (nodes, namespaces, Services/ReplicaSets, bound pods) and
a list of pending pods, all valid for the API server.

Every pending pod is a random mix of the features the implemented plugins read; ``features``
on each generated pod names what it exercises, so a run can report coverage. The vocabulary
is small on purpose: label values, taints and images must collide often enough that filters
reject nodes and scores differ.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from e2e.support.objects import make_node

Obj = dict[str, Any]

ZONES = ("z1", "z2", "z3")
RACK_KEY = "example.com/rack"
ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"
TOPOLOGY_KEYS = (ZONE_KEY, HOST_KEY, RACK_KEY)
GPU = "example.com/gpu"
RUNTIME_CLASS = "pyscheduler-differential"
# On every generated node and namespace, so a later run can sweep what a killed one left.
MARK = "pyscheduler.io/differential"
# The one node-declared feature a pod can require at scheduling time with v1.36.3's default
# gates: a container restart rule with action RestartAllContainers.
RESTART_ALL = "RestartAllContainersOnContainerExits"
RUNTIME_OVERHEAD = {"cpu": "250m", "memory": "120Mi"}

# name -> (names the node reports, nominal size in bytes); pods use the first spelling below.
IMAGES: dict[str, tuple[list[str], int]] = {
    "nginx:1.27": (["docker.io/library/nginx:1.27"], 70 * 2**20),
    "redis:7": (["docker.io/library/redis:7"], 140 * 2**20),
    "registry.example/big/ml:2": (["registry.example/big/ml:2"], 1400 * 2**20),
    "registry.example/app/api:v3": (["registry.example/app/api:v3"], 420 * 2**20),
    "quay.io/tools/sidecar:1": (["quay.io/tools/sidecar:1"], 35 * 2**20),
    "busybox": (["docker.io/library/busybox:latest"], 4 * 2**20),
    "registry.example/data/model:7": (["registry.example/data/model:7"], 900 * 2**20),
}
POD_LABELS = {"app": ("web", "db", "cache"), "tier": ("front", "back"), "ver": ("v1", "v2")}
NS_LABELS = {"team": ("red", "blue"), "env": ("prod", "dev")}
TAINTS = (
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "PreferNoSchedule"},
    {"key": "spot", "effect": "PreferNoSchedule"},
    {"key": "maint", "value": "soon", "effect": "NoExecute"},
    {"key": "example.com/flaky", "value": "yes", "effect": "PreferNoSchedule"},
)


@dataclass
class Scenario:
    seed: int
    prefix: str
    scheduler_name: str
    namespaces: list[Obj] = field(default_factory=list)
    # Services, and ReplicaSets/StatefulSets/RCs that select pods they do not own (the binary
    # must ignore those for default spreading, and so must simulate).
    owners: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    bound_pods: list[Obj] = field(default_factory=list)
    pending_pods: list[Obj] = field(default_factory=list)
    features: Counter[str] = field(default_factory=Counter)

    @property
    def namespace_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.namespaces]

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]


def runtime_class() -> Obj:
    """The RuntimeClass whose overhead the RuntimeClass admission plugin copies into pods."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": RUNTIME_CLASS},
        "handler": "runc",
        "overhead": {"podFixed": dict(RUNTIME_OVERHEAD)},
    }


def _milli(v: int) -> str:
    return f"{v}m"


def _mi(v: int) -> str:
    return f"{v}Mi"


class _Gen:
    def __init__(self, seed: int, prefix: str, scheduler_name: str) -> None:
        self.r = random.Random(seed)
        # Separate stream for NodeDeclaredFeatures, so adding it left every other draw alone.
        self.r_ndf = random.Random(seed * 104729 + 3)
        self.sc = Scenario(seed=seed, prefix=prefix, scheduler_name=scheduler_name)
        self.pod_seq = 0

    # -- cluster ---------------------------------------------------------------------------

    def namespaces(self) -> None:
        r = self.r
        for suffix in ("a", "b", "c"):
            labels = {k: r.choice(v) for k, v in NS_LABELS.items() if r.random() < 0.8}
            self.sc.namespaces.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": f"{self.sc.prefix}-{suffix}", "labels": {**labels, MARK: "true"}},
                }
            )

    def owners(self) -> None:
        r = self.r
        for i, ns in enumerate(self.sc.namespace_names):
            if r.random() < 0.6:
                sel = {"app": r.choice(POD_LABELS["app"])}
                self.sc.owners.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "metadata": {"name": f"svc{i}", "namespace": ns},
                        "spec": {"selector": sel, "ports": [{"port": 80, "targetPort": 8080}]},
                    }
                )
            if r.random() < 0.5:
                sel = {"app": r.choice(POD_LABELS["app"]), "tier": r.choice(POD_LABELS["tier"])}
                self.sc.owners.append(
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "metadata": {"name": f"rs{i}", "namespace": ns},
                        "spec": {
                            "replicas": 0,
                            "selector": {"matchLabels": sel},
                            "template": {
                                "metadata": {"labels": sel},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                            },
                        },
                    }
                )

        for i, ns in enumerate(self.sc.namespace_names):
            # Rarer selector owners that default spreading also reads.
            if r.random() < 0.2:
                sel = {"tier": r.choice(POD_LABELS["tier"])}
                template = {"metadata": {"labels": sel}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
                if r.random() < 0.5:
                    self.sc.owners.append(
                        {
                            "apiVersion": "apps/v1",
                            "kind": "StatefulSet",
                            "metadata": {"name": f"ss{i}", "namespace": ns},
                            "spec": {
                                "replicas": 0,
                                "serviceName": "none",
                                "selector": {"matchLabels": sel},
                                "template": template,
                            },
                        }
                    )
                else:
                    self.sc.owners.append(
                        {
                            "apiVersion": "v1",
                            "kind": "ReplicationController",
                            "metadata": {"name": f"rc{i}", "namespace": ns},
                            "spec": {"replicas": 0, "selector": sel, "template": template},
                        }
                    )

    def nodes(self) -> None:
        r = self.r
        count = r.randint(4, 8) if r.random() < 0.8 else r.randint(9, 12)
        for i in range(count):
            # Zero-padded: name order is creation order (see runner.run_seed).
            name = f"{self.sc.prefix}-n{i:02d}"
            labels: dict[str, str] = {MARK: "true"}
            if r.random() < 0.7:
                labels["example.com/disk"] = r.choice(("ssd", "hdd"))
            if r.random() < 0.8:
                labels["example.com/tier"] = str(r.randint(1, 5))
            if r.random() < 0.75:
                labels[RACK_KEY] = r.choice(("r1", "r2", "r3"))
            if r.random() < 0.3:
                labels["example.com/gpu-node"] = "true"
            extra: dict[str, str] = {}
            if r.random() < 0.5:
                extra[GPU] = str(r.randint(0, 4))
            if r.random() < 0.6:
                extra["ephemeral-storage"] = r.choice(("10Gi", "50Gi"))
            taints = []
            if r.random() < 0.35:
                # At most one taint per key+effect, as the API server requires.
                by_key = {(t["key"], t["effect"]): dict(t) for t in r.sample(TAINTS, r.randint(1, 2))}
                taints = list(by_key.values())
            pods = r.choice((110, 110, 110, 4, 6))
            node = make_node(
                name,
                cpu=r.choice(("2", "4", "8", "3500m")),
                memory=r.choice(("4Gi", "8Gi", "16Gi", "6000Mi")),
                pods=pods,
                zone=r.choice(ZONES),
                region="region-1",
                labels=labels,
                taints=taints,
                extra_resources=extra,
                unschedulable=r.random() < 0.12,
            )
            images = []
            for ref, (names, size) in IMAGES.items():
                if r.random() < 0.35:
                    # The same image with a different size on another node: kube-scheduler keeps
                    # the size of whichever node reported it first.
                    if r.random() < 0.3:
                        size = int(size * r.choice((0.5, 1.5, 2.0)))
                    spell = list(names)
                    if r.random() < 0.5:
                        digest = format(zlib.crc32(ref.encode()), "08x") * 8
                        spell.append(f"{names[0].rsplit(':', 1)[0]}@sha256:{digest}")
                    images.append({"names": spell, "sizeBytes": size})
            if images:
                node["status"]["images"] = images
            if self.r_ndf.random() < 0.5:
                node["status"]["declaredFeatures"] = [RESTART_ALL]
            self.sc.nodes.append(node)

    # -- pods --------------------------------------------------------------------------------

    def _labels(self) -> dict[str, str]:
        r = self.r
        return {k: r.choice(v) for k, v in POD_LABELS.items() if r.random() < 0.7}

    def _selector(self, allow_empty: bool = True) -> Obj:
        r = self.r
        k = r.choice(list(POD_LABELS))
        roll = r.random()
        if roll < 0.5:
            return {"matchLabels": {k: r.choice(POD_LABELS[k])}}
        op = r.choice(("In", "NotIn", "Exists", "DoesNotExist"))
        expr: Obj = {"key": k, "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = r.sample(POD_LABELS[k], r.randint(1, len(POD_LABELS[k])))
        sel: Obj = {"matchExpressions": [expr]}
        if roll > 0.9 and allow_empty:
            return {}
        return sel

    def _container(self, name: str, feats: set[str], big: bool = False) -> Obj:
        r = self.r
        c: Obj = {"name": name, "image": r.choice(list(IMAGES))}
        res: Obj = {}
        if r.random() < 0.85:
            req: dict[str, str] = {}
            if r.random() < 0.9:
                req["cpu"] = _milli(r.choice((50, 100, 200, 250, 500, 1000)) * (3 if big else 1))
            if r.random() < 0.85:
                req["memory"] = _mi(r.choice((64, 128, 256, 512, 1024)) * (3 if big else 1))
            if r.random() < 0.06:
                req["ephemeral-storage"] = r.choice(("1Gi", "1Gi", "20Gi"))
                feats.add("ephemeral-storage")
            if req:
                res["requests"] = req
            if req and r.random() < 0.25:
                res["limits"] = dict(req)
        if r.random() < 0.07:
            n = str(r.randint(1, 2))
            res.setdefault("requests", {})[GPU] = n
            res.setdefault("limits", {})[GPU] = n
            feats.add("extended-resource")
        if res:
            c["resources"] = res
        return c

    def _node_term(self, feats: set[str]) -> Obj:
        r = self.r
        exprs = []
        for _ in range(r.randint(1, 2)):
            op = r.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
            feats.add(f"node-affinity-{op}")
            if op in ("Gt", "Lt"):
                exprs.append({"key": "example.com/tier", "operator": op, "values": [str(r.randint(1, 5))]})
                continue
            key = r.choice(("example.com/disk", ZONE_KEY, RACK_KEY, "example.com/gpu-node"))
            vals = {
                "example.com/disk": ("ssd", "hdd"),
                ZONE_KEY: ZONES,
                RACK_KEY: ("r1", "r2", "r3"),
                "example.com/gpu-node": ("true",),
            }[key]
            e: Obj = {"key": key, "operator": op}
            if op in ("In", "NotIn"):
                e["values"] = r.sample(vals, r.randint(1, len(vals)))
            exprs.append(e)
        term: Obj = {"matchExpressions": exprs}
        if r.random() < 0.15:
            feats.add("node-affinity-matchFields")
            term["matchFields"] = [
                {
                    "key": "metadata.name",
                    "operator": r.choice(("In", "NotIn")),
                    "values": [r.choice(self.sc.node_names)],
                }
            ]
        return term

    def _affinity_term(self, feats: set[str], own_labels: dict[str, str]) -> Obj:
        r = self.r
        term: Obj = {"topologyKey": r.choice(TOPOLOGY_KEYS), "labelSelector": self._selector()}
        roll = r.random()
        if roll < 0.25:
            term["namespaces"] = r.sample(self.sc.namespace_names, r.randint(1, 2))
            feats.add("affinity-namespaces")
        elif roll < 0.5:
            k = r.choice(list(NS_LABELS))
            term["namespaceSelector"] = r.choice(({}, {"matchLabels": {k: r.choice(NS_LABELS[k])}}))
            feats.add("affinity-namespaceSelector")
        used = set(term["labelSelector"].get("matchLabels", {})) | {
            e["key"] for e in term["labelSelector"].get("matchExpressions", [])
        }
        free = [k for k in own_labels if k not in used]
        if free and r.random() < 0.2:
            term["matchLabelKeys" if r.random() < 0.5 else "mismatchLabelKeys"] = [r.choice(free)]
            feats.add("affinity-matchLabelKeys")
        return term

    def _pod_affinity(self, feats: set[str], labels: dict[str, str], bound: bool) -> Obj:
        r = self.r
        aff: Obj = {}
        for kind in ("podAffinity", "podAntiAffinity"):
            if r.random() >= 0.5:
                continue
            part: Obj = {}
            if r.random() < (0.3 if bound else 0.35):
                part["requiredDuringSchedulingIgnoredDuringExecution"] = [self._affinity_term(feats, labels)]
                feats.add(f"{kind}-required")
            if r.random() < 0.6:
                part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.randint(1, 100), "podAffinityTerm": self._affinity_term(feats, labels)}
                    for _ in range(r.randint(1, 2))
                ]
                feats.add(f"{kind}-preferred")
            if part:
                aff[kind] = part
        return aff

    def _spread(self, feats: set[str], labels: dict[str, str]) -> list[Obj]:
        r = self.r
        out = []
        keys = r.sample(TOPOLOGY_KEYS, r.randint(1, 2))
        for key in keys:
            c: Obj = {
                "maxSkew": r.randint(1, 3),
                "topologyKey": key,
                "whenUnsatisfiable": r.choice(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": self._selector(allow_empty=False) or {"matchLabels": {"app": "web"}},
            }
            feats.add(f"spread-{c['whenUnsatisfiable']}")
            if c["whenUnsatisfiable"] == "DoNotSchedule" and r.random() < 0.5:
                c["minDomains"] = r.randint(1, 5)
                feats.add("spread-minDomains")
            if r.random() < 0.3:
                c["nodeAffinityPolicy"] = r.choice(("Honor", "Ignore"))
                feats.add("spread-nodeAffinityPolicy")
            if r.random() < 0.3:
                c["nodeTaintsPolicy"] = r.choice(("Honor", "Ignore"))
                feats.add("spread-nodeTaintsPolicy")
            used = set(c["labelSelector"].get("matchLabels", {})) | {
                e["key"] for e in c["labelSelector"].get("matchExpressions", [])
            }
            free = [k for k in labels if k not in used]
            if free and r.random() < 0.25:
                c["matchLabelKeys"] = [r.choice(free)]
                feats.add("spread-matchLabelKeys")
            out.append(c)
        return out

    def _tolerations(self, feats: set[str]) -> list[Obj]:
        r = self.r
        out: list[Obj] = []
        for _ in range(r.randint(1, 3)):
            roll = r.random()
            if roll < 0.1:
                out.append({"operator": "Exists"})  # tolerates every taint
                feats.add("toleration-exists-all")
                continue
            t = dict(r.choice(TAINTS))
            if roll < 0.4:
                tol: Obj = {"key": t["key"], "operator": "Exists"}
                feats.add("toleration-exists")
            else:
                tol = {"key": t["key"], "operator": "Equal", "value": r.choice((t.get("value", ""), "other"))}
                feats.add("toleration-equal")
            if r.random() < 0.7:
                tol["effect"] = t["effect"]
            if tol.get("effect") == "NoExecute" and r.random() < 0.5:
                tol["tolerationSeconds"] = 60
            out.append(tol)
        if r.random() < 0.3:
            out.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
            feats.add("toleration-unschedulable")
        return out

    def pod(self, namespace: str, bound_to: str | None = None) -> Obj:
        r = self.r
        self.pod_seq += 1
        name = f"p{self.pod_seq}" if bound_to is None else f"b{self.pod_seq}"
        feats: set[str] = set()
        labels = self._labels()
        containers = [self._container(f"c{i}", feats) for i in range(r.choice((1, 1, 2, 3)))]
        spec: Obj = {"containers": containers, "terminationGracePeriodSeconds": 0}
        if bound_to is None:
            spec["schedulerName"] = self.sc.scheduler_name
        else:
            spec["nodeName"] = bound_to
        if r.random() < 0.3:
            inits = []
            for i in range(r.randint(1, 2)):
                c = self._container(f"i{i}", feats, big=r.random() < 0.3)
                if r.random() < 0.5:
                    c["restartPolicy"] = "Always"
                    feats.add("sidecar")
                else:
                    feats.add("init-container")
                inits.append(c)
            spec["initContainers"] = inits
        if r.random() < 0.15:
            spec["runtimeClassName"] = RUNTIME_CLASS
            feats.add("overhead")
        if r.random() < 0.15:
            # Pod-level requests at least the containers' aggregate (API validation).
            cpu = sum(_req_milli(c, "cpu") for c in containers + spec.get("initContainers", []))
            mem = sum(_req_mi(c, "memory") for c in containers + spec.get("initContainers", []))
            spec["resources"] = {
                "requests": {"cpu": _milli(cpu + r.choice((0, 100, 1000))), "memory": _mi(mem + r.choice((0, 256)))}
            }
            for c in containers + spec.get("initContainers", []):
                # Container limits must not exceed pod-level limits; keep containers limit-free.
                lim = c.get("resources", {}).get("limits")
                if lim:
                    lim.pop("cpu", None)
                    lim.pop("memory", None)
            feats.add("pod-level-resources")
        if r.random() < 0.2:
            port = r.choice((8080, 8081, 9000))
            p: Obj = {"containerPort": port, "hostPort": port, "protocol": r.choice(("TCP", "TCP", "UDP"))}
            if r.random() < 0.3:
                p["hostIP"] = r.choice(("127.0.0.1", "0.0.0.0"))
            containers[0]["ports"] = [p]
            feats.add("host-port")
        if r.random() < 0.15:
            ref = r.choice(list(IMAGES))
            spec["volumes"] = [{"name": "imgvol", "image": {"reference": ref, "pullPolicy": "IfNotPresent"}}]
            containers[0]["volumeMounts"] = [{"name": "imgvol", "mountPath": "/data"}]
            feats.add("image-volume")
        if bound_to is None and self.r_ndf.random() < 0.1:
            containers[-1]["restartPolicy"] = "Never"
            containers[-1]["restartPolicyRules"] = [
                {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
            ]
            feats.add("node-declared-features")
        if bound_to is None:
            if r.random() < 0.3:
                key = r.choice(("example.com/disk", ZONE_KEY, "example.com/gpu-node"))
                spec["nodeSelector"] = {
                    key: r.choice(
                        {"example.com/disk": ("ssd", "hdd"), ZONE_KEY: ZONES, "example.com/gpu-node": ("true",)}[key]
                    )
                }
                feats.add("nodeSelector")
            na: Obj = {}
            if r.random() < 0.25:
                na["requiredDuringSchedulingIgnoredDuringExecution"] = {
                    "nodeSelectorTerms": [self._node_term(feats) for _ in range(r.randint(1, 2))]
                }
                feats.add("node-affinity-required")
            if r.random() < 0.3:
                na["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.randint(1, 100), "preference": self._node_term(feats)} for _ in range(r.randint(1, 2))
                ]
                feats.add("node-affinity-preferred")
            aff: Obj = {"nodeAffinity": na} if na else {}
            aff.update(self._pod_affinity(feats, labels, bound=False))
            if aff:
                spec["affinity"] = aff
            if r.random() < 0.35:
                spec["tolerations"] = self._tolerations(feats)
            if r.random() < 0.35:
                spec["topologySpreadConstraints"] = self._spread(feats, labels)
            elif any(_selects(o, namespace, labels) for o in self.sc.owners):
                feats.add("default-spreading")
        else:
            if r.random() < 0.25:
                aff = self._pod_affinity(feats, labels, bound=True)
                if aff:
                    spec["affinity"] = aff
                    feats.add("existing-pod-affinity")
        if not labels:
            feats.add("no-labels")
        meta: Obj = {"name": name, "namespace": namespace, "labels": labels}
        pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        self.sc.features.update(feats)
        return pod


def _selects(owner: Obj, namespace: str, labels: dict[str, str]) -> bool:
    """A Service of the namespace selects the pod. Only Services count for default spreading:
    v1.36.3 (helper/spread.go DefaultSelector) reads an RC/ReplicaSet/StatefulSet only when it is
    the pod's controller, and the runner makes a ConfigMap every pod's controller."""
    if owner["kind"] != "Service" or owner["metadata"]["namespace"] != namespace:
        return False
    return all(labels.get(k) == v for k, v in owner["spec"]["selector"].items())


def _req_milli(c: Obj, res: str) -> int:
    v = (c.get("resources") or {}).get("requests", {}).get(res)
    return int(v[:-1]) if v else 0


def _req_mi(c: Obj, res: str) -> int:
    v = (c.get("resources") or {}).get("requests", {}).get(res)
    return int(v[:-2]) if v else 0


def generate(seed: int, prefix: str, scheduler_name: str, pending: int | None = None) -> Scenario:
    """The scenario of *seed*; object names start with *prefix* (unique per run)."""
    g = _Gen(seed, prefix, scheduler_name)
    g.namespaces()
    g.owners()
    g.nodes()
    r = g.r
    schedulable = [n for n in g.sc.nodes if not n["spec"].get("unschedulable")]
    for node in schedulable:
        for _ in range(r.choice((0, 1, 1, 2, 3))):
            pod = g.pod(r.choice(g.sc.namespace_names), bound_to=node["metadata"]["name"])
            g.sc.bound_pods.append(pod)
    n_pending = pending if pending is not None else r.randint(8, 14)
    for _ in range(n_pending):
        g.sc.pending_pods.append(g.pod(r.choice(g.sc.namespace_names)))
    return g.sc
