#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: lint, then pytest.
#   scripts/test.sh [PYTEST ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
exec .venv/bin/python -m pytest "$@"
