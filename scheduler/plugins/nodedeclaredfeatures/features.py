"""The feature registry of v1.36.3 (upstream component-helpers nodedeclaredfeatures/features).

Five features are registered. Only two can be required by a pod at scheduling time; the other
three matter only to in-place updates (resize) or to the kubelet's API server, so their
scheduling inference is always false. None has a max version yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.plugins.nodedeclaredfeatures.featureset import Feature, FeatureRegistry, Spec

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
POD_LEVEL_RESOURCES_RESIZE = "InPlacePodLevelResourcesVerticalScaling"
EXTEND_WEBSOCKETS_TO_KUBELET = "ExtendWebSocketsToKubelet"
NON_SIDECAR_INIT_CONTAINER_RESIZE = "InPlacePodVerticalScalingInitContainers"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"

_RESTART_ALL_ACTION = "RestartAllContainers"


def _has_restart_all_rule(containers: Any) -> bool:
    for c in containers or ():
        if not isinstance(c, Mapping):
            continue
        for rule in c.get("restartPolicyRules") or ():
            if isinstance(rule, Mapping) and rule.get("action") == _RESTART_ALL_ACTION:
                return True
    return False


def needs_restart_all_containers(spec: Spec) -> bool:
    """A container or init container has a restart rule with action RestartAllContainers."""
    return _has_restart_all_rule(spec.get("containers")) or _has_restart_all_rule(spec.get("initContainers"))


def needs_user_namespaces_host_network(spec: Spec) -> bool:
    """hostNetwork together with an explicit hostUsers: false (a user namespace)."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def _never(spec: Spec) -> bool:
    return False


ALL_FEATURES: tuple[Feature, ...] = (
    Feature(RESTART_ALL_CONTAINERS, needs_restart_all_containers),
    Feature(POD_LEVEL_RESOURCES_RESIZE, _never),
    Feature(EXTEND_WEBSOCKETS_TO_KUBELET, _never),
    Feature(NON_SIDECAR_INIT_CONTAINER_RESIZE, _never),
    Feature(USER_NAMESPACES_HOST_NETWORK, needs_user_namespaces_host_network),
)

DEFAULT_REGISTRY = FeatureRegistry(ALL_FEATURES)
