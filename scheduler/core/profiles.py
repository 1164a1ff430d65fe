"""Frameworks built from configured profiles: the one place the scheduler, simulate, the
benchmarks and the tests do it (upstream profile.NewMap and framework/runtime NewFramework).

A profile (config) names its plugins per extension point, defaults merged in. Here the names
meet the plugin registry: each extension point's list is checked (unknown plugin, plugin that
does not implement the point, a name twice), multiPoint is expanded onto every point its
plugins implement, queueSort and bind are counted and the score weights summed. Every profile
is checked before any plugin is built, and the first error wins (ConfigError, with the field
path of the profile). Then each plugin is built once, from its args, with a complete Handle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from scheduler.config import ConfigError, PluginRef, PluginSet, Profile, SchedulerConfig
from scheduler.config.types import MULTI_POINT
from scheduler.framework.extender import Extender
from scheduler.framework.informers import GroupVersionResource, is_resource_event
from scheduler.framework.interface import (
    EXTENSION_POINTS,
    EventSink,
    Handle,
    PlacementScorePlugin,
    Plugin,
    PodActivator,
    PodBinder,
    PreemptionActuator,
    ScorePlugin,
    extension_points_of,
)
from scheduler.framework.listers import Listers
from scheduler.framework.runtime import DurationObserver, Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import MAX_NODE_SCORE, MAX_TOTAL_SCORE, go_quote
from scheduler.framework.waiting_pods import PermitTimer, WaitingPodsMap
from scheduler.model.pod import set_resource_gates
from scheduler.model.podrequests import ResourceGates
from scheduler.plugins.registry import default_registry

log = structlog.get_logger(__name__)

Registry = Mapping[str, type[Plugin]]
# Profile name -> what the framework reports its extension-point durations to (metrics).
ObserverFactory = Callable[[str], DurationObserver | None]
PluginLists = dict[str, tuple[PluginRef, ...]]

# Order in which the framework builds its per-point lists (framework.go getExtensionPoints);
# it decides which error is reported first.
_FRAMEWORK_ORDER: tuple[str, ...] = (
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "preScore",
    "score",
    "preBind",
    "bind",
    "postBind",
    "permit",
    "preEnqueue",
    "queueSort",
    "placementGenerate",
    "placementScore",
)
_GO_TYPE = {p: p[0].upper() + p[1:] + "Plugin" for p in _FRAMEWORK_ORDER}
_NONE = PluginSet()


class FrameworkError(ValueError):
    """A plugin refused to be built (its factory rejected the args)."""


def plugin_lists(profile: Profile, registry: Registry, path: str = "profiles[0]") -> PluginLists:
    """Each extension point's plugins, in order, score entries with their weights
    (framework.go updatePluginList, expandMultiPointPlugins, getScoreWeights); ConfigError."""
    ppath = f"{path}.plugins"
    sets = profile.plugins
    multipoint = sets.get(MULTI_POINT, _NONE).enabled

    # Per-point lists, as configured explicitly.
    explicit: dict[str, list[str]] = {}
    for point in _FRAMEWORK_ORDER:
        names: list[str] = []
        for i, e in enumerate(sets.get(point, _NONE).enabled):
            where = f"{ppath}.{point}.enabled[{i}]"
            cls = registry.get(e.name)
            if cls is None:
                raise ConfigError(f'{where}: {_GO_TYPE[point]} "{e.name}" does not exist')
            if point not in extension_points_of(cls):
                raise ConfigError(f'{where}: plugin "{e.name}" does not extend {_GO_TYPE[point]} plugin')
            if e.name in names:
                raise ConfigError(f'{where}: plugin "{e.name}" already registered as "{_GO_TYPE[point]}"')
            names.append(e.name)
        explicit[point] = names

    # MultiPoint expansion.
    result: dict[str, list[str]] = {}
    for point in _FRAMEWORK_ORDER:
        names = explicit[point]
        disabled = set(sets.get(point, _NONE).disabled)
        if not multipoint or "*" in disabled:
            result[point] = list(names)
            continue
        overrides: list[str] = []
        expanded: list[str] = []
        for e in multipoint:
            cls = registry.get(e.name)
            if cls is None:
                user = e.index is not None
                where = f"{ppath}.{MULTI_POINT}" + (f".enabled[{e.index}]" if user else "")
                hint = "" if user else " (a default plugin missing from the plugin registry)"
                raise ConfigError(f'{where}: {_GO_TYPE[point]} "{e.name}" does not exist{hint}')
            if point not in extension_points_of(cls) or e.name in disabled:
                continue
            if e.name in names:
                # Explicitly configured at this point: the explicit entry wins, multiPoint is ignored.
                overrides.append(e.name)
                continue
            if e.name in expanded:
                raise ConfigError(f'{ppath}.{MULTI_POINT}: plugin "{e.name}" already registered as "{_GO_TYPE[point]}"')
            expanded.append(e.name)
        # Order: overridden explicit plugins (explicit order), then multiPoint ones, then the rest.
        first = [n for n in names if n in overrides]
        rest = [n for n in names if n not in overrides]
        result[point] = first + expanded + rest

    name = profile.scheduler_name
    if len(result["queueSort"]) != 1:
        raise ConfigError(
            f"{ppath}.queueSort: only one queue sort plugin required for profile with scheduler name "
            f'"{name}", but got {len(result["queueSort"])}'
        )
    if not result["bind"]:
        raise ConfigError(f'{ppath}.bind: at least one bind plugin is needed for profile with scheduler name "{name}"')
    if len(result["placementGenerate"]) > 1:
        raise ConfigError(
            f"{ppath}.placementGenerate: at most one placement generate plugin is allowed for profile with "
            f'scheduler name "{name}"'
        )

    weights = _score_weights(f"{ppath}.score", [*sets.get("score", _NONE).enabled, *multipoint], registry, ScorePlugin)
    placement_weights = _score_weights(
        f"{ppath}.placementScore",
        [*sets.get("placementScore", _NONE).enabled, *multipoint],
        registry,
        PlacementScorePlugin,
    )

    def ref(point: str, n: str) -> PluginRef:
        if point == "score":
            return PluginRef(n, weights[n])
        if point == "placementScore":
            return PluginRef(n, placement_weights[n])
        return PluginRef(n)

    return {point: tuple(ref(point, n) for n in result[point]) for point in EXTENSION_POINTS}


def _score_weights(where: str, entries: list[PluginRef], registry: Registry, kind: type[Plugin]) -> dict[str, int]:
    # Explicit entries come first, so their weight wins over the multiPoint one; an unset or
    # zero weight becomes 1 (a plugin is disabled explicitly, never by weight). Upstream
    # getValidScoreWeights, for Score and PlacementScore plugins alike.
    weights: dict[str, int] = {}
    total = 0
    for e in entries:
        cls = registry.get(e.name)
        if cls is None or not issubclass(cls, kind) or e.name in weights:
            continue
        w = e.weight or 1
        weights[e.name] = w
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(f"{where}: total score of Score plugins could overflow")
        total += w * MAX_NODE_SCORE
    return weights


def check_profiles(cfg: SchedulerConfig, registry: Registry) -> list[PluginLists]:
    """Every profile's plugin lists, in profile order; the first problem raises ConfigError.
    Builds no plugin, so it can run before anything else is set up."""
    return [plugin_lists(prof, registry, f"profiles[{i}]") for i, prof in enumerate(cfg.profiles)]


def new_framework(
    profile: Profile,
    registry: Registry,
    handle: Handle,
    *,
    global_percentage: int = 0,
    observer: DurationObserver | None = None,
    lists: PluginLists | None = None,
    opportunistic_batching: bool = False,
) -> Framework:
    """One profile's framework: its plugins built once each, with their args, in extension-point
    order; ``lists`` when ``check_profiles`` has computed them already. With the
    WorkloadAwarePreemption gate (``handle.features``), DefaultPreemption is the one
    PodGroupPostFilter plugin, as upstream's NewFramework sets it; ``opportunistic_batching``
    is that gate (build_frameworks reads it from the configuration's gates)."""
    if lists is None:
        lists = plugin_lists(profile, registry)
    plugins: dict[str, Plugin] = {}
    for refs in lists.values():
        for ref in refs:
            if ref.name not in plugins:
                plugins[ref.name] = _new_plugin(registry[ref.name], ref.name, profile.plugin_args.get(ref.name), handle)
    percentage = profile.percentage_of_nodes_to_score
    return Framework(
        profile.scheduler_name,
        handle,
        plugins,
        lists,
        percentage_of_nodes_to_score=global_percentage if percentage is None else percentage,
        observer=observer,
        pod_group_post_filter=("DefaultPreemption",) if handle.features.enable_workload_aware_preemption else (),
        opportunistic_batching=opportunistic_batching,
    )


def _new_plugin(cls: type[Plugin], name: str, args: Mapping[str, Any] | None, handle: Handle) -> Plugin:
    try:
        return cls.new(args, handle)
    except ValueError as exc:
        raise FrameworkError(f"initializing plugin {go_quote(name)}: {exc}") from exc
    except (TypeError, AttributeError, KeyError, OverflowError) as exc:
        # An args field of the wrong type, or an infinite number where an integer belongs
        # (upstream's strict decoding of the typed args refuses it when the file is loaded:
        # "decoding args for plugin <name>: json: cannot unmarshal ...").
        raise FrameworkError(f"decoding args for plugin {name}: a field has the wrong type ({exc})") from exc


def build_frameworks(
    cfg: SchedulerConfig,
    snapshot: Snapshot,
    listers: Listers,
    *,
    registry: Registry | None = None,
    client: PodBinder | None = None,
    volume_api: Any = None,
    preemption: PreemptionActuator | None = None,
    seed: int | None = None,
    observers: ObserverFactory | None = None,
    permit_timer: PermitTimer | None = None,
    activator: PodActivator | None = None,
    client_set: Any = None,
    events: EventSink | None = None,
    extenders: Sequence[Extender] = (),
) -> dict[str, Framework]:
    """Scheduler name -> framework, for every profile of ``cfg``. The handles share the snapshot,
    the listers (the plugins' informers among them), one map of waiting pods and the API side
    (``client``: the binder; ``volume_api``: PV/PVC writes; ``client_set``: the kubernetes client
    plugins may use, or a callable that builds it at the first use; ``events``: the Event sink;
    all None offline); ``extenders``: the scheduler extenders every profile shares
    (scheduler/extender builds them); ``permit_timer`` runs the Permit timeouts on the edge's
    clock; ``activator`` moves pods to activeQ; ``seed`` seeds each handle's random source.
    ConfigError for a profile that does not fit the registry,
    FrameworkError for args a plugin refuses."""
    if registry is None:
        registry = default_registry()
    checked = check_profiles(cfg, registry)
    features = cfg.feature_gates.features()
    # What PodInfo counts of every pod follows the process's gates (upstream's global gate).
    resize = features.enable_in_place_pod_level_resources_vertical_scaling
    set_resource_gates(ResourceGates(features.enable_pod_level_resources, resize))
    waiting_pods = WaitingPodsMap(permit_timer)
    frameworks: dict[str, Framework] = {}
    for prof, lists in zip(cfg.profiles, checked):
        handle = Handle(
            snapshot,
            listers,
            prof.scheduler_name,
            cfg.parallelism,
            client,
            volume_api=volume_api,
            preemption=preemption,
            rng=random.Random(seed),
            features=features,
            waiting_pods=waiting_pods,
            activator=activator,
            client_set=client_set,
            events=events,
            extenders=extenders,
        )
        frameworks[prof.scheduler_name] = new_framework(
            prof,
            registry,
            handle,
            global_percentage=cfg.percentage_of_nodes_to_score,
            observer=observers(prof.scheduler_name) if observers is not None else None,
            lists=lists,
            opportunistic_batching=cfg.feature_gates.enabled("OpportunisticBatching"),
        )
    return frameworks


def plugin_resources(frameworks: Mapping[str, Framework]) -> list[GroupVersionResource]:
    """The resources plugins need watched: the informers they asked for while being built, and
    every ``<plural>.<version>.<group>`` they registered a cluster event on (upstream starts a
    dynamic informer for those), which gets an informer here too. A name with an empty part
    is logged and skipped, as upstream does with a name it cannot use."""
    for fw in frameworks.values():
        factory = fw.handle.shared_informer_factory
        for name, pl in fw.enqueue_extensions():
            try:
                events = pl.events_to_register()
            except NotImplementedError:
                continue
            for ewh in events:
                resource = ewh.event.resource
                if not is_resource_event(resource):
                    continue
                try:
                    factory.for_resource(resource)
                except ValueError as exc:
                    log.error("incorrect_event_registration", plugin=name, error=str(exc))
    seen: dict[GroupVersionResource, None] = {}
    for fw in frameworks.values():
        for gvr in fw.handle.shared_informer_factory.resources():
            seen.setdefault(gvr)
    return list(seen)
