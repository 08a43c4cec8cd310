"""Settings of accounts and the web tier, read from the environment (imported by settings.py).

- Accounts are django-allauth's: sign-up with a unique e-mail address that must be verified before
  its owner can submit or get an API token (:mod:`leaderboard.accounts`), password reset, e-mail
  change, allauth's rate limits on login, sign-up and reset; GitHub and Hugging Face sign-in only
  when an operator gives their OAuth client credentials.
- Behind a TLS-terminating proxy (``IWR_BEHIND_TLS_PROXY=1``, as in docker/compose.yaml): secure
  cookies, HSTS, the redirect to https and ``SECURE_PROXY_SSL_HEADER``; the proxy count that tells
  throttles the client's real address (``IWR_TRUSTED_PROXIES``).
- Content-Security-Policy and the other headers of :mod:`leaderboard.security`; files sent by the
  proxy (``X-Accel-Redirect``) after Django's access check (:mod:`leaderboard.serving`).
- Logs with time, level and logger; sentry-sdk only when ``IWR_SENTRY_DSN`` is set.
"""

from __future__ import annotations

from leaderboard import env

_IWR_ENV = env.get_choice("IWR_ENV", "production", ("production", "development", "test"))

# ---------------------------------------------------------------------------------------- accounts
ACCOUNT_APPS = ["allauth", "allauth.account", "allauth.socialaccount"]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# Logging in does not need a verified address; submitting and API tokens do (leaderboard/accounts.py),
# so a new user can look around, and an existing one whose address is not verified can still sign in.
ACCOUNT_EMAIL_VERIFICATION = "optional"
ACCOUNT_CONFIRM_EMAIL_ON_GET = False  # a link scanner opening the mail must not confirm it
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_CHANGE_EMAIL = True  # one address per account; a new one replaces the old once verified
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[IWR-Bench] "
ACCOUNT_ADAPTER = "leaderboard.accounts.AccountAdapter"  # its mails are queued like every other (leaderboard/mail.py)
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
# allauth's rate limits (cache-backed, keyed on the client address behind the proxy, the account
# or the address typed): failed logins, logins, sign-ups, password-reset mails.
ACCOUNT_RATE_LIMITS = {
    "login_failed": env.get_str("IWR_RATE_LOGIN_FAILED", "10/m/ip,5/5m/key"),
    "login": env.get_str("IWR_RATE_LOGIN", "30/m/ip"),
    "signup": env.get_str("IWR_RATE_SIGNUP", "10/h/ip"),
    "reset_password": env.get_str("IWR_RATE_PASSWORD_RESET", "10/h/ip,3/h/key"),
}
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # a provider's address never takes over an existing account
SOCIALACCOUNT_QUERY_EMAIL = True
SOCIALACCOUNT_PROVIDERS: dict = {}
_github_id, _github_secret = env.get_str("IWR_GITHUB_CLIENT_ID", ""), env.get_str("IWR_GITHUB_SECRET", "")
if _github_id and _github_secret:
    ACCOUNT_APPS.append("allauth.socialaccount.providers.github")
    SOCIALACCOUNT_PROVIDERS["github"] = {"SCOPE": ["user:email"],
                                         "APPS": [{"client_id": _github_id, "secret": _github_secret}]}
_hf_id, _hf_secret = env.get_str("IWR_HUGGINGFACE_CLIENT_ID", ""), env.get_str("IWR_HUGGINGFACE_SECRET", "")
if _hf_id and _hf_secret:  # Hugging Face signs in with OpenID Connect
    ACCOUNT_APPS.append("allauth.socialaccount.providers.openid_connect")
    SOCIALACCOUNT_PROVIDERS["openid_connect"] = {"SCOPE": ["openid", "profile", "email"], "APPS": [{
        "provider_id": "huggingface", "name": "Hugging Face", "client_id": _hf_id, "secret": _hf_secret,
        "settings": {"server_url": "https://huggingface.co"}}]}

# Mail: the console by default (a mail is printed in the web log), SMTP by settings. SMTP waits at
# most this long per step; over SMTP every mail (account mails too) is queued on `housekeeping` and sent
# by its own worker (leaderboard/mail.py): no request and no scoring worker waits for a mail server.
EMAIL_TIMEOUT = env.get_int("DJANGO_EMAIL_TIMEOUT", 10, minimum=1)

# ---------------------------------------------------------------------------------------- held-out split
# Per-task scores and pass/fail of held-out (test-split) tasks: staff only unless opened here
# (leaderboard/heldout.py). Opening them lets a few submissions a day steer towards the hidden tasks.
HELDOUT_TASK_RESULTS_PUBLIC = env.get_bool("IWR_HELDOUT_TASK_RESULTS", False)
# Fewest held-out tasks a published per-category score may average over (leaderboard/heldout.py):
# smaller categories are pooled into "other". A category of one task would publish that task's score;
# with two, a submitter who knows one of them (a page left out scores 0) learns the other. 1 turns it off.
HELDOUT_MIN_CATEGORY_TASKS = env.get_int("IWR_HELDOUT_MIN_CATEGORY_TASKS", 3, minimum=1)

# ---------------------------------------------------------------------------------------- TLS proxy
BEHIND_TLS_PROXY = env.get_bool("IWR_BEHIND_TLS_PROXY", False)
# Proxies in front of the site that append to X-Forwarded-For (1 with docker/compose.yaml's): throttles
# and allauth's rate limits then key on the address the last trusted proxy saw, not on the proxy.
TRUSTED_PROXIES = env.get_int("IWR_TRUSTED_PROXIES", 1 if BEHIND_TLS_PROXY else 0, minimum=0)
ALLAUTH_TRUSTED_PROXY_COUNT = TRUSTED_PROXIES
SESSION_COOKIE_SECURE = env.get_bool("DJANGO_SECURE_COOKIES", BEHIND_TLS_PROXY)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True  # pages post the token from their form, never read the cookie
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SECURE_SSL_REDIRECT = BEHIND_TLS_PROXY
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container health check asks over plain http inside
SECURE_HSTS_SECONDS = env.get_int("IWR_HSTS_SECONDS", 31536000 if BEHIND_TLS_PROXY else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.get_bool("IWR_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env.get_bool("IWR_HSTS_PRELOAD", False)
# Joining the browsers' HSTS preload list is an operator's one-way decision (IWR_HSTS_PRELOAD=1), not a default:
# `check --deploy` stays quiet about it until then.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if BEHIND_TLS_PROXY else "http"

# ---------------------------------------------------------------------------------------- files
# "x-accel": the proxy sends artifacts, task files and zips after the view's access check
# (X-Accel-Redirect to an internal location, docker/nginx.conf); "django": streamed by Django,
# with byte ranges (the embedded default, no proxy).
FILE_SERVING = env.get_choice("IWR_FILE_SERVING", "x-accel" if BEHIND_TLS_PROXY else "django",
                              ("django", "x-accel"))
# Internal URL prefix of the proxy per served root: /protected/<root name>/<path below it>.
FILE_SERVING_PREFIX = env.get_str("IWR_FILE_SERVING_PREFIX", "/protected")

# ---------------------------------------------------------------------------------------- throttles
# Per client address (behind the proxy: the real one) for the heavier public pages.
WEB_THROTTLE_RATES = {
    "exports": env.get_str("IWR_RATE_EXPORTS", "30/minute"),
    "charts": env.get_str("IWR_RATE_CHARTS", "120/minute"),
}

# ---------------------------------------------------------------------------------------- logs
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SENTRY_DSN = env.get_str("IWR_SENTRY_DSN", "")
SENTRY_TRACES_SAMPLE_RATE = 0.0


def init_sentry(dsn: str, environment: str) -> bool:
    """Report unhandled errors to the error tracker at ``dsn``; nothing when it is empty."""
    if not dsn:
        return False
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(dsn=dsn, environment=environment, send_default_pii=False,
                    integrations=[DjangoIntegration(), CeleryIntegration()], traces_sample_rate=0.0)
    return True


# Example values of docker/.env.example: refused at start in production, so a copied example file
# never runs a public site with a published secret.
EXAMPLE_SECRETS = {
    "DJANGO_SECRET_KEY": "change-me-to-50-random-characters-change-me-to-50-random",
    "POSTGRES_PASSWORD": "change-me",
}


def refuse_example_secrets(secret_key: str, databases: dict) -> None:
    """Stop start-up when a secret still has its docker/.env.example value."""
    from django.core.exceptions import ImproperlyConfigured

    found = [name for name, value in (("DJANGO_SECRET_KEY", secret_key),
                                      ("POSTGRES_PASSWORD", databases["default"].get("PASSWORD", "")))
             if value == EXAMPLE_SECRETS[name]]
    if found:
        raise ImproperlyConfigured(", ".join(found) + " still has the example value of docker/.env.example: "
                                   "set a long random value before starting the site.")
