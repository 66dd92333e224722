#!/usr/bin/env bash
# Runs a command with the CUDA plugin over the emulated CUDA runtime + NCCL
# (tests/emulated/README.md), building whatever is missing first:
#   bash scripts/emulated_cuda.sh COMMAND [ARGS...]
# Exports HOROVOD_CUDA_RUNTIME_LIB, HOROVOD_NCCL_LIB and HOROVOD_ACCEL_PLUGINS,
# then execs the command.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/emulated_cuda.sh COMMAND [ARGS...]" >&2
  exit 2
fi
. "$(dirname "${BASH_SOURCE[0]}")/emulated_env.sh"
hvda_emulated_setup cuda HOROVOD_CUDA_RUNTIME_LIB libcudart_emu.so HOROVOD_NCCL_LIB libnccl_emu.so
exec "$@"
