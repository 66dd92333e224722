#!/usr/bin/env bash
# Makes a podman image of Debian 12 from Debian's packages alone (mmdebstrap),
# for machines that cannot pull from a registry: a stand-in for a registry
# base image (e.g. python:3.11-slim-bookworm) in the image builds
# (scripts/build_images.sh) and a clean machine for the wheel tests
# (tests/python/test_wheels_in_container.py). Kept when an image of that tag
# was made from the same package list.
#
# Usage: scripts/stand_in_base.sh TAG [PACKAGE...]
#   e.g. scripts/stand_in_base.sh localhost/hvda-stand-in/debian12-python python3 python3-venv python3-pip
# Env:   HVDA_DEBIAN_MIRROR  (default http://deb.debian.org/debian)
#        HVDA_DEBIAN_SUITE   (default bookworm)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${1:?usage: scripts/stand_in_base.sh TAG [PACKAGE...]}"
shift
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/docker/podman/containers.conf}"
for tool in podman mmdebstrap; do
  command -v "$tool" >/dev/null || {
    echo "stand_in_base: $tool is not installed (Debian/Ubuntu: apt-get install podman runc mmdebstrap)" >&2
    exit 1; }
done
SUITE="${HVDA_DEBIAN_SUITE:-bookworm}"
MIRROR="${HVDA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="ca-certificates${*:+,}$(IFS=,; echo "$*")"
WANT="$SUITE $PACKAGES"
if [ "$(podman image inspect --format '{{index .Labels "org.horovod-accel.stand-in"}}' "$TAG" 2>/dev/null)" = "$WANT" ]; then
  echo "==> stand-in base $TAG is up to date ($WANT)"
  exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "==> stand-in base $TAG: mmdebstrap $SUITE with $PACKAGES"
mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  "$SUITE" "$WORK/rootfs.tar" "$MIRROR"
podman import --quiet \
  --change "LABEL org.horovod-accel.stand-in=\"$WANT\"" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' \
  "$WORK/rootfs.tar" "$TAG" >/dev/null
echo "==> stand-in base $TAG ready ($(podman image inspect --format '{{.Size}}' "$TAG") bytes)"
