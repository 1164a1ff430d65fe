"""Watches of the live benchmark that resume when the API server ends them early, and when each
measured pod is first seen bound (one watch of a namespace's bound pods per run)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter

import orjson

from bench.live_http import Kube


class ResumingWatch(threading.Thread):
    """A watch thread. The API server ends a watch whose reader falls behind (or at its
    timeout): ``_watch_once`` returns why, and the watch resumes from the last event seen, as a
    reflector would, a bounded number of times. No socket timeout: a watch may stay quiet for
    minutes; ``stop()`` ends it."""

    resume_limit = 20

    def __init__(self, kube: Kube, name: str | None = None) -> None:
        super().__init__(daemon=True, name=name)
        self.kube = kube
        self.ready = threading.Event()
        self.error: str | None = None
        self._conn = kube.connect(timeout=None)
        self._stopping = False

    def _begin(self) -> None:
        """Before the first watch (a list, say)."""

    def _finished(self) -> bool:
        return False

    def _ended(self) -> None:
        """After the last watch, however it ended."""

    def _watch_once(self) -> str | None:
        """One WATCH. Returns why it ended when it may be resumed, else None."""
        raise NotImplementedError

    def run(self) -> None:
        try:
            self._begin()
            resumes = 0
            while not self._stopping and not self._finished():
                ended = self._watch_once()
                if ended is None or self._stopping:
                    return
                resumes += 1
                if resumes > self.resume_limit:
                    self.error = f"watch ended early {resumes} times ({ended})"
                    return
                self._conn.close()
                self._conn = self.kube.connect(timeout=None)
        except Exception as exc:
            if not self._stopping:
                self.error = f"watch failed: {exc!r}"
        finally:
            self.ready.set()
            self._ended()

    def stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            if self._conn.sock is not None:
                self._conn.sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()


class BindObserver(ResumingWatch):
    """Records when each pod of one namespace is first seen bound (a watch of bound pods only)."""

    def __init__(self, kube: Kube, namespace: str, resource_version: str, expected: int) -> None:
        super().__init__(kube)
        self.namespace, self.rv, self.expected = namespace, resource_version, expected
        self.times: dict[str, float] = {}
        self.nodes: Counter[str] = Counter()
        self.done = threading.Event()

    def _finished(self) -> bool:
        return self.done.is_set()

    def _watch_once(self) -> str | None:
        """One WATCH from self.rv. Returns why it ended when it may be resumed, else None."""
        path = (
            f"/api/v1/namespaces/{self.namespace}/pods?watch=1&resourceVersion={self.rv}"
            "&fieldSelector=spec.nodeName%21%3D&timeoutSeconds=3600&allowWatchBookmarks=true"
        )
        self._conn.request("GET", path, headers=self.kube.headers)
        resp = self._conn.getresponse()
        if resp.status != 200:
            self.error = f"watch: HTTP {resp.status} {resp.read()[:200]!r}"
            return None
        self.ready.set()
        while not self._stopping:
            line = resp.readline()
            if not line:
                return None if self.done.is_set() else "closed by the server"
            now = time.monotonic()
            ev = orjson.loads(line)
            obj = ev["object"]
            if ev.get("type") == "ERROR":
                self.error = f"watch error: {obj}"
                return None
            self.rv = obj["metadata"].get("resourceVersion") or self.rv
            if ev.get("type") == "BOOKMARK":
                continue
            name = obj["metadata"]["name"]
            node = obj.get("spec", {}).get("nodeName")
            if node and name not in self.times:
                self.times[name] = now
                self.nodes[node] += 1
                if len(self.times) >= self.expected:
                    self.done.set()
        return None
