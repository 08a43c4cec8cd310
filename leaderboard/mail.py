"""Sending mail without holding up a request or a scoring worker.

Over SMTP (``DJANGO_EMAIL_BACKEND=...smtp.EmailBackend``, every connection bounded by ``EMAIL_TIMEOUT``)
a mail is handed to the ``housekeeping`` queue and sent by its own small worker (docker/compose.yaml's
``housekeeper``, scripts/run.sh's second worker), never by one that scores or generates: a slow or
unreachable mail server delays neither the job that finished nor the sign-up that asked for a
verification mail. If the broker refuses the message it is sent where it was asked for after all,
still bounded by ``EMAIL_TIMEOUT``. The console and in-memory backends cannot block and send at once.
Every mail of the site goes through here: the scoring notifications (:mod:`leaderboard.notifications`)
and allauth's account mails (verification, password reset, e-mail change: :mod:`leaderboard.accounts`).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives

log = logging.getLogger(__name__)
NETWORK_BACKENDS = ("django.core.mail.backends.smtp.EmailBackend",)
QUEUE = "housekeeping"  # short tasks on a worker of their own (leaderboard/settings.py, CELERY_TASK_ROUTES)


@shared_task(name="leaderboard.send_mail", queue=QUEUE, autoretry_for=(OSError,), retry_backoff=30, max_retries=5)
def deliver(subject: str, body: str, to: list[str], html: str | None = None, from_email: str | None = None,
            headers: dict | None = None) -> int:
    message = EmailMultiAlternatives(subject, body, from_email, to, headers=headers or None)
    if html:
        message.attach_alternative(html, "text/html")
    return message.send()


def time_limit() -> int:
    """Seconds a queued mail may take: connecting, TLS, sending and closing, each bounded by EMAIL_TIMEOUT."""
    return 4 * settings.EMAIL_TIMEOUT + 10


def send_later(subject: str, body: str, to: list[str], html: str | None = None, from_email: str | None = None,
               headers: dict | None = None) -> bool:
    """Send now (local backends) or queue the mail (SMTP); True when it was sent or queued."""
    if settings.EMAIL_BACKEND not in NETWORK_BACKENDS:
        return bool(deliver(subject, body, to, html, from_email, headers))
    try:
        deliver.apply_async(args=[subject, body, to, html, from_email, headers], retry=False, queue=QUEUE,
                            time_limit=time_limit())
    except Exception:  # noqa: BLE001 - no broker: send it from here, bounded by EMAIL_TIMEOUT
        log.warning("mail queue unavailable; sending %r directly", subject)
    else:
        return True
    try:
        return bool(deliver(subject, body, to, html, from_email, headers))
    except OSError:  # neither broker nor mail server (SMTPException is an OSError): logged, the request goes on
        log.exception("could not send %r to %s", subject, ", ".join(to))
        return False


def send_message(message: EmailMessage) -> bool:
    """:func:`send_later` for a message built elsewhere (allauth's): subject, text, HTML part, sender, headers."""
    html = next((content for content, mimetype in getattr(message, "alternatives", []) if mimetype == "text/html"),
                None)
    if message.content_subtype == "html":  # an HTML-only message
        html, body = message.body, ""
    else:
        body = message.body
    return send_later(message.subject, body, list(message.to), html, message.from_email,
                      dict(message.extra_headers) or None)
