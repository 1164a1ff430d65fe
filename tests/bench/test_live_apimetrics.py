"""The API server counters the live bench compares (bench/live_apimetrics.py), read from
kube-apiserver's /metrics text."""

from __future__ import annotations

import pytest

from bench.live_apimetrics import delta, parse

BINDING = 'code="201",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"'
CREATE = 'code="201",group="",resource="pods",scope="namespace",subresource="",verb="POST",version="v1"'
METRICS = (
    "# HELP apiserver_request_total [STABLE] Counter of apiserver requests\n"
    f"apiserver_request_total{{{BINDING}}} 7\n"
    f"apiserver_request_total{{{CREATE}}} 3\n"
) + """\
authenticated_user_requests{username="admin"} 5
authenticated_user_requests{username="other"} 11
apiserver_watch_events_total{component="apiserver",group="",resource="pods",version="v1"} 40
apiserver_tls_handshake_errors_total 2
"""


@pytest.mark.parametrize(
    ("key", "want"),
    [
        ("req POST pods/binding 201", 7.0),
        ("req POST pods 201", 3.0),
        # kube-apiserver labels only its own admin user by name (filters/metrics.go).
        ("user admin", 5.0),
        ("user other", 11.0),
        ("watch_events pods", 40.0),
        ("apiserver_tls_handshake_errors_total", None),  # not a family the bench compares
    ],
)
def test_parse_keeps_the_families_compared(key: str, want: float | None) -> None:
    assert parse(METRICS).get(key) == want


def test_delta_is_the_largest_increases_first() -> None:
    start = {"user other": 11.0, "user admin": 5.0}
    end = {"user other": 19.0, "user admin": 6.0, "req POST pods 201": 3.0}
    assert list(delta(start, end).items()) == [("user other", 8), ("req POST pods 201", 3), ("user admin", 1)]
