"""The scheduler's per-pod writes as the API server reads them: the Binding and the Event go in
protobuf (scheduler/live/kube/wire.py) and must come back, read as JSON, as the dicts the JSON
path would have sent; an error's protobuf Status must give its message."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from e2e.support.objects import create_pod
from scheduler.live.kube import wire
from scheduler.live.kube.binder import binding_body
from scheduler.live.kube.recorder import Recorder
from scheduler.live.kube.transport import ApiError, KubeCoreAPI, Lane, TokenBucket, micro_time
from scheduler.model.pod import PodInfo


def test_binding_and_event_in_protobuf(
    api_client: client.ApiClient, core_v1: client.CoreV1Api, kwok, node_factory, namespace: str
) -> None:
    (node,) = node_factory(1, wait_ready=True)
    created = create_pod(core_v1, namespace, name="wire", scheduler_name="no-such-scheduler")
    pod = PodInfo(api_client.sanitize_for_serialization(created))
    api = KubeCoreAPI(api_client)

    binding = binding_body(pod, node)
    assert wire.encode(binding) is not None  # else this would test the JSON path
    api.create_binding(namespace, "wire", binding)
    assert core_v1.read_namespaced_pod("wire", namespace).spec.node_name == node
    assert not api._json_only

    # The second Binding: kube-apiserver's 409, its message read from the protobuf Status.
    with pytest.raises(ApiError) as info:
        api.create_binding(namespace, "wire", binding)
    assert info.value.status == 409
    assert info.value.message == (
        f'Operation cannot be fulfilled on pods/binding "wire": pod wire is already assigned to node "{node}"'
    )
    with pytest.raises(ApiError) as info:
        api.create_binding(namespace, "missing", {**binding, "metadata": {"name": "missing", "namespace": namespace}})
    assert (info.value.status, info.value.message) == (404, 'pods "missing" not found')

    recorder = Recorder(api, Lane(TokenBucket(50, 100)), hostname="e2e")
    now = time.time()
    note = f"Successfully assigned {namespace}/wire to {node}"
    event = recorder._event_body(pod, "default-scheduler", "Normal", "Scheduled", "Binding", note, now)
    # The series a repeated Event is created again with (recorder._write_series).
    event["series"] = {"count": 2, "lastObservedTime": micro_time(now + 1.25)}
    assert wire.encode(event) is not None
    api.create_event(namespace, event)
    name = event["metadata"]["name"]
    stored = json.loads(api.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}"))
    for key, value in event.items():
        if key == "metadata":
            assert {k: stored["metadata"].get(k) for k in value} == value
        else:
            assert stored.get(key) == value, key
    assert not api._json_only
