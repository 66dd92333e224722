#!/usr/bin/env bash
# The GPU check: builds the project and the CUDA plugin on a bare GPU machine
# and runs what needs a GPU, in a few minutes, every step under a time limit:
#
#   bash scripts/gpu_check.sh        # from the repo root, with .gpu/ beside it
#
# .gpu/ comes from scripts/gpu_carry.sh (run where Debian's libgloo-dev is
# installed; the GPU machine has no libgloo, no network and no apt). Nothing
# is installed into the interpreter: the core is built in place
# (setup.py build_ext --inplace: horovod_accel/_core*.so), the repo and a
# scratch folder (mock, and packaging where missing) go on PYTHONPATH, and
# `horovodrun` is a wrapper around `python -m horovod_accel.runner.launch`.
# Steps (each runs whatever happened before; its exit status is recorded):
#   env          the machine: GPUs, python/torch/CUDA/NCCL, compiler, cmake
#   deps         mock (+ packaging) from .gpu/wheels into a --target folder
#   build_core   setup.py build_ext --inplace, CMake folder build/gpu, gloo
#                from .gpu/gloo through CMAKE_PREFIX_PATH, -j<cores>,
#                without the TensorFlow op library
#   build_plugin the CUDA plugin (build/devices/libhorovod_accel_cuda.so),
#                as tests/python/test_accel_device.py builds it
#   check_build  horovodrun --check-build (the plugin through HOROVOD_ACCEL_PLUGINS)
#   ours         pytest tests/python/test_accel_device.py::test_cuda_ops_and_training and
#                ::test_cuda_jax_inside_jit (JAX arrays on the GPU inside jax.jit)
#   bench        benchmarks/device_overhead.py --device cuda --runs 3
#   upstream     upstream Horovod v0.28.1's test/parallel/test_torch.py,
#                unchanged, through our horovodrun at np 1 (--gloo), cuda
#                tensors served by the CUDA plugin; it gets the time left (at
#                most UPSTREAM_TIMEOUT), so it runs last
# Output: every step's log and summary.txt in $OUT (default /tmp/out), the
# whole console output in $OUT/gpu_check.log, a summary table at the end.
# Exit status 0 when every step exited 0.
#
# Environment: PYTHON (python3), OUT (/tmp/out), JOBS (nproc),
# GPU_CHECK_BUDGET (480: seconds for all steps together), BUILD_TIMEOUT (420),
# OURS_TIMEOUT (300), BENCH_TIMEOUT (150), BENCH_RUNS (3),
# UPSTREAM_TIMEOUT (300), UPSTREAM_NP (1), UPSTREAM_SUITE (test_torch.py),
# GPU_CHECK_STEPS (all: e.g. "build_core build_plugin upstream" runs only those,
# plus env and deps; a rerun on the same machine rebuilds incrementally).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/gpu_check.log"

main() {
  T0=$SECONDS
  BUDGET=${GPU_CHECK_BUDGET:-480}
  JOBS=${JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 4)}
  PYTHON=$(command -v "${PYTHON:-python3}") || { echo "gpu_check: no ${PYTHON:-python3}" >&2; return 2; }
  GLOO="$REPO/.gpu/gloo"
  PLUGIN="$REPO/build/devices/libhorovod_accel_cuda.so"
  SUMMARY="$OUT/summary.txt"
  : > "$SUMMARY"
  ALL_OK=1
  if [ ! -f "$GLOO/share/cmake/Gloo/GlooTargets.cmake" ]; then
    echo "gpu_check: no .gpu/gloo in $REPO: run scripts/gpu_carry.sh on a machine with" \
         "libgloo-dev and carry .gpu with the working tree" >&2
    return 2
  fi
  SCR=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
  mkdir -p "$SCR/bin" "$SCR/ld" "$SCR/pydeps"
  export REPO OUT GLOO PYTHON JOBS PLUGIN SCR

  # --- the environment every step sees --------------------------------------
  # `python`, `python3` and `horovodrun` run this interpreter (wrappers, not
  # symlinks: a venv is recognised from the path it was started by); the
  # interpreter's own bin folder (cmake, ninja of the venv) follows.
  local w
  for w in python python3; do
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$PYTHON" > "$SCR/bin/$w"
  done
  printf '#!/bin/sh\nexec "%s" -m horovod_accel.runner.launch "$@"\n' "$PYTHON" \
    > "$SCR/bin/horovodrun"
  chmod +x "$SCR"/bin/*
  export PATH="$SCR/bin:$(dirname "$PYTHON"):$PATH"
  export PYTHONPATH="$REPO:$SCR/pydeps${PYTHONPATH:+:$PYTHONPATH}"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  export COLUMNS=${COLUMNS:-200}  # pytest's short summary lines keep their reasons
  export HOROVOD_ACCEL_PLUGINS="$PLUGIN"
  # libgloo from .gpu; of its dependencies only those the machine lacks (a
  # second libibverbs beside the system's would be NCCL's too), and the
  # carried libstdc++ only where the machine's is too old for libgloo.
  export LD_LIBRARY_PATH="$GLOO/lib:$SCR/ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local i so missing
  for i in 1 2 3 4; do
    missing=$(ldd "$GLOO/lib/libgloo.so.0" 2>&1 | awk '$2 == "=>" && $3 == "not" {print $1}') || true
    [ -n "$missing" ] || break
    for so in $missing; do
      if [ -e "$GLOO/deps/$so" ]; then ln -sf "$GLOO/deps/$so" "$SCR/ld/$so"; fi
    done
  done
  if ldd "$GLOO/lib/libgloo.so.0" 2>&1 | grep -q "GLIBCXX_[0-9.]*' not found"; then
    ln -sf "$GLOO/fallback/libstdc++.so.6" "$SCR/ld/libstdc++.so.6"
  fi

  echo "gpu_check: repo $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo 'no git'))," \
       "python $PYTHON, OUT $OUT, $JOBS jobs, budget ${BUDGET}s"
  echo "gpu_check: taken from .gpu/gloo/deps or fallback: $(cd "$SCR/ld" && ls | tr '\n' ' ')"

  step env 60 env_info
  step deps 120 install_deps
  step build_core "${BUILD_TIMEOUT:-420}" build_core
  step build_plugin 300 build_plugin
  step check_build 120 horovodrun --check-build
  step ours "${OURS_TIMEOUT:-300}" python3 -m pytest -v -p no:cacheprovider -rfEs \
    tests/python/test_accel_device.py::test_cuda_ops_and_training \
    tests/python/test_accel_device.py::test_cuda_jax_inside_jit
  step bench "${BENCH_TIMEOUT:-150}" python3 benchmarks/device_overhead.py --device cuda \
    --runs "${BENCH_RUNS:-3}" --plugin "$PLUGIN"
  cp -r "$REPO/.gpu/upstream/test" "$SCR/test"
  local np=${UPSTREAM_NP:-1} suite=${UPSTREAM_SUITE:-test_torch.py}
  STEP_CWD="$SCR/test/parallel" step upstream "${UPSTREAM_TIMEOUT:-300}" \
    horovodrun -np "$np" -H "localhost:$np" --gloo --output-filename "$OUT/upstream_ranks" \
    python3 -m pytest -v -p no:cacheprovider -rfEs "$suite"

  echo
  echo "gpu_check: summary ($((SECONDS - T0)) s; logs in $OUT)"
  { printf 'step\texit\tseconds\tresult\n'; cat "$SUMMARY"; } | column -t -s $'\t' 2>/dev/null \
    || cat "$SUMMARY"
  rm -rf "$SCR"
  [ "$ALL_OK" = 1 ]
}

# --- the steps that are functions (each runs in a child bash under timeout) --

env_info() {
  set +e
  date -u; uname -a; echo "cpus $(nproc --all), build jobs $JOBS"; free -g 2>/dev/null | head -n 2
  timeout 30 nvidia-smi -L
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -VV
  python3 -c '
import os, sys, sysconfig
print("executable", sys.executable, "prefix", sys.prefix)
inc = sysconfig.get_paths()["include"]
print("Python.h", inc, os.path.exists(os.path.join(inc, "Python.h")))
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available",
      torch.cuda.is_available(), "devices", torch.cuda.device_count())
if torch.cuda.is_available():
    print("nccl (torch)", torch.cuda.nccl.version(), "gpu0", torch.cuda.get_device_name(0))
import pybind11, pytest
print("pybind11", pybind11.__version__, "pytest", pytest.__version__)'
  c++ --version | head -n 1; cmake --version | head -n 1; echo "ninja $(ninja --version 2>/dev/null)"
  echo "--- ldd libgloo.so.0 (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  ldd "$GLOO/lib/libgloo.so.0"
  return 0
}

# mock (upstream's test/utils/common.py imports it) into a --target folder on
# PYTHONPATH; packaging (test_torch.py) only where the interpreter lacks it.
install_deps() {
  local w
  for w in "$REPO"/.gpu/wheels/mock-*.whl; do
    python3 -m pip install -q --no-index --no-deps --target "$SCR/pydeps" "$w" \
      || python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
           "$w" "$SCR/pydeps" || return 1
  done
  if ! python3 -c 'import packaging.version' 2>/dev/null; then
    for w in "$REPO"/.gpu/wheels/packaging-*.whl; do
      python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        "$w" "$SCR/pydeps" || return 1
    done
  fi
  python3 -c 'import mock, packaging; print("mock", mock.__version__, mock.__file__)
print("packaging", packaging.__version__, packaging.__file__)'
}

# The core, built in place for $PYTHON; the _core it made must import.
build_core() {
  local inc
  inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
  if [ ! -f "$inc/Python.h" ]; then
    # No headers for this interpreter: the carried ones of the same minor
    # version, handed to CMake's FindPython3 before setup.py configures.
    local ver carried
    ver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    carried="$REPO/.gpu/python-include/python$ver"
    if [ -f "$carried/Python.h" ]; then
      echo "build_core: $inc/Python.h is missing; using $carried"
      cmake -S "$REPO" -B "$REPO/build/gpu" -DPython3_EXECUTABLE="$PYTHON" \
        -DPython3_INCLUDE_DIR="$carried" -DCMAKE_BUILD_TYPE=Release -DHVDA_BUILD_TESTS=OFF \
        -DHVDA_BUILD_TENSORFLOW=OFF -DCMAKE_PREFIX_PATH="$GLOO" || return 1
    else
      echo "build_core: $inc/Python.h is missing and .gpu has no python$ver headers" >&2
    fi
  fi
  HVDA_BUILD_JOBS=$JOBS HVDA_BUILD_DIR="$REPO/build/gpu" HVDA_BUILD_TENSORFLOW=OFF \
    CMAKE_PREFIX_PATH="$GLOO" python3 setup.py -q build_ext --inplace || return 1
  echo "--- $(grep '^Gloo_DIR' "$REPO/build/gpu/CMakeCache.txt")"
  python3 -c 'import horovod_accel, horovod_accel._core as c, horovod
print("horovod_accel", horovod_accel.__file__)
print("_core", c.__file__)
print("horovod", horovod.__version__, horovod.__file__)'
}

# The CUDA plugin in build/devices, configured as tests/python/test_accel_device.py's
# _hvda_build does (CMake's defaults) but built with every core; the test's own
# _hvda_build call then finds it up to date.
build_plugin() {
  cmake -S csrc/devices -B build/devices > /dev/null \
    && cmake --build build/devices -j "$JOBS" --target horovod_accel_cuda \
    && . scripts/emulated_env.sh && _hvda_build csrc/devices build/devices horovod_accel_cuda \
    && ls -la "$PLUGIN"
}

# --- running and summarizing steps --------------------------------------------

# step NAME LIMIT CMD...: runs CMD (a command, or one of the functions above)
# in $STEP_CWD (default: the repo) under timeout (LIMIT seconds, at most what
# is left of the budget), its output in $OUT/NAME.log; prints the log's tail
# and appends "NAME<TAB>rc<TAB>seconds<TAB>result" to the summary.
step() {
  local name=$1 limit=$2 log="$OUT/$1.log" rc=0 t0=$SECONDS note
  shift 2
  if [ -n "${GPU_CHECK_STEPS:-}" ] && [[ " env deps $GPU_CHECK_STEPS " != *" $name "* ]]; then
    printf '%s\t%s\t%s\t%s\n' "$name" "-" "0" "not selected (GPU_CHECK_STEPS)" >> "$SUMMARY"
    return 0
  fi
  local left=$((BUDGET - (SECONDS - T0)))
  if [ "$left" -lt 15 ]; then
    printf '%s\t%s\t%s\t%s\n' "$name" "-" "0" "not run: the budget (${BUDGET}s) is spent" >> "$SUMMARY"
    ALL_OK=0
    echo "==> [$name] not run: the budget is spent"
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  echo "==> [$name] (limit ${limit}s): $*"
  {
    echo "# $(date -u +%H:%M:%S) cd ${STEP_CWD:-$REPO} && $*"
    if [ "$(type -t "$1")" = function ]; then
      (cd "${STEP_CWD:-$REPO}" && exec timeout -k 20 "$limit" \
        bash -c "set -uo pipefail; $(declare -f "$1"); $(printf '%q ' "$@")") || rc=$?
    else
      (cd "${STEP_CWD:-$REPO}" && exec timeout -k 20 "$limit" "$@") || rc=$?
    fi
    echo "# exit code $rc after $((SECONDS - t0)) s"
  } > "$log" 2>&1 || true
  rc=$(sed -n 's/^# exit code \([0-9]*\) after.*/\1/p' "$log" | tail -n 1)
  rc=${rc:-1}
  note=$(summarize "$name" "$log" "$rc") || note="-"
  case "$name" in
    bench|env|check_build|deps) sed -n '2,$p' "$log" | grep -v '^# exit code' | tail -n 40 | sed 's/^/    /' ;;
    *) tail -n "${TAIL:-12}" "$log" | sed 's/^/    /' ;;
  esac
  [ "$rc" != 124 ] && [ "$rc" != 137 ] || note="TIMED OUT after ${limit}s; $note"
  echo "<== [$name] exit code $rc, $((SECONDS - t0)) s: $note"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$note" >> "$SUMMARY"
  [ "$rc" = 0 ] || ALL_OK=0
}

# One line about a step's result: pytest's summary line (rank 0's under
# horovodrun) or, for a run cut short, the counts of its -v result words.
summarize() {
  local name=$1 log=$2 rc=$3 line
  case "$name" in
    ours|upstream)
      line=$(sed 's/^\[0\]<std\(out\|err\)>://' "$log" \
        | grep -E '^=+ .*(passed|failed|errors?|skipped|no tests ran|deselected).* in [0-9.]+s' \
        | tail -n 1 | sed 's/^=* *//; s/ *=*$//') || true
      if [ -n "$line" ]; then
        echo "$line"
      else
        echo "no pytest summary (cut short?); -v lines: $(grep -c ' PASSED' "$log") passed," \
             "$(grep -cE ' (FAILED|ERROR)' "$log") failed/error, $(grep -c ' SKIPPED' "$log") skipped"
      fi ;;
    bench)
      if grep -q 'skipped' "$log"; then
        grep -m1 'skipped' "$log"
      else
        grep -E '^ +[0-9]+ (KiB|MiB) ' "$log" \
          | awk '{printf "%s %s: ratio %s, added %s; ", $1, $2, $5, $7}' || true
        echo
      fi ;;
    build_core)
      if [ "$rc" = 0 ]; then grep -m1 '^_core ' "$log" || echo built
      else echo "build failed: see build_core.log"; fi ;;
    check_build) grep -m1 -i 'cuda' "$log" | sed 's/^ *//' || echo "-" ;;
    *) if [ "$rc" = 0 ]; then echo ok; else grep -v '^# exit code' "$log" | tail -n 1 | cut -c1-160; fi ;;
  esac
}

main "$@" 2>&1 | tee -a "$LOG"
