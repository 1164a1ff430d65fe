"""Each in-tree plugin's SignPod (OpportunisticBatching): what it signs, and which pods it
refuses. Cases from upstream's plugin tests: noderesources TestFitSignPod and
TestBalancedAllocationSignPod, interpodaffinity TestPodAffinitySignature, podtopologyspread
TestPodTopoSignatures, imagelocality TestImageSignature; the others from each SignPod."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.interface import Handle, SignPlugin
from scheduler.framework.listers import Listers
from scheduler.framework.signers import (
    FEATURES_SIGNER,
    HOST_PORTS_SIGNER,
    IMAGE_NAMES_SIGNER,
    LABELS_SIGNER,
    NODE_AFFINITY_SIGNER,
    NODE_NAME_SIGNER,
    NODE_SELECTOR_SIGNER,
    RESOURCES_SIGNER,
    TOLERATIONS_SIGNER,
    VOLUMES_SIGNER,
    _canonical,
    volumes_signer,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.pod import PodInfo
from scheduler.plugins.registry import default_registry
from scheduler.testing.builders import make_pod

REGISTRY = default_registry(eps=())


def _plugin(name: str, args: Mapping[str, Any] | None = None, listers: Listers | None = None) -> SignPlugin:
    pl = REGISTRY[name].new(args, Handle(Snapshot(), listers or Listers()))
    assert isinstance(pl, SignPlugin)
    return pl


def _sign(name: str, raw: dict[str, Any], args: Mapping[str, Any] | None = None) -> Any:
    return _plugin(name, args).sign_pod(PodInfo(raw))


def _refused(r: Any) -> bool:
    return isinstance(r, Status) and r.code == Code.UNSCHEDULABLE


# Upstream's SignPlugins: every in-tree PreFilter/Filter/PreScore/Score plugin of the default profile.
SIGNERS = ["NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeVolumeLimits", "DynamicResources",
           "VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeDeclaredFeatures", "TaintToleration",
           "NodeUnschedulable", "InterPodAffinity", "NodePorts", "PodTopologySpread", "NodeAffinity", "NodeName",
           "ImageLocality"]


@pytest.mark.parametrize("name", SIGNERS)
def test_every_filter_and_score_plugin_signs(name: str) -> None:
    assert issubclass(REGISTRY[name], SignPlugin)


def test_resources() -> None:
    # computePodResourceRequest: containers summed, init containers' max, overhead added.
    raw = make_pod("p", cpu="1", memory="1Gi", init_containers=[{"name": "i", "resources": {"requests": {"cpu": "2"}}}])
    want = [(RESOURCES_SIGNER, {"MilliCPU": 2000, "Memory": 1 << 30, "EphemeralStorage": 0, "AllowedPodNumber": 0,
                                "ScalarResources": None})]
    assert _sign("NodeResourcesFit", raw) == want
    assert _sign("NodeResourcesBalancedAllocation", raw) == want


def test_an_extended_resource_dra_serves_is_not_signable() -> None:
    # TestFitSignPod "DRA extended resource": a DeviceClass maps the resource (DRAExtendedResource).
    listers = Listers()
    gpus = {"metadata": {"name": "gpus"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    listers.dra.apply("DeviceClass", gpus)
    for name in ("NodeResourcesFit", "NodeResourcesBalancedAllocation"):
        pl = _plugin(name, listers=listers)
        assert _refused(pl.sign_pod(PodInfo(make_pod("p", requests={"example.com/gpu": "1"}))))
        implicit = PodInfo(make_pod("p", requests={"deviceclass.resource.kubernetes.io/gpus": "1"}))
        assert _refused(pl.sign_pod(implicit))
        other = pl.sign_pod(PodInfo(make_pod("p", requests={"example.com/fpga": "1"})))
        assert other[0][1]["ScalarResources"] == {"example.com/fpga": 1}


@pytest.mark.parametrize(
    ("affinity", "args", "expected"),
    [
        (None, None, [(LABELS_SIGNER, {"foo": "bar"})]),  # no affinity, default settings
        (None, {"ignorePreferredTermsOfExistingPods": True}, []),  # no affinity, ignore setting set
        ({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}, None, None),  # affinity set
        ({"podAntiAffinity": {}}, None, None),
    ],
)
def test_inter_pod_affinity(affinity: dict[str, Any] | None, args: dict[str, Any] | None, expected: Any) -> None:
    r = _sign("InterPodAffinity", make_pod("p", labels={"foo": "bar"}, affinity=affinity), args)
    assert _refused(r) if expected is None else r == expected


@pytest.mark.parametrize(
    ("spread", "args", "signable"),
    [
        ([{"topologyKey": "test", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}], {"defaultingType": "System"},
         False),  # pod w constraints
        (None, {"defaultingType": "System"}, False),  # pod no constraints but default
        (None, {"defaultingType": "List", "defaultConstraints": []}, True),  # pod no constraints no default
    ],
)
def test_pod_topology_spread(spread: Any, args: dict[str, Any], signable: bool) -> None:
    r = _sign("PodTopologySpread", make_pod("p", spread=spread), args)
    assert (r == []) if signable else _refused(r)


def test_image_names_are_normalized_and_deduplicated() -> None:
    raw = make_pod("p", containers=[{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx:latest"}],
                   init_containers=[{"name": "i", "image": "busybox:1.36"}])
    assert _sign("ImageLocality", raw) == [(IMAGE_NAMES_SIGNER, ["busybox:1.36", "nginx:latest"])]


def test_the_simple_signers() -> None:
    tols = [{"key": "b", "operator": "Exists"}, {"key": "a", "value": "2"}, {"key": "a", "value": "1"}]
    raw = make_pod("p", host_ports=[8080, 80], tolerations=tols, node_selector={"zone": "z1"},
                   affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                       {"matchExpressions": [{"key": "k", "operator": "In", "values": ["y", "x"]}]}]}}})
    assert _sign("NodePorts", raw) == [(HOST_PORTS_SIGNER, [80, 8080])]
    ordered = [t["key"] + str(t.get("value", "")) for t in _sign("TaintToleration", raw)[0][1]]
    assert ordered == ["a1", "a2", "b"]
    assert _sign("NodeUnschedulable", raw)[0][0] == TOLERATIONS_SIGNER
    aff, sel = _sign("NodeAffinity", raw)
    requirement = json.dumps({"key": "k", "operator": "In", "values": ["x", "y"]}, separators=(",", ":"))
    term = json.dumps({"MatchExpressions": [requirement], "MatchFields": []}, separators=(",", ":"))
    assert aff == (NODE_AFFINITY_SIGNER, {"Required": [term], "Preferred": []})
    assert sel == (NODE_SELECTOR_SIGNER, {"zone": "z1"})
    assert _sign("NodeName", raw) == [(NODE_NAME_SIGNER, "")]
    assert _sign("NodeDeclaredFeatures", raw)[0][0] == FEATURES_SIGNER


def test_volumes_leave_out_config_maps_and_secrets() -> None:
    raw = make_pod("p")
    raw["spec"]["volumes"] = [
        {"name": "cfg", "configMap": {"name": "c"}},
        {"name": "tok", "secret": {"secretName": "s"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}},
    ]
    want = [(VOLUMES_SIGNER, ['{"persistentVolumeClaim":{"claimName":"pvc"}}'])]
    for name in ("NodeVolumeLimits", "VolumeBinding", "VolumeZone", "VolumeRestrictions"):
        assert _sign(name, raw) == want


def test_pods_with_resource_claims_are_not_signable() -> None:
    raw = make_pod("p")
    assert _sign("DynamicResources", raw) == []
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    assert _refused(_sign("DynamicResources", raw))


def test_volumes_fragment_follows_the_pod() -> None:
    # The four volume plugins share one computation per pod: a second pod with other volumes
    # must not get the first one's answer, and ConfigMap/Secret sources never count.
    def pod(name: str, volumes: list[dict[str, Any]]) -> PodInfo:
        raw = make_pod(name)
        raw["spec"]["volumes"] = volumes
        return PodInfo(raw)

    pvc = {"name": "data", "persistentVolumeClaim": {"claimName": "c1"}}
    a = pod("a", [pvc, {"name": "cm", "configMap": {"name": "x"}}])
    b = pod("b", [{**pvc, "persistentVolumeClaim": {"claimName": "c2"}}])
    assert volumes_signer(a) == ['{"persistentVolumeClaim":{"claimName":"c1"}}']
    assert volumes_signer(b) == ['{"persistentVolumeClaim":{"claimName":"c2"}}']
    assert volumes_signer(a) == ['{"persistentVolumeClaim":{"claimName":"c1"}}']


@pytest.mark.parametrize(
    "value",
    [{"b": 1, "a": [3, 1]}, {"é": "ü", "x": None}, {"n": 2**70}, {"f": 0.5, "t": True}],
)
def test_canonical_json_is_go_marshal_shaped(value: Any) -> None:
    # Keys sorted, compact, UTF-8 as is: equal specs sign as equal bytes whichever encoder ran.
    assert _canonical(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
