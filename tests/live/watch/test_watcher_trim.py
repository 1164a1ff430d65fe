"""The watcher drops metadata.managedFields before anything keeps a raw body, as
kube-scheduler's pod informer transform does (pkg/scheduler/scheduler.go newPodInformer)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.live.watch.watcher import Watcher


class Recorder:
    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []

    def on_pod(self, etype: str | None, raw: dict[str, Any]) -> None:
        self.got.append(("Pod", raw))

    def on_node(self, etype: str | None, raw: dict[str, Any]) -> None:
        self.got.append(("Node", raw))

    def on_namespace(self, etype: str | None, raw: dict[str, Any]) -> None:
        self.got.append(("Namespace", raw))

    def on_owner(self, kind: str, etype: str | None, raw: dict[str, Any]) -> None:
        self.got.append((kind, raw))


@pytest.mark.parametrize("kind", ["Pod", "Node", "Namespace", "ReplicaSet"])
def test_managed_fields_are_dropped(kind: str) -> None:
    rec = Recorder()
    w = Watcher(rec, lambda: None)  # type: ignore[arg-type,return-value]
    body = {
        "metadata": {
            "name": "x", "uid": "u1", "labels": {"a": "b"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"k": 1},
    }
    w.dispatch(kind, "ADDED", body)
    (got_kind, raw), = rec.got
    assert got_kind == kind
    assert raw["metadata"] == {"name": "x", "uid": "u1", "labels": {"a": "b"}}
    assert raw["spec"] == {"k": 1}


def test_body_without_managed_fields_is_untouched() -> None:
    rec = Recorder()
    w = Watcher(rec, lambda: None)  # type: ignore[arg-type,return-value]
    meta = {"name": "x", "uid": "u2"}
    w.dispatch("Pod", "ADDED", {"metadata": meta})
    assert rec.got[0][1]["metadata"] is meta
