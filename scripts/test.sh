#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: lint, then pytest.
#   scripts/test.sh [PYTEST ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# Opt-in: the official visual models' environment (several GB), for tests/evaluator/test_official_models.py,
# which is skipped, saying why, without it.
if [ "${IWR_OFFICIAL_MODELS:-0}" = "1" ]; then bash scripts/setup-official.sh; fi
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
exec .venv/bin/python -m pytest "$@"
