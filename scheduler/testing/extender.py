"""Scheduler extenders for tests: ``FakeExtender``, in memory (upstream
testing/framework/fake_extender.go: predicates and prioritizers are plain functions), and
``ExtenderServer``, a real one over HTTP on loopback for the HTTP client and the e2e suite.

Predicates return a Status (None: fits). Filter turns Unschedulable into a FailedNodes entry,
UnschedulableAndUnresolvable into a FailedAndUnresolvableNodes one, and raises on anything
else, as upstream's fake does.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.extender import Binding, FailedNodesMap, HostPriority, NodeInfoLister, Victims
from scheduler.framework.status import Code, Status
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo

FitPredicate = Callable[[PodInfo, NodeInfo], Status | None]
# (pod, nodes) -> [(node name, score)]
PriorityFunc = Callable[[PodInfo, Sequence[NodeInfo]], list[tuple[str, int]]]


class ExtenderFailure(Exception):
    """What a fake predicate's Error status or a failing fake call raises."""


def error_predicate(pod: PodInfo, node: NodeInfo) -> Status | None:
    return Status(Code.ERROR, "some error")


def false_predicate(pod: PodInfo, node: NodeInfo) -> Status | None:
    return Status(Code.UNSCHEDULABLE, f'pod is unschedulable on the node "{node.name}"')


def true_predicate(pod: PodInfo, node: NodeInfo) -> Status | None:
    return None


def only_node(name: str) -> FitPredicate:
    """Upstream Node1PredicateExtender / Node2PredicateExtender."""

    def predicate(pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.name == name:
            return None
        return Status(Code.UNSCHEDULABLE, f'node "{node.name}" is not allowed')

    return predicate


def error_prioritizer(pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
    raise ExtenderFailure("some error")


def favour_node(name: str) -> PriorityFunc:
    """Upstream Node1PrioritizerExtender / Node2PrioritizerExtender: 10 for ``name``, else 1."""

    def prioritize(pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
        return [(n.name, 10 if n.name == name else 1) for n in nodes]

    return prioritize


@dataclass
class FakeExtender:
    """Implements framework Extender. ``prioritizers``: (function, weight) pairs, summed per
    node; ``weight`` is the extender's own. Always a binder and preemption-capable, as upstream's."""

    extender_name: str = "defaultFakeExtender"
    predicates: list[FitPredicate] = field(default_factory=list)
    prioritizers: list[tuple[PriorityFunc, int]] = field(default_factory=list)
    weight: int = 0
    node_cache_capable: bool = False
    uninterested: bool = False
    ignorable: bool = False
    binder: Callable[[], None] | None = None
    filtered_nodes: list[NodeInfo] = field(default_factory=list)
    bound: list[Binding] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def name(self) -> str:
        return self.extender_name

    def is_ignorable(self) -> bool:
        return self.ignorable

    def supports_preemption(self) -> bool:
        return True

    def is_binder(self) -> bool:
        return True

    def is_prioritizer(self) -> bool:
        return bool(self.prioritizers)

    def is_filter(self) -> bool:
        return bool(self.predicates)

    def is_interested(self, pod: PodInfo) -> bool:
        return not self.uninterested

    def _run_predicates(self, pod: PodInfo, node: NodeInfo) -> Status | None:
        for p in self.predicates:
            s = p(pod, node)
            if s is not None and not s.is_success():
                return s
        return None

    def filter(
        self, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], FailedNodesMap, FailedNodesMap]:
        self.calls.append("filter")
        kept: list[NodeInfo] = []
        failed: FailedNodesMap = {}
        unresolvable: FailedNodesMap = {}
        for node in nodes:
            s = self._run_predicates(pod, node)
            if s is None:
                kept.append(node)
            elif s.code == Code.UNSCHEDULABLE:
                failed[node.name] = f'FakeExtender: node "{node.name}" failed'
            elif s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable[node.name] = f'FakeExtender: node "{node.name}" failed and unresolvable'
            else:
                raise ExtenderFailure(s.message)
        self.filtered_nodes = kept
        return kept, failed, unresolvable

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        self.calls.append("prioritize")
        combined: dict[str, int] = {}
        for fn, weight in self.prioritizers:
            if weight == 0:
                continue
            for name, score in fn(pod, nodes):
                combined[name] = combined.get(name, 0) + score * weight
        return [HostPriority(h, s) for h, s in combined.items()], self.weight

    def bind(self, binding: Binding) -> None:
        self.calls.append("bind")
        if self.binder is not None:
            self.binder()
            self.bound.append(binding)
            return
        if self.filtered_nodes:
            names = [n.name for n in self.filtered_nodes]
            self.filtered_nodes = []
            if binding.node not in names:
                raise ExtenderFailure(f"Node {binding.node} not in filtered nodes {names}")
        self.bound.append(binding)

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], nodes: NodeInfoLister
    ) -> dict[str, Victims]:
        """Without a node cache: keep a candidate when the predicates still pass on it (the
        victims unchanged), drop it when they reject it (upstream selectVictimsOnNodeByExtender)."""
        self.calls.append("preempt")
        out: dict[str, Victims] = {}
        for name, v in victims.items():
            ni = nodes.get(name)
            s = self._run_predicates(pod, ni) if ni is not None else None
            if s is None:
                out[name] = Victims(list(v.pods), v.num_pdb_violations)
            elif not s.is_rejected():
                raise ExtenderFailure(s.message)
        return out


# ---------------------------------------------------------------------------------------------
# An extender over HTTP, on loopback


Answer = tuple[int, Any]  # (status code, JSON body or raw bytes)
VerbHandler = Callable[[Any], Answer]


class ExtenderServer:
    """A scheduler extender served on 127.0.0.1 (a port of its own), for the HTTP client's
    tests and the e2e suite: ``handlers`` maps a path ("/filter") to a function of the decoded
    request body returning (status, answer); ``requests`` records (path, body) in order.
    ``ssl_context`` serves HTTPS; ``delay`` holds every answer that many seconds."""

    def __init__(
        self,
        handlers: Mapping[str, VerbHandler],
        ssl_context: ssl.SSLContext | None = None,
        delay: float = 0.0,
    ) -> None:
        self.handlers = dict(handlers)
        self.requests: list[tuple[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delay = delay
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with outer._lock:
                    outer.requests.append((self.path, body))
                    outer.headers.append(dict(self.headers.items()))
                    handler = outer.handlers.get(self.path)
                if outer.delay:
                    time.sleep(outer.delay)
                status, answer = handler(body) if handler is not None else (404, b"not found")
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up waiting (a timeout under test)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"{'https' if ssl_context is not None else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, name="extender-server", daemon=True
        )

    def start(self) -> ExtenderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        with self._lock:
            return [p for p, _ in self.requests]

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
