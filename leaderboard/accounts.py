"""Account rules: who may submit and hold an API token.

Accounts are django-allauth's (settings in :mod:`leaderboard.websettings`). A user may submit
(browser, API, model endpoint) and create an API token only once they hold a verified e-mail
address; addresses are unique across accounts, so the daily quotas count per verified address.
A token created before verification was required keeps working for reading; submitting with it
needs the verified address too.
"""

from __future__ import annotations

from functools import wraps

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core import context as allauth_context
from django.contrib import messages
from django.contrib.sites.shortcuts import get_current_site
from django.shortcuts import redirect
from rest_framework.permissions import BasePermission

from leaderboard import mail

VERIFY_FIRST = ("Verify your e-mail address before submitting or creating an API token: open the link in the "
                "mail we sent you, or send it again from the e-mail page.")


def has_verified_email(user) -> bool:
    """Whether ``user`` holds a verified address (a signed-in user only)."""
    if not getattr(user, "is_authenticated", False):
        return False
    cached = getattr(user, "_iwr_verified_email", None)
    if cached is None:
        cached = EmailAddress.objects.filter(user=user, verified=True).exists()
        user._iwr_verified_email = cached
    return cached


def verified_email_required(view):
    """A browser view for signed-in users with a verified address; others are sent to the e-mail page."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect(f"/accounts/login/?next={request.path}")
        if not has_verified_email(request.user):
            messages.warning(request, VERIFY_FIRST)
            return redirect("account_email")
        return view(request, *args, **kwargs)

    return wrapped


class HasVerifiedEmail(BasePermission):
    """The API's rule for submitting (the ``create`` action): a user with a verified address."""

    message = VERIFY_FIRST

    def has_permission(self, request, view) -> bool:
        if getattr(view, "action", None) != "create":
            return True
        return has_verified_email(request.user)


class AccountAdapter(DefaultAccountAdapter):
    """allauth's adapter, its mails (verification, password reset, e-mail change) sent through
    :func:`leaderboard.mail.send_message`: queued over SMTP, so no sign-up waits on a mail server."""

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        request = allauth_context.request
        ctx = {"request": request, "email": email, "current_site": get_current_site(request), **context}
        mail.send_message(self.render_mail(template_prefix, email, ctx))
