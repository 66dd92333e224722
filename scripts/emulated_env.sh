# Shared logic of scripts/emulated_gcu.sh and scripts/emulated_cuda.sh: source
# it (bash). It defines functions and HVDA_REPO; nothing runs at source time.
# What the emulated vendor stack is: tests/emulated/README.md.

HVDA_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Runs "$@" in the repo with its output in a log; shows the log and fails
# only when the command fails (builds stay quiet otherwise).
_hvda_quiet() {
  local log
  log="$(mktemp)"
  if ! (cd "$HVDA_REPO" && "$@") >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "emulated_env.sh: '$*' failed" >&2
    return 1
  fi
  rm -f "$log"
}

_hvda_cmake() {
  if command -v cmake >/dev/null 2>&1; then
    command -v cmake
  elif [ -x "$HVDA_REPO/.venv/bin/cmake" ]; then
    echo "$HVDA_REPO/.venv/bin/cmake"
  else
    echo "emulated_env.sh: cmake not found (scripts/setup.sh installs it)" >&2
    return 1
  fi
}

# Builds (incrementally) the CMake project $1 into build dir $2, optionally
# only target $3, holding an exclusive lock on $2.lock - the lock
# tests/python/emulated_build.py takes for build/emulated - so concurrent
# callers never build the same directory at once.
_hvda_build() {
  local src="$1" dir="$2" target="${3:-}" cmake
  cmake="$(_hvda_cmake)" || return 1
  mkdir -p "$HVDA_REPO/build"
  (
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    if [ ! -f "$HVDA_REPO/$dir/CMakeCache.txt" ]; then
      _hvda_quiet "$cmake" -S "$src" -B "$dir" || exit 1
    fi
    _hvda_quiet "$cmake" --build "$dir" -j2 ${target:+--target "$target"} || exit 1
  ) 9>>"$HVDA_REPO/$dir.lock"
}

# hvda_emulated_setup DEVICE RUNTIME_VAR RUNTIME_LIB CCL_VAR CCL_LIB
#   Builds the emulated libraries (build/emulated/lib) and, when
#   csrc/devices/CMakeLists.txt exists, the plugin target
#   horovod_accel_DEVICE (build/devices); exports RUNTIME_VAR and CCL_VAR as
#   the emulated libraries' absolute paths and HOROVOD_ACCEL_PLUGINS as the
#   plugin's. Without csrc/devices the plugin step is skipped (with a note on
#   stderr) and HOROVOD_ACCEL_PLUGINS is left alone.
hvda_emulated_setup() {
  local device="$1" runtime_var="$2" runtime_lib="$3" ccl_var="$4" ccl_lib="$5"
  local lib="$HVDA_REPO/build/emulated/lib"
  _hvda_build tests/emulated build/emulated || return 1
  export "$runtime_var=$lib/$runtime_lib" "$ccl_var=$lib/$ccl_lib"
  if [ -f "$HVDA_REPO/csrc/devices/CMakeLists.txt" ]; then
    _hvda_build csrc/devices build/devices "horovod_accel_$device" || return 1
    export HOROVOD_ACCEL_PLUGINS="$HVDA_REPO/build/devices/libhorovod_accel_$device.so"
  else
    echo "emulated_env.sh: no csrc/devices/CMakeLists.txt: the $device plugin is not built" >&2
  fi
}
