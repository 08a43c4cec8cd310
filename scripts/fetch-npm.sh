#!/usr/bin/env bash
# Fetch npm packages by name into .cache/npm/<name>/ (unpacked), skipping those already there.
#   scripts/fetch-npm.sh LIST...     each LIST holds one name@version a line
# Used by scripts/setup.sh and docker/build-images.sh; nothing fetched is committed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$ROOT/.cache/npm"
mkdir -p "$dest"
for list in "$@"; do
  while read -r spec; do
    [ -z "$spec" ] && continue
    name="${spec%@*}"
    # .complete names the version unpacked (empty from older set-ups: taken as current)
    if [ -f "$dest/$name/.complete" ]; then
      have="$(cat "$dest/$name/.complete")"
      [ -z "$have" ] || [ "$have" = "$spec" ] && continue
    fi
    printf '\033[1m[setup]\033[0m npm: fetching %s\n' "$spec"
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
    rm -rf "${dest:?}/$name"; mkdir -p "$dest/$name"
    tar -xzf "$tmp"/*.tgz -C "$dest/$name" --strip-components=1
    rm -rf "$tmp"
    echo "$spec" > "$dest/$name/.complete"
  done < "$list"
done
