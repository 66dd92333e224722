#!/usr/bin/env bash
# Builds Gloo as a static, position-independent library (TCP transport only:
# no Redis, no ibverbs, no libuv) into PREFIX, for wheels that carry Gloo
# inside horovod_accel/_core instead of needing the system's libgloo
# (docs/design/packaging.md). The core's CMake finds it through
# CMAKE_PREFIX_PATH=PREFIX.
#
# Gloo publishes no release archive and no package on PyPI; the index's one
# copy of its sources is the sdist of upstream Horovod 0.28.1
# (third_party/gloo, the Gloo revision that release pins, BSD-3-Clause:
# THIRD_PARTY_NOTICES.md). It is downloaded with pip and checked against a
# pinned SHA-256; nothing of it is kept in this repository.
#
# Usage: scripts/build_gloo.sh PREFIX
# Env:   CMAKE_TOOLCHAIN_FILE  the compiler to build with (cmake reads it from
#                              the environment; the release wheels use
#                              packaging/toolchain/zig.cmake); Gloo's C++ API
#                              crosses into the core, so both must share it
#        PYTHON                the pip to download with (default python3)
#        HVDA_BUILD_JOBS       parallel compile jobs (default: nproc)
# A PREFIX built before from the same sources and toolchain is kept as is.
set -euo pipefail
PREFIX="${1:?usage: scripts/build_gloo.sh PREFIX}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
PY="${PYTHON:-python3}"
SDIST_NAME="horovod==0.28.1"
SDIST_FILE="horovod-0.28.1.tar.gz"
SDIST_SHA256="92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0"
STAMP="$PREFIX/.hvda_gloo_stamp"
WANT="$SDIST_SHA256 ${CMAKE_TOOLCHAIN_FILE:-system} ${HVDA_GLIBC:-}"
if [ -f "$PREFIX/share/cmake/Gloo/GlooConfig.cmake" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
  echo "==> Gloo: $PREFIX is up to date"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "==> Gloo: downloading its sources ($SDIST_NAME's sdist from the package index)"
if ! "$PY" -m pip download -q --no-deps --no-binary :all: -d "$WORK" "$SDIST_NAME"; then
  echo "build_gloo: could not download $SDIST_NAME's sdist (Gloo's sources) with $PY -m pip;" \
       "check the package index is reachable, or install your distribution's Gloo" \
       "(Debian/Ubuntu: apt-get install libgloo-dev) and build without scripts/build_gloo.sh" >&2
  exit 1
fi
echo "$SDIST_SHA256  $WORK/$SDIST_FILE" | sha256sum -c --quiet - || {
  echo "build_gloo: $SDIST_FILE does not have the pinned SHA-256 ($SDIST_SHA256): refusing to build it" >&2
  exit 1
}
tar -xzf "$WORK/$SDIST_FILE" -C "$WORK" horovod-0.28.1/third_party/gloo
SRC="$WORK/horovod-0.28.1/third_party/gloo"

echo "==> Gloo: building a static library into $PREFIX (${CMAKE_TOOLCHAIN_FILE:-system compiler})"
# CMAKE_POLICY_VERSION_MINIMUM: this Gloo declares cmake_minimum_required 2.8,
# which CMake 4 refuses without it.
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
  -DUSE_REDIS=OFF -DUSE_IBVERBS=OFF -DUSE_LIBUV=OFF -DUSE_NCCL=OFF -DUSE_RCCL=OFF \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" >"$WORK/configure.log" 2>&1 || {
  cat "$WORK/configure.log" >&2; echo "build_gloo: configuring Gloo failed (above)" >&2; exit 1; }
cmake --build "$WORK/build" -j "${HVDA_BUILD_JOBS:-$(nproc)}" >"$WORK/build.log" 2>&1 || {
  tail -40 "$WORK/build.log" >&2; echo "build_gloo: building Gloo failed (above)" >&2; exit 1; }
rm -rf "$PREFIX/include/gloo" "$PREFIX/lib/libgloo.a" "$PREFIX/share/cmake/Gloo"
cmake --install "$WORK/build" >/dev/null
echo "$WANT" >"$STAMP"
echo "==> Gloo: $PREFIX/lib/libgloo.a"
