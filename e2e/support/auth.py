"""ServiceAccount identities for e2e processes: tokens, kubeconfigs, access reviews, and the
metrics reader bound to manifests/' ClusterRole."""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.support.apply import ensure_namespace


def ensure_service_account(core: client.CoreV1Api, namespace: str, name: str) -> None:
    ensure_namespace(core, namespace)
    try:
        core.create_namespaced_service_account(
            namespace, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise


def create_sa_token(core: client.CoreV1Api, namespace: str, name: str, expiration_seconds: int = 3600) -> str:
    """A bound token for ServiceAccount namespace/name (TokenRequest API)."""
    req = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
    )
    return core.create_namespaced_service_account_token(name, namespace, req).status.token


def write_token_kubeconfig(
    api: client.ApiClient,
    token: str,
    path: str | os.PathLike[str],
    user: str = "sa",
) -> str:
    """Write a kubeconfig that reaches *api*'s server with a bearer token.

    The CA is taken from *api*'s configuration (file or, for in-memory data,
    embedded). Returns the path.
    """
    cfg = api.configuration
    cluster: dict[str, Any] = {"server": cfg.host}
    if cfg.ssl_ca_cert:
        cluster["certificate-authority-data"] = base64.b64encode(pathlib.Path(cfg.ssl_ca_cert).read_bytes()).decode()
    elif not cfg.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "e2e", "user": user}}],
        "current-context": user,
    }
    p = pathlib.Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(kc, sort_keys=False))
    p.chmod(0o600)
    return str(p)


def write_sa_kubeconfig(
    api: client.ApiClient,
    namespace: str,
    name: str,
    path: str | os.PathLike[str],
    expiration_seconds: int = 3600,
    create: bool = True,
) -> str:
    """Kubeconfig that authenticates as system:serviceaccount:namespace:name.

    A process started with ``KUBECONFIG=path`` runs with exactly that
    ServiceAccount's RBAC, which is how the ClusterRole in manifests/ is proven.
    """
    core = client.CoreV1Api(api)
    if create:
        ensure_service_account(core, namespace, name)
    token = create_sa_token(core, namespace, name, expiration_seconds)
    return write_token_kubeconfig(api, token, path, user=f"{namespace}-{name}")


def can_i(
    api: client.ApiClient,
    verb: str,
    resource: str,
    group: str = "",
    namespace: str | None = None,
    subresource: str | None = None,
    name: str | None = None,
) -> bool:
    """SelfSubjectAccessReview for the identity of *api*."""
    body = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb,
                resource=resource,
                group=group,
                namespace=namespace,
                subresource=subresource,
                name=name,
            )
        )
    )
    return bool(client.AuthorizationV1Api(api).create_self_subject_access_review(body).status.allowed)

def metrics_reader_token(api: client.ApiClient, namespace: str, name: str = "metrics-reader") -> str:
    """A token for a ServiceAccount bound to ClusterRole pyscheduler-metrics-reader (manifests/)."""
    core = client.CoreV1Api(api)
    ensure_service_account(core, namespace, name)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"pyscheduler-metrics-reader-{namespace}-{name}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "pyscheduler-metrics-reader",
        },
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    try:
        client.RbacAuthorizationV1Api(api).create_cluster_role_binding(binding)
    except ApiException as exc:
        if exc.status != 409:
            raise
    return create_sa_token(core, namespace, name)


@contextlib.contextmanager
def path_reader_token(api: client.ApiClient, name: str, paths: list[str], verbs: tuple[str, ...] = ("get",),
                      namespace: str = "default") -> Iterator[str]:
    """A token for ServiceAccount namespace/name allowed ``verbs`` on the nonResourceURLs
    ``paths`` and nothing else (a ClusterRole and its binding of the same name, removed after)."""
    core = client.CoreV1Api(api)
    rbac = client.RbacAuthorizationV1Api(api)
    ensure_service_account(core, namespace, name)
    rbac.create_cluster_role({"metadata": {"name": name},
                              "rules": [{"nonResourceURLs": list(paths), "verbs": list(verbs)}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    })
    try:
        yield create_sa_token(core, namespace, name)
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            with contextlib.suppress(ApiException):
                delete(name)
        with contextlib.suppress(ApiException):
            core.delete_namespaced_service_account(name, namespace)
