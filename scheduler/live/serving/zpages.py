"""/configz, /flagz and /statusz as kube-scheduler v1.36.3 serves them (component-base configz;
k8s.io/apiserver server/flagz and server/statusz, gates ComponentFlagz and ComponentStatusz, beta
and on in 1.36).

/configz: ``{"componentconfig": <the effective KubeSchedulerConfiguration, v1, defaults
filled in>}``. /flagz and /statusz: a text page for people (no ``Accept``, ``text/plain`` or
``*/*``; its separator is chosen at random, as upstream's, so nobody parses it) or, asked with
``Accept: application/json;as=Flagz;v=v1beta1;g=config.k8s.io`` (or yaml, or v1alpha1, which
answers with a deprecation Warning), the structured object. Anything else: 406.

In /statusz, ``binaryVersion`` is pyscheduler's own, ``emulationVersion`` the Kubernetes minor
it behaves as, and ``goVersion`` the runtime that runs it (Python's).
"""

from __future__ import annotations

import datetime
import json
import platform
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml
from aiohttp import web

from scheduler.config.duration import format_duration
from scheduler.config.types import API_VERSION, KIND, V1_PLUGINS_ORDER, PluginSet, SchedulerConfig

CONFIG_GROUP = "config.k8s.io"
VERSIONS = ("v1alpha1", "v1beta1")
DEPRECATED = {"v1alpha1"}
DELIMITERS = (":", ": ", "=", " ")
WARNING_HEADER = "This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees " \
    "and is for debugging purposes only."
NOT_ACCEPTABLE = "only the following media types are accepted: application/json, application/yaml, text/plain"
# Paths statusz leaves out of its list (apiserver's nonDebuggingEndpoints).
NON_DEBUGGING = frozenset({"/apis", "/api", "/openid", "/openapi", "/.well-known"})
# v1 Plugins' extension points in their JSON order; the placement ones come after multiPoint.
PLUGIN_POINTS = V1_PLUGINS_ORDER

# SetDefaults_<Plugin>Args of v1 (apis/config/v1/defaults.go), for plugins the profile enables.
_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
DEFAULT_PLUGIN_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "DynamicResources": {"filterTimeout": "10s", "bindingTimeout": "10m0s"},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": _RESOURCES},
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": _RESOURCES}},
    "PodTopologySpread": {"defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}


# ---------------------------------------------------------------------------------------------
# /configz


def _plugin_set(ps: PluginSet | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ps is None:
        return out
    if ps.enabled:
        out["enabled"] = [{"name": r.name, "weight": r.weight} for r in ps.enabled]
    if ps.disabled:
        out["disabled"] = [{"name": n} for n in ps.disabled]
    return out


def _args(name: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
    head: dict[str, Any] = {"kind": f"{name}Args", "apiVersion": API_VERSION} if name in DEFAULT_PLUGIN_ARGS else {}
    body = dict(DEFAULT_PLUGIN_ARGS.get(name, {}))
    if given:
        body.update({k: v for k, v in given.items() if k not in ("kind", "apiVersion")})
    return {**head, **body}


def config_object(cfg: SchedulerConfig) -> dict[str, Any]:
    """The v1 KubeSchedulerConfiguration kube-scheduler renders in /configz (defaults applied)."""
    le, cc = cfg.leader_election, cfg.client_connection
    profiles = []
    for prof in cfg.profiles:
        enabled = {r.name for ps in prof.plugins.values() for r in ps.enabled}
        configs = [{"name": n, "args": _args(n, a)} for n, a in prof.plugin_args.items()]
        # Plugins without args given get their defaults, in name order (setDefaults_KubeSchedulerProfile).
        configs.extend({"name": n, "args": _args(n, None)}
                       for n in sorted(enabled) if n in DEFAULT_PLUGIN_ARGS and n not in prof.plugin_args)
        p: dict[str, Any] = {
            "schedulerName": prof.scheduler_name,
            "plugins": {point: _plugin_set(prof.plugins.get(point)) for point in PLUGIN_POINTS},
            "pluginConfig": configs,
        }
        if prof.percentage_of_nodes_to_score is not None:
            p = {"schedulerName": prof.scheduler_name, "percentageOfNodesToScore": prof.percentage_of_nodes_to_score,
                 "plugins": p["plugins"], "pluginConfig": configs}
        profiles.append(p)
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": "",
            "contentType": cc.content_type,
            "qps": int(cc.qps) if float(cc.qps).is_integer() else cc.qps,
            "burst": cc.burst,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": int(cfg.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": int(cfg.pod_max_backoff_seconds),
        "profiles": profiles,
    }


def configz_handler(cfg: SchedulerConfig) -> Callable[[web.Request], Any]:
    body = json.dumps({"componentconfig": config_object(cfg)}, separators=(",", ":")).encode()

    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": "application/json",
                                                "X-Content-Type-Options": "nosniff"})

    return handler


# ---------------------------------------------------------------------------------------------
# Content negotiation of /flagz and /statusz


def negotiate(accept: str, kind: str) -> tuple[str, str] | None:
    """("text/plain", "") or (media type, version) for the structured ``kind``; None: 406."""
    if not accept.strip():
        return "text/plain", ""
    clauses: list[tuple[float, int, str, dict[str, str]]] = []
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        params = {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            clauses.append((-q, i, media, params))
    for _, _, media, params in sorted(clauses):
        structured = bool(params.get("as"))
        if media in ("*/*", "text/*", "text/plain") and not structured:
            return "text/plain", ""
        if (media in ("application/json", "application/yaml", "application/*", "*/*") and structured
                and params.get("as") == kind and params.get("g") == CONFIG_GROUP and params.get("v") in VERSIONS):
            return ("application/yaml" if media == "application/yaml" else "application/json"), params["v"]
    return None


def not_acceptable() -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": NOT_ACCEPTABLE,
            "reason": "NotAcceptable", "code": 406}
    return web.Response(status=406, body=json.dumps(body, indent=2).encode() + b"\n",
                        headers={"Content-Type": "application/json"})


def structured(obj: dict[str, Any], media: str, version: str, kind: str) -> web.Response:
    if media == "application/yaml":
        body = yaml.safe_dump(obj, sort_keys=True, default_flow_style=False).encode()
    else:
        body = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    headers = {"Content-Type": f"{media};g={CONFIG_GROUP};v={version};as={kind}"}
    if version in DEPRECATED:
        headers["Warning"] = (f'299 - "This version of the {kind.lower()} endpoint is deprecated. '
                              'Please use a newer version."')
    return web.Response(body=body, headers=headers)


def zpage(request: web.Request, kind: str, text: Callable[[], str],
          obj: Callable[[str], dict[str, Any]]) -> web.Response:
    """The answer of /flagz or /statusz: the text page, the structured ``kind``, or 406."""
    chosen = negotiate(request.headers.get("Accept", ""), kind)
    if chosen is None:
        return not_acceptable()
    media, version = chosen
    if media == "text/plain":
        return web.Response(body=text().encode(), headers={"Content-Type": "text/plain; charset=utf-8"})
    return structured(obj(version), media, version, kind)


# ---------------------------------------------------------------------------------------------
# /flagz


class Flagz:
    """The command line's flags and their values (flag name -> Go-style text)."""

    def __init__(self, component: str, flags: Mapping[str, str], rng: random.Random | None = None) -> None:
        self.component = component
        self.flags = dict(flags)
        self._rng = rng or random.Random()
        self._text: str | None = None

    def object(self, version: str) -> dict[str, Any]:
        obj: dict[str, Any] = {"kind": "Flagz", "apiVersion": f"{CONFIG_GROUP}/{version}",
                               "metadata": {"name": self.component}}
        if self.flags:
            obj["flags"] = dict(sorted(self.flags.items()))
        return obj

    def text(self) -> str:
        if self._text is None:  # upstream caches the page, separator included
            sep = self._rng.choice(DELIMITERS)
            lines = "".join(f"{k}{sep}{v}\n" for k, v in sorted(self.flags.items()))
            self._text = f"\n{self.component} flagz\nWarning: {WARNING_HEADER}\n{lines}"
        return self._text

    async def handler(self, request: web.Request) -> web.Response:
        return zpage(request, "Flagz", self.text, self.object)


# ---------------------------------------------------------------------------------------------
# /statusz


def aggregate_paths(paths: Sequence[str]) -> list[str]:
    """The first segment of every listed path, once, sorted, without the API's own."""
    out = set()
    for p in paths:
        parts = p.split("/")
        if len(parts) < 2 or not parts[1]:
            continue
        top = "/" + parts[1]
        if top not in NON_DEBUGGING:
            out.add(top)
    return sorted(out)


class Statusz:
    def __init__(self, component: str, binary_version: str, emulation_version: str, start_time: float,
                 paths: Sequence[str], clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None) -> None:
        self.component = component
        self.binary_version = binary_version
        self.emulation_version = emulation_version
        self.start = int(start_time)
        self.paths = aggregate_paths(paths)
        self.clock = clock
        self._rng = rng or random.Random()
        self.runtime = f"python{platform.python_version()}"

    def uptime(self) -> int:
        return max(0, int(self.clock() - self.start))

    def object(self, version: str) -> dict[str, Any]:
        started = datetime.datetime.fromtimestamp(self.start, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        obj: dict[str, Any] = {
            "kind": "Statusz", "apiVersion": f"{CONFIG_GROUP}/{version}", "metadata": {"name": self.component},
            "startTime": started, "uptimeSeconds": self.uptime(), "goVersion": self.runtime,
            "binaryVersion": self.binary_version,
        }
        if self.emulation_version:
            obj["emulationVersion"] = self.emulation_version
        obj["paths"] = list(self.paths)
        return obj

    def text(self) -> str:
        d = self._rng.choice(DELIMITERS)
        up = self.uptime()
        started = time.strftime("%a %b %e %H:%M:%S %Z %Y", time.localtime(self.start))
        emulation = f"Emulation version{d} {self.emulation_version}" if self.emulation_version else ""
        paths = f"Paths{d} {' '.join(self.paths)}" if self.paths else ""
        return (f"\n{self.component} statusz\nWarning: {WARNING_HEADER}\n"
                f"\nStarted{d} {started}\nUp{d} {up // 3600} hr {(up // 60) % 60:02d} min {up % 60:02d} sec\n"
                f"Go version{d} {self.runtime}\nBinary version{d} {self.binary_version}\n{emulation}\n{paths}\n")

    async def handler(self, request: web.Request) -> web.Response:
        return zpage(request, "Statusz", self.text, self.object)
