#!/usr/bin/env bash
# Runs a command with the example device plugin (tests/example_plugin/README.md),
# building it first (incrementally):
#   bash scripts/example_plugin.sh [--variant abi10|broken] COMMAND [ARGS...]
# Builds tests/example_plugin into build/example_plugin (holding the same
# build-directory lock as scripts/emulated_env.sh), exports
# HOROVOD_ACCEL_PLUGINS as the absolute path of the chosen variant's library
# and execs the command. Variants:
#   (none)  libhorovod_accel_example.so         ABI 1.2
#   abi10   libhorovod_accel_example_abi10.so   built against the ABI 1.0 header
#   broken  libhorovod_accel_example_broken.so  its collectives' Sum is wrong (on purpose)
set -euo pipefail
usage() {
  echo "usage: bash scripts/example_plugin.sh [--variant abi10|broken] COMMAND [ARGS...]" >&2
  exit 2
}
suffix=""
if [ "${1:-}" = "--variant" ]; then
  case "${2:-}" in
    abi10 | broken) suffix="_$2" ;;
    *) usage ;;
  esac
  shift 2
fi
[ $# -gt 0 ] || usage
. "$(dirname "${BASH_SOURCE[0]}")/emulated_env.sh"
target="horovod_accel_example$suffix"
_hvda_build tests/example_plugin build/example_plugin "$target"
export HOROVOD_ACCEL_PLUGINS="$HVDA_REPO/build/example_plugin/lib$target.so"
exec "$@"
