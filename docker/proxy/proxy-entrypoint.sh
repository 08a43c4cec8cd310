#!/bin/sh
# Entry point of the proxy image: render nginx.conf from the environment, test it, run nginx.
#   IWR_SERVER_NAMES  host names answered (the site's and the preview host), default any
#   IWR_MAX_BUNDLE_MB the site's bundle limit: bodies above it plus 1 MB are refused by nginx already
#   IWR_UPSTREAM      the web service, default web:8000
set -eu
export IWR_BODY_LIMIT_MB=$((IWR_MAX_BUNDLE_MB + 1))
for file in fullchain.pem privkey.pem; do
  [ -r "/etc/iwr/tls/$file" ] || { echo "proxy: /etc/iwr/tls/$file is missing: mount IWR_TLS_DIR with the certificate" >&2; exit 1; }
done
envsubst '${IWR_SERVER_NAMES} ${IWR_BODY_LIMIT_MB} ${IWR_UPSTREAM}' < /opt/proxy/nginx.conf.template > /etc/nginx/nginx.conf
nginx -t -q
exec nginx -g 'daemon off;'
