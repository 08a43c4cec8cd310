#!/usr/bin/env bash
# Rewrite the hashed locks from the pinned requirements files (run after changing any of them):
#   requirements-evaluator.lock  <- requirements-evaluator.txt        (evaluator image)
#   requirements.lock            <- requirements.txt                  (web image)
#   requirements-dev.lock        <- requirements.txt + requirements-dev.txt   (scripts/setup.sh)
#   requirements-official.lock   <- requirements-official.txt         (scripts/setup-official.sh, evaluator-official image)
# Uses uv's pip-compatible resolver (installed into a throw-away venv when not on PATH); every
# file of each pinned release gets its sha256, and pip installs them with --require-hashes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
UV_VERSION=0.13.8
uv="$(command -v uv || true)"
if [ -z "$uv" ]; then
  tools="$(mktemp -d)"; trap 'rm -rf "$tools"' EXIT
  python3 -m venv "$tools" && "$tools/bin/pip" install -q "uv==$UV_VERSION" 2>&1 | grep -v "^WARNING: Location" || true
  uv="$tools/bin/uv"
fi
compile() { local out="$1"; shift; "$uv" pip compile -q --generate-hashes --python-version 3.11 \
  --custom-compile-command scripts/lock.sh "$@" -o "$out"; }
compile requirements-evaluator.lock requirements-evaluator.txt
compile requirements.lock requirements.txt
compile requirements-dev.lock requirements.txt requirements-dev.txt
compile requirements-official.lock requirements-official.txt
echo "locks written: requirements-evaluator.lock requirements.lock requirements-dev.lock requirements-official.lock"
