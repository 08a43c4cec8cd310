#!/bin/sh
# Entry point of the web image:  web | dispatcher | generator | housekeeper | beat | manage ARGS...
set -eu
case "${1:-web}" in
  web)
    # The production configuration must pass every deployment check: a warning stops the start.
    python manage.py check --deploy --fail-level WARNING
    python manage.py migrate --noinput
    exec gunicorn leaderboard.wsgi --bind "0.0.0.0:${PORT:-8000}" --workers "${WEB_WORKERS:-3}" \
      --threads 4 --access-logfile - ;;
  dispatcher)
    exec celery -A leaderboard worker -Q evaluate -c "${DISPATCH_CONCURRENCY:-2}" -n "dispatcher@%h" --loglevel=INFO ;;
  generator)
    exec celery -A leaderboard worker -Q generate,default -c "${GENERATE_CONCURRENCY:-2}" -n "generator@%h" --loglevel=INFO ;;
  housekeeper)
    # The reaper and other short periodic tasks: never queued behind a scoring or a generation.
    exec celery -A leaderboard worker -Q housekeeping -c 1 -n "housekeeper@%h" --loglevel=INFO ;;
  beat)
    exec celery -A leaderboard beat -s /tmp/celerybeat-schedule --loglevel=INFO ;;
  manage)
    shift; exec python manage.py "$@" ;;
  *)
    exec "$@" ;;
esac
