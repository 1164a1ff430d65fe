"""A small raw-HTTPS client for the live benchmark (bench/live.py and its parts, bench/live_bind.py).

The official client costs far more CPU per request than the API server work it measures, and the
bind-only contestant must show the limit of the API path, so both the benchmark driver and the
bind-only client talk HTTP/1.1 with keep-alive through ``http.client``: one connection per thread.
Only what up.sh's kubeconfigs use is supported (server URL, CA and client cert/key as files or
inline data, or a bearer token).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import ssl
import tempfile
import threading
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import yaml

# Metadata-only lists (names, resourceVersion) are much cheaper to serve and parse.
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

RETRY_STATUS = {429, 500, 502, 503, 504}


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:300].decode(errors='replace')}")
        self.status = status


def _materialize(entry: dict[str, Any], key: str, tmpdir: str) -> str | None:
    """Path of ``key`` (a file) or of a temp file holding ``key-data`` (base64)."""
    if entry.get(key):
        return str(entry[key])
    data = entry.get(f"{key}-data")
    if not data:
        return None
    path = os.path.join(tmpdir, key)
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    return path


class Kube:
    """Connection settings read once from a kubeconfig (its current context)."""

    def __init__(self, kubeconfig: str) -> None:
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        ctx_name = cfg.get("current-context") or cfg["contexts"][0]["name"]
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in cfg.get("users", []) if u["name"] == ctx.get("user")), {})
        url = urlsplit(cluster["server"])
        if url.scheme != "https" or not url.hostname:
            raise ValueError(f"{kubeconfig}: only https servers are supported, not {cluster['server']!r}")
        self.host = url.hostname
        self.port = url.port or 443
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
            ca = _materialize(cluster, "certificate-authority", tmp)
            self.ssl = ssl.create_default_context(cafile=ca)
            cert = _materialize(user, "client-certificate", tmp)
            key = _materialize(user, "client-key", tmp)
            if cert and key:
                self.ssl.load_cert_chain(cert, key)
        self._local = threading.local()

    def connect(self, timeout: float | None = 60) -> http.client.HTTPSConnection:
        """A new connection; ``timeout=None`` blocks forever (a watch that may stay quiet)."""
        return http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=timeout)

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.connect()
        return conn

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        accept: str | None = None,
        ok: Iterable[int] = (200, 201),
        retries: int = 5,
        content_type: str | None = None,
    ) -> Any:
        """One request on this thread's keep-alive connection; JSON in and out.

        Connection errors and 429/5xx are retried with a short backoff; any other status not in
        ``ok`` raises ApiError. Returns the decoded body (None if empty). ``content_type``: for
        a patch (application/merge-patch+json).
        """
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = dict(self.headers)
        if accept:
            headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        for attempt in range(retries + 1):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt == retries:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status in ok:
                return json.loads(raw) if raw else None
            if resp.status in RETRY_STATUS and attempt < retries:
                time.sleep(0.2 * (attempt + 1))
                continue
            raise ApiError(method, path, resp.status, raw)
        raise AssertionError("unreachable")

    def list_meta(self, path: str, query: str = "") -> tuple[list[dict[str, Any]], str]:
        """The metadata of every object at ``path`` (paged) and the list's resourceVersion."""
        out: list[dict[str, Any]] = []
        cont = ""
        while True:
            q = f"limit=5000&{query}" + (f"&continue={cont}" if cont else "")
            doc = self.request("GET", f"{path}?{q}", accept=META_LIST)
            out.extend(item["metadata"] for item in doc.get("items") or [])
            cont = doc["metadata"].get("continue") or ""
            if not cont:
                return out, doc["metadata"]["resourceVersion"]

    def list_names(self, path: str, query: str = "") -> tuple[list[tuple[str, str]], str]:
        """(namespace, name) of every object at ``path`` and the list's resourceVersion."""
        metas, rv = self.list_meta(path, query)
        return [(m.get("namespace", ""), m["name"]) for m in metas], rv

    def count(self, path: str, query: str = "") -> int:
        return len(self.list_names(path, query)[0])

    def parallel(self, calls: list[tuple[str, str, Any]], workers: int = 8, ok: Iterable[int] = (200, 201)) -> None:
        """Run (method, path, body) calls on ``workers`` threads; re-raise the first failure."""
        oks = tuple(ok)
        work: queue.SimpleQueue[tuple[str, str, Any]] = queue.SimpleQueue()
        for c in calls:
            work.put(c)
        errors: list[BaseException] = []

        def run() -> None:
            while not errors:
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    self.request(item[0], item[1], item[2], ok=oks)
                except BaseException as exc:
                    errors.append(exc)

        threads = [threading.Thread(target=run, daemon=True) for _ in range(max(1, min(workers, len(calls))))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
