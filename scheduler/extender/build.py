"""The configuration's extenders made into clients (upstream scheduler.go buildExtenders)."""

from __future__ import annotations

import dataclasses

from scheduler.config.types import ConfigError, Profile, SchedulerConfig
from scheduler.extender.http import HTTPExtender, TLSSetupError

NODE_RESOURCES_FIT = "NodeResourcesFit"


class ExtenderBuildError(ConfigError):
    """An extender that cannot be set up; ``str()`` is upstream's start-up error."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"couldn't build extenders: {reason}")


def build_extenders(cfg: SchedulerConfig) -> tuple[list[HTTPExtender], SchedulerConfig]:
    """One client per configured extender, the ignorable ones last (their order otherwise
    kept), and ``cfg`` with the resources they manage with ``ignoredByScheduler`` handed to
    every profile's NodeResourcesFit as its ``ignoredResources`` (replacing the profile's own,
    as upstream). ExtenderBuildError as upstream words the failure."""
    if not cfg.extenders:
        return [], cfg
    strict: list[HTTPExtender] = []
    ignorable: list[HTTPExtender] = []
    ignored: list[str] = []
    for ext in cfg.extenders:
        try:
            client = HTTPExtender(ext)
        except TLSSetupError as exc:
            raise ExtenderBuildError(str(exc)) from None
        (ignorable if client.is_ignorable() else strict).append(client)
        ignored.extend(r.name for r in ext.managed_resources if r.ignored_by_scheduler)
    extenders = strict + ignorable
    if not ignored:
        return extenders, cfg
    profiles = tuple(_with_ignored_resources(p, ignored) for p in cfg.profiles)
    return extenders, dataclasses.replace(cfg, profiles=profiles)


def _with_ignored_resources(profile: Profile, ignored: list[str]) -> Profile:
    """The profile with NodeResourcesFit's ignoredResources replaced. Upstream finds the
    plugin's args among the defaulted pluginConfig, which holds them whenever the plugin is
    enabled at some extension point or configured explicitly."""
    enabled = any(ref.name == NODE_RESOURCES_FIT for ps in profile.plugins.values() for ref in ps.enabled)
    if NODE_RESOURCES_FIT not in profile.plugin_args and not enabled:
        raise ExtenderBuildError("can't find NodeResourcesFitArgs in plugin config")
    args = dict(profile.plugin_args.get(NODE_RESOURCES_FIT) or {})
    args["ignoredResources"] = list(ignored)
    return dataclasses.replace(profile, plugin_args={**profile.plugin_args, NODE_RESOURCES_FIT: args})
