#!/usr/bin/env bash
# Sets up horovod.mxnet's test environment: .venv-mxnet, a second venv with
# MXNet 1.9.1 (which needs numpy<1.24, incompatible with the main venv's
# torch and TensorFlow), and the MXNet engine library
# horovod_accel/mxnet/libhvda_mxnet.so (csrc/mxnet, built without MXNet).
# The venv uses the same built core as the main one (PYTHONPATH=<repo>), so
# it must run the same Python version: it is made from the interpreter
# behind .venv when there is one. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
# libmxnet.so needs libgomp and libquadmath from the system (the wheel
# ships libgfortran and OpenBLAS); g++ builds the engine library.
need_pkgs=()
for p in libgomp1 libquadmath0 g++; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "==> installing system packages: ${need_pkgs[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if [ -x .venv/bin/python ]; then
  PY=$(.venv/bin/python -c "import sys; print(sys._base_executable)")
else
  PY=${PYTHON:-python3}
fi
if [ ! -x .venv-mxnet/bin/python ]; then
  echo "==> creating .venv-mxnet with $PY"
  "$PY" -m venv .venv-mxnet
fi
# Keeps the venv out of git status (and out of copies of the work tree).
echo '*' > .venv-mxnet/.gitignore
echo "==> installing MXNet 1.9.1 into .venv-mxnet"
.venv-mxnet/bin/pip install -q --upgrade pip >/dev/null
# The package's own requirements (cloudpickle, psutil, pyyaml, packaging; setup.py),
# and pytest, mock: for running upstream's test/parallel/test_mxnet*.py there.
.venv-mxnet/bin/pip install -q "mxnet==1.9.1" "numpy<1.24" cloudpickle psutil pyyaml packaging pytest mock
.venv-mxnet/bin/python -c "import mxnet" || {
  echo "error: mxnet does not import in .venv-mxnet (see above)" >&2; exit 1; }

echo "==> building the MXNet engine library"
CMAKE=$(command -v cmake || echo .venv/bin/cmake)
"$CMAKE" -S csrc/mxnet -B build/mxnet -DHVDA_PYTHON_OUTPUT_DIR="$PWD/horovod_accel" >/dev/null
"$CMAKE" --build build/mxnet >/dev/null
echo "==> ready: $(PYTHONPATH=$PWD .venv-mxnet/bin/python -c \
  'import mxnet, horovod.mxnet as hvd; print("mxnet", mxnet.__version__, "+ horovod.mxnet")')"
