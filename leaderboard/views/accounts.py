"""The account page: the user's e-mail address state and API token (sign-up, login, password reset
and e-mail management are django-allauth's pages under /accounts/)."""

from allauth.account.models import EmailAddress
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.authtoken.models import Token

from leaderboard.accounts import has_verified_email, verified_email_required


@login_required
@require_http_methods(["GET"])
def account(request):
    token = Token.objects.filter(user=request.user).first()
    address = EmailAddress.objects.filter(user=request.user).order_by("-primary", "-verified").first()
    return render(request, "leaderboard/account.html", {
        "token": token, "address": address, "verified": has_verified_email(request.user)})


@verified_email_required
@require_POST
def regenerate_token(request):
    Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    messages.success(request, "A new API token was created; the old one no longer works.")
    return redirect("account")
