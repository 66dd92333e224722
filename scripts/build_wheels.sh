#!/usr/bin/env bash
# Builds every wheel of horovod_accel into DIST (default dist/):
#   horovod_accel-*.whl        the core (C++ core + CPU device, horovodrun,
#                              the `horovod` alias), from setup.py at the root
#   horovod_accel_gcu-*.whl    one per device plugin, from packaging/<name>/
#   horovod_accel_cuda-*.whl   (cmake -S csrc/devices --target <name>)
# No wheel compiles against a framework's C++ ABI: the core wheel always
# holds the TensorFlow op library (horovod_accel/tensorflow/libhvda_tf_ops.so),
# built without TensorFlow against our declarations of its stable C API and a
# build-tree stub libtensorflow_framework.so.2, so one build serves every TF
# 2.x, installed before or after this wheel (docs/design/tensorflow.md).
# The core wheel is linux_x86_64, not manylinux: it links the system's libgloo (auditwheel repair is the release
# step, see docker/README.md).
#
# Usage: scripts/build_wheels.sh [DIST]      (DIST is created if missing)
# Env:   PYTHON           interpreter with setuptools, wheel, pybind11
#                         (default .venv/bin/python, else python3)
#        HVDA_BUILD_JOBS  parallel compile jobs (default: nproc)
#        HVDA_WHEEL_BUILD_ROOT  CMake build folders, kept between runs so a
#                         rebuild is incremental (default build/wheel)
#        HVDA_PLUGINS     which plugin packages (default "gcu cuda")
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIST="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
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

# One wheel: pip builds in place (so the plugin packages find ../../csrc);
# setuptools' own build folder is fresh each time, so no stale file of an
# earlier build lands in a wheel; --no-deps keeps other projects' wheels out.
build_one() {  # name source-dir [VAR=value...]
  local name="$1" src="$2"; shift 2
  local base="$BUILD_ROOT/setuptools-$name"
  rm -rf "$base"
  echo "==> building the $name wheel"
  env "$@" HVDA_SETUPTOOLS_BUILD_BASE="$base" \
    "$PY" -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check -q -w "$DIST" "$src"
  rm -rf "$base"
  if [ "$src" != "$ROOT" ]; then rm -rf "$src/$name.egg-info"; fi
}

rm -f "$DIST"/horovod_accel-*.whl
build_one horovod_accel "$ROOT" HVDA_BUILD_DIR="$BUILD_ROOT/core" HVDA_BUILD_TESTS=OFF
for p in $PLUGINS; do
  rm -f "$DIST/horovod_accel_${p}"-*.whl
  build_one "horovod_accel_$p" "$ROOT/packaging/horovod_accel_$p" HVDA_DEVICES_BUILD_DIR="$BUILD_ROOT/devices"
done

echo "==> wheels in $DIST:"
ls -l "$DIST"/horovod_accel*.whl
