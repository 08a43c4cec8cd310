#!/usr/bin/env bash
# Build the Debian base image the Dockerfiles start FROM, without any registry:
# debootstrap a minimal bookworm root filesystem from apt and import it as an image.
#   docker/build-base-image.sh [IMAGE_NAME]      (default iwr/debian:bookworm)
# Skips the work when the image already exists. Needs root and debootstrap.
set -euo pipefail
NAME="${1:-iwr/debian:bookworm}"
MIRROR="${IWR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if docker image inspect "$NAME" >/dev/null 2>&1; then echo "$NAME already present"; exit 0; fi
command -v debootstrap >/dev/null || { echo "debootstrap not found: apt-get install -y debootstrap" >&2; exit 1; }
ROOTFS="$(mktemp -d)"
trap 'rm -rf "$ROOTFS"' EXIT
chmod 755 "$ROOTFS"  # becomes the image's "/": mktemp's 0700 would lock every non-root user out
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/dev/null
# Same apt sources as the host, so packages (and their versions) match.
cat > "$ROOTFS/etc/apt/sources.list" <<SRC
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${IWR_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
SRC
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | docker import --change 'CMD ["/bin/bash"]' - "$NAME" >/dev/null
echo "built $NAME"
