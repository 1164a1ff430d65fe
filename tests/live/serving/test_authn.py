"""Delegated authentication as k8s.io/apiserver does it for kube-scheduler v1.36.3, with fake
TokenReviews.

Upstream references: apiserver pkg/authentication/request/bearertoken (bearertoken_test.go
header cases), authenticatorfactory/delegating.go (anonymous after a failing token is 401),
group/authenticated_group_adder.go, plugin/pkg/authenticator/token/webhook (retries).
"""

from __future__ import annotations

import pytest

from scheduler.live.serving.authn import ANONYMOUS_USER, ReviewError, TokenAuthenticator, UserInfo, bearer_token
from scheduler.testing.fakes import FakeClock
from scheduler.testing.serving import NOT_AUTHENTICATED, FakeReview, authenticated, no_sleep

# ---------------------------------------------------------------------------------------------
# Bearer token extraction (bearertoken_test.go)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),  # scheme is case-insensitive
        ("  Bearer abc  ", "abc"),  # header trimmed first
        ("Bearer abc extra", "abc"),  # split in at most three parts
        ("Bearer", None),  # no token part
        ("Bearer  abc", None),  # "TestEmptyBearerToken"-style: empty token before a space
        ("Basic dXNlcjpwYXNz", None),  # another scheme: not for this authenticator
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


# ---------------------------------------------------------------------------------------------
# Authentication


async def test_no_token_is_anonymous_without_a_review() -> None:
    review = FakeReview(authenticated("x"))
    authn = TokenAuthenticator(review, sleep=no_sleep)
    for header in (None, "Basic abc", "Bearer "):
        assert (await authn.authenticate(header)).user == ANONYMOUS_USER
    assert review.calls == []


async def test_token_without_review_client_is_anonymous() -> None:
    # No --authentication-kubeconfig and not in a cluster: only the anonymous authenticator.
    assert (await TokenAuthenticator(None).authenticate("Bearer t")).user == ANONYMOUS_USER


@pytest.mark.parametrize(
    ("answer", "user"),
    [
        (
            authenticated("system:serviceaccount:ns:sa", ["system:serviceaccounts"], uid="u1"),
            UserInfo("system:serviceaccount:ns:sa", "u1", ("system:serviceaccounts", "system:authenticated")),
        ),
        # The group adder leaves users that already carry either group alone.
        (
            authenticated("alice", ["system:authenticated", "dev"]),
            UserInfo("alice", "", ("system:authenticated", "dev")),
        ),
        (authenticated("bob", ["system:unauthenticated"]), UserInfo("bob", "", ("system:unauthenticated",))),
        (authenticated("system:anonymous", []), UserInfo("system:anonymous", "", ())),
        (
            authenticated("carol", [], extra={"scopes": ["a", "b"]}),
            UserInfo("carol", "", ("system:authenticated",), (("scopes", ("a", "b")),)),
        ),
    ],
)
async def test_token_review_user(answer: dict, user: UserInfo) -> None:
    review = FakeReview(answer)
    result = await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer tok")
    assert result.user == user
    assert review.calls == [
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "tok"}}
    ]


@pytest.mark.parametrize(
    ("answer", "error", "cached"),
    [
        (NOT_AUTHENTICATED, "invalid bearer token", True),  # a plain "no" is cached (failure TTL)
        ({"status": {"authenticated": False, "error": "token expired"}}, "token expired", False),
        (ReviewError(403, "Forbidden"), "token review failed: Forbidden", False),  # errors are not cached
    ],
)
async def test_failed_token_is_401_and_caching(answer: dict | ReviewError, error: str, cached: bool) -> None:
    review = FakeReview(answer)
    authn = TokenAuthenticator(review, sleep=no_sleep)
    first = await authn.authenticate("Bearer bad")
    assert first.user is None and first.error == error
    await authn.authenticate("Bearer bad")
    assert len(review.calls) == (1 if cached else 2)


async def test_token_cache_ttl(clock: FakeClock) -> None:
    review = FakeReview(authenticated("a"))
    authn = TokenAuthenticator(review, cache_ttl=10, clock=clock, sleep=no_sleep)
    await authn.authenticate("Bearer t1")
    clock.step(9.9)
    await authn.authenticate("Bearer t1")
    assert len(review.calls) == 1
    await authn.authenticate("Bearer t2")  # another token, another review
    assert len(review.calls) == 2
    clock.step(0.2)  # t1's entry expired
    await authn.authenticate("Bearer t1")
    assert len(review.calls) == 3


async def test_review_retries_transient_errors_with_backoff() -> None:
    sleeps: list[float] = []

    async def sleep(d: float) -> None:
        sleeps.append(d)

    review = FakeReview(ReviewError(500, "boom"), ReviewError(429, "slow down"), authenticated("a"))
    result = await TokenAuthenticator(review, sleep=sleep).authenticate("Bearer t")
    assert result.user is not None and result.user.name == "a"
    assert len(review.calls) == 3
    # 0.5 s then x1.5, each with up to 20 % jitter.
    assert 0.5 <= sleeps[0] <= 0.6 and 0.75 <= sleeps[1] <= 0.9


async def test_review_gives_up_after_five_tries_and_not_on_4xx() -> None:
    review = FakeReview(ReviewError(0, "connection reset"))
    assert (await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer t")).user is None
    assert len(review.calls) == 5
    review = FakeReview(ReviewError(403, "Forbidden"))
    assert (await TokenAuthenticator(review, sleep=no_sleep).authenticate("Bearer t")).user is None
    assert len(review.calls) == 1
