"""Settings for the test suite: the product's settings with a throw-away data directory.

Variables are set in the environment (not only here) so that worker processes the tests
start see the same configuration.
"""

import os
import tempfile

os.environ.setdefault("IWR_ENV", "test")
os.environ.setdefault("IWR_DATA_DIR", tempfile.mkdtemp(prefix="iwr-test-data-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
# The file cache keeps throttle counters for the whole session: a busy suite must not hit 429s.
os.environ.setdefault("IWR_API_ANON_RATE", "100000/minute")
os.environ.setdefault("IWR_API_USER_RATE", "100000/minute")
# Throttles and allauth's rate limits are tested with their own low rates (test_web_tier.py, test_accounts.py).
for _name in ("IWR_RATE_EXPORTS", "IWR_RATE_CHARTS"):
    os.environ.setdefault(_name, "100000/minute")
for _name in ("IWR_RATE_LOGIN", "IWR_RATE_SIGNUP", "IWR_RATE_PASSWORD_RESET"):
    os.environ.setdefault(_name, "100000/m/ip")

# No evaluator waits on standby between a test's jobs (its processes would outlive the test); the tests of
# the standby turn it on (tests/leaderboard/test_standby.py).
os.environ.setdefault("IWR_EVALUATOR_STANDBY", "0")

from leaderboard.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WHITENOISE_USE_FINDERS = True  # serve static/ without collectstatic
WHITENOISE_AUTOREFRESH = True
