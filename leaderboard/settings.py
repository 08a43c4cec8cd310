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

from leaderboard import env, websettings
from leaderboard.websettings import *  # noqa: F403 - accounts, TLS proxy, headers, file serving, logs

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
    *websettings.ACCOUNT_APPS,
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from our static files (no CDN)
    "leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "leaderboard.security.HeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # After authentication, before any view reads a body: refuses anonymous, unverified and
    # oversize uploads unread (leaderboard/uploads.py).
    "leaderboard.uploads.UploadGateMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
FILE_UPLOAD_HANDLERS = [
    "leaderboard.uploads.BundleLimitUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
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
LOGIN_URL = "account_login"
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
    "default": {"BACKEND": "leaderboard.storage.UploadStorage"},  # ground truth kept outside MEDIA_ROOT
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
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "leaderboard.api.pagination.Pages",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.get_str("IWR_API_ANON_RATE", "120/minute"),
        "user": env.get_str("IWR_API_USER_RATE", "600/minute"),
        **websettings.WEB_THROTTLE_RATES,
    },
    # Behind the proxy, throttles key on the client address it appended to X-Forwarded-For.
    "NUM_PROXIES": websettings.TRUSTED_PROXIES,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "IWR-Bench leaderboard API",
    "DESCRIPTION": ("Read-only leaderboard and task data for everyone (anonymous requests allowed, throttled); "
                    "submissions with a personal token (`Authorization: Token KEY`). Lists are paged with "
                    "`offset` and `limit`; an unknown parameter value is a 400."),
    "VERSION": "v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
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

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": websettings.LOG_FORMAT}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
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
# Stored files that are ground truth (the held-out reference baselines' bundles): never under MEDIA_ROOT.
GROUND_TRUTH_ROOT = Path(env.get_str("IWR_GROUND_TRUTH_ROOT", str(DATA_DIR / "ground-truth")))
SAMPLE_BENCHMARK_DIR = Path(env.get_str("IWR_SAMPLE_BENCHMARK", str(BASE_DIR / "var" / "benchmark")))

# ---------------------------------------------------------------------------------------
# Submissions and scoring (owner: submissions; leaderboard/intake/, quotas.py, worker/claims.py,
# worker/scoring.py, worker/evaluator_run.py, tasks.py). Every value is read from the environment.
# ---------------------------------------------------------------------------------------
# Accepted submissions per user, split and UTC day (cancelled-while-queued and failures
# that are not the submitter's fault are refunded). The held-out test split gets few.
SUBMISSION_QUOTAS = {
    "dev": env.get_int("IWR_QUOTA_DEV_PER_DAY", 20, minimum=0),
    "test": env.get_int("IWR_QUOTA_TEST_PER_DAY", 3, minimum=0),
}
# Largest bundle accepted (checked in the browser before upload and again on the server).
SUBMISSION_MAX_BUNDLE_MB = env.get_int("IWR_MAX_BUNDLE_MB", 200, minimum=1)
# Protocols offered on the Submit page and the API (the operator adds iwr-official once configured).
SUBMISSION_PROTOCOLS = env.get_list("IWR_SUBMISSION_PROTOCOLS", ["iwr-det"])
# Claimed work (an evaluation or a generation job: leaderboard/worker/claims.py) writes a
# heartbeat this often; the reaper re-queues one whose heartbeat is older than the staleness
# limit (its worker died) and re-sends the wake-up of a queued one nobody picked up within the
# dispatch limit.
CLAIM_HEARTBEAT_SECONDS = env.get_int("IWR_HEARTBEAT_SECONDS", 10, minimum=1)
CLAIM_STALE_SECONDS = env.get_int("IWR_REAPER_STALE_SECONDS", 120, minimum=2)
CLAIM_REDISPATCH_SECONDS = env.get_int("IWR_REAPER_REDISPATCH_SECONDS", 300, minimum=2)
REAPER_INTERVAL_SECONDS = env.get_int("IWR_REAPER_INTERVAL_SECONDS", 30, minimum=1)
# Claims of one piece of work before an infrastructure failure becomes final (never charged).
CLAIM_MAX_ATTEMPTS = env.get_int("IWR_EVALUATION_MAX_ATTEMPTS", 3, minimum=1)
# Wall-clock limit for scoring one submission (the evaluator also limits each action).
EVALUATION_TIME_LIMIT_SECONDS = env.get_int("IWR_EVALUATION_TIME_LIMIT", 3600, minimum=10)
# Recently started evaluations count against a user for this long when choosing whose
# evaluation runs next (fair scheduling).
EVALUATION_FAIRNESS_WINDOW_SECONDS = env.get_int("IWR_FAIRNESS_WINDOW_SECONDS", 3600, minimum=0)
# How the worker starts the evaluator (the same CLI people run; shell words, default
# "<this python> -m evaluator") and the process sandbox it is asked to use (--sandbox).
EVALUATOR_COMMAND = env.get_str("IWR_EVALUATOR_COMMAND", "")
# Sandbox: bubblewrap | none | container; empty = the evaluator's default (bubblewrap).
# Workers: parallel browser processes per job; 0 = the evaluator's default (evaluator/capacity.py: two per
# usable core, as a container's memory limit allows).
EVALUATOR_SANDBOX = env.get_choice("IWR_EVALUATOR_SANDBOX", "", ("", "bubblewrap", "none", "container"))
EVALUATOR_WORKERS = env.get_int("IWR_EVALUATOR_WORKERS", 0, minimum=0)
# Further `score` options as shell words, e.g. "--ocr-cache /srv/iwr/ocr-cache" or "--no-video".
EVALUATOR_EXTRA_ARGS = env.get_str("IWR_EVALUATOR_EXTRA_ARGS", "")
# Each scoring worker process keeps the next job's evaluator started and waiting (sandbox, imports,
# browsers), one fresh sandbox per job, never reused (leaderboard/worker/standby.py). Not with
# IWR_EVALUATOR_SANDBOX=container, nor for the LLM-judged protocols.
EVALUATOR_STANDBY = env.get_bool("IWR_EVALUATOR_STANDBY", True)
# Housekeeping runs on a queue of its own (its own small worker in docker/compose.yaml): a reaper
# behind hours of scoring or generation could never re-queue the work of a dead worker in time.
CELERY_TASK_ROUTES = {"leaderboard.reap": {"queue": "housekeeping"}}
CELERY_BEAT_SCHEDULE = {
    # A reap nobody picked up within one interval is superseded by the next: it expires, never piles up.
    "reap-evaluations": {"task": "leaderboard.reap", "schedule": float(REAPER_INTERVAL_SECONDS),
                         "options": {"queue": "housekeeping", "expires": float(REAPER_INTERVAL_SECONDS)}},
}
# Shared by the site and the workers so a worker's leaderboard-generation bump reaches every
# page cache (a per-process memory cache would not). IWR_CACHE_URL=redis://... for scale-out.
_cache_url = env.get_str("IWR_CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
    if _cache_url
    else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(DATA_DIR / "cache")}
}

# ---------------------------------------------------------------------------------------
# Leaderboard pages, exports and API (owner: leaderboard; leaderboard/ranking/).
# ---------------------------------------------------------------------------------------
# Which of a researcher's scored submissions of one model represents it on the board:
# "best" (highest Final) or "latest" (most recently scored).
LEADERBOARD_SELECTION = env.get_choice("IWR_LEADERBOARD_SELECTION", "best", ("best", "latest"))
# Rows per leaderboard page (the exports and the API always hold every row).
LEADERBOARD_PAGE_SIZE = env.get_int("IWR_LEADERBOARD_PAGE_SIZE", 50, minimum=10)
# Plotly's cartesian bundle (bar and heatmap traces, 1.5 MB instead of the full 4.8 MB) is fetched
# from npm by package name at set-up (scripts/npm-static.txt) and served as
# static/vendor/plotly/plotly-cartesian.min.js: no third-party code committed, nothing from a CDN.
PLOTLY_DIR = BASE_DIR / ".cache" / "npm" / "plotly.js-cartesian-dist-min"
STATICFILES_DIRS = [*STATICFILES_DIRS, ("vendor/plotly", PLOTLY_DIR)]
# Live previews of submitted pages (leaderboard/previews.py). Wherever they are served they run
# sandboxed in an opaque origin under a CSP without network; a deployer with a second host name
# for this site (e.g. https://preview.example.org, also in DJANGO_ALLOWED_HOSTS) names it here so
# previews come from an origin that never holds the site's cookies. Empty: this site's origin.
# Preview links are signed and expire after PREVIEW_LINK_SECONDS; bundles are unpacked once into
# PREVIEW_ROOT (safe to delete: it is rebuilt on demand).
PREVIEW_ORIGIN = env.get_pattern(
    "IWR_PREVIEW_ORIGIN", "", r"https?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?/?",
    "an origin such as https://preview.example.org").rstrip("/")
PREVIEW_LINK_SECONDS = env.get_int("IWR_PREVIEW_LINK_SECONDS", 6 * 3600, minimum=60)
PREVIEW_ROOT = Path(env.get_str("IWR_PREVIEW_ROOT", str(DATA_DIR / "previews")))

# ---------------------------------------------------------------------------------------
# Model-endpoint submissions (owner: generation; leaderboard/intake/endpoints.py, crypto.py,
# worker/generating.py). Every value is read from the environment.
# ---------------------------------------------------------------------------------------
# Secret from which the key that encrypts submitted API keys at rest is derived (HKDF);
# empty = derived from DJANGO_SECRET_KEY. Changing either makes the keys of jobs not yet
# finished unreadable (those jobs fail with a message asking to submit again).
IWR_ENCRYPTION_KEY = env.get_str("IWR_ENCRYPTION_KEY", "")
# One chat-completions request may take this long; rate limits, server errors and
# timeouts are retried this many extra times (with backoff, honouring Retry-After).
GENERATION_REQUEST_TIMEOUT_SECONDS = env.get_int("IWR_GENERATION_REQUEST_TIMEOUT", 600, minimum=5)
GENERATION_RETRIES = env.get_int("IWR_GENERATION_RETRIES", 3, minimum=0)
# Wall-clock limit for generating every page of a split (Celery's limits sit just above).
GENERATION_TIME_LIMIT_SECONDS = env.get_int("IWR_GENERATION_TIME_LIMIT", 4 * 3600, minimum=60)
# Requests one generation job keeps in flight at once.
GENERATION_CONCURRENCY = env.get_int("IWR_GENERATION_CONCURRENCY", 2, minimum=1)
# The largest answer length (max tokens) a submitter may ask for.
GENERATION_MAX_TOKENS = env.get_int("IWR_GENERATION_MAX_TOKENS", 64000, minimum=1000)
# Endpoints on loopback, private, link-local or other non-public addresses are refused:
# otherwise a stranger could make the worker post to internal services. On for
# development (a local model server); tests switch it on where they need it.
GENERATION_ALLOW_PRIVATE_ENDPOINTS = env.get_bool("IWR_GENERATION_ALLOW_PRIVATE_ENDPOINTS",
                                                  IWR_ENV == "development")

# Container sandbox (IWR_EVALUATOR_SANDBOX=container): each job runs in a fresh evaluator
# container started through this engine; limits per job (docker/README.md).
CONTAINER_ENGINE = env.get_choice("IWR_CONTAINER_ENGINE", "docker", ("docker", "podman"))
EVALUATOR_IMAGE = env.get_str("IWR_EVALUATOR_IMAGE", "iwr/evaluator:latest")
EVALUATOR_MEMORY = env.get_pattern("IWR_EVALUATOR_MEMORY", "2g", r"[1-9][0-9]*[kmg]?", "a size such as 2g or 1536m")
EVALUATOR_CPUS = env.get_int("IWR_EVALUATOR_CPUS", 2, minimum=1)
EVALUATOR_PIDS = env.get_int("IWR_EVALUATOR_PIDS", 512, minimum=64)

# ---------------------------------------------------------------------------------------
# Protocol iwr-official: the paper's LLM judge (leaderboard/official.py; docs/official.md). Off
# until an operator names an endpoint and a judge model. The key is never a setting: the scoring
# worker's environment holds it under IWR_OFFICIAL_JUDGE_KEY_ENV and only the evaluator's judge
# relay (outside the job sandbox or container) receives it. The visual models need the optional environment
# (scripts/setup-official.sh): IWR_OFFICIAL_EVALUATOR_COMMAND runs the evaluator from it; in container
# mode they come with IWR_OFFICIAL_EVALUATOR_IMAGE.
# ---------------------------------------------------------------------------------------
OFFICIAL_JUDGE_BASE_URL = env.get_pattern("IWR_OFFICIAL_JUDGE_BASE_URL", "", r"https?://\S+",
                                          "an OpenAI-compatible API address such as https://api.example.com/v1")
OFFICIAL_JUDGE_MODEL = env.get_str("IWR_OFFICIAL_JUDGE_MODEL", "")
OFFICIAL_GROUNDING_MODEL = env.get_str("IWR_OFFICIAL_GROUNDING_MODEL", "")  # empty: the judge model grounds too
OFFICIAL_JUDGE_KEY_ENV = env.get_pattern("IWR_OFFICIAL_JUDGE_KEY_ENV", "IWR_OFFICIAL_JUDGE_KEY",
                                         r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name")
OFFICIAL_WEIGHTS_DIR = env.get_str("IWR_OFFICIAL_WEIGHTS_DIR", "")  # DINOv2-base, checked against pinned sums
OFFICIAL_DEVICE = env.get_choice("IWR_OFFICIAL_DEVICE", "cpu", ("cpu", "cuda"))
OFFICIAL_EVALUATOR_COMMAND = env.get_str("IWR_OFFICIAL_EVALUATOR_COMMAND", "")  # empty: IWR_EVALUATOR_COMMAND's
# With IWR_EVALUATOR_SANDBOX=container: the image with the visual models (docker/Dockerfile.evaluator-official).
OFFICIAL_EVALUATOR_IMAGE = env.get_str("IWR_OFFICIAL_EVALUATOR_IMAGE", "iwr/evaluator-official:latest")
# EasyOCR and DINOv2 on CPU take seconds per checkpoint and every step waits for the judge.
OFFICIAL_TIME_LIMIT_SECONDS = env.get_int("IWR_OFFICIAL_TIME_LIMIT", 6 * 3600, minimum=60)
# Sending a split's ground truth (descriptions, assertions, reference screenshots) to a third-party
# judge discloses it: only the splits named here may be judged. The held-out split is not, unless named.
OFFICIAL_JUDGE_SPLITS = env.get_list("IWR_OFFICIAL_JUDGE_SPLITS", ["dev"])
if set(OFFICIAL_JUDGE_SPLITS) - {"dev", "test"}:
    raise ImproperlyConfigured(f"IWR_OFFICIAL_JUDGE_SPLITS={','.join(OFFICIAL_JUDGE_SPLITS)!r} is not valid: "
                               "expected a comma-separated list of dev and test.")

# ---------------------------------------------------------------------------------------
# Start-up checks of the web tier (leaderboard/websettings.py).
# ---------------------------------------------------------------------------------------
if IWR_ENV == "production":
    websettings.refuse_example_secrets(SECRET_KEY, DATABASES)
websettings.init_sentry(SENTRY_DSN, IWR_ENV)  # noqa: F405 - off unless IWR_SENTRY_DSN is set
