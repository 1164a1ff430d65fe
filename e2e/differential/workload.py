"""The differential suite's workload mode (``--workload``): random gangs through the real
kube-scheduler v1.36.3 and through ``simulate``, the same workload gates on both sides
(GenericWorkload, GangScheduling, TopologyAwareWorkloadScheduling; WorkloadAwarePreemption on
half the seeds).

Each seed: nodes with random CPU in racks and zones, bound filler pods (at the highest
priority, so no gang preempts them), then gangs one at a time: random size, minCount, CPU per
pod, topology key (none, rack or zone) and priority (a high gang may preempt an earlier low
one: pod by pod, or as a group with WorkloadAwarePreemption). A gang's pods are created first (its
PodGroup missing, GangScheduling holds them), then its PodGroup: the binary's first pod-group
cycle then sees the whole group, as ``simulate`` does.

What is compared is that first cycle. The binary's is read from the API: the first
PodGroupScheduled condition it writes (from a watch: a later cycle, a retry of the gang's
remaining pods or the one after its preemption, overwrites it at once), each pod's node if the
group was scheduled, and each other pod's first FailedScheduling event. A gang not scheduled
in its first cycle is deleted (with its preemption victims gone) before the next one, so it
never retries behind the suite's back.

Checks per gang: ``group`` (result and the condition's status, reason and message), ``bound``
(how many pods each side bound), ``messages`` (the FailedScheduling messages, as a multiset:
upstream orders a gang's pods by a random map walk, so which pod fails is not fixed; when no
placement is feasible, those of any placement, as upstream reports a random one), ``nodes``
(the binary's nodes are simulate's, or each among simulate's top-scored nodes for that pod, or,
for a topology gang, in a placement simulate scored as high as the one it chose),
``domain`` (a topology gang lands in one domain on both sides), ``victims`` (the pods its
preemption evicted, pod by pod or as a group, when either side evicted any).
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from e2e.support.objects import make_node, make_pod
from e2e.support.waits import wait_for

from . import generator, kubescheduler
from .compare import Mismatch, Tally
from .runner import SCHEDULER_NAME, SeedResult, _create, _raw, _wait_cache_synced, _wait_nodes_settled, dump_cluster

GATES = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
# Half the seeds add PodGroup preemption (both sides).
WAP_GATES = GATES + ",WorkloadAwarePreemption=true"
PG = ("scheduling.k8s.io", "v1alpha2", "podgroups")
RACK, ZONE = "differential/rack", "differential/zone"
KEYS = (None, RACK, ZONE)
Obj = dict[str, Any]


@dataclass
class Gang:
    group: Obj
    pods: list[Obj]
    topology: str | None


@dataclass
class WorkloadScenario:
    prefix: str
    namespace: str
    node_names: list[str] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    filler: list[Obj] = field(default_factory=list)
    gangs: list[Gang] = field(default_factory=list)
    features: Counter[str] = field(default_factory=Counter)
    gates: str = GATES


def generate(seed: int, prefix: str) -> WorkloadScenario:
    r = random.Random(seed * 104729 + 3)
    ns = f"{prefix}-ns"
    sc = WorkloadScenario(prefix, ns)
    if r.random() < 0.5:
        sc.gates = WAP_GATES
        sc.features["workload-aware preemption seeds"] += 1
    for suffix, value in (("low", 10), ("high", 100), ("filler", 1000)):
        sc.classes.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"{prefix}-{suffix}", "labels": {generator.MARK: "true"}},
                "value": value,
            }
        )
    racks = r.randint(2, 3)
    for i in range(r.randint(4, 9)):
        name = f"{prefix}-n{i:02d}"
        labels = {generator.MARK: "true", RACK: f"r{i % racks}", ZONE: f"z{i % 2}"}
        sc.nodes.append(make_node(name, cpu=str(r.choice((1, 2, 2, 3, 4))), labels=labels))
        sc.node_names.append(name)
    for i, node in enumerate(sc.node_names):
        if r.random() < 0.3:
            pod = make_pod(f"filler-{i}", ns, scheduler_name=SCHEDULER_NAME, cpu="1", memory=None, node_name=node)
            pod["spec"]["priorityClassName"] = f"{prefix}-filler"
            sc.filler.append(pod)
    n_gangs = r.randint(2, 4)
    for g in range(n_gangs):
        size = r.randint(2, 6)
        min_count = r.randint(1, size)
        key = r.choice(KEYS)
        cpu = r.choice(("500m", "1", "1", "2"))
        prio = r.choice(("low", "high"))
        if sc.gates == WAP_GATES:
            # Low gangs fill the nodes, then a high one that may have to preempt them.
            prio = "high" if g == n_gangs - 1 else "low"
        name = f"g{g}"
        spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priorityClassName": f"{prefix}-{prio}"}
        if key is not None:
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
            sc.features["topology"] += 1
        group = {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }
        pods = []
        for i in range(size):
            pod = make_pod(
                f"{name}-p{i}",
                ns,
                scheduler_name=SCHEDULER_NAME,
                cpu=cpu,
                memory=None,
                schedulingGroup={"podGroupName": name},
            )
            pod["spec"]["priorityClassName"] = f"{prefix}-{prio}"
            pods.append(pod)
        sc.gangs.append(Gang(group, pods, key))
        sc.features["gangs"] += 1
        sc.features["gang pods"] += size
    return sc


def _custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def _pod_groups(api: client.ApiClient) -> list[Obj]:
    items = _custom(api).list_cluster_custom_object(*PG)["items"]
    for i in items:
        i["kind"], i["apiVersion"] = "PodGroup", "scheduling.k8s.io/v1alpha2"
    return list(items)


class FirstConditions:
    """Every PodGroupScheduled condition the binary writes in ``namespace``, in order, per group,
    from a watch: a later cycle (a retry of a gang's remaining pods, or the cycle after its
    preemption) overwrites the first cycle's condition within milliseconds, and the first is what
    ``simulate`` reports."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.seen: dict[str, list[dict[str, str]]] = {}
        self._watch = watch.Watch()
        self._lock = threading.Lock()
        rv = _custom(api).list_namespaced_custom_object(*PG[:2], namespace, PG[2])["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, args=(rv,), daemon=True)
        self._thread.start()

    def _run(self, rv: str) -> None:
        custom = _custom(self.api)
        with contextlib.suppress(Exception):  # stopped, or the namespace went away
            for ev in self._watch.stream(
                custom.list_namespaced_custom_object,
                *PG[:2],
                self.namespace,
                PG[2],
                resource_version=rv,
                timeout_seconds=3600,
            ):
                obj = ev["object"]
                name = obj["metadata"]["name"]
                for c in (obj.get("status") or {}).get("conditions") or []:
                    if c.get("type") != "PodGroupScheduled":
                        continue
                    cond = {k: str(c.get(k) or "") for k in ("type", "status", "reason", "message")}
                    with self._lock:
                        got = self.seen.setdefault(name, [])
                        if not got or got[-1] != cond:
                            got.append(cond)

    def first(self, name: str) -> dict[str, str] | None:
        with self._lock:
            got = self.seen.get(name)
            return dict(got[0]) if got else None

    def stop(self) -> None:
        self._watch.stop()


def _first_event(core: client.CoreV1Api, ns: str, name: str) -> str | None:
    items = _raw(core.list_namespaced_event, ns, field_selector=f"involvedObject.name={name},reason=FailedScheduling")[
        "items"
    ]
    if not items:
        return None
    items.sort(key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
    return str(items[0].get("message") or "")


def _simulate(cluster_file: pathlib.Path, config_file: pathlib.Path, gates: str) -> list[Obj]:
    from scheduler.cli import main as cli_main

    argv = [
        "simulate",
        "--cluster",
        str(cluster_file),
        "--config",
        str(config_file),
        "--output",
        "json",
        "--feature-gates",
        gates,
    ]
    buf, ebuf = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(ebuf):
        rc = cli_main(argv)
    if rc != 0:
        raise RuntimeError(f"simulate exited {rc} on {cluster_file}: {ebuf.getvalue().strip()}")
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


_RESULT = {"True": "scheduled", "Unschedulable": "unschedulable", "SchedulerError": "error"}


def compare_gang(
    seed: int,
    key: str,
    cond: dict[str, str],
    nodes: dict[str, str | None],
    events: dict[str, str],
    records: list[Obj],
    topology: str | None,
    node_labels: dict[str, dict[str, str]],
    evicted: set[str] | None = None,
    ranks: dict[str, tuple[int, str]] | None = None,
) -> Tally:
    """The binary's decision on one gang against simulate's records (its pods' and the group's);
    ``evicted``: the pods the binary's preemption removed; ``ranks``: each pod's (priority,
    start time), what ranks preemption victims."""
    t = Tally()
    t.decisions += 1
    # The gang's first cycle only (the binary's that is compared): simulate goes on with the
    # next cycle after a PodGroup preemption, whose lines follow the first group line.
    at = next((i for i, r in enumerate(records) if r.get("podGroup") == key), len(records))
    group = records[at] if at < len(records) else None
    pods = {r["pod"]: r for r in records[:at] if "pod" in r and r["pod"] in nodes}

    def check(name: str, ok: bool, ours: Any, theirs: Any) -> None:
        t.applicable[name] += 1
        if ok:
            t.agreed[name] += 1
        else:
            t.mismatches.append(Mismatch(seed, key, name, kube_scheduler=theirs, pyscheduler=ours))

    if group is None:
        check("group", False, None, cond)
        return t
    ours_cond = {k: str(group["condition"].get(k) or "") for k in ("type", "status", "reason", "message")}
    check("group", ours_cond == cond, ours_cond, cond)
    theirs_bound = sorted(n for n in nodes.values() if n)
    ours_bound = sorted(p["node"] for p in pods.values() if p.get("node"))
    if theirs_bound:
        t.scheduled += 1
    else:
        t.unschedulable += 1
    check("bound", len(theirs_bound) == len(ours_bound), len(ours_bound), len(theirs_bound))
    ours_msgs = Counter(p["message"] for p in pods.values() if not p.get("node") and "message" in p)
    theirs_msgs = Counter(events.values())
    # No placement feasible: upstream reports the first placement of its map walk, a random one.
    alternatives = [Counter(m) for m in (group.get("placementMessages") or {}).values()]
    check("messages", ours_msgs == theirs_msgs or theirs_msgs in alternatives, dict(ours_msgs), dict(theirs_msgs))
    if theirs_bound:
        tops: set[str] = set()
        for p in pods.values():
            scores = p.get("scores") or {}
            if scores:
                best = max(s["total"] for s in scores.values())
                tops |= {n for n, s in scores.items() if s["total"] == best}
            elif p.get("node"):
                tops.add(p["node"])
        ok = theirs_bound == ours_bound or all(n in tops for n in theirs_bound)
        placements: dict[str, int] = group.get("placements") or {}
        if not ok and topology is not None and placements:
            # Tied placements are a random pick on both sides: the binary's domain must be
            # one of ours scored best (its nodes inside it we did not score).
            theirs_doms = {node_labels[n].get(topology) for n in theirs_bound}
            best = max(placements.values())
            ok = len(theirs_doms) == 1 and placements.get(str(next(iter(theirs_doms)))) == best
        check("nodes", ok, ours_bound, theirs_bound)
    ours_evicted = set(group.get("victims") or ())
    for p in pods.values():
        ours_evicted.update(p.get("victims") or ())
    if evicted is not None and (evicted or ours_evicted):
        # Victims of equal rank come in a random order upstream (a map's values), and the
        # reprieve walks them in that order: which of equals is spared is not fixed.
        rank = (ranks or {}).get
        same = evicted == ours_evicted or Counter(map(rank, evicted)) == Counter(map(rank, ours_evicted))
        check("victims", same, sorted(ours_evicted), sorted(evicted))
    if topology is not None and theirs_bound and ours_bound:
        theirs_dom = {node_labels[n].get(topology) for n in theirs_bound}
        ours_dom = {node_labels[n].get(topology) for n in ours_bound}
        check(
            "domain",
            len(theirs_dom) == 1 and len(ours_dom) == 1,
            sorted(map(str, ours_dom)),
            sorted(map(str, theirs_dom)),
        )
    return t


def run_workload_seed(
    api: client.ApiClient, kubeconfig: str, seed: int, workdir: pathlib.Path, run_id: str, log: Any = print
) -> SeedResult:
    core = client.CoreV1Api(api)
    workdir.mkdir(parents=True, exist_ok=True)
    sc = generate(seed, f"dw{run_id}s{seed}")
    cfg = kubescheduler.config(SCHEDULER_NAME, kubeconfig, kubescheduler.disabled_plugins())
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    tally = Tally()
    ks: kubescheduler.KubeScheduler | None = None
    sched = client.SchedulingV1Api(api)
    try:
        for pc in sc.classes:
            sched.create_priority_class(pc)
        _create(
            api,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": sc.namespace, "labels": {generator.MARK: "true"}},
            },
        )
        wait_for(
            lambda: core.read_namespaced_service_account("default", sc.namespace),
            timeout=60,
            desc=f"ServiceAccount {sc.namespace}/default",
        )
        ks = kubescheduler.KubeScheduler(
            kubescheduler.binary_path(),
            config_file,
            kubeconfig,
            workdir / "kube-scheduler.log",
            extra_args=[f"--feature-gates={sc.gates}"],
        )
        ks.start()
        for obj in sc.nodes:
            _create(api, obj)
        _wait_nodes_settled(api, sc, ks)  # type: ignore[arg-type]  # node_names and prefix suffice
        for pod in sc.filler:
            _create(api, pod)
        _wait_cache_synced(api, ks)
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in sc.nodes}
        for i, gang in enumerate(sc.gangs):
            name = gang.group["metadata"]["name"]
            key = f"{sc.namespace}/{name}"
            docs = [*dump_cluster(api), *_pod_groups(api)]
            before = _alive(api, sc.namespace)
            log_offset = ks.log_path.stat().st_size if ks.log_path.exists() else 0
            stored = [_create_any(api, p) for p in gang.pods]
            conds = FirstConditions(api, sc.namespace)
            stored.append(_create_any(api, gang.group))
            for s in stored:
                s.pop("status", None)
            cluster_file = workdir / f"cluster-{i:02d}-{name}.yaml"
            cluster_file.write_text(yaml.safe_dump_all([*docs, *stored], sort_keys=False))
            pod_names = [p["metadata"]["name"] for p in gang.pods]

            try:
                cond, nodes, events = wait_for(
                    lambda name=name, pod_names=pod_names, conds=conds: _decided(
                        api, conds, sc.namespace, name, pod_names
                    ),
                    timeout=90,
                    interval=0.2,
                    desc=f"kube-scheduler on gang {key}",
                )
            finally:
                conds.stop()
            _evicted(api, sc.namespace, before)  # the evictions have settled
            evicted = _first_cycle_victims(ks.log_path, log_offset, sc.namespace, name)
            if cond["status"] != "True":
                # Also when it went on to preempt: its victims' deletion is waited for below.
                _delete_gang(api, sc.namespace, name, pod_names)
            else:
                for p, n in nodes.items():  # the others of a scheduled gang are requeued: gone too
                    if n is None:
                        with contextlib.suppress(ApiException):
                            core.delete_namespaced_pod(p.split("/", 1)[1], sc.namespace, grace_period_seconds=0)
            _wait_cache_synced(api, ks)
            records = _simulate(cluster_file, config_file, sc.gates)
            ranks = {
                f"{d['metadata']['namespace']}/{d['metadata']['name']}": (
                    int(d["spec"].get("priority") or 0),
                    str((d.get("status") or {}).get("startTime") or ""),
                )
                for d in docs
                if d.get("kind") == "Pod"
            }
            t = compare_gang(seed, key, cond, nodes, events, records, gang.topology, labels, evicted, ranks)
            for m in t.mismatches:
                log(f"MISMATCH {m}  [{cluster_file}]")
            tally.merge(t)
    finally:
        if ks is not None:
            ks.stop()
        _cleanup(api, sc)
    return SeedResult(seed, tally, dict(sc.features), workdir)


def _decided(
    api: client.ApiClient, conds: FirstConditions, ns: str, name: str, pod_names: list[str]
) -> tuple[dict[str, str], dict[str, str | None], dict[str, str]] | None:
    """The binary's first cycle on the gang, once visible: its condition, each pod's node, and
    the first FailedScheduling message of each pod it did not bind. A group cycle that did not
    schedule the group bound none of its pods (any bound later came from a later cycle)."""
    core = client.CoreV1Api(api)
    cond = conds.first(name)
    if cond is None:
        return None
    scheduled = cond["status"] == "True"
    nodes: dict[str, str | None] = {}
    events: dict[str, str] = {}
    for p in pod_names:
        node = core.read_namespaced_pod(p, ns).spec.node_name if scheduled else None
        nodes[f"{ns}/{p}"] = node
        if node is None:
            ev = _first_event(core, ns, p)
            if ev is None:
                return None
            events[f"{ns}/{p}"] = ev
    return cond, nodes, events


_START = re.compile(r'"Start the preemption asynchronously" preemptor="([^"]+)" .*numVictims=(\d+)')
_VICTIM = re.compile(r'"Preemptor Pod preempted victim Pod" preemptor="([^"]+)" victim="([^"]+)"')
_GROUP_DONE = (
    "Successfully scheduled a pod group",
    "Pod group is waiting for preemption",
    "Unable to schedule a pod group",
)


def _first_cycle_victims(log: pathlib.Path, offset: int, ns: str, group: str) -> set[str]:
    """The pods the binary's first cycle on ``group`` set out to evict, from its log past
    ``offset``: the preemptions started before the cycle's outcome line by the group (PodGroup
    preemption) or its pods, and for each the first numVictims victims it logged. Later cycles
    (the group's leftover pods, retried back to back) may preempt again: not counted."""
    with log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode(errors="replace").splitlines()
    gang = f"{ns}/{group}"
    mine = re.compile(re.escape(gang) + r"(-p\d+)?$")
    owed: Counter[str] = Counter()
    done = False
    victims: set[str] = set()
    for line in lines:
        if not done and f'podGroup="{gang}"' in line and any(s in line for s in _GROUP_DONE):
            done = True
        m = _START.search(line)
        if m and not done and mine.match(m.group(1)):
            owed[m.group(1)] += int(m.group(2))
            continue
        v = _VICTIM.search(line)
        if v and owed[v.group(1)] > 0:
            owed[v.group(1)] -= 1
            victims.add(v.group(2))
    return victims


def _alive(api: client.ApiClient, ns: str) -> set[str]:
    """The pods of ``ns`` not being deleted, as namespace/name."""
    items = _raw(client.CoreV1Api(api).list_namespaced_pod, ns)["items"]
    return {f"{ns}/{i['metadata']['name']}" for i in items if not i["metadata"].get("deletionTimestamp")}


def _evicted(api: client.ApiClient, ns: str, before: set[str]) -> set[str]:
    """The pods of ``before`` the binary's preemptions removed (its first cycle's and any
    later one's): its deletions are async, so the set is read until it holds still for a second
    (five at most)."""
    last: set[str] | None = None
    steady_since = deadline = time.monotonic()
    deadline += 5.0
    while time.monotonic() < deadline:
        gone = before - _alive(api, ns)
        if gone != last:
            last, steady_since = gone, time.monotonic()
        elif time.monotonic() - steady_since >= 1.0:
            break
        time.sleep(0.2)
    return last or set()


def _create_any(api: client.ApiClient, obj: Obj) -> Obj:
    if obj["kind"] != "PodGroup":
        return _create(api, obj)
    ns = obj["metadata"]["namespace"]
    stored: Obj = _custom(api).create_namespaced_custom_object(*PG[:2], ns, PG[2], obj)
    return stored


def _delete_gang(api: client.ApiClient, ns: str, name: str, pods: list[str]) -> None:
    core = client.CoreV1Api(api)
    with contextlib.suppress(ApiException):
        _custom(api).delete_namespaced_custom_object(*PG[:2], ns, PG[2], name)
    for p in pods:
        with contextlib.suppress(ApiException):
            core.delete_namespaced_pod(p, ns, grace_period_seconds=0)
    # Its pods gone, and any victim of its preemption: the next gang's cluster is settled.
    wait_for(
        lambda: (
            not any(
                i["metadata"]["name"] in pods or i["metadata"].get("deletionTimestamp")
                for i in _raw(core.list_namespaced_pod, ns)["items"]
            )
        ),
        timeout=60,
        desc=f"gang {ns}/{name} gone",
    )


def _cleanup(api: client.ApiClient, sc: WorkloadScenario) -> None:
    core = client.CoreV1Api(api)
    with contextlib.suppress(ApiException):
        core.delete_collection_namespaced_pod(sc.namespace, grace_period_seconds=0)
    for n in sc.node_names:
        with contextlib.suppress(ApiException):
            core.delete_node(n)
    with contextlib.suppress(ApiException):
        core.delete_namespace(sc.namespace)
    for pc in sc.classes:
        with contextlib.suppress(ApiException):
            client.SchedulingV1Api(api).delete_priority_class(pc["metadata"]["name"])
