#!/usr/bin/env bash
# Runs a command with the CUDA plugin over the emulated CUDA runtime + NCCL
# (tests/emulated/README.md), building whatever is missing first:
#   bash scripts/emulated_cuda.sh COMMAND [ARGS...]
# Exports HOROVOD_CUDA_RUNTIME_LIB, HOROVOD_NCCL_LIB, HOROVOD_ACCEL_PLUGINS,
# HVDA_TEST_DEVICE_RUNTIME=cuda and HOROVOD_CUDA_DEVICE_TYPE=emucuda and, when
# tests/emulated/torch_gcu/env.sh exists, what it sets: torch then has the
# test-only device 'emucuda' over the emulated CUDA runtime (PrivateUse1
# cannot be named 'cuda'), and the CUDA plugin serves 'emucuda' tensors. Then
# execs the command.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/emulated_cuda.sh COMMAND [ARGS...]" >&2
  exit 2
fi
. "$(dirname "${BASH_SOURCE[0]}")/emulated_env.sh"
hvda_emulated_setup cuda HOROVOD_CUDA_RUNTIME_LIB libcudart_emu.so HOROVOD_NCCL_LIB libnccl_emu.so
export HVDA_TEST_DEVICE_RUNTIME=cuda HOROVOD_CUDA_DEVICE_TYPE=emucuda
if [ -f "$HVDA_REPO/tests/emulated/torch_gcu/env.sh" ]; then
  . "$HVDA_REPO/tests/emulated/torch_gcu/env.sh"
fi
exec "$@"
