#!/usr/bin/env bash
# Set up (idempotent) and run the leaderboard on the embedded default: SQLite, local files,
# a real Celery worker on the filesystem transport and gunicorn serving the site.
#   scripts/run.sh            then open the printed URL; Ctrl-C stops everything
# Environment: IWR_PORT (default 8000), IWR_BIND (default 127.0.0.1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh

export DJANGO_SETTINGS_MODULE=leaderboard.settings
export IWR_ENV="${IWR_ENV:-production}"
# One BLAS/OpenMP thread per process: numpy would otherwise spin up a thread per core in every
# gunicorn worker and Celery process, which oversubscribes a small machine under concurrent requests.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
mkdir -p var
if [ -z "${DJANGO_SECRET_KEY:-}" ]; then
  [ -f var/secret_key ] || .venv/bin/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key
  chmod 600 var/secret_key
  DJANGO_SECRET_KEY="$(cat var/secret_key)"; export DJANGO_SECRET_KEY
fi
PORT="${IWR_PORT:-8000}"; BIND="${IWR_BIND:-127.0.0.1}"
export IWR_SITE_URL="${IWR_SITE_URL:-http://$BIND:$PORT}"
PY=.venv/bin/python

echo "[run] database migrations"
$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput >/dev/null
echo "[run] sample data"
$PY manage.py load_sample_data

echo "[run] starting the Celery worker (embedded filesystem transport)"
.venv/bin/celery -A leaderboard worker -Q evaluate,generate,default -c 1 --loglevel=INFO > var/worker.log 2>&1 &
WORKER=$!
# The reaper runs beside the scoring worker, never behind it.
.venv/bin/celery -A leaderboard worker -Q housekeeping -c 1 -n housekeeper@%h --loglevel=INFO > var/housekeeper.log 2>&1 &
HOUSEKEEPER=$!
.venv/bin/celery -A leaderboard beat --loglevel=INFO -s var/celerybeat-schedule > var/beat.log 2>&1 &
BEAT=$!
trap 'kill $WORKER $HOUSEKEEPER $BEAT 2>/dev/null; wait $WORKER $HOUSEKEEPER $BEAT 2>/dev/null' EXIT INT TERM

cat <<MSG

  IWR-Bench leaderboard is running at  $IWR_SITE_URL/
  Admin account: create one with       .venv/bin/python manage.py createsuperuser
  Worker log:                          var/worker.log
  Stop with Ctrl-C.

MSG
.venv/bin/gunicorn leaderboard.wsgi --bind "$BIND:$PORT" --workers 2 --threads 4 --access-logfile - --log-level warning
