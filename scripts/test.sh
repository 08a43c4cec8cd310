#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: lint, then pytest.
#   scripts/test.sh [PYTEST ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# The official visual models' environment (.venv-official, about 6.5 GB with torch; 5-6 minutes to install
# from nothing) for tests/evaluator/test_official_models.py: the tests install it unless told not to
# (IWR_OFFICIAL_MODELS=0, and then those tests are skipped, saying why). The site's own set-up never does.
export IWR_OFFICIAL_MODELS="${IWR_OFFICIAL_MODELS:-1}"
if [ "$IWR_OFFICIAL_MODELS" = "1" ]; then bash scripts/setup-official.sh; fi
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
exec .venv/bin/python -m pytest "$@"
