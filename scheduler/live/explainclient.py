"""``pyscheduler explain [-n NAMESPACE] POD``: ask the scheduler that decided why the pod is where
it is, or why it is pending; recompute the decision when no scheduler answers.

Which scheduler (the first that has a record of the pod answers):

1. ``--server URL``: that one (its certificate checked against ``--certificate-authority``, or
   not at all with ``--insecure-skip-tls-verify``).
2. Schedulers running on this machine (``make run``, a shell): each publishes a presence file
   (live/presence.py) with its address and the fingerprint of its certificate, which is pinned.
   With leader election on, the Lease's holder identity picks the file; without, the files of
   schedulers working for the same API server with a profile for the pod's scheduler name.
3. The Lease's holder as a pod (the in-cluster Deployment: holder identity ``<pod>_<uuid>``),
   through the API server's proxy to that pod (``get`` on ``pods/proxy`` in its namespace).

Every request carries the kubeconfig's credentials: its client certificate and bearer token on
a direct connection; through the proxy, which drops them, the token again in
``X-Pyscheduler-Authorization``. The scheduler then authorizes ``get`` on the path as it does
for /metrics (nonResourceURLs ``/debug/explain/*``).

The scheduler's configuration (Lease, profiles, for a what-if its plugins) comes from
``--config``, else the ConfigMap ``--config-map`` (``pyscheduler/pyscheduler-config``), else
``pyscheduler run``'s defaults. ``--what-if``, or no scheduler with a record: the cluster is
read through the API (every kind the scheduler watches) and the decision recomputed now, with
nothing written (simulate/whatif.py). For a pod that fits nowhere the same read adds the nodes
that fail one Filter plugin only.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import ssl
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from scheduler.config import ConfigError, SchedulerConfig, error_line, load_run_config, parse_config
from scheduler.config.features import DEFAULT_GATES, FeatureGates
from scheduler.core.decision import SOURCE_SCHEDULER, SOURCE_WHAT_IF, Decision, from_json, to_json
from scheduler.core.report import render_history
from scheduler.live import presence
from scheduler.live.kube.clients import CredentialError, CredentialSource
from scheduler.live.serving.authn import FORWARDED_AUTHORIZATION
from scheduler.model.kinds import KINDS

DEFAULT_CONFIG_MAP = "pyscheduler/pyscheduler-config"
CONFIG_KEY = "config.yaml"
API_PATH = "/debug/explain/api/pods/{namespace}/{name}"
DEFAULT_SERVING_PORT = 10259
TIMEOUT = 10.0
LIST_PAGE = 500
EXIT_ERROR = 1
EXIT_USAGE = 2

# The what-if: the cluster's objects, the configuration and the pod's key in, its Decision out.
WhatIf = Callable[[Sequence[dict[str, Any]], SchedulerConfig, str], Decision]


class ExplainError(Exception):
    """What stops explain (one line)."""


# ---------------------------------------------------------------------------------------------
# The API server


class Cluster:
    """GETs against the API server with the kubeconfig's credentials (blocking)."""

    def __init__(self, creds: CredentialSource) -> None:
        self.creds = creds
        self.api = creds.connection("explain", pool_size=4, retries=False)
        self.host = str(self.api.configuration.host).rstrip("/")

    def get(self, path: str, extra: dict[str, str] | None = None) -> tuple[int, bytes]:
        headers = {"Accept": "application/json", "User-Agent": "pyscheduler-explain"}
        token = self.creds.header()
        if token:
            headers["Authorization"] = token
        headers.update(extra or {})
        pm = self.api.rest_client.pool_manager
        try:
            r = pm.request("GET", self.host + path, headers=headers, timeout=TIMEOUT, retries=False)
        except Exception as exc:
            raise ExplainError(f"{self.host}: {type(exc).__name__}: {exc}") from None
        return int(r.status), bytes(r.data)

    def get_json(self, path: str) -> dict[str, Any] | None:
        """The object at ``path``; None when it does not exist; ExplainError otherwise."""
        status, body = self.get(path)
        if status == 404:
            return None
        if status != 200:
            raise ExplainError(f"GET {path}: {status} {_message(body)}")
        doc = json.loads(body)
        return doc if isinstance(doc, dict) else None

    def list_kind(self, path: str, kind: str, api_version: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cont = ""
        while True:
            q = f"?limit={LIST_PAGE}" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
            status, body = self.get(path + q)
            if status != 200:
                raise ExplainError(f"list {path}: {status} {_message(body)}")
            doc = json.loads(body)
            for item in doc.get("items") or []:
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", api_version)
                out.append(item)
            cont = (doc.get("metadata") or {}).get("continue") or ""
            if not cont:
                return out

    def objects(self, notes: list[str]) -> list[dict[str, Any]]:
        """Every object of every kind the scheduler reads; a kind that cannot be listed is left
        out with a note (nodes and pods must be listed)."""
        docs: list[dict[str, Any]] = []
        for k in KINDS.values():
            try:
                docs += self.list_kind(k.path, k.name, k.api_version)
            except ExplainError as exc:
                if k.name in ("Pod", "Node"):
                    raise
                if "404" not in str(exc):
                    notes.append(f"what-if without {k.plural}: {exc}")
        return docs


def _message(body: bytes) -> str:
    try:
        doc = json.loads(body)
    except ValueError:
        return body[:200].decode(errors="replace").strip()
    return str(doc.get("message") or "") if isinstance(doc, dict) else ""


# ---------------------------------------------------------------------------------------------
# Schedulers to ask


@dataclass(slots=True)
class Target:
    where: str
    fetch: Callable[[str], tuple[int, bytes]]  # path -> (status, body)


def direct_fetch(url: str, creds: CredentialSource, *, fingerprint: str = "", ca_file: str | None = None,
                 insecure: bool = False) -> Callable[[str], tuple[int, bytes]]:
    """GET on a scheduler's own HTTPS port with the kubeconfig's client certificate and token.
    Its certificate is pinned to ``fingerprint``, or checked against ``ca_file``, or (insecure)
    not at all."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "https" or not u.hostname:
        raise ExplainError(f"--server {url}: expected https://host[:port]")
    host, port, base = u.hostname, u.port or DEFAULT_SERVING_PORT, u.path.rstrip("/")

    def fetch(path: str) -> tuple[int, bytes]:
        c = creds.credentials()
        ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
        if fingerprint or insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if c.certificate_path and c.private_key_path:
            ctx.load_cert_chain(c.certificate_path, c.private_key_path)
        conn = http.client.HTTPSConnection(host, port, timeout=TIMEOUT, context=ctx)
        try:
            conn.connect()
            if fingerprint:
                assert conn.sock is not None
                der = conn.sock.getpeercert(binary_form=True) or b""  # type: ignore[attr-defined]
                if hashlib.sha256(der).hexdigest() != fingerprint:
                    raise ExplainError(f"{url}: its certificate is not the one it published")
            headers = {"Accept": "application/json"}
            if c.token:
                headers["Authorization"] = f"{c.scheme or 'Bearer'} {c.token}"
            conn.request("GET", base + path, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            raise ExplainError(f"{url}: {type(exc).__name__}: {exc}") from None
        finally:
            conn.close()

    return fetch


def proxy_fetch(cluster: Cluster, namespace: str, pod: str, port: int) -> Callable[[str], tuple[int, bytes]]:
    """GET through the API server's proxy to the scheduler's pod; the token rides along in
    X-Pyscheduler-Authorization (the proxy drops Authorization)."""
    def fetch(path: str) -> tuple[int, bytes]:
        token = cluster.creds.header()
        extra = {FORWARDED_AUTHORIZATION: token} if token else {}
        return cluster.get(f"/api/v1/namespaces/{namespace}/pods/https:{pod}:{port}/proxy{path}", extra)

    return fetch


def same_server(a: str, b: str) -> bool:
    """Whether two API server URLs name the same endpoint (localhost and loopback alike)."""
    def norm(url: str) -> tuple[str, str, int]:
        u = urllib.parse.urlsplit(url)
        host = (u.hostname or "").lower()
        if host == "localhost":
            host = "127.0.0.1"
        return u.scheme, host, u.port or (443 if u.scheme == "https" else 80)

    return norm(a) == norm(b)


def local_targets(creds: CredentialSource, scheduler_name: str | None, published: Sequence[presence.Presence],
                  holder_of: Callable[[str], str | None]) -> list[Target]:
    """Schedulers on this machine worth asking, newest first: those working for our API server
    that lead their Lease (when they elect) or have a profile for the pod (when they do not)."""
    out = []
    for p in published:
        if not same_server(p.server, creds.host):
            continue
        if p.lease:
            if holder_of(p.lease) != p.identity:
                continue
        elif scheduler_name is not None and scheduler_name not in p.profiles:
            continue
        out.append(Target(f"local scheduler pid {p.pid} at {p.url}",
                          direct_fetch(p.url, creds, fingerprint=p.fingerprint)))
    return out


def holder_pod_target(cluster: Cluster, lease_ns: str, holder: str) -> Target | None:
    """The Lease holder as a pod of the Lease's namespace (identity ``<hostname>_<uuid>``)."""
    name = holder.rpartition("_")[0] or holder
    pod = cluster.get_json(f"/api/v1/namespaces/{lease_ns}/pods/{urllib.parse.quote(name)}")
    if pod is None:
        return None
    port = DEFAULT_SERVING_PORT
    for c in (pod.get("spec") or {}).get("containers") or []:
        for cp in c.get("ports") or []:
            if cp.get("name") == "https" and cp.get("containerPort"):
                port = int(cp["containerPort"])
    return Target(f"leader pod {lease_ns}/{name} through the API server's proxy",
                  proxy_fetch(cluster, lease_ns, name, port))


# ---------------------------------------------------------------------------------------------
# Putting it together


@dataclass(slots=True)
class Answer:
    pod: str
    decisions: list[Decision]
    source: str
    where: str = ""
    queue: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def scheduler_config(cluster: Cluster, path: str | None, config_map: str, notes: list[str],
                     gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    if path:
        return load_run_config(path, gates)
    ns, _, name = config_map.partition("/")
    try:
        cm = cluster.get_json(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    except ExplainError as exc:
        notes.append(f"configuration: ConfigMap {config_map} not readable ({exc}): pyscheduler run's defaults")
        return load_run_config(None, gates)
    text = ((cm or {}).get("data") or {}).get(CONFIG_KEY)
    if not text:
        if cm is not None:
            notes.append(f"configuration: ConfigMap {config_map} has no {CONFIG_KEY}: pyscheduler run's defaults")
        return load_run_config(None, gates)
    try:
        return parse_config(yaml.safe_load(text), gates)
    except (ConfigError, yaml.YAMLError) as exc:
        raise ExplainError(f"ConfigMap {config_map}: {exc}") from None


def lease_holder(cluster: Cluster, lease: str, notes: list[str]) -> str | None:
    """The holder identity of Lease ``namespace/name``; None when free, absent or unreadable."""
    ns, _, name = lease.partition("/")
    try:
        doc = cluster.get_json(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
    except ExplainError as exc:
        notes.append(f"Lease {lease} not readable: {exc}")
        return None
    holder = str(((doc or {}).get("spec") or {}).get("holderIdentity") or "")
    return holder or None


def ask(targets: Sequence[Target], key: str, notes: list[str]) -> tuple[Target, dict[str, Any]] | None:
    ns, _, name = key.partition("/")
    path = API_PATH.format(namespace=urllib.parse.quote(ns), name=urllib.parse.quote(name))
    for t in targets:
        try:
            status, body = t.fetch(path)
        except (ExplainError, OSError) as exc:
            notes.append(f"{t.where} did not answer: {exc}")
            continue
        if status == 200:
            try:
                return t, json.loads(body)
            except ValueError:
                notes.append(f"{t.where} answered something that is not JSON")
                continue
        if status == 404:
            notes.append(f"{t.where} has no record of {key}")
        elif status in (401, 403):
            notes.append(f"{t.where} refused: {status} {_message(body)}"
                         + (" (through the proxy only a bearer token is passed on: a client certificate is not)"
                            if "proxy" in t.where else ""))
        else:
            notes.append(f"{t.where} answered {status} {_message(body)}")
    return None


def explain_pod(args: argparse.Namespace, what_if: WhatIf, cluster: Cluster | None = None,
                published: Sequence[presence.Presence] | None = None) -> Answer:
    """The answer for ``args.pod``: from a scheduler with a record, else a what-if."""
    cluster = cluster or Cluster(CredentialSource(args.kubeconfig))
    creds = cluster.creds
    key = pod_key(args)
    notes: list[str] = []
    ns, _, name = key.partition("/")
    pod = cluster.get_json(f"/api/v1/namespaces/{ns}/pods/{urllib.parse.quote(name)}")
    if pod is None:
        notes.append(f"pod {key} does not exist (any record of it is shown)")
    cfg = scheduler_config(cluster, args.config, args.config_map, notes, getattr(args, "gates", DEFAULT_GATES))
    if not args.what_if:
        targets: list[Target] = []
        if args.server:
            targets.append(Target(f"scheduler at {args.server}", direct_fetch(
                args.server, creds, ca_file=args.certificate_authority, insecure=args.insecure_skip_tls_verify)))
        else:
            holders: dict[str, str | None] = {}

            def holder_of(lease: str) -> str | None:
                if lease not in holders:
                    holders[lease] = lease_holder(cluster, lease, notes)
                return holders[lease]

            scheduler_name = ((pod or {}).get("spec") or {}).get("schedulerName") if pod else None
            local = presence.read_all() if published is None else published
            targets += local_targets(creds, scheduler_name, local, holder_of)
            le = cfg.leader_election
            holder = holder_of(f"{le.resource_namespace}/{le.resource_name}") if le.leader_elect else None
            if holder is not None and not targets:
                t = holder_pod_target(cluster, le.resource_namespace, holder)
                if t is not None:
                    targets.append(t)
                else:
                    notes.append(f"the Lease holder {holder} is neither a local process nor a pod")
            if not targets:
                notes.append("no running scheduler found (no presence file on this machine, no Lease holder)")
        got = ask(targets, key, notes)
        if got is not None:
            t, body = got
            decisions = [from_json(d) for d in body.get("attempts") or []]
            ans = Answer(key, decisions, SOURCE_SCHEDULER, t.where, body.get("queue"), notes)
            if decisions and not decisions[0].placed and pod is not None and not args.no_hints:
                _add_hints(ans, cluster, cfg, what_if)
            return ans
    if pod is None:
        raise ExplainError(f"pod {key} not found, and no scheduler has a record of it")
    docs = cluster.objects(notes)
    d = what_if(docs, cfg, key)
    if not args.what_if:
        notes.append("no scheduler answered with a record: recomputed now from the cluster")
    return Answer(key, [d], SOURCE_WHAT_IF, "what-if", None, notes)


def _add_hints(ans: Answer, cluster: Cluster, cfg: SchedulerConfig, what_if: WhatIf) -> None:
    """The nodes that fail one Filter plugin only, now (from a what-if of the same pod)."""
    try:
        d = what_if(cluster.objects(ans.notes), cfg, ans.pod)
    except Exception as exc:
        ans.notes.append(f"no hints: {exc}")
        return
    ans.decisions[0].near_misses = d.near_misses


def pod_key(args: argparse.Namespace) -> str:
    if "/" in args.pod and not args.namespace:
        return str(args.pod)
    return f"{args.namespace or context_namespace(args.kubeconfig)}/{args.pod}"


def context_namespace(kubeconfig: str | None) -> str:
    from kubernetes import config

    try:
        _, current = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:
        return "default"
    return str(((current or {}).get("context") or {}).get("namespace") or "default")


def answer_json(ans: Answer) -> dict[str, Any]:
    out: dict[str, Any] = {"pod": ans.pod, "source": ans.source, "from": ans.where,
                           "attempts": [to_json(d) for d in ans.decisions]}
    if ans.queue:
        out["queue"] = ans.queue
    if ans.notes:
        out["notes"] = ans.notes
    return out


def answer_text(ans: Answer) -> str:
    text = render_history(ans.decisions)
    if ans.queue:
        q = ans.queue
        text += f"now: {q.get('queue')}, {q.get('reason')} (attempts {q.get('attempts')})\n"
    return text


def run(args: argparse.Namespace, what_if: WhatIf) -> int:
    try:
        ans = explain_pod(args, what_if)
    except CredentialError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"error: {error_line(args.config or args.config_map, exc)}", file=sys.stderr)
        return EXIT_USAGE
    except ExplainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # the what-if's own errors
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for n in ans.notes:
        print(f"note: {n}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(answer_json(ans), indent=2))
    else:
        sys.stdout.write(answer_text(ans))
    return 0
