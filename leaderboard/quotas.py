"""Daily submission quotas per user and split.

A submission is *charged* when it is accepted. It is refunded (``charged=False``) when it
is cancelled while still queued, or when its evaluation fails for a reason that is not
the submitter's (worker died, evaluator fault). Days are UTC calendar days, so everyone
sees the same reset time.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.models import Submission
from leaderboard.models.tasks import Split

COUNTED_KINDS = (Submission.Kind.BUNDLE, Submission.Kind.ENDPOINT)


class QuotaExceeded(Exception):
    """The user has no submission left for this split today; the message says when it resets.

    ``status`` is the :class:`QuotaStatus` that refused it (``retry_after`` comes from it)."""

    def __init__(self, message: str, status: QuotaStatus | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class QuotaStatus:
    split: str
    limit: int
    used: int
    resets_at: dt.datetime

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def as_dict(self) -> dict:
        return {"split": self.split, "limit": self.limit, "used": self.used, "remaining": self.remaining,
                "resets_at": self.resets_at.isoformat()}

    def retry_after(self, now: dt.datetime | None = None) -> int | None:
        """Whole seconds until the quota resets (UTC midnight), or None when the split is closed
        (no reset would help)."""
        if self.limit <= 0:
            return None
        seconds = (self.resets_at - (now or timezone.now())).total_seconds()
        return max(1, int(seconds + 0.999))


def daily_limit(split: str) -> int:
    return int(settings.SUBMISSION_QUOTAS.get(split, 0))


def day_bounds(now: dt.datetime | None = None) -> tuple[dt.datetime, dt.datetime]:
    """Start and end of the current UTC day."""
    now = (now or timezone.now()).astimezone(dt.UTC)
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(days=1)


def used_today(user, split: str, now: dt.datetime | None = None) -> int:
    start, end = day_bounds(now)
    return Submission.objects.filter(
        owner=user, split=split, kind__in=COUNTED_KINDS, charged=True, created_at__gte=start, created_at__lt=end
    ).count()


def status(user, split: str, now: dt.datetime | None = None) -> QuotaStatus:
    _, end = day_bounds(now)
    return QuotaStatus(split=split, limit=daily_limit(split), used=used_today(user, split, now), resets_at=end)


def all_statuses(user, now: dt.datetime | None = None) -> list[QuotaStatus]:
    return [status(user, split, now) for split in Split.values]


def charge(user, split: str) -> None:
    """Check that ``user`` may submit to ``split`` now; call inside the transaction that creates
    the submission. The user's row is locked first so two simultaneous uploads cannot both
    take the last slot (SQLite serialises writers anyway)."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    current = status(user, split)
    if current.remaining <= 0:
        raise QuotaExceeded(exceeded_message(current), current)


def refusal(user, split: str) -> QuotaStatus | None:
    """The quota status refusing a submission to ``split`` now, or None when one is left."""
    current = status(user, split)
    return current if current.remaining <= 0 else None


def exceeded_message(current: QuotaStatus) -> str:
    if current.limit == 0:
        return f"Submissions to the {current.split} split are closed."
    return (f"You have used all {current.limit} submissions to the {current.split} split for today "
            f"(the quota resets at {current.resets_at:%H:%M} UTC).")


def refund(submission: Submission) -> bool:
    """Give the submission's slot back; returns False when it was already refunded."""
    return bool(Submission.objects.filter(pk=submission.pk, charged=True).update(charged=False))
