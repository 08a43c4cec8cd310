"""Sending mail without holding up a scoring worker.

Over SMTP (``DJANGO_EMAIL_BACKEND=...smtp.EmailBackend``, with ``EMAIL_TIMEOUT``) a mail is handed to
the ``default`` queue and sent by whichever worker consumes it, so a slow or unreachable mail server
never delays the job that finished; if the broker refuses the message it is sent here after all.
The console and in-memory backends cannot block and send at once.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail

log = logging.getLogger(__name__)
NETWORK_BACKENDS = ("django.core.mail.backends.smtp.EmailBackend",)


@shared_task(name="leaderboard.send_mail", queue="default", time_limit=120, autoretry_for=(OSError,),
             retry_backoff=30, max_retries=5)
def deliver(subject: str, body: str, to: list[str]) -> int:
    return send_mail(subject, body, None, to)


def send_later(subject: str, body: str, to: list[str]) -> bool:
    """Send now (local backends) or queue the mail (SMTP); True when it was sent or queued."""
    if settings.EMAIL_BACKEND not in NETWORK_BACKENDS:
        return bool(deliver(subject, body, to))
    try:
        deliver.apply_async(args=[subject, body, to], retry=False)
    except Exception:  # noqa: BLE001 - no broker: send it from here, bounded by EMAIL_TIMEOUT
        log.warning("mail queue unavailable; sending %r directly", subject)
        return bool(deliver(subject, body, to))
    return True
