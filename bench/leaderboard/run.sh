#!/usr/bin/env bash
# Leaderboard benchmark: PostgreSQL filled with 10,000 scored submissions of 113 tasks each,
# the site under gunicorn on loopback (production settings, Redis cache), and p50/p95 latency
# of the leaderboard page and its API, warm and cold cache (see loadgen.py for the conditions).
#
#   bench/leaderboard/run.sh              fill (about a minute) and measure
#   bench/leaderboard/run.sh --skip-fill  measure the database as it is
#   further arguments go to loadgen.py (e.g. --warm 1000 --concurrency 4)
#
# Needs PostgreSQL on 127.0.0.1:5432 (trust auth) and Redis on 127.0.0.1:6379.
# Environment: BENCH_DB (iwr_bench, created if missing), BENCH_PORT (8899), BENCH_REDIS
# (redis://127.0.0.1:6379/7), BENCH_SUBMISSIONS (10000), BENCH_TASKS (113), BENCH_RESEARCHERS
# (500: two models each, so the board has 1,000 rows), BENCH_WORKERS (2 gunicorn workers),
# BENCH_NICE (0; e.g. -10 runs the server and the load generator at raised priority when the
# machine is shared with other work, as root).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DB="${BENCH_DB:-iwr_bench}"
PORT="${BENCH_PORT:-8899}"
WORK="$(mktemp -d /tmp/iwr-bench-XXXXXX)"

export DATABASE_URL="postgres://${BENCH_PG_USER:-root}@127.0.0.1:5432/$DB"
export IWR_CACHE_URL="${BENCH_REDIS:-redis://127.0.0.1:6379/7}"
export IWR_ENV=production DJANGO_SECRET_KEY="bench-only-$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
export IWR_DATA_DIR="$WORK/data" IWR_STATIC_ROOT="$WORK/static" IWR_LOG_LEVEL=WARNING
export IWR_API_ANON_RATE="1000000/minute"  # the load generator is one address: do not throttle it

if ! psql -h 127.0.0.1 -U "${BENCH_PG_USER:-root}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB'" | grep -q 1; then
  createdb -h 127.0.0.1 -U "${BENCH_PG_USER:-root}" "$DB"
fi
echo "[bench] migrations on $DB"
.venv/bin/python manage.py migrate --noinput -v0
FILL=1
if [ "${1:-}" = "--skip-fill" ]; then FILL=0; shift; fi
if [ "$FILL" = 1 ]; then
  echo "[bench] filling $DB"
  .venv/bin/python bench/leaderboard/fill.py --submissions "${BENCH_SUBMISSIONS:-10000}" \
    --tasks "${BENCH_TASKS:-113}" --researchers "${BENCH_RESEARCHERS:-500}"
else
  echo "[bench] ranking the stored boards (a database filled before they existed has none)"
  .venv/bin/python manage.py rank_boards
fi
.venv/bin/python manage.py collectstatic --noinput -v0

echo "[bench] gunicorn on 127.0.0.1:$PORT with ${BENCH_WORKERS:-2} workers"
nice -n "${BENCH_NICE:-0}" .venv/bin/gunicorn leaderboard.wsgi --bind "127.0.0.1:$PORT" --workers "${BENCH_WORKERS:-2}" \
  --access-logfile /dev/null --log-level warning > "$WORK/gunicorn.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do
  curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break || sleep 0.2
done

echo "[bench] latency over HTTP (gunicorn, loopback)"
nice -n "${BENCH_NICE:-0}" .venv/bin/python bench/leaderboard/loadgen.py --url "http://127.0.0.1:$PORT" --json "${BENCH_JSON:-/dev/null}" "$@"
echo "[bench] cost per request inside one process (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
IWR_ENV=test .venv/bin/python bench/leaderboard/cost.py
