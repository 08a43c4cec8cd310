#!/bin/sh
# First start: create the cluster, the `iwr` role and database with POSTGRES_PASSWORD.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb -D "$PGDATA" --auth-host=scram-sha-256 --auth-local=trust -U postgres >/dev/null
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w start -o "-c listen_addresses=''" >/dev/null
  psql -v ON_ERROR_STOP=1 -U postgres -c "CREATE ROLE iwr LOGIN PASSWORD '${POSTGRES_PASSWORD}'" \
       -c "CREATE DATABASE iwr OWNER iwr" >/dev/null
  pg_ctl -D "$PGDATA" -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
