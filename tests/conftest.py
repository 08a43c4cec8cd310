"""Shared test configuration.

Tests run with ``IWR_ENV=test`` and a throw-away data directory so nothing touches the
developer's ``var/``.
"""

import os
import tempfile

os.environ.setdefault("IWR_ENV", "test")
os.environ.setdefault("IWR_DATA_DIR", tempfile.mkdtemp(prefix="iwr-test-data-"))
