"""The secure server's delegated reviews, scripted: a fake review call and the TokenReview /
SubjectAccessReview answers the serving tests give it."""

from __future__ import annotations

from typing import Any

from scheduler.live.serving.authn import ReviewError, UserInfo


class FakeReview:
    """Answers from a script: a dict is returned, a ReviewError raised; the last one repeats."""

    def __init__(self, *answers: dict[str, Any] | ReviewError) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, ReviewError):
            raise a
        return a


async def no_sleep(_: float) -> None:
    """The retry back-off's sleep, skipped."""
    return None


def authenticated(
    name: str, groups: list[str] | None = None, uid: str = "", extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A TokenReview answer: authenticated as ``name``."""
    user: dict[str, Any] = {"username": name, "groups": groups or []}
    if uid:
        user["uid"] = uid
    if extra:
        user["extra"] = extra
    return {"status": {"authenticated": True, "user": user}}


NOT_AUTHENTICATED = {"status": {"authenticated": False}}
ALLOWED = {"status": {"allowed": True}}
DENIED = {"status": {"allowed": False, "reason": ""}}

# A ServiceAccount user as a TokenReview reports it.
SA = UserInfo("system:serviceaccount:ns:sa", "u1", ("system:serviceaccounts", "system:authenticated"))
