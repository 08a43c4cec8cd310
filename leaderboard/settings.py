"""Settings for the IWR-Bench leaderboard, read from the environment.

Defaults are the embedded single-machine deployment: SQLite, local file storage and a
Celery broker on the local filesystem. ``DATABASE_URL`` switches to PostgreSQL and
``CELERY_BROKER_URL`` to Redis or RabbitMQ. Every variable is parsed strictly (see
``leaderboard/env.py``); a bad value stops start-up with a message naming it.

``IWR_ENV`` is ``production`` (the default), ``development`` or ``test``. Only outside
production does a missing ``DJANGO_SECRET_KEY`` fall back to a generated key kept in the
data directory, and only in development is ``DEBUG`` on by default.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from leaderboard import env

BASE_DIR = Path(__file__).resolve().parent.parent

IWR_ENV = env.get_choice("IWR_ENV", "production", ("production", "development", "test"))
DATA_DIR = Path(env.get_str("IWR_DATA_DIR", str(BASE_DIR / "var"))).resolve()


def _secret_key() -> str:
    key = env.get_str("DJANGO_SECRET_KEY")
    if key:
        if IWR_ENV == "production" and len(key) < 32:
            raise ImproperlyConfigured("DJANGO_SECRET_KEY is too short: use at least 32 random characters.")
        return key
    if IWR_ENV == "production":
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it to a long random string, or set IWR_ENV=development "
            "to use a generated key kept in the data directory."
        )
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env.get_bool("DJANGO_DEBUG", IWR_ENV == "development")
if DEBUG and IWR_ENV == "production":
    raise ImproperlyConfigured("DJANGO_DEBUG=1 is refused with IWR_ENV=production.")
ALLOWED_HOSTS = env.get_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.get_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env.get_str("IWR_SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.context_processors.site",
            ],
        },
    },
]

_database_url = env.get_str("DATABASE_URL")
if _database_url:
    DATABASES = {"default": env.parse_database_url("DATABASE_URL", _database_url)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.get_str("IWR_STATIC_ROOT", str(DATA_DIR / "staticfiles")))
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env.get_str("IWR_MEDIA_ROOT", str(DATA_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and IWR_ENV != "test"
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Celery: a real worker on an embedded filesystem transport by default.
BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = env.check_broker_url("CELERY_BROKER_URL", env.get_str("CELERY_BROKER_URL", "filesystem://"))
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem://")
    else {"visibility_timeout": env.get_int("CELERY_VISIBILITY_TIMEOUT", 7200, minimum=60)}
)
CELERY_RESULT_BACKEND = env.get_str("CELERY_RESULT_BACKEND", (DATA_DIR / "celery-results").as_uri())
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "default"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.get_str("IWR_API_ANON_RATE", "120/minute"),
        "user": env.get_str("IWR_API_USER_RATE", "600/minute"),
    },
}

EMAIL_BACKEND = env.get_choice(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend",
    (
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.smtp.EmailBackend",
        "django.core.mail.backends.locmem.EmailBackend",
    ),
)
EMAIL_HOST = env.get_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env.get_int("DJANGO_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env.get_str("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env.get_str("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.get_bool("DJANGO_EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env.get_str("DJANGO_DEFAULT_FROM_EMAIL", "IWR-Bench leaderboard <noreply@localhost>")

SESSION_COOKIE_SECURE = env.get_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {
        "handlers": ["console"],
        "level": env.get_choice("IWR_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR")),
    },
}

# Where the product keeps task files (ground truth included: never served directly),
# evaluation artifacts (screenshots, replays; served through access-checked views) and
# job directories handed to the evaluator.
TASKS_ROOT = Path(env.get_str("IWR_TASKS_ROOT", str(DATA_DIR / "tasks")))
ARTIFACTS_ROOT = Path(env.get_str("IWR_ARTIFACTS_ROOT", str(DATA_DIR / "artifacts")))
JOBS_ROOT = Path(env.get_str("IWR_JOBS_ROOT", str(DATA_DIR / "jobs")))
SAMPLE_BENCHMARK_DIR = Path(env.get_str("IWR_SAMPLE_BENCHMARK", str(BASE_DIR / "var" / "benchmark")))
