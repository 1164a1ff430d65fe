"""Validation: every error of a decoded configuration, reported together.

Upstream files cited (kubernetes/kubernetes):
- pkg/scheduler/apis/config/validation/validation_test.go (TestValidateKubeSchedulerConfigurationV1)
- staging/src/k8s.io/component-base/config/validation/validation.go
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, ConfigError, parse_config


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


# ---------------------------------------------------------------------------------------------
# Validation (validation_test.go TestValidateKubeSchedulerConfigurationV1 and component-base)

VALIDATION_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "bad-parallelism-invalid-value",
        doc(parallelism=0),
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
    ),
    (
        "bad-percentage-of-nodes-to-score",
        doc(percentageOfNodesToScore=110),
        "percentageOfNodesToScore: Invalid value: 110: not in valid range [0-100]",
    ),
    (
        "bad-percentage-of-nodes-to-score-negative",
        doc(percentageOfNodesToScore=-1),
        "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
    ),
    (
        "scheduler-name-not-set",
        doc(profiles=[{"schedulerName": "a"}, {}]),
        "profiles[1].schedulerName: Required value",
    ),
    (
        "repeated-scheduler-name",
        doc(profiles=[{"schedulerName": "x"}, {"schedulerName": "x"}]),
        'profiles[1].schedulerName: Duplicate value: "x"',
    ),
    (
        "bad-pod-initial-backoff",
        doc(podInitialBackoffSeconds=0),
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ),
    (
        "bad-pod-max-backoff",
        doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
        "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds",
    ),
    (
        "bad-percentage-of-nodes-to-score-in-profile",
        doc(profiles=[{"percentageOfNodesToScore": 101}]),
        "profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
    ),
    (
        "repeated-plugin-config",
        doc(profiles=[{"pluginConfig": [{"name": "NodeAffinity"}, {"name": "NodeAffinity"}]}]),
        'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
    ),
    (
        "different-queue-sort",
        doc(
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}},
                },
            ]
        ),
        "profiles[1].plugins.queueSort: Invalid value: {enabled: [QueueSortPlugin], disabled: [*]}: "
        "queueSort must be the same for all profiles",
    ),
    (
        "one-queue-sort-plugin-only",
        doc(profiles=[{"plugins": {"queueSort": {"enabled": [{"name": "QueueSortPlugin"}, {"name": "TestPlugin"}]}}}]),
        "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled",
    ),
    (
        "different-queue-sort-args",
        doc(
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {"queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}},
                    "pluginConfig": [{"name": "QueueSortPlugin", "args": {"x": 1}}],
                },
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}},
                    "pluginConfig": [{"name": "QueueSortPlugin", "args": {"x": 2}}],
                },
            ]
        ),
        "profiles[1].pluginConfig.args: Invalid value: {'x': 2}: queueSort must be the same for all profiles",
    ),
    (
        "bad-resource-lock-not-leases",
        doc(leaderElection={"resourceLock": "configmaps"}),
        'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"',
    ),
    (
        # component-base ValidateLeaderElectionConfiguration: the value shown is RenewDeadline.
        "lease-duration-not-above-renew-deadline",
        doc(leaderElection={"leaseDuration": "10s", "renewDeadline": "20s"}),
        "leaderElection.leaseDuration: Invalid value: 20s: must be greater than `RenewDeadline`",
    ),
    (
        "negative-retry-period",
        doc(leaderElection={"retryPeriod": "-1s"}),
        "leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero",
    ),
    (
        "negative-burst",
        doc(clientConnection={"burst": -1}),
        "clientConnection.burst: Invalid value: -1: must be non-negative",
    ),
    (
        "several-errors-aggregate",
        doc(parallelism=-1, percentageOfNodesToScore=101),
        "[parallelism: Invalid value: -1: should be an integer value greater than zero, "
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]]",
    ),
]


@pytest.mark.parametrize(("d", "msg"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES])
def test_validation_errors(d: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(d)
    assert str(ei.value) == msg
    assert "\n" not in str(ei.value)


def test_leader_election_disabled_skips_its_validation() -> None:
    # component-base: nothing is checked when leaderElect is false.
    c = parse_config(doc(leaderElection={"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s"}))
    assert c.leader_election.leader_elect is False


def test_valid_multi_profile_config() -> None:
    # validation_test.go "valid config": two profiles sharing the default queue sort.
    c = parse_config(
        doc(
            profiles=[
                {"schedulerName": "me", "percentageOfNodesToScore": 40},
                {"schedulerName": "other", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
            ]
        ),
    )
    assert [p.scheduler_name for p in c.profiles] == ["me", "other"]
    assert c.profiles[0].percentage_of_nodes_to_score == 40
    assert c.profiles[1].plugins["score"].disabled == ("*",)
