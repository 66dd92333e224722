#!/usr/bin/env bash
# One rank's entrypoint in the images (WORKDIR /workspace), in the seeds'
# form:   mpirun -np N [--bind-to numa ...] bash run.sh [ARGS...]
# and the same under horovodrun:   horovodrun -np N ... bash run.sh [ARGS...]
#
# Contract
#   where        run as `bash run.sh` in the folder that holds it: mpirun starts
#                ranks in its own working directory, horovodrun cds to it on
#                every host (the MPIJob's workingDir, /workspace).
#   run.env      sourced first when it lies next to this file: the image's
#                environment (PATH to its Python). A rank that mpirun starts
#                through a worker's sshd sees neither the image's ENV nor the
#                pod's env, only what the launcher passes with `-x NAME`.
#   TRAIN_SCRIPT the Python script to run, absolute or relative to this
#                file's folder (default examples/pytorch/pytorch_synthetic_mlp.py).
#   PYTHON       the interpreter (default: python3 on PATH after run.env).
#   ARGS         passed to the script.
#   Sets PYTHONUNBUFFERED=1 unless already set (output reaches `kubectl logs`
#   as it is printed). Compute threads are left to hvd.init(), which gives
#   each rank its share of the pod's CPUs unless OMP_NUM_THREADS & co. are set
#   (docs/settings.md, HOROVOD_THREADS_PER_RANK).
#   Exit status and signals are the script's: it replaces this shell (exec).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -f "$here/run.env" ]; then
  # shellcheck source=/dev/null
  . "$here/run.env"
fi
export PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"

script="${TRAIN_SCRIPT:-examples/pytorch/pytorch_synthetic_mlp.py}"
case "$script" in
  /*) ;;
  *) script="$here/$script" ;;
esac
if [ ! -f "$script" ]; then
  echo "run.sh on $(hostname): TRAIN_SCRIPT '$script' does not exist; set TRAIN_SCRIPT to" \
       "a script in the image (absolute, or relative to $here)" >&2
  exit 2
fi
python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
  echo "run.sh on $(hostname): no '$python' on PATH ($PATH); set PYTHON or fix $here/run.env" >&2
  exit 2
fi
exec "$python" "$script" "$@"
