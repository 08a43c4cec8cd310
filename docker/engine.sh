#!/usr/bin/env bash
# Start (or stop) a private Docker engine for machines where none runs, as in CI here:
# no bridge network (containers get --network none or host), vfs storage, state under
# IWR_DOCKER_DIR (default var/docker). Prints the DOCKER_HOST to use.
#   docker/engine.sh start|stop|status
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${IWR_DOCKER_DIR:-$ROOT/var/docker}"
SOCK="$DIR/docker.sock"
export DOCKER_HOST="unix://$SOCK"

running() { [ -S "$SOCK" ] && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "${1:-status}" in
  start)
    if running; then echo "$DOCKER_HOST"; exit 0; fi
    command -v dockerd >/dev/null || { echo "dockerd not found: apt-get install -y docker.io" >&2; exit 1; }
    mkdir -p "$DIR/data" "$DIR/exec"
    nohup dockerd --bridge=none --iptables=false --ip6tables=false --storage-driver=vfs \
      --data-root "$DIR/data" --exec-root "$DIR/exec" --pidfile "$DIR/dockerd.pid" \
      -H "$DOCKER_HOST" > "$DIR/dockerd.log" 2>&1 &
    for _ in $(seq 1 60); do running && { echo "$DOCKER_HOST"; exit 0; }; sleep 0.5; done
    echo "dockerd did not start; see $DIR/dockerd.log" >&2; tail -20 "$DIR/dockerd.log" >&2; exit 1 ;;
  stop)
    if [ -f "$DIR/dockerd.pid" ]; then kill "$(cat "$DIR/dockerd.pid")" 2>/dev/null || true; fi ;;
  status)
    if running; then echo "running: $DOCKER_HOST"; else echo "not running"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
