"""NodeDeclaredFeatures and its feature library; cases from upstream v1.36.3:

- kubernetes pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go
  (TestPreFilter, TestFilter, TestEnqueueExtensionsNodeUpdate, TestEnqueueExtensionsPodUpdate)
- component-helpers nodedeclaredfeatures/framework_test.go (TestInferForPodScheduling),
  featureset_test.go (TestFeatureMapper), bitmap_test.go (TestBitmap_IsSubset, TestBitmap_String)
- component-helpers nodedeclaredfeatures/features/restartallcontainers/restart_all_containers_test.go
  (TestInferForScheduling)

Upstream uses mock features whose inference ignores the pod; here they are Feature values with
a constant (or scripted) inference function.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from scheduler.config import default_plugins, load_config
from scheduler.core.profiles import check_profiles
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint, node_update_action
from scheduler.framework.status import SKIP, Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.plugins import registry as plugin_registry
from scheduler.plugins.nodedeclaredfeatures import (
    ERR_REASON,
    PRE_FILTER_KEY,
    NodeDeclaredFeatures,
    _PreFilterState,
)
from scheduler.plugins.nodedeclaredfeatures import features as ndf_features
from scheduler.plugins.nodedeclaredfeatures.features import DEFAULT_REGISTRY
from scheduler.plugins.nodedeclaredfeatures.featureset import (
    TARGET_VERSION,
    Feature,
    FeatureError,
    FeatureMapper,
    FeatureRegistry,
    FeatureSet,
    Version,
)
from scheduler.simulate.simulator import run
from scheduler.testing.builders import MakeNode, make_node, make_pod, pod_info
from scheduler.testing.framework import build_handle, new_snapshot

V = Version.parse


def mock_feature(name: str, infer: bool, max_version: str = "") -> Feature:
    """createMockFeature(t, name, infer, maxVersion)."""
    return Feature(name, lambda spec: infer, V(max_version) if max_version else None)


def node(name: str = "node-1", declared: list[str] | None = None) -> NodeInfo:
    """Upstream's fixture node; ``declared`` None leaves status.declaredFeatures unset."""
    w = MakeNode().name(name)
    return (w.declared_features(declared) if declared is not None else w).info()


def pod(name: str = "test-pod", uid: str | None = None, **kw: Any) -> PodInfo:
    return pod_info(name, uid=uid, **kw)


RESTART_ALL_RULE = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [1]},
}


def restart_all_container(name: str = "container") -> dict[str, Any]:
    """containerWithRestartAllContainersAction()."""
    return {"name": name, "image": "image", "restartPolicy": "Never", "restartPolicyRules": [RESTART_ALL_RULE]}


# ---------------------------------------------------------------------------------------------
# TestPreFilter

F1, F2 = "TestFeature1", "TestFeature2"
_F12 = FeatureMapper([F1, F2])

PRE_FILTER_CASES = [
    # (upstream name, enabled, features (name, infer, maxVersion), component version, want status, want reqs)
    ("plugin disabled", False, [(F1, True, ""), (F2, False, "")], "1.35.0", SKIP, None),
    ("Pod with feature requirements", True, [(F1, True, ""), (F2, False, "")], "1.35.0", None, [F1]),
    (
        "Pod with multiple feature requirements",
        True,
        [(F1, True, "1.38.0"), (F2, True, "1.38.0")],
        "1.35.0",
        None,
        [F1, F2],
    ),
    ("Pod with no requirements", True, [(F1, False, ""), (F2, False, "")], "1.35.0", SKIP, None),
    ("Feature not required, version > MaxVersion", True, [(F1, True, "1.33.0"), (F2, False, "")], "1.34.0", SKIP, None),
]


@pytest.mark.parametrize(
    ("enabled", "feats", "version", "want_status", "want_reqs"),
    [c[1:] for c in PRE_FILTER_CASES],
    ids=[c[0] for c in PRE_FILTER_CASES],
)
def test_pre_filter(
    enabled: bool,
    feats: list[tuple[str, bool, str]],
    version: str,
    want_status: Status | None,
    want_reqs: list[str] | None,
) -> None:
    pl = NodeDeclaredFeatures(FeatureRegistry(mock_feature(*f) for f in feats), V(version), enabled)
    state = CycleState()
    assert pl.pre_filter(state, pod(), []) == want_status
    got = state.get(PRE_FILTER_KEY)
    if want_reqs is None:
        assert got is None
    else:
        assert isinstance(got, _PreFilterState)
        assert got.reqs == _F12.map_sorted(want_reqs)


def test_pre_filter_without_version_is_an_error() -> None:
    # InferForPodScheduling refuses a nil target version; PreFilter returns it as an Error status.
    pl = NodeDeclaredFeatures(FeatureRegistry([mock_feature(F1, True)]), None)
    assert pl.pre_filter(CycleState(), pod(), []) == Status(Code.ERROR, "target version cannot be nil")


# ---------------------------------------------------------------------------------------------
# TestFilter (ndftesting.NewMockFramework with FeatureA, FeatureB, FeatureC)

FA, FB, FC = "FeatureA", "FeatureB", "FeatureC"
ABC = FeatureRegistry([mock_feature(FA, False), mock_feature(FB, False), mock_feature(FC, False)])
_REJECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

FILTER_CASES = [
    # (upstream name, enabled, node's declared features, PreFilter reqs (None: not written), want)
    ("plugin disabled", False, [FA, FB], None, None),
    ("Node matches requirements", True, [FA, FB], [FA], None),
    ("Node does not match requirements", True, [FB], [FA], _REJECTED),
    # Upstream leaves pluginEnabled unset (false) in this case, so the plugin passes the node.
    ("Node with multiple features, pod requires subset", False, [FA, FB, FC], [FA, FC], None),
    ("Node has no declared features", True, None, [FA], _REJECTED),
    ("Node with some but not all required features", True, [FA], [FA, FB], _REJECTED),
    (
        "Error getting pre-filter state",
        True,
        None,
        None,
        Status(Code.ERROR, 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'),
    ),
]


@pytest.mark.parametrize(
    ("enabled", "declared", "reqs", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(enabled: bool, declared: list[str] | None, reqs: list[str] | None, want: Status | None) -> None:
    pl = NodeDeclaredFeatures(ABC, V("1.35.0"), enabled)
    state = CycleState()
    if reqs is not None:
        state.write(PRE_FILTER_KEY, _PreFilterState(ABC.map_sorted(reqs)))
    got = pl.filter(state, pod(), node(declared=declared))
    assert got == want
    if want is not None:
        assert got is not None and got.code == want.code


def test_filter_ignores_unknown_and_reads_only_sorted_lists() -> None:
    # SetNode uses TryMap: names the registry does not know are dropped, and the merge walk
    # assumes the API's sorted order (an unsorted list loses the names it walks past).
    pl = NodeDeclaredFeatures(ABC, V("1.35.0"))
    state = CycleState()
    state.write(PRE_FILTER_KEY, _PreFilterState(ABC.map_sorted([FA, FC])))
    assert pl.filter(state, pod(), node(declared=["Alpha", FA, "FeatureAB", FC, "Zeta"])) is None
    assert pl.filter(state, pod(), node(declared=[FC, FA])) == _REJECTED


def test_filter_batch_agrees_with_per_node_form() -> None:
    lists: list[list[str] | None] = [None, [], [FA], [FB], [FA, FB], [FA, FC], [FA, FB, FC], [FC, FA], ["X", FA, FC]]
    nodes = [node(f"n{i}", d) for i, d in enumerate(lists)]
    snap = new_snapshot(nodes)
    pl = NodeDeclaredFeatures(ABC, V("1.35.0"))
    for reqs in ([FA], [FB], [FA, FC], [FA, FB, FC]):
        state = CycleState()
        state.write(PRE_FILTER_KEY, _PreFilterState(ABC.map_sorted(reqs)))
        idx = np.arange(len(nodes))
        mask = pl.filter_batch(state, pod(), snap, idx)
        assert mask is not None
        assert mask.tolist() == [pl.filter(state, pod(), n) is None for n in nodes]
    # Without PreFilter state the batch form declines and the per-node form reports the error.
    assert pl.filter_batch(CycleState(), pod(), snap, np.arange(len(nodes))) is None


# ---------------------------------------------------------------------------------------------
# TestEnqueueExtensionsNodeUpdate

NODE_HINT_CASES = [
    ("Node Add with feature", None, ["FeatureA"], QueueingHint.QUEUE),
    ("Node Update (Features Added)", [], ["FeatureA"], QueueingHint.QUEUE),
    ("Node Update (Features Unchanged)", ["FeatureA"], ["FeatureA"], QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_node_change_hint(old: list[str] | None, new: list[str], want: QueueingHint) -> None:
    pl = NodeDeclaredFeatures(FeatureRegistry([]), V("1.35.0"))
    old_node = None if old is None else node(declared=old or None)
    assert pl._after_node_change(pod(), old_node, node(declared=new)) == want
    # The queue may hand over raw Node dicts as well.
    old_raw = None if old_node is None else old_node.raw
    assert pl._after_node_change(pod(), old_raw, node(declared=new).raw) == want


def test_node_update_action_reports_declared_feature_changes() -> None:
    # events.go extractNodeFeaturesChange: only a change of the list is an UpdateNodeDeclaredFeature.
    changed = node_update_action(node(declared=["A"]), node(declared=["A", "B"]))
    assert changed == ActionType.UPDATE_NODE_DECLARED_FEATURE
    assert node_update_action(node(declared=["A"]), node(declared=["A"])) == ActionType(0)
    registered = NodeDeclaredFeatures().events_to_register()
    node_event = registered[0].event
    assert node_event.matches(ClusterEvent("Node", ActionType.UPDATE_NODE_DECLARED_FEATURE))
    assert node_event.matches(ClusterEvent("Node", ActionType.ADD))
    assert not node_event.matches(ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL))
    assert registered[1].event == ClusterEvent("Pod", ActionType.UPDATE)
    assert NodeDeclaredFeatures(enabled=False).events_to_register() == []


# ---------------------------------------------------------------------------------------------
# TestEnqueueExtensionsPodUpdate


def scripted(*answers: bool) -> Callable[[Any], bool]:
    """An inference that returns the given answers in order (the upstream mock's call counter)."""
    it: Iterator[bool] = iter(answers)

    def infer(spec: Any) -> bool:
        return next(it)

    return infer


POD_HINT_CASES = [
    # (upstream name, old pod (name, uid, labels), new pod, inference, version, want)
    (
        "Pod Update adds requirement",
        ("test-pod", "123", None),
        ("test-pod", "123", {"foo": "bar"}),
        scripted(False, True),
        "1.35.0",
        QueueingHint.QUEUE,
    ),
    (
        "Pod Update removes requirement",
        ("test-pod", "123", {"foo": "bar"}),
        ("test-pod", "123", None),
        scripted(True, False),
        "1.35.0",
        QueueingHint.QUEUE,
    ),
    (
        "Pod Update with no change in requirements",
        ("test-pod", "123", None),
        ("test-pod", "123", None),
        lambda spec: False,
        "1.35.0",
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "Updated pod not the same as target pod",
        ("another-test-pod", "456", {"foo": "bar"}),
        ("another-test-pod", "456", None),
        lambda spec: False,
        "1.35.0",
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "infer", "version", "want"), [c[1:] for c in POD_HINT_CASES], ids=[c[0] for c in POD_HINT_CASES]
)
def test_pod_update_hint(
    old: tuple[str, str, dict[str, str] | None],
    new: tuple[str, str, dict[str, str] | None],
    infer: Callable[[Any], bool],
    version: str,
    want: QueueingHint,
) -> None:
    pl = NodeDeclaredFeatures(FeatureRegistry([Feature("TestFeature", infer)]), V(version))
    target = pod("test-pod", uid="123")
    old_pod = pod(old[0], uid=old[1], labels=old[2])
    new_pod = pod(new[0], uid=new[1], labels=new[2])
    assert pl._after_pod_update(target, old_pod, new_pod) == want


def test_pod_update_hint_infer_error() -> None:
    # "Infer returns error": the hint fails with the library's error, and the queue requeues the
    # pod when a hint fails (queue.py _worth_requeuing), which is upstream's Queue.
    pl = NodeDeclaredFeatures(FeatureRegistry([mock_feature("TestFeature", True)]), None)
    target = pod("test-pod", uid="123")
    with pytest.raises(FeatureError, match="target version cannot be nil"):
        pl._after_pod_update(target, target, pod("test-pod", uid="123", labels={"foo": "bar"}))


# ---------------------------------------------------------------------------------------------
# framework_test.go TestInferForPodScheduling


def _pod_level_resources(spec: Any) -> bool:
    return spec.get("resources") is not None


_PLR = "PodLevelResources"
WITH_PLR = make_pod("pod-with-podlevelresources", pod_resources={"requests": {"cpu": "500m"}})["spec"]
WITHOUT_PLR = make_pod("pod-without-podlevelresources")["spec"]

INFER_CASES = [
    # (upstream name, max version, spec, target version, want names)
    ("pod with feature, inferred during scheduling", None, WITH_PLR, "1.30.0", [_PLR]),
    ("pod without feature", None, WITHOUT_PLR, "1.30.0", []),
    ("feature universally available, not inferred during create", "1.30.0", WITH_PLR, "1.31.0", []),
    ("pre-release target version", "1.30.0", WITH_PLR, "0.0.0-alpha.2.39+049eafd34dfbd2", [_PLR]),
    ("exceeds max version", "1.30.0", WITH_PLR, "1.40.0", []),
]


@pytest.mark.parametrize(
    ("max_version", "spec", "target", "want"), [c[1:] for c in INFER_CASES], ids=[c[0] for c in INFER_CASES]
)
def test_infer_for_pod_scheduling(max_version: str | None, spec: Any, target: str, want: list[str]) -> None:
    fw = FeatureRegistry([Feature(_PLR, _pod_level_resources, V(max_version) if max_version else None)])
    assert fw.unmap(fw.infer_for_pod_scheduling(spec, V(target))) == want


def test_infer_for_pod_scheduling_target_version_nil() -> None:
    fw = FeatureRegistry([Feature(_PLR, _pod_level_resources)])
    with pytest.raises(FeatureError, match="target version cannot be nil"):
        fw.infer_for_pod_scheduling(WITH_PLR, None)


@pytest.mark.parametrize(
    ("a", "b", "greater"),
    [
        # framework_test.go TestDiscoverNodeFeatures "feature past max version - pre-release version"
        ("1.39.0-alpha.2.39+049eafd34dfbd2", "1.38.0", True),
        ("1.39.0", "1.38.0", True),  # "feature past max version" (AddMinor(1))
        ("1.38.0", "1.38.0", False),
        ("1.38.0-alpha.1", "1.38.0", False),
        ("1.38.0-beta.0", "1.38.0-alpha.9", True),
        ("1.38.0-alpha.10", "1.38.0-alpha.9", True),
        ("1.38.0-alpha.1.1", "1.38.0-alpha.1", True),
        ("v1.36.3", "1.36.2", True),
    ],
)
def test_version_ordering(a: str, b: str, greater: bool) -> None:
    assert V(a).greater_than(V(b)) is greater


# ---------------------------------------------------------------------------------------------
# featureset_test.go TestFeatureMapper and bitmap_test.go

MAPPER_CASES = [
    # (upstream name, input, map_sorted fails, indices set by try_map)
    ("Empty input", [], False, set()),
    ("Single valid feature", ["a"], False, {0}),
    ("Multiple valid features", ["a", "c"], False, {0, 2}),
    ("All features", ["a", "b", "c", "d"], False, {0, 1, 2, 3}),
    ("Unknown feature (start)", ["0", "a"], True, {0}),
    ("Unknown feature (middle)", ["a", "ab", "b"], True, {0, 1}),
    ("Unknown feature (end)", ["d", "e"], True, {3}),
]


@pytest.mark.parametrize(
    ("names", "fails", "want"), [c[1:] for c in MAPPER_CASES], ids=[c[0] for c in MAPPER_CASES]
)
def test_feature_mapper(names: list[str], fails: bool, want: set[int]) -> None:
    m = FeatureMapper(["a", "b", "c", "d"])
    fs = m.try_map(tuple(names))
    assert {i for i in range(4) if fs.get(i)} == want
    assert m.unmap(fs) == [m.registered[i] for i in sorted(want)]
    if fails:
        with pytest.raises(FeatureError, match="unknown feature"):
            m.map_sorted(names)
    else:
        assert m.map_sorted(names) == fs
        assert m.unmap(fs) == names


def test_unmap_size_mismatch() -> None:
    with pytest.raises(FeatureError, match="feature size mismatch"):
        FeatureMapper(["a", "b"]).unmap(FeatureSet(3))


SUBSET_CASES = [
    # bitmap_test.go TestBitmap_IsSubset / Difference: (name, b bits, other bits, want diff)
    ("Disjoint sets", [1, 2], [3, 4], [1, 2]),
    ("Overlap", [1, 2, 3], [2, 3, 4], [1]),
    ("Identical", [1, 2], [1, 2], []),
    ("Subset", [1, 2], [1, 2, 3], []),
    ("Superset", [1, 2, 3], [1, 2], [3]),
    ("Empty contains Empty", [], [], []),
]


def _bitmap(size: int, bits: list[int]) -> FeatureSet:
    fs = FeatureSet(size)
    for i in bits:
        fs.set(i)
    return fs


@pytest.mark.parametrize(("b", "other", "diff"), [c[1:] for c in SUBSET_CASES], ids=[c[0] for c in SUBSET_CASES])
def test_bitmap_subset_and_difference(b: list[int], other: list[int], diff: list[int]) -> None:
    x, y = _bitmap(64, b), _bitmap(64, other)
    assert x.is_subset(y) is (not diff)
    d = x.difference(y)
    assert [i for i in range(64) if d.get(i)] == diff


def test_bitmap_mismatch_size_and_range() -> None:
    with pytest.raises(FeatureError, match="size mismatch"):
        FeatureSet(64).is_subset(FeatureSet(128))
    with pytest.raises(FeatureError, match="size mismatch"):
        FeatureSet(64).difference(FeatureSet(128))
    assert FeatureSet(64) != FeatureSet(128)  # Equal: false, no error
    with pytest.raises(FeatureError, match="out of range"):
        FeatureSet(5).set(5)


@pytest.mark.parametrize(
    ("size", "bits", "text"),
    [
        (5, [0, 4], "10001"),  # "Size 5, bit 0 and 4 set"
        (10, [], "0000000000"),  # "Size 10, no bits set"
        (65, [0, 64], "1" + "0" * 63 + "1"),  # "Size 65, bit 0 and 64 set"
    ],
)
def test_bitmap_string(size: int, bits: list[int], text: str) -> None:
    assert str(_bitmap(size, bits)) == text


# ---------------------------------------------------------------------------------------------
# The v1.36.3 registry (features/registry.go) and its scheduling inferences


def test_default_registry_names_sorted() -> None:
    assert DEFAULT_REGISTRY.registered == (
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport",
    )
    assert all(f.max_version is None for f in DEFAULT_REGISTRY.features)


RESTART_ALL_CASES = [
    # restart_all_containers_test.go TestInferForScheduling
    (
        "init container with rules",
        {"initContainers": [restart_all_container()], "containers": [{"name": "name", "image": "image"}]},
        True,
    ),
    (
        "regular container with rules",
        {"initContainers": [{"name": "name", "image": "image"}], "containers": [restart_all_container()]},
        True,
    ),
    (
        "no rules",
        {"initContainers": [{"name": "name", "image": "image"}], "containers": [{"name": "name2", "image": "image"}]},
        False,
    ),
    # Not upstream table cases: only the RestartAllContainers action counts.
    (
        "restart-container action only",
        {"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]},
        False,
    ),
]


@pytest.mark.parametrize(("spec", "want"), [c[1:] for c in RESTART_ALL_CASES], ids=[c[0] for c in RESTART_ALL_CASES])
def test_restart_all_containers_inference(spec: dict[str, Any], want: bool) -> None:
    assert ndf_features.needs_restart_all_containers(spec) is want


@pytest.mark.parametrize(
    ("host_network", "host_users", "want"),
    # user_namespaces_host_network.go InferForScheduling: hostNetwork && hostUsers != nil && !hostUsers
    [(True, False, True), (True, True, False), (True, None, False), (False, False, False), (None, False, False)],
)
def test_user_namespaces_host_network_inference(host_network: bool | None, host_users: bool | None, want: bool) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if host_network is not None:
        spec["hostNetwork"] = host_network
    if host_users is not None:
        spec["hostUsers"] = host_users
    assert ndf_features.needs_user_namespaces_host_network(spec) is want


def test_default_plugin_end_to_end() -> None:
    pl = NodeDeclaredFeatures.new(None, build_handle([]))
    assert pl.version == V(TARGET_VERSION)
    state = CycleState()
    userns = pod(hostNetwork=True, hostUsers=False)
    assert pl.pre_filter(state, userns, []) is None
    assert pl.filter(state, userns, node(declared=["UserNamespacesHostNetworkSupport"])) is None
    assert pl.filter(state, userns, node(declared=["RestartAllContainersOnContainerExits"])) == _REJECTED
    # Features with no scheduling inference never make a pod require them.
    assert pl.pre_filter(CycleState(), pod(pod_resources={"requests": {"cpu": "1"}}), []) == SKIP


# ---------------------------------------------------------------------------------------------
# Registration, default profile, simulate


def test_registered_in_tree_and_last_in_default_profile() -> None:
    assert plugin_registry.IN_TREE["NodeDeclaredFeatures"] is NodeDeclaredFeatures
    assert default_plugins()[-1] == ("NodeDeclaredFeatures", 0)
    [lists] = check_profiles(load_config(None), plugin_registry.IN_TREE)
    assert [r.name for r in lists["preFilter"]][-1] == "NodeDeclaredFeatures"
    assert [r.name for r in lists["filter"]][-1] == "NodeDeclaredFeatures"
    assert "NodeDeclaredFeatures" not in [r.name for r in lists["score"]]


def test_simulate_reports_the_upstream_reason(tmp_path: Path) -> None:
    n1 = make_node("n1")
    n1["status"]["declaredFeatures"] = ["RestartAllContainersOnContainerExits"]
    docs = [
        n1,
        make_node("n2"),
        make_pod("restarter", containers=[restart_all_container()]),
        make_pod("userns", hostNetwork=True, hostUsers=False),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    buf = io.StringIO()
    assert run(str(path), None, 1, "json", stream=buf) == 0
    restarter, userns = (json.loads(line) for line in buf.getvalue().splitlines())
    assert restarter["node"] == "n1"
    assert restarter["filtered"] == {"n2": {"plugin": "NodeDeclaredFeatures", "reasons": [ERR_REASON]}}
    assert userns["node"] is None
    assert userns["message"] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_requeued_only_when_declared_features_change() -> None:
    # Checked against kube-scheduler v1.36.3 on the local control plane: a pod rejected only
    # by this plugin stays unschedulable on unrelated node updates and is retried as soon as
    # status.declaredFeatures changes (UpdateNodeDeclaredFeature).
    from scheduler.backend.queue import ACTIVE, UNSCHEDULABLE
    from scheduler.testing.harness import Harness

    h = Harness()
    n1 = make_node("n1")
    h.sched.on_node(None, n1)
    h.sched.on_pod("ADDED", make_pod("restarter", containers=[restart_all_container()]))
    await h.step()
    assert [e["note"] for e in h.events("FailedScheduling")] == [
        "0/1 nodes are available: 1 node(s) didn't match Pod's required features. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    ]
    uid = "uid-default-restarter"
    assert h.queue.where(uid) == UNSCHEDULABLE
    labelled = make_node("n1", labels={"x": "y"})
    h.sched.on_node("MODIFIED", labelled)
    assert h.queue.where(uid) == UNSCHEDULABLE
    h.clock.step(2)
    declared = make_node("n1", labels={"x": "y"})
    declared["status"]["declaredFeatures"] = ["RestartAllContainersOnContainerExits"]
    h.sched.on_node("MODIFIED", declared)
    assert h.queue.where(uid) == ACTIVE
    await h.step()
    assert h.bound() == {"restarter": "n1"}
