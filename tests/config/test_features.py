"""--feature-gates and the plugins' Features (scheduler/config/features.py).

Expected values: component-base v0.36.3 featuregate (feature_gate_test.go TestFeatureGateFlag,
TestFeatureGateSetFromMap, TestAddDependencies), compatibility/registry.go and
cli/flag/colon_separated_multimap_string_string.go for the flag's shape, and
pkg/scheduler/framework/plugins/feature/feature.go for Features. The tests at the end run the
kube-scheduler v1.36.3 binary itself and diff the gate table and every error message with it.
"""

from __future__ import annotations

import codecs
import os
import re
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from scheduler.cli import main
from scheduler.config import load_config, load_run_config
from scheduler.config.features import (
    ALL_ALPHA,
    ALL_BETA,
    ALPHA,
    BETA,
    DEFAULT_FEATURES,
    DEFAULT_GATES,
    DEPENDENCIES,
    DEPRECATED,
    FEATURE_FIELDS,
    GA,
    GATES,
    FeatureGateError,
    FeatureGates,
    Features,
    parse_feature_gates,
)
from scheduler.core.profiles import build_frameworks
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.listers import Listers
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo, set_resource_gates
from scheduler.model.podrequests import DEFAULT_RESOURCE_GATES
from scheduler.plugins.dynamicresources.allocator import AllocatorFeatures
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.storage import claim_vol, pv, pvc, storage_class, store_of

# ---------------------------------------------------------------------------------------------
# Parsing and refusing


# (flag values, the error): every case is also run through the binary below.
_REFUSED: list[tuple[list[str], str]] = [
    # unsafeSetFromMap: unknown gate, locked gate (TestFeatureGateFlag's fooBarBaz and
    # TestLockedFalse cases, with v1.36.3's real gates).
    (["NoSuchGate=true"], "unrecognized feature gate: NoSuchGate"),
    (["=true"], "unrecognized feature gate: "),
    (
        ["SchedulerQueueingHints=false"],
        "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
    ),
    (
        ["GitRepoVolumeDriver=true"],
        "cannot set feature gate GitRepoVolumeDriver to true, feature is locked to false",
    ),
    # Several locked gates: every one reported, aggregated.
    (
        ["SchedulerQueueingHints=false,SidecarContainers=false"],
        "[cannot set feature gate SchedulerQueueingHints to false, feature is locked to true, "
        "cannot set feature gate SidecarContainers to false, feature is locked to true]",
    ),
    # featureGate.Set: "key=bool" pairs, strconv.ParseBool.
    (["Foo"], "missing bool value for Foo"),
    (["GangScheduling"], "missing bool value for GangScheduling"),
    (["Foo=maybe"], 'invalid value of Foo=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'),
    (
        ["PodLevelResources=tRUE"],
        'invalid value of PodLevelResources=tRUE, err: strconv.ParseBool: parsing "tRUE": invalid syntax',
    ),
    (
        ['Foo=ma"y\\b'],
        'invalid value of Foo=ma"y\\b, err: strconv.ParseBool: parsing "ma\\"y\\\\b": invalid syntax',
    ),
    (["Foo=a\x01"], 'invalid value of Foo=a\x01, err: strconv.ParseBool: parsing "a\\x01": invalid syntax'),
    # A malformed pair stops the parse before any gate is looked up.
    (
        ["Foo=maybe,NoSuch=true"],
        'invalid value of Foo=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
    ),
    # The compatibility registry: components.
    (["wardle:Foo=true"], "component not registered: wardle"),
    (["kube:Foo=true"], "unrecognized feature gate: Foo"),
    (["kube:Foo"], "missing bool value for Foo"),
    (
        ["kube:GenericWorkload=true,GangScheduling=true"],
        "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
    ),
    (
        ["kube:GenericWorkload=true", "GangScheduling=true"],
        "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
    ),
    # Dependencies (defaultKubernetesFeatureGateDependencies), checked once the rest is valid.
    (
        ["PodLevelResources=false"],
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
        "[PodLevelResources]",
    ),
    (
        ["GangScheduling=true"],
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
    ),
    (
        ["AllAlpha=true,GangScheduling=false"],
        "WorkloadAwarePreemption is enabled, but depends on features that are disabled: [GangScheduling]",
    ),
    (
        ["NodeDeclaredFeatures=false"],
        "[ExtendWebSocketsToKubelet is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
        "[NodeDeclaredFeatures], "
        "InPlacePodVerticalScalingInitContainers is enabled, but depends on features that are disabled: "
        "[NodeDeclaredFeatures], "
        "RestartAllContainersOnContainerExits is enabled, but depends on features that are disabled: "
        "[NodeDeclaredFeatures]]",
    ),
    (
        ["DRAResourceClaimDeviceStatus=false"],
        "[DRADeviceBindingConditions is enabled, but depends on features that are disabled: "
        "[DRAResourceClaimDeviceStatus], DRAResourceClaimGranularStatusAuthorization is enabled, but depends "
        "on features that are disabled: [DRAResourceClaimDeviceStatus]]",
    ),
]


@pytest.mark.parametrize(("args", "message"), _REFUSED)
def test_refused(args: list[str], message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates(args)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        ([], {"PodLevelResources": True, "GangScheduling": False, "SchedulerQueueingHints": True}),
        ([""], {"PodLevelResources": True}),
        ([",,"], {"GenericWorkload": False}),
        (["GenericWorkload=true,GangScheduling=true"], {"GenericWorkload": True, "GangScheduling": True}),
        # Repeated flags add up; a key given twice: the last wins.
        (["GenericWorkload=true", "GangScheduling=true"], {"GangScheduling": True}),
        (["GenericWorkload=true,GenericWorkload=false"], {"GenericWorkload": False}),
        (["kube:GenericWorkload=true", "kube:GangScheduling=true"], {"GangScheduling": True}),
        # strconv.ParseBool's spellings and strings.TrimSpace around keys and values.
        (["GenericWorkload=1"], {"GenericWorkload": True}),
        (["GenericWorkload=T"], {"GenericWorkload": True}),
        (
            ["GenericWorkload=TRUE,StorageCapacityScoring=True"],
            {"GenericWorkload": True, "StorageCapacityScoring": True},
        ),
        ([" SchedulerAsyncPreemption = F "], {"SchedulerAsyncPreemption": False}),
        (["kube : SchedulerAsyncPreemption=0"], {"SchedulerAsyncPreemption": False}),
        # A locked gate may be set to its own value.
        (["SchedulerQueueingHints=true"], {"SchedulerQueueingHints": True}),
        # AllAlpha/AllBeta set every alpha (beta) gate not named; a named gate wins in any order.
        (["AllAlpha=true"], {"GangScheduling": True, "WorkloadAwarePreemption": True, "PodLevelResources": True}),
        (["AllBeta=false"], {"PodLevelResources": False, "NodeDeclaredFeatures": False, "AllBeta": False}),
        (
            ["SchedulerAsyncPreemption=true,AllBeta=false"],
            {"SchedulerAsyncPreemption": True, "OpportunisticBatching": False, "SchedulerQueueingHints": True},
        ),
        (
            ["AllAlpha=true,WorkloadAwarePreemption=false,TopologyAwareWorkloadScheduling=false"],
            {"GangScheduling": True, "WorkloadAwarePreemption": False, "TopologyAwareWorkloadScheduling": False},
        ),
        (["PodLevelResources=false,InPlacePodLevelResourcesVerticalScaling=false"], {"PodLevelResources": False}),
    ],
)
def test_accepted(args: list[str], expect: dict[str, bool]) -> None:
    gates = parse_feature_gates(args)
    for name, want in expect.items():
        assert gates.enabled(name) is want, name


def test_warnings_for_ga_and_deprecated_gates() -> None:
    gates = parse_feature_gates(["AllowServiceExternalIPs=false,KMSv1=true,GenericWorkload=true"])
    assert gates.warnings == (
        ("Warning: setting GA feature gate. It will be removed in a future release.", "AllowServiceExternalIPs", False),
        ("Warning: setting deprecated feature gate. It will be removed in a future release.", "KMSv1", True),
    )


def test_unknown_gate_lookup_raises() -> None:
    # Upstream's Enabled panics for an unregistered gate: a typo in our code must not read as "off".
    with pytest.raises(KeyError):
        DEFAULT_GATES.enabled("GangSchedulng")
    with pytest.raises(KeyError):
        FeatureGates({"NoSuchGate": True})


def test_resolved_gates_are_immutable_and_compare_by_value() -> None:
    a = parse_feature_gates(["GenericWorkload=true"])
    b = parse_feature_gates(["GenericWorkload=true,GenericWorkload=true"])
    assert a == b and hash(a) == hash(b) and a != DEFAULT_GATES
    with pytest.raises(TypeError):
        a.explicit["GenericWorkload"] = False  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# The table


def test_table_shape() -> None:
    assert list(GATES) == sorted(GATES)
    assert {s.stage for s in GATES.values()} == {ALPHA, BETA, GA, DEPRECATED}
    assert (GATES[ALL_ALPHA].stage, GATES[ALL_ALPHA].default) == (ALPHA, False)
    assert (GATES[ALL_BETA].stage, GATES[ALL_BETA].default) == (BETA, False)
    # Upstream lets a gate be locked only once it is GA or deprecated.
    assert all(s.stage in (GA, DEPRECATED) for s in GATES.values() if s.locked)


def test_dependencies_follow_add_dependencies_rules() -> None:
    """AddDependencies refuses a default-on gate depending on a default-off one and a locked gate
    depending on an unlocked one; the table must satisfy what the binary checked at start-up."""
    for feature, deps in DEPENDENCIES.items():
        assert feature in GATES and list(deps) == sorted(deps)
        f = GATES[feature]
        for dep in deps:
            d = GATES[dep]
            assert not (f.default and not d.default), (feature, dep)
            assert not (f.locked and not d.locked), (feature, dep)


def test_scheduler_gates_at_their_v1_36_defaults() -> None:
    # kube_features.go at 1.36: the gates the scheduler reads, by stage.
    want = {
        "SchedulerQueueingHints": (GA, True, True),
        "DynamicResourceAllocation": (GA, True, True),
        "SchedulerAsyncPreemption": (BETA, True, False),
        "PodLevelResources": (BETA, True, False),
        "NodeDeclaredFeatures": (BETA, True, False),
        "MatchLabelKeysInPodTopologySpread": (BETA, True, False),
        "DRAPrioritizedList": (GA, True, False),
        "GenericWorkload": (ALPHA, False, False),
        "GangScheduling": (ALPHA, False, False),
        "TopologyAwareWorkloadScheduling": (ALPHA, False, False),
        "WorkloadAwarePreemption": (ALPHA, False, False),
        "StorageCapacityScoring": (ALPHA, False, False),
        "TaintTolerationComparisonOperators": (ALPHA, False, False),
    }
    for name, (stage, default, locked) in want.items():
        s = GATES[name]
        assert (s.stage, s.default, s.locked) == (stage, default, locked), name


# ---------------------------------------------------------------------------------------------
# Features (feature.go)

# feature.Features' fields, in upstream's order.
_UPSTREAM_FIELDS = (
    "EnableDRAExtendedResource",
    "EnableDRAPrioritizedList",
    "EnableDRAAdminAccess",
    "EnableDRAConsumableCapacity",
    "EnableDRADeviceTaints",
    "EnableDRADeviceBindingConditions",
    "EnableDRAListTypeAttributes",
    "EnableDRANodeAllocatableResources",
    "EnableDRAPartitionableDevices",
    "EnableDRAResourceClaimDeviceStatus",
    "EnableDRASchedulerFilterTimeout",
    "EnableDRAWorkloadResourceClaims",
    "EnableDynamicResourceAllocation",
    "EnableVolumeAttributesClass",
    "EnableVolumeLimitScaling",
    "EnableNodeInclusionPolicyInPodTopologySpread",
    "EnableMatchLabelKeysInPodTopologySpread",
    "EnableInPlacePodVerticalScaling",
    "EnableSidecarContainers",
    "EnableSchedulingQueueHint",
    "EnableAsyncPreemption",
    "EnablePodLevelResources",
    "EnableStorageCapacityScoring",
    "EnableNodeDeclaredFeatures",
    "EnableGangScheduling",
    "EnableGenericWorkload",
    "EnableTaintTolerationComparisonOperators",
    "EnableInPlacePodLevelResourcesVerticalScaling",
    "EnableTopologyAwareWorkloadScheduling",
    "EnableWorkloadAwarePreemption",
)


def _snake(go: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", go)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def test_features_has_upstream_fields() -> None:
    assert [f for f, _ in FEATURE_FIELDS] == [_snake(g) for g in _UPSTREAM_FIELDS]
    assert Features.__slots__ == tuple(f for f, _ in FEATURE_FIELDS)
    # The two whose field name is not "Enable" + gate name.
    gate_of = dict(FEATURE_FIELDS)
    assert gate_of["enable_scheduling_queue_hint"] == "SchedulerQueueingHints"
    assert gate_of["enable_async_preemption"] == "SchedulerAsyncPreemption"
    for field, gate in FEATURE_FIELDS:
        if field not in ("enable_scheduling_queue_hint", "enable_async_preemption"):
            assert field == "enable_" + _snake(gate), field


@pytest.mark.parametrize(("field", "gate"), FEATURE_FIELDS)
def test_features_copy_each_gate(field: str, gate: str) -> None:
    assert getattr(DEFAULT_FEATURES, field) is GATES[gate].default
    if not GATES[gate].locked:
        flipped = FeatureGates({gate: not GATES[gate].default}).features()
        assert getattr(flipped, field) is not GATES[gate].default
        others = [f for f, _ in FEATURE_FIELDS if f != field]
        assert all(
            getattr(flipped, f) == getattr(DEFAULT_FEATURES, f) for f in others if dict(FEATURE_FIELDS)[f] != gate
        )


# ---------------------------------------------------------------------------------------------
# Reaching the config, the Handle and the command line


def test_gates_travel_with_the_config_to_every_handle() -> None:
    gates = parse_feature_gates(["SchedulerAsyncPreemption=false"])
    cfg = load_config(None, gates)
    assert cfg.feature_gates is gates
    assert load_run_config(None, gates).feature_gates is gates
    assert load_config(None).feature_gates == DEFAULT_GATES
    frameworks = build_frameworks(cfg, Snapshot(), Listers())
    for fw in frameworks.values():
        assert fw.handle.features == gates.features()
        assert fw.handle.features.enable_async_preemption is False


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_cli_refuses_with_one_line_and_exit_2(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "--feature-gates", "GangScheduling=true", "--feature-gates=NoSuchGate=true"]
    if command == "simulate":
        cluster = tmp_path / "c.yaml"
        cluster.write_text("")
        argv += ["--cluster", str(cluster)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "error: unrecognized feature gate: NoSuchGate\n"


def test_cli_simulate_takes_the_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text("")
    assert main(["simulate", "--cluster", str(cluster), "--feature-gates=AllowServiceExternalIPs=true"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: Warning: setting GA feature gate. It will be removed in a future release. "
        "featureGate=AllowServiceExternalIPs value=true\n"
    ) in err


# ---------------------------------------------------------------------------------------------
# Against the kube-scheduler v1.36.3 binary

_KUBE_VERSION = "v1.36.3"
_REPO = Path(__file__).resolve().parents[2]


def _binary_path() -> Path:
    cache = os.environ.get("PYSCHED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyscheduler"
    )
    return Path(cache) / "bin" / f"kube-scheduler-{_KUBE_VERSION}" / "kube-scheduler"


@pytest.fixture(scope="module")
def binary() -> Path:
    path = _binary_path()
    if not path.exists() and os.environ.get("CI") == "true":
        # CI always has it (the e2e suite needs it); build it now if this module runs first.
        subprocess.run(["bash", str(_REPO / "e2e" / "controlplane" / "build.sh"), "kube-scheduler"], check=False)
        if not path.exists():
            pytest.fail(f"CI=true but the kube-scheduler {_KUBE_VERSION} binary is missing: {path}")
    if not path.exists():
        pytest.skip(f"kube-scheduler {_KUBE_VERSION} binary not built ({path})")
    return path


# A config file that cannot exist: once the gates are applied, the binary stops here at once.
_NO_CONFIG = "/nonexistent/pyscheduler-feature-gates-test.yaml"
_NO_CONFIG_ERR = f"open {_NO_CONFIG}: no such file or directory"


def _binary_error(binary: Path, args: list[str]) -> str:
    """The error the binary exits with (exit 1, klog's ``"command failed" err="..."``)."""
    argv = [str(binary), f"--config={_NO_CONFIG}", *(f"--feature-gates={a}" for a in args)]
    proc = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    m = re.search(rb'"command failed" err="((?:[^"\\]|\\.)*)"\n', proc.stderr)
    assert m is not None, proc.stderr[-2000:]
    return codecs.escape_decode(m.group(1))[0].decode("utf-8", "surrogateescape")


def _ours(args: list[str]) -> tuple[str, ...]:
    try:
        parse_feature_gates(args)
    except FeatureGateError as exc:
        return exc.errors
    return (_NO_CONFIG_ERR,)


def _same_errors(binary_err: str, ours: tuple[str, ...]) -> None:
    """Upstream walks Go maps, so several errors come in a random order: compare them as a set."""
    if len(ours) == 1:
        assert binary_err == ours[0]
        return
    assert binary_err.startswith("[") and binary_err.endswith("]")
    inner = binary_err[1:-1]
    for e in ours:
        assert e in inner, e
    assert len(inner) == len(", ".join(ours))


_HELP_LINE = re.compile(r"^\s+kube:(\w+)=true\|false \((ALPHA|BETA) - default=(true|false)\)$")


def test_help_lists_our_alpha_and_beta_gates(binary: Path) -> None:
    """``--help`` shows every alpha and beta gate with its default (GA and deprecated ones are
    hidden: KnownFeatures)."""
    proc = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30, check=False)
    listed = {}
    for line in proc.stdout.splitlines():
        m = _HELP_LINE.match(line)
        if m:
            listed[m.group(1)] = (m.group(2), m.group(3) == "true")
    ours = {s.name: (s.stage, s.default) for s in GATES.values() if s.stage in (ALPHA, BETA)}
    assert listed == ours


def test_metrics_show_every_gate_with_stage_and_default(binary: Path, tmp_path: Path) -> None:
    """kubernetes_feature_enabled{name,stage} (AddMetrics: every gate, GA and deprecated
    included) from the binary's /metrics: names, stages and defaults, all of them."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        str(binary),
        "--master=http://127.0.0.1:1",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--authorization-always-allow-paths=/metrics",
        f"--cert-dir={tmp_path}",
        "--leader-elect=false",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        body = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=5) as r:
                    body = r.read().decode()
                if "kubernetes_feature_enabled{" in body:
                    break
            except OSError:
                pass
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    theirs = _feature_series(body)
    assert theirs, "no kubernetes_feature_enabled series"
    assert theirs == {s.name: (s.stage, s.default) for s in GATES.values()}
    # Our own /metrics shows the same series (live/metrics.py).
    assert _our_feature_series(DEFAULT_GATES) == theirs


def _feature_series(body: str) -> dict[str, tuple[str, bool]]:
    series = re.findall(r'^kubernetes_feature_enabled\{name="(\w+)",stage="(\w*)"\} ([01])(?:\.0)?$', body, re.M)
    return {n: (stage, v == "1") for n, stage, v in series}


def _our_feature_series(gates: FeatureGates) -> dict[str, tuple[str, bool]]:
    from scheduler.live.metrics import Metrics

    m = Metrics()
    m.feature_gates(gates)
    return _feature_series(m.exposition()[0].decode())


def test_kubernetes_feature_enabled_metric() -> None:
    gates = parse_feature_gates(["GenericWorkload=true,SchedulerAsyncPreemption=false"])
    got = _our_feature_series(gates)
    assert len(got) == len(GATES)
    assert got["GenericWorkload"] == (ALPHA, True)
    assert got["SchedulerAsyncPreemption"] == (BETA, False)
    assert got["SchedulerQueueingHints"] == (GA, True)


def test_locked_gates_as_the_binary_locks_them(binary: Path) -> None:
    """Every gate set to true, then every gate set to false: the binary knows all of ours (else
    "unrecognized") and refuses exactly the locked ones we refuse."""
    names = [n for n in GATES if n not in (ALL_ALPHA, ALL_BETA)]
    for value in ("true", "false"):
        args = [",".join(f"{n}={value}" for n in names)]
        ours = _ours(args)
        assert all(e.startswith("cannot set feature gate ") for e in ours)
        _same_errors(_binary_error(binary, args), ours)


def _dependency_cases() -> list[list[str]]:
    """Two command lines that between them break every dependency that can be broken: first
    every unlocked dependency off and every other unlocked dependent on; then the dependents
    that are dependencies themselves (GangScheduling, DRADeviceTaints, ...) on, their own
    dependencies off. The errors of every gate left on are reported together."""
    deps_of_any = {d for deps in DEPENDENCIES.values() for d in deps if not GATES[d].locked}
    dependents = [f for f in DEPENDENCIES if not GATES[f].locked]
    first = [f"{d}=false" for d in sorted(deps_of_any)] + [f"{f}=true" for f in dependents if f not in deps_of_any]
    middle = [f for f in dependents if f in deps_of_any]
    second = [f"{f}=true" for f in middle] + [
        f"{d}=false" for f in middle for d in DEPENDENCIES[f] if not GATES[d].locked and d not in middle
    ]
    return [[",".join(first)], [",".join(second)]]


def test_dependencies_as_the_binary_checks_them(binary: Path) -> None:
    for args in _dependency_cases():
        ours = _ours(args)
        assert all(" is enabled, but depends on features that are disabled: " in e for e in ours), ours
        _same_errors(_binary_error(binary, args), ours)


@pytest.mark.parametrize(
    "args",
    [
        *(args for args, _ in _REFUSED),
        # Accepted ones: the binary goes on to its (missing) config file.
        [""],
        ["AllAlpha=true"],
        ["AllBeta=false"],
        ["AllAlpha=true,AllBeta=true"],
        [" SchedulerAsyncPreemption = F "],
        ["GenericWorkload=true", "GangScheduling=true"],
        ["kube : SchedulerAsyncPreemption=0"],
    ],
)
def test_messages_as_the_binary_prints_them(binary: Path, args: list[str]) -> None:
    _same_errors(_binary_error(binary, args), _ours(args))


# ---------------------------------------------------------------------------------------------
# What flipping a gate changes, plugin by plugin (the upstream plugin tests' fts cases)


def _handle(gates: list[str]) -> Handle:
    return Handle(Snapshot(), Listers(), features=parse_feature_gates(gates).features())


# volume_binding_test.go TestVolumeBinding with EnableStorageCapacityScoring and its test shape
# (0 -> 0, 100 -> 10): pods, nodes, objects, the wantScores per node.
_HOST = "kubernetes.io/hostname"
_WAIT = "wait-sc"
_CAP = "wait-sc-with-storage-capacity"
_CAP_OBJS = [
    storage_class(_CAP, provisioner="driver-with-storage-capacity"),
    {"kind": "CSIDriver", "metadata": {"name": "driver-with-storage-capacity"}, "spec": {"storageCapacity": True}},
]


def _capacity(node: str, size: str) -> dict:
    return {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": node, "namespace": "default"},
        "storageClassName": _CAP,
        "nodeTopology": {"matchLabels": {"node-label": node}},
        "capacity": size,
    }


def _claims_pod(*claims: str) -> PodInfo:
    return PodInfo(make_pod("pod-a", volumes=[claim_vol(c) for c in claims]))


def _vb_nodes(n: int = 3) -> list[NodeInfo]:
    return [
        NodeInfo(make_node(name, labels={_HOST: name, "node-label": name}))
        for name in ("node-a", "node-b", "node-c")[:n]
    ]


_CAPACITY_CASES = {
    "local volumes with close capacity are preferred": (
        _claims_pod("pvc-a"),
        _vb_nodes(),
        [
            storage_class(_WAIT, provisioner=""),
            pvc("pvc-a", cls=_WAIT, size="50Gi", modes=()),
            *(pv(f"pv-a-{i}", cls=_WAIT, size="200Gi", modes=(), affinity={_HOST: ["node-a"]}) for i in range(2)),
            *(pv(f"pv-b-{i}", cls=_WAIT, size="100Gi", modes=(), affinity={_HOST: ["node-b"]}) for i in range(2)),
        ],
        [25, 50, 0],
    ),
    "storage capacity score": (
        _claims_pod("pvc-dynamic"),
        _vb_nodes(),
        [
            *_CAP_OBJS,
            pvc("pvc-dynamic", cls=_CAP, size="10Gi", modes=()),
            _capacity("node-a", "100Gi"),
            _capacity("node-b", "50Gi"),
            _capacity("node-c", "10Gi"),
        ],
        [10, 20, 100],
    ),
    "dynamic provisioning with multiple PVCs of the same StorageClass": (
        _claims_pod("pvc-dynamic-0", "pvc-dynamic-1"),
        _vb_nodes(1),
        [
            *_CAP_OBJS,
            pvc("pvc-dynamic-0", cls=_CAP, size="50Gi", modes=()),
            pvc("pvc-dynamic-1", cls=_CAP, size="50Gi", modes=()),
            _capacity("node-a", "100Gi"),
        ],
        [100],
    ),
}


@pytest.mark.parametrize("case", sorted(_CAPACITY_CASES))
def test_storage_capacity_scoring_scores_volumes(case: str) -> None:
    from scheduler.plugins.volumebinding import VolumeBinding

    p, nodes, objs, want = _CAPACITY_CASES[case]
    handle = _handle(["StorageCapacityScoring=true"])
    handle.listers.storage = store_of(*objs)
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    pl = VolumeBinding.new({"shape": shape}, handle)
    state = CycleState()
    assert pl.pre_filter(state, p, nodes) is None
    for n in nodes:
        pl.filter(state, p, n)
    assert pl.pre_score(state, p, nodes) is None
    assert [pl.score(state, p, n) for n in nodes] == want
    # The gate off (v1.36.3's default): no scorer, PreScore skips.
    off = VolumeBinding.new(None, _handle([]))
    assert off.pre_score(state, p, nodes) == SKIP and off.score(state, p, nodes[0]) == 0


@pytest.mark.parametrize(
    ("gates", "args", "error"),
    [
        # ValidateVolumeBindingArgsWithOptions (validation_pluginargs_test.go).
        ([], {"shape": []}, "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"),
        (["StorageCapacityScoring=true"], {"shape": []}, None),  # defaulted
        (["StorageCapacityScoring=true"], None, None),
        (
            ["StorageCapacityScoring=true"],
            {"shape": [{"utilization": 10, "score": 1}, {"utilization": 5, "score": 11}]},
            "[shape[1].utilization: Invalid value: 5: values must be sorted in increasing order, "
            "shape[1].score: Invalid value: 11: not in valid range [0, 10]]",
        ),
    ],
)
def test_volume_binding_args_under_the_gate(gates: list[str], args: dict | None, error: str | None) -> None:
    from scheduler.plugins.volumebinding import DEFAULT_SHAPE, VolumeBinding

    if error is None:
        pl = VolumeBinding.new(args, _handle(gates))
        assert pl.scorer is not None and pl.scorer.shape == tuple(
            type(p)(p.utilization, p.score * 10) for p in DEFAULT_SHAPE
        )
        return
    with pytest.raises(ValueError) as err:
        VolumeBinding.new(args, _handle(gates))
    assert error in str(err.value)


def _placements(docs: list[dict], gates: list[str]) -> dict[str, str | None]:
    """Each pending pod's node (None: unschedulable) through simulate, under ``gates``."""
    from scheduler.simulate.simulator import Simulator, build_cluster

    sim = Simulator(build_cluster(docs), load_config(None, parse_feature_gates(gates)), seed=1)
    return {out.pod.name: out.node for out in sim.attempts()}


# NodeDeclaredFeatures off: the gates that depend on it go with it.
_NDF_OFF = [
    "NodeDeclaredFeatures=false,InPlacePodLevelResourcesVerticalScaling=false,ExtendWebSocketsToKubelet=false,"
    "InPlacePodVerticalScalingInitContainers=false,RestartAllContainersOnContainerExits=false"
]


def test_node_declared_features_gate() -> None:
    """nodedeclaredfeatures.go New and default_plugins.go: without the gate the plugin is not in
    the default set, and if configured it skips every pod and registers no events; a node whose
    declared features change is no longer an event (framework/events.go)."""
    from scheduler.config.defaults import default_plugins
    from scheduler.framework.events import ActionType, node_update_action
    from scheduler.model.node import NodeInfo
    from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures

    off = parse_feature_gates(_NDF_OFF)
    assert "NodeDeclaredFeatures" not in [n for n, _ in default_plugins(off)]
    assert default_plugins()[-1] == ("NodeDeclaredFeatures", 0)
    pl = NodeDeclaredFeatures.new(None, _handle(_NDF_OFF))
    userns = PodInfo(make_pod("userns", hostNetwork=True, hostUsers=False))
    assert pl.pre_filter(CycleState(), userns, []) == SKIP
    assert pl.events_to_register() == []
    assert NodeDeclaredFeatures.new(None, _handle([])).pre_filter(CycleState(), userns, []) is None
    old = NodeInfo(make_node("n1"))
    raw = make_node("n1")
    raw.setdefault("status", {})["declaredFeatures"] = ["UserNamespacesHostNetworkSupport"]
    new = NodeInfo(raw)
    assert node_update_action(old, new) == ActionType.UPDATE_NODE_DECLARED_FEATURE
    assert node_update_action(old, new, declared_features=False) == ActionType(0)
    # The whole way through simulate: a pod needing a feature no node declares.
    docs = [make_node("n1"), make_pod("userns", hostNetwork=True, hostUsers=False)]
    assert _placements(docs, []) == {"userns": None}
    assert _placements(docs, _NDF_OFF) == {"userns": "n1"}


def test_match_label_keys_in_pod_topology_spread_gate() -> None:
    """podtopologyspread/common.go filterTopologySpreadConstraints: matchLabelKeys narrow the
    selector only with the gate. Two web pods of version v1 on n1 and one of v2 on n2: a v2 pod
    spread by hostname with maxSkew 1 counts only v2 pods with the gate (n1), all web pods
    without it (n2)."""
    host = "kubernetes.io/hostname"
    nodes = [make_node(n, labels={host: n}) for n in ("n1", "n2")]
    running = [
        make_pod("a", labels={"app": "web", "version": "v1"}, node_name="n1"),
        make_pod("b", labels={"app": "web", "version": "v1"}, node_name="n1"),
        make_pod("c", labels={"app": "web", "version": "v2"}, node_name="n2"),
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": host,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["version"],
        }
    ]
    incoming = make_pod("d", labels={"app": "web", "version": "v2"}, spread=spread)
    docs = [*nodes, *running, incoming]
    assert _placements(docs, []) == {"d": "n1"}
    assert _placements(
        docs, ["MatchLabelKeysInPodTopologySpread=false,MatchLabelKeysInPodTopologySpreadSelectorMerge=false"]
    ) == {"d": "n2"}


# core/v1 toleration_test.go TestCompareNumericValues: (operator, toleration value, taint value, tolerated).
_NUMERIC = [
    ("Gt", "100", "200", True),
    ("Gt", "200", "100", False),
    ("Gt", "100", "100", False),
    ("Gt", "-100", "-50", True),
    ("Gt", "-50", "-100", False),
    ("Gt", "0", "1", True),
    ("Gt", "9223372036854775806", "9223372036854775807", True),
    ("Lt", "200", "100", True),
    ("Lt", "100", "200", False),
    ("Lt", "100", "100", False),
    ("Lt", "-50", "-100", True),
    ("Lt", "-100", "-50", False),
    ("Lt", "0", "-1", True),
    ("Gt", "abc", "100", False),
    ("Gt", "", "100", False),
    ("Gt", "0100", "200", False),
    ("Gt", "+100", "200", False),
    ("Gt", "100.5", "200", False),
    ("Gt", "-", "100", False),
    ("Gt", "100", "xyz", False),
    ("Gt", "100", "", False),
    ("Gt", "100", "0200", False),
    ("Lt", "100", "+200", False),
    ("Lt", "100", " 200 ", False),
    ("Gt", "0", "0", False),
    ("Lt", "0", "0", False),
    ("Gt", "0", "9223372036854775807", True),
    ("Lt", "0", "-9223372036854775808", True),
    ("Gt", "0", "9223372036854775808", False),  # beyond int64: ParseInt fails
]


@pytest.mark.parametrize(("op", "tol", "taint", "want"), _NUMERIC)
def test_toleration_comparison_operators(op: str, tol: str, taint: str, want: bool) -> None:
    from scheduler.model.taints import Taint, Toleration

    t = Toleration("node.kubernetes.io/sla", op, tol, "NoSchedule")
    tn = Taint("node.kubernetes.io/sla", taint, "NoSchedule")
    assert t.tolerates(tn, comparison=True) is want
    assert t.tolerates(tn) is False  # TestTolerationToleratesTaint: the gate off, never tolerated


def test_taint_toleration_comparison_operators_gate() -> None:
    """TaintToleration and PodTopologySpread's nodeTaintsPolicy read the gate: a node tainted
    sla=800 and a pod tolerating sla Gt 750 fits only with TaintTolerationComparisonOperators."""
    host = "kubernetes.io/hostname"
    tainted = make_node("n1", labels={host: "n1"})
    tainted["spec"] = {"taints": [{"key": "sla", "value": "800", "effect": "NoSchedule"}]}
    tol = [{"key": "sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"}]
    docs = [tainted, make_pod("p", tolerations=tol)]
    assert _placements(docs, []) == {"p": None}
    assert _placements(docs, ["TaintTolerationComparisonOperators=true"]) == {"p": "n1"}
    # PodTopologySpread's nodeTaintsPolicy Honor: the tainted n1 (no pods) is a domain only when
    # tolerated, so only with the gate does n2 (two pods) break maxSkew 1.
    from scheduler.plugins.podtopologyspread import PodTopologySpread
    from scheduler.testing.framework import build_handle

    web = {"app": "web"}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": host,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": web},
            "nodeTaintsPolicy": "Honor",
        }
    ]
    nodes = [tainted, make_node("n2", labels={host: "n2"})]
    running = [make_pod(n, labels=web, node_name="n2") for n in ("a", "b")]
    incoming = PodInfo(make_pod("p", labels=web, spread=spread, tolerations=tol))
    verdicts = {}
    for gates in ([], ["TaintTolerationComparisonOperators=true"]):
        h = build_handle(nodes, running)
        h.features = parse_feature_gates(gates).features()
        pl = PodTopologySpread.new({"defaultingType": "List"}, h)
        st = CycleState()
        assert pl.pre_filter(st, incoming, h.snapshot.node_infos) is None
        verdicts[bool(gates)] = [pl.filter(st, incoming, ni) is None for ni in h.snapshot.node_infos]
    assert verdicts == {False: [True, True], True: [True, False]}
    # PodTopologySpread with nodeTaintsPolicy Honor: the tainted node is a domain only when
    # tolerated. Two web pods on n2; the new one tolerates sla Gt 750.
    other = make_node("n2", labels={host: "n2"})
    web = {"app": "web"}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": host,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": web},
            "nodeTaintsPolicy": "Honor",
        }
    ]
    docs = [
        tainted,
        other,
        make_pod("a", labels=web, node_name="n2"),
        make_pod("b", labels=web, node_name="n2"),
        make_pod("p", labels=web, spread=spread, tolerations=tol),
    ]
    # Gate off: n1 is untolerated, so neither a fit nor a domain; n2 alone has skew 0.
    assert _placements(docs, []) == {"p": "n2"}
    # Gate on: n1 is a domain with 0 pods, so n2 would make the skew 3 > 1.
    assert _placements(docs, ["TaintTolerationComparisonOperators=true"]) == {"p": "n1"}


@pytest.fixture(autouse=True)
def _default_resource_gates() -> Iterator[None]:
    """Building frameworks sets the process's resource gates; leave them at their defaults."""
    yield
    set_resource_gates(DEFAULT_RESOURCE_GATES)


_PLR_OFF = ["PodLevelResources=false,InPlacePodLevelResourcesVerticalScaling=false"]


def test_pod_level_resources_gate() -> None:
    """PodLevelResources off (types.go CalculateResource, fit.go computePodResourceRequest):
    spec.resources no longer counts, for the pods on the node nor for the incoming one."""
    node = make_node("n1", cpu="2")
    running = make_pod("big", node_name="n1", cpu="100m", pod_resources={"requests": {"cpu": "1500m"}})
    docs = [node, running, make_pod("p", cpu="1")]
    assert _placements(docs, []) == {"p": None}  # 1.5 + 1 > 2
    assert _placements(docs, _PLR_OFF) == {"p": "n1"}  # 0.1 + 1
    docs = [node, make_pod("p", cpu="500m", pod_resources={"requests": {"cpu": "3"}})]
    assert _placements(docs, []) == {"p": None}
    assert _placements(docs, _PLR_OFF) == {"p": "n1"}


def test_balanced_allocation_scorer_follows_the_gates() -> None:
    """balanced_allocation.go NewBalancedAllocation: the scorer's PodLevelResources flag is the
    gate; Fit's scorer keeps its flags off whatever the gates."""
    from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
    from scheduler.plugins.noderesources.fit import Fit

    p = PodInfo(make_pod("p", cpu="500m", memory="1Gi", pod_resources={"requests": {"cpu": "2"}}))
    on = BalancedAllocation.new(None, _handle([]))
    off = BalancedAllocation.new(None, _handle(_PLR_OFF))
    assert on.scorer.pod_requests(p)[0] == 2000
    assert off.scorer.pod_requests(p)[0] == 500
    assert Fit.new(None, _handle([])).scorer.pod_requests(p)[0] == 500
    assert Fit.new(None, _handle([])).compute_state(p).cpu == 2000
    assert Fit.new(None, _handle(_PLR_OFF)).compute_state(p).cpu == 500


def test_async_preemption_gate() -> None:
    """default_preemption.go PreEnqueue and EventsToRegister: without SchedulerAsyncPreemption a
    preemptor is never held back and nothing is registered."""
    from scheduler.plugins.defaultpreemption import WAITING, DefaultPreemption

    class Running:
        def preempt(self, *args: object) -> None: ...

        def is_running(self, uid: str) -> bool:
            return True

        def attempted(self) -> None: ...

    p = PodInfo(make_pod("p"))
    for gates, waiting, events in (([], True, 1), (["SchedulerAsyncPreemption=false"], False, 0)):
        h = _handle(gates)
        h.preemption = Running()
        pl = DefaultPreemption.new(None, h)
        st = pl.pre_enqueue(p)
        assert (st is not None and st.message == WAITING) is waiting
        assert len(pl.events_to_register()) == events


def test_volume_limit_scaling_gate() -> None:
    """csi.go Filter with VolumeLimitScaling: a volume whose CSIDriver sets
    preventPodSchedulingIfMissing needs the driver in the node's CSINode (csi_test.go's
    "CSI driver is not installed" cases); without the gate the driver is not looked at."""
    from scheduler.plugins.nodevolumelimits import NodeVolumeLimits

    ebs, node_name = "ebs.csi.aws.com", "node-1"
    node = NodeInfo(make_node(node_name))
    store = store_of(pv("vol-0", csi=(ebs, "handle-0")), pvc("claim-0", volume="vol-0"))
    store.apply("CSIDriver", {"metadata": {"name": ebs}, "spec": {"preventPodSchedulingIfMissing": True}})
    pod = _claims_pod("claim-0")
    for gates, want in (([], None), (["VolumeLimitScaling=true"], f"{ebs} CSI driver is not installed on the node")):
        h = _handle(gates)
        h.listers.storage = store
        pl = NodeVolumeLimits.new(None, h)
        st = CycleState()
        assert pl.pre_filter(st, pod, [node]) is None
        got = pl.filter(st, pod, node)
        assert (got.message if got is not None else None) == want
        mask = pl.filter_batch(st, pod, _snapshot([node]), np.arange(1))
        assert mask is None or mask.tolist() == [want is None]
    # The driver on the node: installed, the pod fits.
    csi_node = {"metadata": {"name": node_name}, "spec": {"drivers": [{"name": ebs, "nodeID": node_name}]}}
    store.apply("CSINode", csi_node)
    h = _handle(["VolumeLimitScaling=true"])
    h.listers.storage = store
    assert NodeVolumeLimits.new(None, h).filter(CycleState(), pod, node) is None


def _snapshot(nodes: list[NodeInfo]) -> Snapshot:
    s = Snapshot()
    s.set_nodes(nodes)
    return s


# ---------------------------------------------------------------------------------------------
# DynamicResources: the allocator's features (dynamicresources.go AllocatorFeatures and the
# structured allocator's checks, allocator_test.go cases with features off)


_DRIVER, _POOL, _NODE, _CLASS = "driver-a", "pool-1", "node-1", "class-a"


def _dra_slice(*devices: dict, **spec: object) -> ResourceSlice:
    body = {"driver": _DRIVER, "pool": {"name": _POOL, "generation": 1, "resourceSliceCount": 1}, **spec}
    if "perDeviceNodeSelection" not in spec:
        body["nodeName"] = _NODE
    return ResourceSlice({"metadata": {"name": "slice-1"}, "spec": {**body, "devices": list(devices)}})


def _dra_claim(*requests: dict, name: str = "claim-0", namespace: str = "") -> ResourceClaim:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return ResourceClaim({"metadata": meta, "spec": {"devices": {"requests": list(requests)}}})


def _exactly(name: str = "req-0", **extra: object) -> dict:
    return {"name": name, "exactly": {"deviceClassName": _CLASS, "allocationMode": "ExactCount", "count": 1, **extra}}


def _dra_run(claims: list[ResourceClaim], slices: list[ResourceSlice], features: AllocatorFeatures) -> list | None:
    from scheduler.plugins.dynamicresources.allocator import Allocator
    from scheduler.plugins.dynamicresources.celcache import CelCache

    cls = DeviceClass({"metadata": {"name": _CLASS}, "spec": {}})
    a = Allocator(set(), {}, {_CLASS: cls}.get, slices, CelCache(), features=features)
    return a.allocate(_NODE, {"kubernetes.io/hostname": _NODE}, claims)


def test_dra_allocator_features() -> None:
    from scheduler.plugins.dynamicresources.allocator import AllocationError

    on = AllocatorFeatures()
    c = _dra_claim(_exactly())
    # DRADeviceTaints off: a NoSchedule device taint no longer keeps the device.
    tainted = {"name": "device-1", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
    assert _dra_run([c], [_dra_slice(tainted)], on) is None
    assert _dra_run([c], [_dra_slice(tainted)], AllocatorFeatures(device_taints=False)) is not None
    # DRADeviceBindingConditions or DRAResourceClaimDeviceStatus off: devices with binding
    # conditions are not selectable.
    bound = {"name": "device-1", "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"]}
    assert _dra_run([c], [_dra_slice(bound)], on) is not None
    assert _dra_run([c], [_dra_slice(bound)], AllocatorFeatures(device_binding_and_status=False)) is None
    # DRAPrioritizedList off: subrequests are an error.
    plain = _dra_slice({"name": "device-1"})
    sub = {"name": "sub-0", "deviceClassName": _CLASS, "allocationMode": "ExactCount", "count": 1}
    fa = _dra_claim({"name": "req-0", "firstAvailable": [sub]})
    assert _dra_run([fa], [plain], on) is not None
    with pytest.raises(AllocationError) as err:
        _dra_run([fa], [plain], AllocatorFeatures(prioritized_list=False))
    assert (
        str(err.value)
        == "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"
    )
    # DRAConsumableCapacity off: capacity requests are an error.
    cap = _dra_claim(_exactly(capacity={"requests": {"memory": "1Gi"}}))
    with pytest.raises(AllocationError) as err:
        _dra_run([cap], [plain], AllocatorFeatures(consumable_capacity=False))
    assert str(err.value) == (
        "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"
    )
    # DRAPartitionableDevices off: slices with per-device node selection (or counter sets) are
    # not seen.
    per_device = _dra_slice({"name": "device-0", "nodeName": _NODE}, perDeviceNodeSelection=True)
    assert _dra_run([c], [per_device], on) is not None
    assert _dra_run([c], [per_device], AllocatorFeatures(partitionable_devices=False)) is None


def test_dra_plugin_reads_its_gates() -> None:
    """DynamicResources.PreFilter without DRAPrioritizedList: a claim with subrequests is
    unschedulable with upstream's message; the allocator gets AllocatorFeatures(fts)."""
    from scheduler.framework.listers import DraStore
    from scheduler.framework.status import Code
    from scheduler.plugins.dynamicresources import DynamicResources

    sub = {"name": "sub-0", "deviceClassName": _CLASS, "allocationMode": "ExactCount", "count": 1}
    claim = {
        "metadata": {"name": "my-claim", "namespace": "default", "uid": "claim-uid"},
        "spec": {"devices": {"requests": [{"name": "req-1", "firstAvailable": [sub]}]}},
    }
    store = DraStore()
    store.apply("ResourceClaim", claim)
    store.apply("DeviceClass", {"metadata": {"name": _CLASS}})
    p = PodInfo(make_pod("my-pod", resourceClaims=[{"name": "r", "resourceClaimName": "my-claim"}]))
    for gates, want in (
        ([], None),
        (
            ["DRAPrioritizedList=false"],
            "resource claim default/my-claim, request req-1: has subrequests, but the "
            "DRAPrioritizedList feature is disabled",
        ),
    ):
        st = DynamicResources(store, _handle(gates)).pre_filter(CycleState(), p, [])
        if want is None:
            assert st is None
        else:
            assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.message == want
    off = DynamicResources(store, _handle(["DRADeviceTaints=false,DRADeviceTaintRules=false"]))
    assert off.allocator_features.device_taints is False and off.allocator_features.prioritized_list is True
    both = _handle(["DRADeviceBindingConditions=false"])
    assert DynamicResources(store, both).allocator_features.device_binding_and_status is False


@pytest.mark.parametrize(
    ("gates", "args", "error"),
    [
        # ValidateDynamicResourcesArgs; the same texts as the v1.36.3 binary prints for them.
        ([], {"filterTimeout": "10s", "bindingTimeout": "1s"}, None),
        (
            [],
            {"filterTimeout": "-1s", "bindingTimeout": "500ms"},
            '[filterTimeout: Invalid value: "-1s": must be zero or positive, '
            'bindingTimeout: Invalid value: "500ms": must be at least 1 second]',
        ),
        (
            ["DRASchedulerFilterTimeout=false,DRADeviceBindingConditions=false"],
            {"filterTimeout": "10s", "bindingTimeout": "5s"},
            "[filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled, "
            "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate "
            "is disabled]",
        ),
        (["DRASchedulerFilterTimeout=false"], {"bindingTimeout": "5s"}, None),
    ],
)
def test_dynamic_resources_args_under_the_gates(gates: list[str], args: dict, error: str | None) -> None:
    from scheduler.plugins.dynamicresources import DynamicResources

    if error is None:
        DynamicResources.new(args, _handle(gates))
        return
    with pytest.raises(ValueError) as err:
        DynamicResources.new(args, _handle(gates))
    assert str(err.value) == error
