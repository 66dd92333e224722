#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for horovod_accel: system packages,
# a Python venv in .venv with the pinned frameworks, and an editable build.
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
need_pkgs=()
# iproute2: the namespace hosts of the multi-host tests (tests/multihost).
# podman, runc, mmdebstrap: the clean containers of the wheel tests and the
# image builds (docs/design/packaging.md).
for p in libgloo-dev libgtest-dev g++ make openmpi-bin libopenmpi-dev mpich libmpich-dev iproute2 \
         podman runc mmdebstrap; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "==> installing system packages: ${need_pkgs[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PY" -m venv .venv
fi
echo "==> installing Python packages"
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q "torch==2.13.0" "torchvision==0.28.0" "tensorflow-cpu==2.21.0" numpy pytest mock parameterized cloudpickle pybind11 setuptools wheel scikit-learn
# JAX (horovod.jax): installed before the build, whose JAX FFI library
# (csrc/jax) compiles against jaxlib's XLA FFI headers.
.venv/bin/pip install -q "jax==0.10.2" "jaxlib==0.10.2" "optax==0.2.8"
command -v cmake >/dev/null 2>&1 || .venv/bin/pip install -q cmake
MPICC=mpicc.openmpi .venv/bin/pip install -q mpi4py || echo "(mpi4py unavailable: the mpi4py benchmark peer will be skipped)"
# Cluster integrations: Spark (JDK 17 + pyspark 4).
bash scripts/setup_spark.sh
# Ray (horovod.ray).
bash scripts/setup_ray.sh
# Kubernetes manifests: kubectl (kustomize v5) and kubernetes-validate.
bash scripts/setup_kubernetes.sh "$PWD/.venv"

echo "==> building horovod_accel"
HVDA_BUILD_DIR="$PWD/build/python" .venv/bin/pip install -q --no-build-isolation -e .
# MXNet 1.9.1 needs numpy<1.24: its own venv over the same built core.
bash scripts/setup_mxnet.sh
echo "==> ready: $(.venv/bin/horovodrun --version 2>/dev/null || echo horovodrun)"
