"""Priorities and PodDisruptionBudgets for some seeds, and what the binary's preemption did.

``decorate`` gives a scenario PriorityClasses (every pod names one; some pending pods one with
preemptionPolicy Never) and PodDisruptionBudgets over the generated pod labels, so pending pods
may preempt bound ones. ``observe`` reads the binary's preemption of one pod from the API: its
status.nominatedNodeName and the victims (pods with a ``Preempted`` Event naming it), waiting
until those victims are gone so the next decision sees a settled cluster.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from e2e.support.waits import WaitTimeout, wait_for, wait_for_deleted

from . import generator

Obj = dict[str, Any]

# (suffix, value, preemptionPolicy)
CLASSES = (("low", 10, None), ("mid", 100, None), ("high", 1000, None), ("never", 1000, "Never"))


@dataclass
class PrioritySetup:
    classes: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)


def applies(seed: int) -> bool:
    """Every other seed gets priorities (the rest keeps the plain scenario)."""
    return seed % 2 == 0


def decorate(sc: generator.Scenario, seed: int) -> PrioritySetup | None:
    if not applies(seed):
        return None
    r = random.Random(seed * 7919 + 17)
    out = PrioritySetup()
    names = {}
    for suffix, value, policy in CLASSES:
        name = f"{sc.prefix}-{suffix}"
        names[suffix] = name
        pc: Obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {generator.MARK: "true"}},
            "value": value,
        }
        if policy:
            pc["preemptionPolicy"] = policy
        out.classes.append(pc)
    for p in sc.bound_pods:
        p["spec"]["priorityClassName"] = names[r.choice(("low", "low", "mid"))]
    for p in sc.pending_pods:
        p["spec"]["priorityClassName"] = names[r.choice(("low", "mid", "high", "high", "never"))]
        sc.features["priorityClass"] += 1
    # Budgets over the generated labels: some allow no disruption at all, some one.
    labelled = [p for p in sc.bound_pods if p["metadata"].get("labels")]
    for i in range(r.choice((0, 1, 2))):
        if not labelled:
            break
        target = r.choice(labelled)
        k, v = r.choice(sorted(target["metadata"]["labels"].items()))
        out.pdbs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb{i}", "namespace": target["metadata"]["namespace"]},
                "spec": {"maxUnavailable": r.choice((0, 1)), "selector": {"matchLabels": {k: v}}},
            }
        )
        sc.features["pdb"] += 1
    return out


def create(api: client.ApiClient, setup: PrioritySetup) -> None:
    sched = client.SchedulingV1Api(api)
    policy = client.PolicyV1Api(api)
    for pc in setup.classes:
        sched.create_priority_class(pc)
    for b in setup.pdbs:
        policy.create_namespaced_pod_disruption_budget(b["metadata"]["namespace"], b)


def wait_budgets_counted(api: client.ApiClient, setup: PrioritySetup) -> None:
    """The disruption controller has written each budget's status (disruptionsAllowed)."""
    policy = client.PolicyV1Api(api)
    for b in setup.pdbs:
        ns, name = b["metadata"]["namespace"], b["metadata"]["name"]
        wait_for(
            lambda ns=ns, name=name: (st := policy.read_namespaced_pod_disruption_budget(name, ns).status)
            and st.observed_generation,
            timeout=60,
            desc=f"PDB {ns}/{name} status",
        )


def delete(api: client.ApiClient, setup: PrioritySetup) -> None:
    sched = client.SchedulingV1Api(api)
    for pc in setup.classes:
        with contextlib.suppress(client.ApiException):
            sched.delete_priority_class(pc["metadata"]["name"])


def dump_pdbs(raw: Any, api: client.ApiClient) -> list[Obj]:
    items = raw(client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces)["items"]
    for it in items:
        it["kind"] = "PodDisruptionBudget"
        it["apiVersion"] = "policy/v1"
    return list(items)


def observe(api: client.ApiClient, preemptor_uid: str, expected: int) -> tuple[str, list[str]]:
    """(nominated node, namespace/name of the victims) of a preemption the binary made: the pods
    with a Preempted Event naming the preemptor ("Preempted by pod UID on node NODE"), once at
    least *expected* (simulate's count) are there or 15 s passed, after they are gone from the API.
    Called only when the FailedScheduling text has no "preemption:" part, i.e. PostFilter
    succeeded and nominated a node."""
    core = client.CoreV1Api(api)
    needle = f"Preempted by pod {preemptor_uid} on node "

    def found() -> dict[str, str]:
        evs = core.list_event_for_all_namespaces(field_selector="reason=Preempted").items
        return {
            f"{e.involved_object.namespace}/{e.involved_object.name}": e.message[len(needle):]
            for e in evs
            if (e.message or "").startswith(needle)
        }

    wait_for(found, timeout=30, desc=f"Preempted events for pod {preemptor_uid}")
    # Fewer victims than simulate chose: the comparison reports it.
    with contextlib.suppress(WaitTimeout):
        wait_for(lambda: len(found()) >= expected, timeout=15, desc="all Preempted events")
    got = found()
    for key in got:
        ns, name = key.split("/", 1)
        wait_for_deleted(
            lambda ns=ns, name=name: core.read_namespaced_pod(name, ns), timeout=60, desc=f"victim {key}"
        )
    nodes = sorted(set(got.values()))
    return ",".join(nodes), sorted(got)
