#!/usr/bin/env bash
# Build every image the deployment uses, offline from any registry:
#   docker/build-images.sh [evaluator|web|all]     (default all)
# Needs a reachable Docker engine (DOCKER_HOST) and root for debootstrap.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
what="${1:-all}"
docker/build-base-image.sh iwr/debian:bookworm
# The web image serves the chart library fetched from npm at set-up (.dockerignore lets it in).
scripts/fetch-npm.sh scripts/npm-static.txt
# Trust the same CAs as this host inside builds (a TLS proxy in front of the registries).
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt docker/host-ca/; fi
build() { docker build -q --network host -f "docker/Dockerfile.$1" -t "iwr/$1:latest" . ; }
case "$what" in
  evaluator) build evaluator ;;
  web) build web ;;
  all) build evaluator; build web ;;
  *) echo "usage: $0 [evaluator|web|all]" >&2; exit 2 ;;
esac
