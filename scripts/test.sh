#!/usr/bin/env bash
# The README's test command: C++ unit tests, then the Python suite (which
# launches multi-process jobs through horovodrun, each with a hard timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

echo "==> C++ unit tests"
cmake -S . -B build/cpp -DHVDA_BUILD_TESTS=ON -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build/cpp --target hvda_unit_tests horovod_accel_gcu horovod_accel_cuda -j "$(nproc)"
timeout 600 build/cpp/hvda_unit_tests --gtest_brief=1

echo "==> Python tests"
timeout 3000 .venv/bin/python -m pytest tests/python -q -x --durations=10 "$@"
