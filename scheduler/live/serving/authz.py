"""Delegated authorization of the serving endpoints (k8s.io/apiserver's
DelegatingAuthorizationOptions defaults, as kube-scheduler v1.36.3 configures them).

Allowed at once: the ``system:masters`` group, and the paths /healthz, /readyz, /livez (exact
matches; a trailing ``*`` in --authorization-always-allow-paths makes a prefix). Otherwise a
SubjectAccessReview with nonResourceAttributes {path, verb: lowercase HTTP method}; allowed
answers cached 10 s, denied ones 10 s, errors not cached. Not allowed answers 403 (a Status
naming user, verb and path); a review that failed answers 500. Without a kubeconfig for reviews,
everything outside the allowed paths/groups is 403.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.live.serving.authn import ReviewCall, ReviewError, TTLCache, UserInfo, call_with_backoff
from scheduler.live.serving.options import (
    DEFAULT_ALWAYS_ALLOW_GROUPS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DEFAULT_CACHE_TTL,
    parse_allow_paths,
)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""
    error: str = ""  # set: the review failed (500 unless something else allowed)
    denied: bool = False  # the review said denied (else not allowed is "no opinion")

    @property
    def result(self) -> str:
        """authorization_attempts_total's result (upstream recordAuthorizationMetrics)."""
        if self.allowed:
            return "allowed"
        if self.error:
            return "error"
        return "denied" if self.denied else "no-opinion"


class PathAuthorizer:
    """Paths allowed for anyone: exact, or prefixes written with a trailing '*' (leading '/' optional)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.exact, self.prefixes = parse_allow_paths(paths)

    def allows(self, path: str) -> bool:
        p = path.removeprefix("/")
        return p in self.exact or any(p.startswith(pre) for pre in self.prefixes)


class DelegatingAuthorizer:
    """Privileged groups, then always-allowed paths, then a (cached) SubjectAccessReview."""

    def __init__(
        self,
        review: ReviewCall | None,
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        always_allow_groups: Sequence[str] = DEFAULT_ALWAYS_ALLOW_GROUPS,
        authorized_ttl: float = DEFAULT_CACHE_TTL,
        unauthorized_ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.review = review
        self.paths = PathAuthorizer(always_allow_paths)
        self.groups = frozenset(always_allow_groups)
        self.authorized_ttl = authorized_ttl
        self.unauthorized_ttl = unauthorized_ttl
        self.cache = TTLCache(clock)
        self._sleep = sleep

    async def authorize(self, user: UserInfo, path: str, verb: str) -> Decision:
        if self.groups.intersection(user.groups):
            return Decision(True)
        if self.paths.allows(path):
            return Decision(True)
        if self.review is None:
            return Decision(False)
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        spec["nonResourceAttributes"] = {"path": path, "verb": verb}
        key = json.dumps(spec, sort_keys=True)
        hit, status = self.cache.get(key)
        if not hit:
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
            try:
                answer = await call_with_backoff(self.review, body, self._sleep)
            except ReviewError as exc:
                return Decision(False, "", f"subject access review failed: {exc}")
            status = answer.get("status") or {}
            allowed = bool(status.get("allowed"))
            self.cache.put(key, status, self.authorized_ttl if allowed else self.unauthorized_ttl)
        reason = str(status.get("reason") or "")
        if status.get("denied") and status.get("allowed"):
            return Decision(False, reason, "webhook subject access review returned both allow and deny response")
        return Decision(bool(status.get("allowed")) and not status.get("denied"), reason,
                        denied=bool(status.get("denied")))
