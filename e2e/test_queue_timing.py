"""End-to-end, side by side: when pyscheduler and the real kube-scheduler v1.36.3 retry the same
pods on the same plane, and when they bind them once room appears.

The binary runs as a second scheduler (profile ``kube-reference``, the differential suite's
configuration); pyscheduler runs under its ServiceAccount with the manifests' configuration.
Each side has its own node (a label its pods select), so neither takes the other's room. Pods
are created just after a wall-clock second starts, both sides' at once.

* Errors back off: an admission webhook served by this test refuses every Binding of the
  namespace and records when each attempt reaches the API server. Each side's pods must be
  retried in the same 1-second windows as the binary's (initial 1 s, doubling; a backoff ends
  when the window after its expiry starts) and bound in the same window once the webhook lets
  them through.
* Unschedulable, then room: each node is full (a pod bound to it by hand), the pods fail with
  Insufficient cpu, and within their first backoff the blockers are deleted. With
  SchedulerPopFromBackoffQ (beta, on in v1.36.3) both schedulers pop them from backoffQ at once
  instead of waiting out the backoff.

Tolerance: every retry and every bind within ``TOLERANCE`` seconds of the binary's (the
retries also fall in the same 1-second window), and each first FailedScheduling Event too.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import pathlib
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from e2e.controlplane.freeport import free_port
from e2e.support.objects import REFERENCE, SCHEDULER, make_pod, unique_name
from e2e.support.waits import wait_for
from scheduler.testing.process import SchedulerProcess

pytestmark = pytest.mark.usefixtures("local_scheduler_allowed", "kwok")

SIDES = {"ref": REFERENCE, "ours": SCHEDULER}
SIDE_LABEL = "e2e.pyscheduler.io/queue-timing"
TOLERANCE = 0.5  # seconds
PODS_PER_SIDE = 2
DENIED_ATTEMPTS = 3  # before the webhook lets the bindings through


# -- the two schedulers -------------------------------------------------------------------------------



@pytest.fixture(scope="module")
def scheduler(scheduler_config_path: str, scheduler_kubeconfig: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerProcess]:
    log_dir = tmp_path_factory.mktemp("sched")
    with SchedulerProcess.ready(scheduler_config_path, scheduler_kubeconfig, log_dir, "queue-timing") as p:
        yield p


# -- what the test observes --------------------------------------------------------------------------

@dataclass
class Timeline:
    """Wall-clock times (time.time()) of what happened to each pod, by pod name."""

    attempts: dict[str, list[float]] = field(default_factory=dict)  # Bindings reaching the API server
    bound: dict[str, float] = field(default_factory=dict)  # spec.nodeName first seen
    failed: dict[str, list[float]] = field(default_factory=dict)  # FailedScheduling Event, then its series
    lock: threading.Lock = field(default_factory=threading.Lock)


def _ca_and_serving_cert(tmp: pathlib.Path) -> tuple[bytes, pathlib.Path, pathlib.Path]:
    """A throw-away CA and a serving certificate for 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.UTC)

    def cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: ec.EllipticCurvePrivateKey,
             ca: bool) -> x509.Certificate:
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
             .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(hours=6))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                critical=False)
        return b.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "e2e-queue-timing-ca")])
    ca = cert("e2e-queue-timing-ca", ca_key, ca_name, ca_key, True)
    serving = cert("127.0.0.1", key, ca_name, ca_key, False)
    crt, pem = tmp / "serving.crt", tmp / "serving.key"
    crt.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM), crt, pem


class BindingGate:
    """A validating webhook on pods/binding: records each attempt; refuses while ``closed``."""

    def __init__(self, timeline: Timeline) -> None:
        self.closed = True
        self.timeline = timeline

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        req = body["request"]
        with self.timeline.lock:
            self.timeline.attempts.setdefault(req["name"], []).append(time.time())
        response: dict[str, Any] = {"uid": req["uid"], "allowed": not self.closed}
        if self.closed:
            response["status"] = {"code": 403, "message": "binding refused by the queue-timing test"}
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def _serve(gate: BindingGate, tmp: pathlib.Path) -> tuple[ThreadingHTTPServer, int, bytes]:
    ca, crt, key = _ca_and_serving_cert(tmp)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps(gate.review(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="binding-gate", daemon=True).start()
    return server, port, ca


@pytest.fixture
def timeline(api_client: client.ApiClient, namespace: str) -> Iterator[Timeline]:
    """Watches the namespace's pods and Events and records when things happened."""
    tl = Timeline()
    stop = threading.Event()
    watches: list[watch.Watch] = []

    def run(list_fn: Any, on: Any) -> None:
        while not stop.is_set():
            w = watch.Watch()
            watches.append(w)
            try:
                for ev in w.stream(list_fn, namespace, timeout_seconds=60):
                    on(ev["object"], time.time())
            except Exception:  # the watch restarts until the test ends
                if not stop.is_set():
                    time.sleep(0.1)

    def on_pod(pod: client.V1Pod, now: float) -> None:
        if pod.spec.node_name:
            with tl.lock:
                tl.bound.setdefault(pod.metadata.name, now)

    seen_series: dict[str, int] = {}

    def on_event(ev: client.EventsV1Event, now: float) -> None:
        if ev.reason != "FailedScheduling":
            return
        count = ev.series.count if ev.series else 1
        uid = ev.metadata.uid
        if seen_series.get(uid, 0) >= count:
            return
        seen_series[uid] = count
        with tl.lock:
            tl.failed.setdefault(ev.regarding.name, []).append(now)

    core, events = client.CoreV1Api(api_client), client.EventsV1Api(api_client)
    for fn, on in ((core.list_namespaced_pod, on_pod), (events.list_namespaced_event, on_event)):
        threading.Thread(target=run, args=(fn, on), daemon=True).start()
    time.sleep(0.5)  # both watches established
    yield tl
    stop.set()
    for w in watches:
        w.stop()


@pytest.fixture
def binding_gate(api_client: client.ApiClient, core_v1: client.CoreV1Api, namespace: str, timeline: Timeline,
                 tmp_path: pathlib.Path) -> Iterator[BindingGate]:
    gate = BindingGate(timeline)
    server, port, ca = _serve(gate, tmp_path)
    adm = client.AdmissionregistrationV1Api(api_client)
    name = f"e2e-queue-timing-{namespace}"
    adm.create_validating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "bindings.queue-timing.e2e.pyscheduler.io",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods/binding"], "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 5,
        }],
    })
    try:
        # In force once a Binding of a probe pod (no scheduler takes it) is refused.
        core_v1.create_namespaced_pod(namespace, make_pod("probe", namespace, scheduler_name="nobody"))

        def refused() -> bool:
            body = client.V1Binding(metadata=client.V1ObjectMeta(name="probe", namespace=namespace),
                                    target=client.V1ObjectReference(api_version="v1", kind="Node", name="none"))
            try:  # a dry run: the webhook is asked, nothing is stored
                resp = core_v1.create_namespaced_pod_binding("probe", namespace, body, dry_run="All",
                                                             _preload_content=False)
            except ApiException as exc:
                return exc.status == 403
            resp.read()
            resp.release_conn()
            return False

        wait_for(refused, timeout=30, interval=0.2, desc="binding webhook in force")
        core_v1.delete_namespaced_pod("probe", namespace, grace_period_seconds=0)
        with timeline.lock:
            timeline.attempts.pop("probe", None)
        yield gate
    finally:
        adm.delete_validating_webhook_configuration(name)
        server.shutdown()


# -- helpers ------------------------------------------------------------------------------------------

def side_nodes(node_factory: Any, **kw: Any) -> dict[str, str]:
    return {side: node_factory(1, prefix=unique_name(f"qt-{side}"), labels={SIDE_LABEL: side}, **kw)[0]
            for side in SIDES}


def at_second_start(offset: float = 0.05) -> None:
    """Sleep until ``offset`` seconds past the next wall-clock second."""
    now = time.time()
    target = int(now) + 1 + offset
    time.sleep(target - now)


def create_side_pods(core: client.CoreV1Api, namespace: str, cpu: str) -> dict[str, list[str]]:
    """PODS_PER_SIDE pods per side, created alternately; names by side."""
    names: dict[str, list[str]] = {side: [] for side in SIDES}
    for i in range(PODS_PER_SIDE):
        for side, scheduler_name in SIDES.items():
            name = f"{side}-{i}"
            core.create_namespaced_pod(namespace, make_pod(
                name, namespace, scheduler_name=scheduler_name, cpu=cpu, node_selector={SIDE_LABEL: side}))
            names[side].append(name)
    return names


def snapshot(tl: Timeline) -> Timeline:
    with tl.lock:
        return Timeline({k: list(v) for k, v in tl.attempts.items()}, dict(tl.bound),
                        {k: list(v) for k, v in tl.failed.items()})


def report(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    for k, v in rows.items():
        print(f"  {k:8s} {v}")


def assert_close(what: str, ours: float, ref: float) -> None:
    assert abs(ours - ref) <= TOLERANCE, f"{what}: pyscheduler {ours:.3f}, kube-scheduler {ref:.3f}"


# -- the cases ----------------------------------------------------------------------------------------

@pytest.mark.usefixtures("reference", "scheduler")
def test_error_backoff_retries_match_the_binary(core_v1, node_factory, namespace, timeline, binding_gate):
    side_nodes(node_factory)
    time.sleep(1)  # both caches have the nodes
    at_second_start()
    t0 = time.time()
    names = create_side_pods(core_v1, namespace, cpu="100m")
    all_pods = [n for side in SIDES for n in names[side]]

    def denied_enough() -> bool:
        with timeline.lock:
            return all(len(timeline.attempts.get(n, [])) >= DENIED_ATTEMPTS for n in all_pods)

    wait_for(denied_enough, timeout=30, interval=0.05, desc=f"{DENIED_ATTEMPTS} refused bindings per pod")
    binding_gate.closed = False
    wait_for(lambda: all(n in timeline.bound for n in all_pods), timeout=30, interval=0.05, desc="all bound")
    tl = snapshot(timeline)
    report("binding attempts, seconds after creation (then bound)",
           {n: ([round(a - t0, 2) for a in tl.attempts[n]], round(tl.bound[n] - t0, 2)) for n in all_pods})
    for i in range(PODS_PER_SIDE):
        ours, ref = f"ours-{i}", f"ref-{i}"
        for side_pod in (ours, ref):
            tries = tl.attempts[side_pod]
            assert len(tries) == DENIED_ATTEMPTS + 1, side_pod  # refused 3 times, the 4th let through
            # Errors back off 1, 2, 4 s from the failure, each over when the window after its
            # expiry starts (podErrorBackoffQ, flushed on whole seconds).
            for k in range(1, len(tries)):
                window = int(tries[k - 1] + 2 ** (k - 1)) + 1
                assert window <= tries[k] < window + TOLERANCE, (side_pod, k, tries)
        for k, (a, b) in enumerate(zip(tl.attempts[ours], tl.attempts[ref], strict=True)):
            assert int(a) == int(b), f"attempt {k} of {ours} and {ref} in different windows: {a:.3f} {b:.3f}"
            assert_close(f"attempt {k} of pod {i}", a, b)
        assert_close(f"bind of pod {i}", tl.bound[ours], tl.bound[ref])
        assert_close(f"first FailedScheduling of pod {i}", tl.failed[ours][0], tl.failed[ref][0])


@pytest.mark.usefixtures("reference", "scheduler")
def test_room_during_backoff_binds_at_once_as_the_binary(core_v1, node_factory, namespace, timeline):
    nodes = side_nodes(node_factory, cpu="1")
    blockers = []
    for side, node in nodes.items():
        name = f"blocker-{side}"
        core_v1.create_namespaced_pod(namespace, make_pod(name, namespace, cpu="1", node_name=node))
        blockers.append(name)
    time.sleep(1)  # both caches have the nodes and the blockers
    at_second_start()
    t0 = time.time()
    names = create_side_pods(core_v1, namespace, cpu="500m")
    all_pods = [n for side in SIDES for n in names[side]]
    wait_for(lambda: all(n in timeline.failed for n in all_pods), timeout=10, interval=0.02,
             desc="FailedScheduling for every pod")
    # Room appears while every pod still backs off (1 s, over at the start of the second window).
    assert time.time() < t0 + 0.8, "the pods failed too late for this case"
    freed = time.time()
    for name in blockers:
        core_v1.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    wait_for(lambda: all(n in timeline.bound for n in all_pods), timeout=30, interval=0.02, desc="all bound")
    tl = snapshot(timeline)
    report("first FailedScheduling and bind, seconds after creation (room at %.2f)" % (freed - t0),
           {n: (round(tl.failed[n][0] - t0, 2), round(tl.bound[n] - t0, 2)) for n in all_pods})
    backoff_over = int(t0) + 2  # the end of every pod's first backoff
    for i in range(PODS_PER_SIDE):
        ours, ref = f"ours-{i}", f"ref-{i}"
        for side_pod in (ours, ref):
            # Popped from backoffQ at once: bound before its backoff would have ended.
            assert tl.bound[side_pod] < backoff_over, (side_pod, tl.bound[side_pod] - t0)
        assert_close(f"bind of pod {i}", tl.bound[ours], tl.bound[ref])
        assert_close(f"first FailedScheduling of pod {i}", tl.failed[ours][0], tl.failed[ref][0])
