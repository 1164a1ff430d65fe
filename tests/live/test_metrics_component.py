"""component-base's families as kube-scheduler v1.36.3 exports them: leader election (client-go
leaderelection.go: the slow path counted when the leader renews through a GET), the API
client's rest_client_* (component-base restclient adapter), the process collector
(client_golang procfs: the nine families), build and version info, the framework's own."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
import urllib3

from scheduler.config.features import DEFAULT_GATES
from scheduler.live.kube.elector import LeaderElector
from scheduler.live.metrics import Metrics
from scheduler.live.metrics.client import REST, InstrumentedConnection
from scheduler.testing.fakes import FakeClock, FakeLeaseAPI


def value(m: Metrics, metric: str, **labels: str) -> float:
    return m.registry.get_sample_value(metric, labels) or 0.0


def test_leader_election_families_name_kube_scheduler() -> None:
    # options.go makeLeaderElectionConfig: Name "kube-scheduler", whatever the Lease's name.
    m = Metrics()
    api, clock = FakeLeaseAPI(), FakeClock(0.0)
    le = LeaderElector(api, "my-lease", "kube-system", "a", clock=clock, wall=lambda: 1.7e9 + clock.t,
                       sleep=clock.sleep, on_change=m.component.leader_status, on_slowpath=m.component.leader_slowpath)
    m.component.leader_status(False)
    assert value(m, "leader_election_master_status", name="kube-scheduler") == 0
    assert le.try_acquire_or_renew()
    le._set_leader(True)
    assert value(m, "leader_election_master_status", name="kube-scheduler") == 1
    assert le.try_acquire_or_renew()  # fast path: the record it wrote, no GET
    assert value(m, "leader_election_slowpath_total", name="kube-scheduler") == 0
    api.lease["metadata"]["resourceVersion"] = "99"  # someone touched the Lease: the update conflicts
    api.rv = 99
    assert le.try_acquire_or_renew()  # falls back to GET then update: the slow path
    assert value(m, "leader_election_slowpath_total", name="kube-scheduler") == 1


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"kind":"Status"}' if self.path == "/missing" else b"{}"
        self.send_response(404 if self.path == "/missing" else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()


class _Conn(InstrumentedConnection, urllib3.connection.HTTPConnection):
    pass


def test_each_request_is_counted_by_code_method_and_host(server: int) -> None:
    m = Metrics()
    host = f"127.0.0.1:{server}"
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server)
    pool.ConnectionCls = _Conn
    before = value(m, "rest_client_requests_total", code="200", method="GET", host=host)
    REST.limiter_waited(0.25)
    assert pool.request("GET", "/ok").status == 200
    assert pool.request("GET", "/missing").status == 404
    assert value(m, "rest_client_requests_total", code="200", method="GET", host=host) == before + 1
    assert value(m, "rest_client_requests_total", code="404", method="GET", host=host) == 1
    assert value(m, "rest_client_request_duration_seconds_count", verb="GET", host=host) == 2
    assert value(m, "rest_client_response_size_bytes_sum", verb="GET", host=host) == 2 + 17
    # The limiter's wait belongs to the first request this thread sent after it, only.
    assert value(m, "rest_client_rate_limiter_duration_seconds_count", verb="GET", host=host) == 1
    assert value(m, "rest_client_rate_limiter_duration_seconds_sum", verb="GET", host=host) == 0.25


def test_a_refused_connection_is_an_error_code() -> None:
    m = Metrics()
    pool = urllib3.HTTPConnectionPool("127.0.0.1", 1, retries=False)
    pool.ConnectionCls = _Conn
    with pytest.raises(urllib3.exceptions.HTTPError):
        pool.request("GET", "/")
    assert value(m, "rest_client_requests_total", code="<error>", method="GET", host="127.0.0.1:1") >= 1


def test_client_families_always_present() -> None:
    text = Metrics().exposition()[0].decode()
    assert "rest_client_exec_plugin_ttl_seconds +Inf" in text
    assert "rest_client_transport_cache_entries 0.0" in text
    assert "rest_client_exec_plugin_certificate_rotation_age_count 0.0" in text


def test_process_collector_families() -> None:
    fams = {f.name: f for f in Metrics().registry.collect() if f.name.startswith("process_")}
    # Counters are named without _total by the Python client's families.
    assert set(fams) == {
        "process_cpu_seconds", "process_max_fds", "process_network_receive_bytes", "process_network_transmit_bytes",
        "process_open_fds", "process_resident_memory_bytes", "process_start_time_seconds",
        "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
    }
    assert {f.type for n, f in fams.items() if n in ("process_cpu_seconds", "process_network_receive_bytes")} == {
        "counter"}
    assert fams["process_open_fds"].samples[0].value > 0


def test_feature_gates_build_and_registered_metrics() -> None:
    m = Metrics()
    m.feature_gates(DEFAULT_GATES)
    text = m.exposition()[0].decode()
    assert 'kubernetes_feature_enabled{name="SchedulerQueueingHints",stage=""} 1.0' in text
    assert 'kubernetes_build_info{build_date="",compiler="cpython",git_commit="",git_tree_state=""' in text
    assert 'git_version="v1.36.3+pyscheduler.' in text
    assert 'version_info{binary="1.36.3",component="kube",emulation="1.36",min_compat="1.35"} 1.0' in text
    assert 'registered_metrics_total{deprecated_version="",stability_level="STABLE"}' in text
    assert "disabled_metrics_total 0.0" in text
