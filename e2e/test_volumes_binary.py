"""End-to-end, side by side: the volume plugins' FailedScheduling messages of pyscheduler and of
the real kube-scheduler v1.36.3 on the same cluster at the same time.

The binary runs as a second scheduler on the plane under profile ``kube-reference`` with the
default plugins minus the ones pyscheduler reports as not available (the differential suite's
configuration). Each case creates the same pod twice, once per schedulerName, and requires the
two PodScheduled messages to be equal character for character; both pods must stay pending.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.support.objects import REFERENCE, unique_name
from e2e.support.waits import wait_bound
from e2e.test_volumes import (
    ZONE_LABEL,
    bound_claim,
    claim_pod,
    failed_message,
    group_nodes,
    local_pv,
)
from e2e.test_volumes import (
    cluster_objects as cluster_objects,  # fixture
)
from e2e.test_volumes import scheduler as scheduler  # the module's pyscheduler process (fixture)
from e2e.test_volumes import (
    storage_api as storage_api,  # fixture of cluster_objects
)
from e2e.test_volumes_controllers import (
    bound_csi_claims,
    plain_claim,
    storage_class,
)
from e2e.test_volumes_controllers import (
    storage_objects as storage_objects,  # fixture
)

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")





def both_refuse(core: client.CoreV1Api, namespace: str, make: Callable[[str, str], dict[str, Any]]) -> str:
    """Creates ``make(name, schedulerName)`` for both schedulers; returns the one message both
    gave (asserting they are equal and neither pod was bound)."""
    core.create_namespaced_pod(namespace, make("ours", "pyscheduler"))
    core.create_namespaced_pod(namespace, make("ref", REFERENCE))
    ours = failed_message(core, namespace, "ours", timeout=60)
    ref = failed_message(core, namespace, "ref", timeout=60)
    assert ours == ref, f"\npyscheduler:    {ours}\nkube-scheduler: {ref}"
    for name in ("ours", "ref"):
        assert core.read_namespaced_pod(name, namespace).spec.node_name is None, name
    print(f"both schedulers: {ours}")
    return ours


def claim_pod_for(namespace: str, claim: str) -> Callable[[str, str], dict[str, Any]]:
    def make(name: str, scheduler_name: str) -> dict[str, Any]:
        pod = claim_pod(name, namespace, claim)
        pod["spec"]["schedulerName"] = scheduler_name
        return pod

    return make


@pytest.mark.usefixtures("reference", "scheduler")
def test_missing_claim(core_v1, node_factory, namespace):
    group_nodes(node_factory, namespace, count=2)
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "absent"))
    assert 'persistentvolumeclaim "absent" not found' in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_unbound_immediate_claim(core_v1, node_factory, namespace, storage_objects):
    group_nodes(node_factory, namespace, count=2)
    sc = unique_name("imm")
    storage_objects(storage_class(sc, mode="Immediate"))
    core_v1.create_namespaced_persistent_volume_claim(namespace, plain_claim("imm", namespace, sc))
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "imm"))
    assert "pod has unbound immediate PersistentVolumeClaims" in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_volume_zone_conflict(core_v1, node_factory, namespace, cluster_objects):
    group_nodes(node_factory, namespace, count=2)
    bound_claim(core_v1, cluster_objects, namespace, "zoned", unique_name("pv-zone"),
                labels={ZONE_LABEL: "zone-elsewhere"})
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "zoned"))
    assert "had no available volume zone" in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_bound_volume_node_affinity_conflict(core_v1, node_factory, namespace, cluster_objects):
    group_nodes(node_factory, namespace, count=2)
    (elsewhere,) = node_factory(1)
    bound_claim(core_v1, cluster_objects, namespace, "pinned", unique_name("pv-pin"), node=elsewhere)
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "pinned"))
    assert "didn't match PersistentVolume's node affinity" in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_wait_for_first_consumer_without_volume(core_v1, node_factory, namespace, storage_objects):
    # No PV matches and the class cannot provision: "didn't find available persistent volumes".
    nodes = group_nodes(node_factory, namespace, count=2)
    sc = unique_name("wffc")
    storage_objects(storage_class(sc))
    # A PV of the class too small for the claim, on a group node: considered and refused.
    small = local_pv(unique_name("pv-small"), nodes[0], storage_class=sc)
    small["spec"]["capacity"]["storage"] = "100Mi"
    storage_objects(small)
    core_v1.create_namespaced_persistent_volume_claim(namespace, plain_claim("wants", namespace, sc))
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "wants"))
    assert "didn't find available persistent volumes to bind" in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_csi_attach_limit(core_v1, node_factory, namespace, storage_objects):
    (full,) = group_nodes(node_factory, namespace, count=1)
    driver = f"{unique_name('csi')}.e2e.pyscheduler.io"
    storage_objects({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": full},
                     "spec": {"drivers": [{"name": driver, "nodeID": full, "allocatable": {"count": 1}}]}})
    bound_csi_claims(core_v1, storage_objects, namespace, driver, ["first", "second"])
    core_v1.create_namespaced_pod(namespace, claim_pod("first", namespace, "first"))
    assert wait_bound(core_v1, namespace, "first") == full
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "second"))
    assert "exceed max volume count" in msg


@pytest.mark.usefixtures("reference", "scheduler")
def test_read_write_once_pod_in_use(core_v1, node_factory, namespace, storage_objects):
    nodes = group_nodes(node_factory, namespace, count=2)
    driver = f"{unique_name('rwop')}.e2e.pyscheduler.io"
    bound_csi_claims(core_v1, storage_objects, namespace, driver, ["solo"], modes=("ReadWriteOncePod",))
    core_v1.create_namespaced_pod(namespace, claim_pod("a", namespace, "solo"))
    assert wait_bound(core_v1, namespace, "a") in nodes
    msg = both_refuse(core_v1, namespace, claim_pod_for(namespace, "solo"))
    assert "ReadWriteOncePod access mode already in-use by another pod" in msg
