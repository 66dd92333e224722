#!/usr/bin/env bash
# Runs a command with the GCU plugin over the emulated TOPS runtime + ECCL
# (tests/emulated/README.md), building whatever is missing first:
#   bash scripts/emulated_gcu.sh COMMAND [ARGS...]
# Exports HOROVOD_GCU_RUNTIME_LIB, HOROVOD_ECCL_LIB, HOROVOD_ACCEL_PLUGINS,
# HVDA_TEST_DEVICE_RUNTIME=tops and, when tests/emulated/torch_gcu/env.sh
# exists, what it sets (the test-only torch 'gcu' device on PYTHONPATH); then
# execs the command.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/emulated_gcu.sh COMMAND [ARGS...]" >&2
  exit 2
fi
. "$(dirname "${BASH_SOURCE[0]}")/emulated_env.sh"
hvda_emulated_setup gcu HOROVOD_GCU_RUNTIME_LIB libtopsrt_emu.so HOROVOD_ECCL_LIB libeccl_emu.so
export HVDA_TEST_DEVICE_RUNTIME=tops  # the test torch device is 'gcu' over TOPS
if [ -f "$HVDA_REPO/tests/emulated/torch_gcu/env.sh" ]; then
  . "$HVDA_REPO/tests/emulated/torch_gcu/env.sh"
fi
exec "$@"
