"""The API server's own request and watch counters over a window: what each contestant made the
API server do (requests by verb and resource, watch events and their bytes by kind).

Read from kube-apiserver's /metrics at the window's start and end; the difference covers every
client (the bench, kwok, the controller manager and the contestant), so contestants are compared
by the difference between their runs."""

from __future__ import annotations

import re

from bench.live_http import Kube

_LINE = re.compile(r"^(\w+)\{(.*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _resource(labels: dict[str, str]) -> str:
    res = labels.get("resource", "")
    return f"{res}/{labels['subresource']}" if labels.get("subresource") else res


def _key(family: str, labels: dict[str, str]) -> str | None:
    if family == "apiserver_request_total":
        return f"req {labels.get('verb', '')} {_resource(labels)} {labels.get('code', '')}"
    if family == "apiserver_watch_events_total":
        return f"watch_events {labels.get('resource') or labels.get('kind', '')}"
    if family == "apiserver_watch_events_sizes_sum":
        return f"watch_bytes {labels.get('resource') or labels.get('kind', '')}"
    if family == "authenticated_user_requests":
        return f"user {labels.get('username', '')}"
    if family == "apiserver_response_sizes_sum":
        return f"resp_bytes {labels.get('verb', '')} {_resource(labels)}"
    return None


def parse(text: str) -> dict[str, float]:
    """The counters the bench compares, summed over the labels it does not keep."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        key = _key(m.group(1), dict(_LABEL.findall(m.group(2))))
        if key is not None:
            out[key] = out.get(key, 0.0) + float(m.group(3))
    return out


def scrape(kube: Kube) -> dict[str, float]:
    conn = kube.connect(timeout=30)
    try:
        conn.request("GET", "/metrics", headers=kube.headers)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return parse(body.decode()) if resp.status == 200 else {}


def delta(start: dict[str, float], end: dict[str, float], keep: int = 25) -> dict[str, int]:
    """The ``keep`` largest increases, largest first."""
    d = {k: v - start.get(k, 0.0) for k, v in end.items()}
    return {k: int(v) for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:keep] if v > 0}
