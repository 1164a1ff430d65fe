"""Delegated authorization as k8s.io/apiserver does it for kube-scheduler v1.36.3, with fake
SubjectAccessReviews.

Upstream references: apiserver pkg/authorization/path (path_test.go), plugin/pkg/authorizer/
webhook (webhook_test.go caching).
"""

from __future__ import annotations

import pytest

from scheduler.live.serving.authn import ANONYMOUS_USER, ReviewError, UserInfo
from scheduler.live.serving.authz import DelegatingAuthorizer, PathAuthorizer
from scheduler.live.serving.options import ServingError
from scheduler.testing.fakes import FakeClock
from scheduler.testing.serving import ALLOWED, DENIED, SA, FakeReview, no_sleep

# ---------------------------------------------------------------------------------------------
# Authorization


@pytest.mark.parametrize(
    ("path", "user", "sar", "allowed", "reviews"),
    [
        # AlwaysAllowPaths defaults are exact paths, anyone (anonymous too) may read them.
        ("/healthz", ANONYMOUS_USER, DENIED, True, 0),
        ("/readyz", ANONYMOUS_USER, DENIED, True, 0),
        ("/livez", ANONYMOUS_USER, DENIED, True, 0),
        ("healthz", ANONYMOUS_USER, DENIED, True, 0),  # leading "/" optional (path.go)
        # ...but not their subpaths: those go to a SubjectAccessReview.
        ("/healthz/ping", ANONYMOUS_USER, DENIED, False, 1),
        ("/readyz/shutdown", SA, ALLOWED, True, 1),
        ("/metrics", ANONYMOUS_USER, DENIED, False, 1),
        ("/metrics", SA, ALLOWED, True, 1),
        ("/metrics", SA, DENIED, False, 1),
        # AlwaysAllowGroups: system:masters skips the review.
        ("/metrics", UserInfo("admin", "", ("system:masters", "system:authenticated")), DENIED, True, 0),
        ("/nowhere", SA, DENIED, False, 1),
    ],
)
async def test_authorize(path: str, user: UserInfo, sar: dict, allowed: bool, reviews: int) -> None:
    review = FakeReview(sar)
    decision = await DelegatingAuthorizer(review, sleep=no_sleep).authorize(user, path, "get")
    assert decision.allowed is allowed and decision.error == ""
    assert len(review.calls) == reviews


async def test_subject_access_review_body() -> None:
    review = FakeReview(ALLOWED)
    user = UserInfo("carol", "u2", ("g1", "system:authenticated"), (("scopes", ("a",)),))
    await DelegatingAuthorizer(review, sleep=no_sleep).authorize(user, "/metrics", "get")
    assert review.calls == [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "carol",
                "groups": ["g1", "system:authenticated"],
                "uid": "u2",
                "extra": {"scopes": ["a"]},
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            },
        }
    ]


async def test_authorization_cache_ttls(clock: FakeClock) -> None:
    # webhook_test.go TestWebhookCache: allowed and denied answers have their own TTLs.
    review = FakeReview(ALLOWED)
    authz = DelegatingAuthorizer(review, authorized_ttl=10, unauthorized_ttl=2, clock=clock, sleep=no_sleep)
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    clock.step(5)
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    assert len(review.calls) == 1
    await authz.authorize(SA, "/metrics", "head")  # another verb is another question
    assert len(review.calls) == 2

    review.answers = [DENIED]
    other = UserInfo("other", "", ("system:authenticated",))
    assert not (await authz.authorize(other, "/metrics", "get")).allowed
    clock.step(1.9)
    assert not (await authz.authorize(other, "/metrics", "get")).allowed
    assert len(review.calls) == 3
    clock.step(0.2)
    await authz.authorize(other, "/metrics", "get")
    assert len(review.calls) == 4


async def test_authorization_error_is_not_cached() -> None:
    review = FakeReview(ReviewError(403, "cannot create subjectaccessreviews"), ALLOWED)
    authz = DelegatingAuthorizer(review, sleep=no_sleep)
    d = await authz.authorize(SA, "/metrics", "get")
    assert not d.allowed and d.error == "subject access review failed: cannot create subjectaccessreviews"
    assert (await authz.authorize(SA, "/metrics", "get")).allowed
    assert len(review.calls) == 2


async def test_authorization_allowed_and_denied_is_an_error() -> None:
    d = await DelegatingAuthorizer(FakeReview({"status": {"allowed": True, "denied": True}})).authorize(
        SA, "/metrics", "get"
    )
    assert not d.allowed and "both allow and deny" in d.error


async def test_no_review_client_forbids_all_but_paths_and_groups() -> None:
    authz = DelegatingAuthorizer(None)
    assert (await authz.authorize(ANONYMOUS_USER, "/healthz", "get")).allowed
    d = await authz.authorize(SA, "/metrics", "get")
    assert not d.allowed and d.error == ""


@pytest.mark.parametrize(
    ("paths", "path", "allowed"),
    [  # path_test.go
        (["/healthz/*"], "/healthz/ping", True),
        (["/healthz/*"], "/healthz/", True),
        (["/healthz/*"], "/healthz", False),
        (["/"], "/", True),
        (["/"], "/x", False),
        (["/foo*"], "/foobar", True),
        (["/metrics"], "/metrics/resources", False),
    ],
)
def test_path_authorizer(paths: list[str], path: str, allowed: bool) -> None:
    assert PathAuthorizer(paths).allows(path) is allowed


def test_path_authorizer_rejects_inner_star() -> None:
    with pytest.raises(ServingError, match=r"only trailing \* allowed"):
        PathAuthorizer(["/he*lthz"])
