"""Feature gates as kube-scheduler v1.36.3 knows them: every gate its binary registers
(k8s.io/kubernetes pkg/features with the client-go, apiserver, apiextensions and zpages gates it
folds in, plus the logging and metrics gates cmd/kube-scheduler/app adds), each at its state for
emulated version 1.36 and minimum compatibility version 1.35 (the binary's defaults); the
``--feature-gates`` flag parsed and refused as component-base does it; and the ``Features``
struct upstream hands to plugins (pkg/scheduler/framework/plugins/feature).

A resolved ``FeatureGates`` is immutable: built once from the command line, it travels inside
the SchedulerConfig (config defaults and validation read it) and reaches every plugin through
its Handle as ``Features``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

# Stages as the kubernetes_feature_enabled metric labels them (a GA gate has an empty stage).
ALPHA = "ALPHA"
BETA = "BETA"
GA = ""
DEPRECATED = "DEPRECATED"

# The component --feature-gates addresses when a pair names none (compatibility.DefaultKubeComponent).
KUBE_COMPONENT = "kube"

# component-base's two special gates: they set every unset alpha (beta) gate.
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"


@dataclass(frozen=True, slots=True)
class GateSpec:
    name: str
    stage: str
    default: bool
    locked: bool  # LockToDefault: only the default value may be set


# (name, stage, default, locked), sorted by name. Taken from the v1.36.3 binary's own gate
# (GetAll at its default versions); tests/config/test_features.py diffs it against the binary.
_TABLE: tuple[tuple[str, str, bool, bool], ...] = (
    ("APIResponseCompression", BETA, True, False),
    ("APIServerIdentity", BETA, True, False),
    ("APIServerTracing", GA, True, True),
    ("APIServingWithRoutine", ALPHA, False, False),
    ("AggregatedDiscoveryRemoveBetaType", DEPRECATED, True, True),
    ("AllAlpha", ALPHA, False, False),
    ("AllBeta", BETA, False, False),
    ("AllowDNSOnlyNodeCSR", DEPRECATED, False, False),
    ("AllowInsecureKubeletCertificateSigningRequests", DEPRECATED, False, False),
    ("AllowOverwriteTerminationGracePeriodSeconds", DEPRECATED, False, True),
    ("AllowParsingUserUIDFromCertAuth", BETA, True, False),
    ("AllowServiceExternalIPs", GA, True, False),
    ("AllowUnsafeMalformedObjectDeletion", ALPHA, False, False),
    ("AnonymousAuthConfigurableEndpoints", GA, True, True),
    ("AnyVolumeDataSource", GA, True, True),
    ("AtomicFIFO", BETA, True, False),
    ("AuthorizeNodeWithSelectors", GA, True, True),
    ("AuthorizePodWebsocketUpgradeCreatePermission", BETA, True, False),
    ("AuthorizeWithSelectors", GA, True, True),
    ("BtreeWatchCache", GA, True, True),
    ("CBORServingAndStorage", ALPHA, False, False),
    ("CPUManagerPolicyAlphaOptions", ALPHA, False, False),
    ("CPUManagerPolicyBetaOptions", BETA, True, False),
    ("CPUManagerPolicyOptions", GA, True, True),
    ("CRDObservedGenerationTracking", BETA, True, False),
    ("CRDValidationRatcheting", GA, True, True),
    ("CRIListStreaming", ALPHA, False, False),
    ("CSIServiceAccountTokenSecrets", GA, True, True),
    ("CSIVolumeHealth", ALPHA, False, False),
    ("ChangeContainerStatusOnKubeletRestart", DEPRECATED, False, False),
    ("ClearingNominatedNodeNameAfterBinding", BETA, True, False),
    ("ClientsAllowCARotation", BETA, True, False),
    ("ClientsAllowCBOR", ALPHA, False, False),
    ("ClientsAllowTLSCacheGC", BETA, True, False),
    ("ClientsPreferCBOR", ALPHA, False, False),
    ("CloudControllerManagerWatchBasedRoutesReconciliation", ALPHA, False, False),
    ("CloudControllerManagerWebhook", ALPHA, False, False),
    ("ClusterTrustBundle", BETA, False, False),
    ("ClusterTrustBundleProjection", BETA, False, False),
    ("ComponentFlagz", BETA, True, False),
    ("ComponentStatusz", BETA, True, False),
    ("ConcurrentWatchObjectDecode", BETA, False, False),
    ("ConsistentListFromCache", GA, True, True),
    ("ConstrainedImpersonation", BETA, True, False),
    ("ContainerCheckpoint", BETA, True, False),
    ("ContainerRestartRules", BETA, True, False),
    ("ContainerStopSignals", ALPHA, False, False),
    ("ContextualLogging", BETA, True, False),
    ("CoordinatedLeaderElection", BETA, False, False),
    ("CrossNamespaceVolumeDataSource", ALPHA, False, False),
    ("CustomCPUCFSQuotaPeriod", GA, True, False),
    ("CustomResourceFieldSelectors", GA, True, True),
    ("DRAAdminAccess", GA, True, True),
    ("DRAConsumableCapacity", BETA, True, False),
    ("DRADeviceBindingConditions", BETA, True, False),
    ("DRADeviceTaintRules", BETA, False, False),
    ("DRADeviceTaints", BETA, True, False),
    ("DRAExtendedResource", BETA, True, False),
    ("DRAListTypeAttributes", ALPHA, False, False),
    ("DRANodeAllocatableResources", ALPHA, False, False),
    ("DRAPartitionableDevices", BETA, True, False),
    ("DRAPrioritizedList", GA, True, False),
    ("DRAResourceClaimDeviceStatus", BETA, True, False),
    ("DRAResourceClaimGranularStatusAuthorization", BETA, True, False),
    ("DRAResourcePoolStatus", ALPHA, False, False),
    ("DRASchedulerFilterTimeout", BETA, True, False),
    ("DRAWorkloadResourceClaims", ALPHA, False, False),
    ("DeclarativeValidation", GA, True, True),
    ("DeclarativeValidationBeta", BETA, True, False),
    ("DeclarativeValidationTakeover", DEPRECATED, False, False),
    ("DeploymentReplicaSetTerminatingReplicas", BETA, True, False),
    ("DetectCacheInconsistency", BETA, True, False),
    ("DisableAllocatorDualWrite", GA, True, True),
    ("DisableCPUQuotaWithExclusiveCPUs", DEPRECATED, True, False),
    ("DisableNodeKubeProxyVersion", DEPRECATED, True, True),
    ("DynamicResourceAllocation", GA, True, True),
    ("EnvFiles", BETA, True, False),
    ("EventedPLEG", ALPHA, False, False),
    ("ExecProbeTimeout", GA, True, True),
    ("ExtendWebSocketsToKubelet", BETA, True, False),
    ("ExternalServiceAccountTokenSigner", GA, True, True),
    ("GangScheduling", ALPHA, False, False),
    ("GenericWorkload", ALPHA, False, False),
    ("GitRepoVolumeDriver", DEPRECATED, False, True),
    ("GracefulNodeShutdown", BETA, True, False),
    ("GracefulNodeShutdownBasedOnPodPriority", BETA, True, False),
    ("HPAConfigurableTolerance", BETA, True, False),
    ("HPAScaleToZero", ALPHA, False, False),
    ("HostnameOverride", BETA, True, False),
    ("ImageMaximumGCAge", GA, True, True),
    ("ImageVolume", GA, True, True),
    ("ImageVolumeWithDigest", ALPHA, False, False),
    ("InOrderInformers", GA, True, True),
    ("InOrderInformersBatchProcess", BETA, True, False),
    ("InPlacePodLevelResourcesVerticalScaling", BETA, True, False),
    ("InPlacePodVerticalScaling", GA, True, True),
    ("InPlacePodVerticalScalingExclusiveCPUs", ALPHA, False, False),
    ("InPlacePodVerticalScalingExclusiveMemory", ALPHA, False, False),
    ("InPlacePodVerticalScalingInitContainers", BETA, True, False),
    ("InformerResourceVersion", GA, True, False),
    ("JobBackoffLimitPerIndex", GA, True, True),
    ("JobManagedBy", GA, True, True),
    ("JobPodReplacementPolicy", GA, True, True),
    ("JobSuccessPolicy", GA, True, True),
    ("KMSv1", DEPRECATED, False, False),
    ("KubeletCgroupDriverFromCRI", GA, True, True),
    ("KubeletCrashLoopBackOffMax", BETA, True, False),
    ("KubeletEnsureSecretPulledImages", BETA, True, False),
    ("KubeletFineGrainedAuthz", GA, True, True),
    ("KubeletInUserNamespace", ALPHA, False, False),
    ("KubeletPSI", GA, True, True),
    ("KubeletPodResourcesDynamicResources", GA, True, True),
    ("KubeletPodResourcesGet", GA, True, True),
    ("KubeletPodResourcesListUseActivePods", DEPRECATED, True, False),
    ("KubeletRegistrationGetOnExistsOnly", DEPRECATED, False, False),
    ("KubeletSeparateDiskGC", BETA, True, False),
    ("KubeletServiceAccountTokenForCredentialProviders", BETA, True, False),
    ("KubeletTracing", GA, True, True),
    ("ListFromCacheSnapshot", BETA, True, False),
    ("LocalStorageCapacityIsolationFSQuotaMonitoring", BETA, False, False),
    ("LogarithmicScaleDown", GA, True, True),
    ("LoggingAlphaOptions", ALPHA, False, False),
    ("LoggingBetaOptions", BETA, True, False),
    ("ManifestBasedAdmissionControlConfig", ALPHA, False, False),
    ("MatchLabelKeysInPodAffinity", GA, True, True),
    ("MatchLabelKeysInPodTopologySpread", BETA, True, False),
    ("MatchLabelKeysInPodTopologySpreadSelectorMerge", BETA, True, False),
    ("MaxUnavailableStatefulSet", BETA, False, False),
    ("MemoryQoS", ALPHA, False, False),
    ("MultiCIDRServiceAllocator", GA, True, True),
    ("MutableCSINodeAllocatableCount", GA, True, True),
    ("MutablePVNodeAffinity", ALPHA, False, False),
    ("MutablePodResourcesForSuspendedJobs", BETA, True, False),
    ("MutableSchedulingDirectivesForSuspendedJobs", BETA, True, False),
    ("MutatingAdmissionPolicy", GA, True, False),
    ("NFTablesProxyMode", GA, True, True),
    ("NativeHistograms", ALPHA, False, False),
    ("NodeDeclaredFeatures", BETA, True, False),
    ("NodeInclusionPolicyInPodTopologySpread", GA, True, True),
    ("NodeLogQuery", GA, True, True),
    ("NodeSwap", GA, True, True),
    ("NominatedNodeNameForExpectation", BETA, True, False),
    ("OpenAPIEnums", BETA, True, False),
    ("OpportunisticBatching", BETA, True, False),
    ("OrderedNamespaceDeletion", GA, True, True),
    ("PLEGOnDemandRelist", BETA, True, False),
    ("PersistentVolumeClaimUnusedSinceTime", ALPHA, False, False),
    ("PodAndContainerStatsFromCRI", ALPHA, False, False),
    ("PodCertificateRequest", BETA, False, False),
    ("PodDeletionCost", BETA, True, False),
    ("PodLevelResourceManagers", ALPHA, False, False),
    ("PodLevelResources", BETA, True, False),
    ("PodLifecycleSleepAction", GA, True, True),
    ("PodLifecycleSleepActionAllowZero", GA, True, True),
    ("PodLogsQuerySplitStreams", ALPHA, False, False),
    ("PodObservedGenerationTracking", GA, True, True),
    ("PodReadyToStartContainersCondition", BETA, True, False),
    ("PodSchedulingReadiness", GA, True, True),
    ("PodTopologyLabelsAdmission", BETA, True, False),
    ("PodsAPI", ALPHA, False, False),
    ("PortForwardWebsockets", BETA, True, False),
    ("PreferSameTrafficDistribution", GA, True, True),
    ("PreventStaticPodAPIReferences", BETA, True, False),
    ("ProcMountType", GA, True, True),
    ("QOSReserved", ALPHA, False, False),
    ("RecoverVolumeExpansionFailure", GA, True, True),
    ("RecursiveReadOnlyMounts", GA, True, True),
    ("ReduceDefaultCrashLoopBackOffDecay", ALPHA, False, False),
    ("RelaxedDNSSearchValidation", GA, True, True),
    ("RelaxedEnvironmentVariableValidation", GA, True, True),
    ("RelaxedServiceNameValidation", BETA, True, False),
    ("ReloadKubeletClientCAFile", BETA, True, False),
    ("ReloadKubeletServerCertificateFile", BETA, True, False),
    ("RemoteRequestHeaderUID", BETA, True, False),
    ("ResilientWatchCacheInitialization", GA, True, True),
    ("ResourceHealthStatus", BETA, True, False),
    ("ResourceHealthStatusMessage", BETA, True, False),
    ("RestartAllContainersOnContainerExits", BETA, True, False),
    ("RetryGenerateName", GA, True, True),
    ("RotateKubeletServerCertificate", BETA, True, False),
    ("RuntimeClassInImageCriApi", ALPHA, False, False),
    ("SELinuxChangePolicy", GA, True, True),
    ("SELinuxMount", BETA, False, False),
    ("SELinuxMountReadWriteOncePod", GA, True, True),
    ("SchedulerAsyncAPICalls", BETA, False, False),
    ("SchedulerAsyncPreemption", BETA, True, False),
    ("SchedulerPopFromBackoffQ", BETA, True, False),
    ("SchedulerQueueingHints", GA, True, True),
    ("SeparateCacheWatchRPC", DEPRECATED, False, True),
    ("SeparateTaintEvictionController", GA, True, True),
    ("ServiceAccountNodeAudienceRestriction", BETA, True, False),
    ("ServiceAccountTokenJTI", GA, True, True),
    ("ServiceAccountTokenNodeBinding", GA, True, True),
    ("ServiceAccountTokenNodeBindingValidation", GA, True, True),
    ("ServiceAccountTokenPodNodeInfo", GA, True, True),
    ("ServiceCIDRStatusFieldWiping", DEPRECATED, True, False),
    ("ShardedListAndWatch", ALPHA, False, False),
    ("SidecarContainers", GA, True, True),
    ("SizeBasedListCostEstimate", BETA, True, False),
    ("StaleControllerConsistencyDaemonSet", BETA, True, False),
    ("StaleControllerConsistencyJob", BETA, True, False),
    ("StaleControllerConsistencyReplicaSet", BETA, True, False),
    ("StaleControllerConsistencyStatefulSet", BETA, True, False),
    ("StatefulSetSemanticRevisionComparison", BETA, True, False),
    ("StorageCapacityScoring", ALPHA, False, False),
    ("StorageNamespaceIndex", DEPRECATED, True, False),
    ("StorageVersionAPI", ALPHA, False, False),
    ("StorageVersionHash", BETA, True, False),
    ("StorageVersionMigrator", BETA, False, False),
    ("StreamingCollectionEncodingToJSON", GA, True, True),
    ("StreamingCollectionEncodingToProtobuf", GA, True, True),
    ("StrictIPCIDRValidation", BETA, True, False),
    ("StructuredAuthenticationConfiguration", GA, True, True),
    ("StructuredAuthenticationConfigurationEgressSelector", BETA, True, False),
    ("StructuredAuthenticationConfigurationJWKSMetrics", BETA, True, False),
    ("SupplementalGroupsPolicy", GA, True, True),
    ("SystemdWatchdog", GA, True, True),
    ("TaintTolerationComparisonOperators", ALPHA, False, False),
    ("TokenRequestServiceAccountUIDValidation", BETA, True, False),
    ("TopologyAwareWorkloadScheduling", ALPHA, False, False),
    ("TopologyManagerPolicyAlphaOptions", ALPHA, False, False),
    ("TopologyManagerPolicyBetaOptions", BETA, True, False),
    ("TopologyManagerPolicyOptions", GA, True, True),
    ("TranslateStreamCloseWebsocketRequests", BETA, True, False),
    ("UnauthenticatedHTTP2DOSMitigation", BETA, True, False),
    ("UnknownVersionInteroperabilityProxy", BETA, True, False),
    ("UnlockWhileProcessingFIFO", BETA, True, False),
    ("UserNamespacesHostNetworkSupport", ALPHA, False, False),
    ("UserNamespacesSupport", GA, True, True),
    ("VolumeAttributesClass", GA, True, True),
    ("VolumeLimitScaling", ALPHA, False, False),
    ("WatchCacheInitializationPostStartHook", BETA, True, False),
    ("WatchList", BETA, True, False),
    ("WatchListClient", BETA, True, False),
    ("WinDSR", GA, True, True),
    ("WinOverlay", GA, True, True),
    ("WindowsCPUAndMemoryAffinity", ALPHA, False, False),
    ("WindowsGracefulNodeShutdown", BETA, True, False),
    ("WindowsHostNetwork", DEPRECATED, False, False),
    ("WorkloadAwarePreemption", ALPHA, False, False),
    ("WorkloadWithJob", ALPHA, False, False),
)

GATES: Mapping[str, GateSpec] = MappingProxyType({n: GateSpec(n, s, d, lk) for n, s, d, lk in _TABLE})

# defaultKubernetesFeatureGateDependencies (kube_features.go), the non-empty entries, each list
# sorted as AddDependencies stores it: a gate may be on only while all of these are on.
DEPENDENCIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "AuthorizeNodeWithSelectors": ("AuthorizeWithSelectors",),
        "ClusterTrustBundleProjection": ("ClusterTrustBundle",),
        "DRAAdminAccess": ("DynamicResourceAllocation",),
        "DRAConsumableCapacity": ("DynamicResourceAllocation",),
        "DRADeviceBindingConditions": ("DRAResourceClaimDeviceStatus", "DynamicResourceAllocation"),
        "DRADeviceTaintRules": ("DRADeviceTaints",),
        "DRADeviceTaints": ("DynamicResourceAllocation",),
        "DRAExtendedResource": ("DynamicResourceAllocation",),
        "DRAListTypeAttributes": ("DynamicResourceAllocation",),
        "DRANodeAllocatableResources": ("DynamicResourceAllocation",),
        "DRAPartitionableDevices": ("DynamicResourceAllocation",),
        "DRAPrioritizedList": ("DynamicResourceAllocation",),
        "DRAResourceClaimGranularStatusAuthorization": ("DRAResourceClaimDeviceStatus", "DynamicResourceAllocation"),
        "DRAResourcePoolStatus": ("DynamicResourceAllocation",),
        "DRASchedulerFilterTimeout": ("DynamicResourceAllocation",),
        "DRAWorkloadResourceClaims": ("DynamicResourceAllocation", "GenericWorkload"),
        "DeclarativeValidationBeta": ("DeclarativeValidation",),
        "DeclarativeValidationTakeover": ("DeclarativeValidation",),
        "DisableAllocatorDualWrite": ("MultiCIDRServiceAllocator",),
        "ExtendWebSocketsToKubelet": ("NodeDeclaredFeatures",),
        "GangScheduling": ("GenericWorkload",),
        "GracefulNodeShutdownBasedOnPodPriority": ("GracefulNodeShutdown",),
        "ImageVolumeWithDigest": ("ImageVolume",),
        "InPlacePodLevelResourcesVerticalScaling": (
            "InPlacePodVerticalScaling",
            "NodeDeclaredFeatures",
            "PodLevelResources",
        ),
        "InPlacePodVerticalScalingExclusiveCPUs": ("InPlacePodVerticalScaling",),
        "InPlacePodVerticalScalingExclusiveMemory": ("InPlacePodVerticalScaling",),
        "InPlacePodVerticalScalingInitContainers": ("InPlacePodVerticalScaling", "NodeDeclaredFeatures"),
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": ("MatchLabelKeysInPodTopologySpread",),
        "PodCertificateRequest": ("AuthorizeNodeWithSelectors",),
        "PodLevelResourceManagers": ("PodLevelResources",),
        "PodLifecycleSleepActionAllowZero": ("PodLifecycleSleepAction",),
        "ProcMountType": ("UserNamespacesSupport",),
        "ResourceHealthStatus": ("DynamicResourceAllocation",),
        "ResourceHealthStatusMessage": ("ResourceHealthStatus",),
        "RestartAllContainersOnContainerExits": ("ContainerRestartRules", "NodeDeclaredFeatures"),
        "ServiceAccountTokenNodeBinding": ("ServiceAccountTokenNodeBindingValidation",),
        "StaleControllerConsistencyDaemonSet": ("AtomicFIFO",),
        "StaleControllerConsistencyJob": ("AtomicFIFO",),
        "StaleControllerConsistencyReplicaSet": ("AtomicFIFO",),
        "StaleControllerConsistencyStatefulSet": ("AtomicFIFO",),
        "StorageVersionAPI": ("APIServerIdentity",),
        "StructuredAuthenticationConfigurationEgressSelector": ("StructuredAuthenticationConfiguration",),
        "StructuredAuthenticationConfigurationJWKSMetrics": ("StructuredAuthenticationConfiguration",),
        "TopologyAwareWorkloadScheduling": ("GenericWorkload",),
        "UnknownVersionInteroperabilityProxy": ("APIServerIdentity",),
        "UserNamespacesHostNetworkSupport": ("NodeDeclaredFeatures", "UserNamespacesSupport"),
        "WindowsGracefulNodeShutdown": ("GracefulNodeShutdown",),
        "WorkloadAwarePreemption": ("GangScheduling",),
        "WorkloadWithJob": ("GenericWorkload",),
    }
)


# (message, featureGate, value): what upstream logs when a GA or deprecated gate is set.
GateWarning = tuple[str, str, bool]


class FeatureGateError(ValueError):
    """A --feature-gates value kube-scheduler refuses; the message is component-base's
    (several errors aggregated as utilerrors does; ``errors`` holds them one by one)."""

    def __init__(self, *errors: str) -> None:
        self.errors: tuple[str, ...] = errors
        super().__init__(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


# ---------------------------------------------------------------------------------------------
# The plugins' view


@dataclass(frozen=True, slots=True)
class Features:
    """feature.Features: the gate values plugins read, one field per upstream field (snake case)."""

    enable_dra_extended_resource: bool
    enable_dra_prioritized_list: bool
    enable_dra_admin_access: bool
    enable_dra_consumable_capacity: bool
    enable_dra_device_taints: bool
    enable_dra_device_binding_conditions: bool
    enable_dra_list_type_attributes: bool
    enable_dra_node_allocatable_resources: bool
    enable_dra_partitionable_devices: bool
    enable_dra_resource_claim_device_status: bool
    enable_dra_scheduler_filter_timeout: bool
    enable_dra_workload_resource_claims: bool
    enable_dynamic_resource_allocation: bool
    enable_volume_attributes_class: bool
    enable_volume_limit_scaling: bool
    enable_node_inclusion_policy_in_pod_topology_spread: bool
    enable_match_label_keys_in_pod_topology_spread: bool
    enable_in_place_pod_vertical_scaling: bool
    enable_sidecar_containers: bool
    enable_scheduling_queue_hint: bool
    enable_async_preemption: bool
    enable_pod_level_resources: bool
    enable_storage_capacity_scoring: bool
    enable_node_declared_features: bool
    enable_gang_scheduling: bool
    enable_generic_workload: bool
    enable_taint_toleration_comparison_operators: bool
    enable_in_place_pod_level_resources_vertical_scaling: bool
    enable_topology_aware_workload_scheduling: bool
    enable_workload_aware_preemption: bool

    @classmethod
    def from_gates(cls, gates: FeatureGates) -> Features:
        """NewSchedulerFeaturesFromGates."""
        return cls(**{f: gates.enabled(g) for f, g in FEATURE_FIELDS})


# Features field -> the gate it copies (NewSchedulerFeaturesFromGates).
FEATURE_FIELDS: tuple[tuple[str, str], ...] = (
    ("enable_dra_extended_resource", "DRAExtendedResource"),
    ("enable_dra_prioritized_list", "DRAPrioritizedList"),
    ("enable_dra_admin_access", "DRAAdminAccess"),
    ("enable_dra_consumable_capacity", "DRAConsumableCapacity"),
    ("enable_dra_device_taints", "DRADeviceTaints"),
    ("enable_dra_device_binding_conditions", "DRADeviceBindingConditions"),
    ("enable_dra_list_type_attributes", "DRAListTypeAttributes"),
    ("enable_dra_node_allocatable_resources", "DRANodeAllocatableResources"),
    ("enable_dra_partitionable_devices", "DRAPartitionableDevices"),
    ("enable_dra_resource_claim_device_status", "DRAResourceClaimDeviceStatus"),
    ("enable_dra_scheduler_filter_timeout", "DRASchedulerFilterTimeout"),
    ("enable_dra_workload_resource_claims", "DRAWorkloadResourceClaims"),
    ("enable_dynamic_resource_allocation", "DynamicResourceAllocation"),
    ("enable_volume_attributes_class", "VolumeAttributesClass"),
    ("enable_volume_limit_scaling", "VolumeLimitScaling"),
    ("enable_node_inclusion_policy_in_pod_topology_spread", "NodeInclusionPolicyInPodTopologySpread"),
    ("enable_match_label_keys_in_pod_topology_spread", "MatchLabelKeysInPodTopologySpread"),
    ("enable_in_place_pod_vertical_scaling", "InPlacePodVerticalScaling"),
    ("enable_sidecar_containers", "SidecarContainers"),
    ("enable_scheduling_queue_hint", "SchedulerQueueingHints"),
    ("enable_async_preemption", "SchedulerAsyncPreemption"),
    ("enable_pod_level_resources", "PodLevelResources"),
    ("enable_storage_capacity_scoring", "StorageCapacityScoring"),
    ("enable_node_declared_features", "NodeDeclaredFeatures"),
    ("enable_gang_scheduling", "GangScheduling"),
    ("enable_generic_workload", "GenericWorkload"),
    ("enable_taint_toleration_comparison_operators", "TaintTolerationComparisonOperators"),
    ("enable_in_place_pod_level_resources_vertical_scaling", "InPlacePodLevelResourcesVerticalScaling"),
    ("enable_topology_aware_workload_scheduling", "TopologyAwareWorkloadScheduling"),
    ("enable_workload_aware_preemption", "WorkloadAwarePreemption"),
)


# ---------------------------------------------------------------------------------------------
# Resolved gates


class FeatureGates:
    """The gates' state after --feature-gates: explicit settings over the defaults. Immutable."""

    __slots__ = ("_explicit", "_features", "warnings")

    def __init__(self, explicit: Mapping[str, bool] | None = None, warnings: Sequence[GateWarning] = ()) -> None:
        explicit = dict(explicit or {})
        for name in explicit:
            if name not in GATES:
                raise KeyError(f"feature {name!r} is not registered")
        self._explicit: Mapping[str, bool] = MappingProxyType(explicit)
        # What setting a GA or deprecated gate logs upstream, for the caller to show.
        self.warnings: tuple[GateWarning, ...] = tuple(warnings)
        self._features: Features | None = None

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; KeyError for a gate v1.36.3 does not know (upstream panics)."""
        v = self._explicit.get(name)
        if v is not None:
            return v
        spec = GATES.get(name)
        if spec is None:
            raise KeyError(f"feature {name!r} is not registered")
        return spec.default

    @property
    def explicit(self) -> Mapping[str, bool]:
        """The gates set on the command line (AllAlpha/AllBeta expanded), as upstream's enabled map."""
        return self._explicit

    def features(self) -> Features:
        f = self._features
        if f is None:
            f = Features.from_gates(self)
            self._features = f
        return f

    def all(self) -> Iterator[tuple[GateSpec, bool]]:
        """Every gate with its state, by name (the kubernetes_feature_enabled series)."""
        for spec in GATES.values():
            yield spec, self.enabled(spec.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and dict(self._explicit) == dict(other._explicit)

    def __hash__(self) -> int:
        return hash(frozenset(self._explicit.items()))

    def __repr__(self) -> str:
        return f"FeatureGates({dict(self._explicit)!r})"


DEFAULT_GATES = FeatureGates()
DEFAULT_FEATURES = DEFAULT_GATES.features()


# ---------------------------------------------------------------------------------------------
# --feature-gates


def parse_feature_gates(values: Sequence[str]) -> FeatureGates:
    """Resolve the values of every ``--feature-gates`` on the command line, in order.

    The flag is component-base's ColonSeparatedMultimapStringString (``[component:]key=value``,
    comma-separated, repeatable; no component means ``kube``), applied by the compatibility
    registry's Set to the one component kube-scheduler registers, whose gate parses it as
    ``featureGate.Set`` does. FeatureGateError carries upstream's message. Where upstream walks
    a Go map (components, gates, dependencies) its order is random; here it is the order of the
    command line, and dependencies by name.
    """
    by_component: dict[str, list[str]] = {}
    for value in values:
        for pair in value.split(","):
            if not pair:
                continue
            component, sep, kv = pair.partition(":")
            if not sep:
                component, kv = "", component
            by_component.setdefault(_trim(component), []).append(_trim(kv))
    gates = DEFAULT_GATES
    for component, pairs in by_component.items():
        if component == "":
            if KUBE_COMPONENT in by_component:
                raise FeatureGateError(
                    "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
                )
            component = KUBE_COMPONENT
        if component != KUBE_COMPONENT:
            raise FeatureGateError(f"component not registered: {component}")
        gates = _set(",".join(pairs))
    return gates


def _set(value: str) -> FeatureGates:
    """featureGate.Set: ``key=bool`` pairs (strconv.ParseBool), the last of a key winning."""
    requested: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = _trim(key)
        if not sep:
            raise FeatureGateError(f"missing bool value for {key}")
        raw = _trim(raw)
        b = _PARSE_BOOL.get(raw)
        if b is None:
            raise FeatureGateError(
                f"invalid value of {key}={raw}, err: strconv.ParseBool: parsing {_strconv_quote(raw)}: invalid syntax"
            )
        requested[key] = b
    return _resolve(requested)


def _resolve(requested: Mapping[str, bool]) -> FeatureGates:
    """SetFromMap: unknown gates (the first ends the walk), locked gates set away from their
    default, AllAlpha/AllBeta, then the dependencies of every gate left on."""
    errs: list[str] = []
    enabled: dict[str, bool] = {}
    specials: list[tuple[str, bool]] = []
    warnings: list[GateWarning] = []
    for key, v in requested.items():
        spec = GATES.get(key)
        if spec is None:
            errs.append(f"unrecognized feature gate: {key}")
            break
        if spec.locked and spec.default != v:
            errs.append(
                f"cannot set feature gate {key} to {_go_bool(v)}, feature is locked to {_go_bool(spec.default)}"
            )
            continue
        if key in (ALL_ALPHA, ALL_BETA):
            specials.append((key, v))
            continue
        enabled[key] = v
        if spec.stage in (GA, DEPRECATED):
            what = "GA" if spec.stage == GA else "deprecated"
            warnings.append((f"Warning: setting {what} feature gate. It will be removed in a future release.", key, v))
    if errs:
        raise FeatureGateError(*errs)
    # A gate named on the command line wins over AllAlpha/AllBeta whatever the order.
    for key, v in specials:
        stage = ALPHA if key == ALL_ALPHA else BETA
        for spec in GATES.values():
            if spec.stage == stage and spec.name not in (ALL_ALPHA, ALL_BETA):
                enabled.setdefault(spec.name, v)
        enabled[key] = v
    gates = FeatureGates(enabled, warnings)
    for feature, deps in sorted(DEPENDENCIES.items()):
        if not gates.enabled(feature):
            continue
        off = [d for d in deps if not gates.enabled(d)]
        if off:
            errs.append(f"{feature} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
    if errs:
        raise FeatureGateError(*errs)
    return gates


def _go_bool(v: bool) -> str:
    return "true" if v else "false"


# strconv.ParseBool's accepted spellings.
_PARSE_BOOL: Mapping[str, bool] = MappingProxyType(
    {
        **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
        **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
    }
)

# unicode.IsSpace, which strings.TrimSpace trims (Python's str.strip knows a few more).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def _trim(s: str) -> str:
    return s.strip(_GO_SPACE)


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _strconv_quote(s: str) -> str:
    """strconv.Quote: printable characters as they are, the rest escaped (bytes that were not
    UTF-8 arrive here as surrogate escapes and go out as \\x escapes, as Go prints them)."""
    out = ['"']
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        elif o < 0x80:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)
