"""Namespaces, server-side apply of YAML manifests, and cleanup of what tests leave behind."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from e2e.support.waits import wait_for

FIELD_MANAGER = "pyscheduler-e2e"


def ensure_namespace(
    core: client.CoreV1Api,
    name: str,
    labels: Mapping[str, str] | None = None,
    wait_default_sa: bool = True,
    timeout: float = 30.0,
) -> None:
    """Create namespace *name* unless it exists.

    With *wait_default_sa*, also wait for its "default" ServiceAccount: the
    ServiceAccount controller adds it shortly after the namespace appears, and
    ServiceAccount admission rejects pods until then.
    """
    try:
        core.create_namespace(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    if wait_default_sa:
        wait_for(
            lambda: core.read_namespaced_service_account("default", name),
            timeout=timeout,
            desc=f"ServiceAccount {name}/default",
        )


def delete_workloads(api: client.ApiClient, namespace: str) -> None:
    """Delete the Deployments, StatefulSets, ReplicaSets and ReplicationControllers of *namespace*,
    so that their controllers stop replacing pods (the garbage collector removes their pods)."""
    apps = client.AppsV1Api(api)
    apps.delete_collection_namespaced_deployment(namespace)
    apps.delete_collection_namespaced_stateful_set(namespace)
    apps.delete_collection_namespaced_replica_set(namespace)
    client.CoreV1Api(api).delete_collection_namespaced_replication_controller(namespace)


def delete_all_pods(core: client.CoreV1Api, namespace: str, wait: bool = True, timeout: float = 60.0) -> None:
    """Delete every pod of *namespace* (bare pods; a controller would recreate its own).

    Bound pods get a deletionTimestamp; kwok's pod-delete stage finishes them.
    """
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    if wait:
        wait_for(
            lambda: not core.list_namespaced_pod(namespace).items,
            timeout=timeout,
            desc=f"all pods in {namespace} deleted",
        )


def iter_yaml_documents(path: str | os.PathLike[str], recursive: bool = False) -> Iterator[dict[str, Any]]:
    """Kubernetes objects in a YAML file, or in the *.yaml/*.yml files of a
    directory (sorted; subdirectories only if *recursive*). Empty documents
    and kustomize files (kustomization.yaml, kind Kustomization/Component)
    are skipped; ``kind: List`` is flattened."""
    p = pathlib.Path(path)
    if p.is_dir():
        pattern = "**/*" if recursive else "*"
        files = sorted(f for f in p.glob(pattern) if f.suffix in {".yaml", ".yml"} and f.is_file())
    else:
        files = [p]
    for f in files:
        if f.name in {"kustomization.yaml", "kustomization.yml"}:
            continue
        with f.open() as fh:
            for doc in yaml.safe_load_all(fh):
                if not doc:
                    continue
                if str(doc.get("apiVersion", "")).startswith("kustomize.config.k8s.io"):
                    continue
                if doc.get("kind") == "List":
                    yield from (i for i in doc.get("items") or [] if i)
                else:
                    yield doc


# Namespaces and cluster-scoped RBAC first, workloads last.
_KIND_ORDER = [
    "CustomResourceDefinition",
    "Namespace",
    "PriorityClass",
    "StorageClass",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
]


def _kind_rank(doc: Mapping[str, Any]) -> int:
    kind = doc.get("kind", "")
    return _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)


def apply_objects(
    api: client.ApiClient,
    docs: Iterable[Mapping[str, Any]],
    dry_run: bool = False,
    namespace: str | None = None,
    field_manager: str = FIELD_MANAGER,
    skip_kinds: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Server-side apply each object (force conflicts). ``dry_run`` sends
    ``dryRun=All``. Namespaced objects without a namespace get *namespace*
    (default "default"). Returns the API server's answers as dicts."""
    dyn = DynamicClient(api)
    skip = set(skip_kinds)
    results = []
    for doc in sorted((d for d in docs if d.get("kind") not in skip), key=_kind_rank):
        resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        ns = None
        if resource.namespaced:
            ns = doc.get("metadata", {}).get("namespace") or namespace or "default"
        kwargs: dict[str, Any] = {"field_manager": field_manager, "force_conflicts": True}
        if dry_run:
            kwargs["dry_run"] = "All"
        out = dyn.server_side_apply(resource, body=dict(doc), namespace=ns, **kwargs)
        results.append(out.to_dict())
    return results


def apply_yaml(
    api: client.ApiClient,
    path: str | os.PathLike[str],
    dry_run: bool = False,
    namespace: str | None = None,
    recursive: bool = False,
    field_manager: str = FIELD_MANAGER,
    skip_kinds: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Server-side apply all YAML documents of a file or directory."""
    return apply_objects(
        api,
        list(iter_yaml_documents(path, recursive=recursive)),
        dry_run=dry_run,
        namespace=namespace,
        field_manager=field_manager,
        skip_kinds=skip_kinds,
    )
