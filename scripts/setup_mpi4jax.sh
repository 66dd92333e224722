#!/usr/bin/env bash
# Sets up the mpi4jax peer of benchmarks/jax_collectives.py: .venv-mpi4jax, a
# venv of its own (mpi4jax is built from source and must not touch .venv) with
#   - jax and jaxlib at the versions .venv has (0.10.2 when there is no .venv),
#   - mpi4py built from source against Debian's Open MPI (MPICC=mpicc.openmpi),
#   - mpi4jax 0.9.1 (an sdist: its C++ XLA FFI bridge is compiled here with
#     mpicc.openmpi against jaxlib's FFI headers and nanobind).
# The venv is made from the interpreter behind .venv (Python 3.11), so the
# benchmark's jobs run the same Python. Idempotent: a venv that already imports
# the pinned versions and passes the np-2 check is left as it is.
# Ends with a 2-rank check under mpirun.openmpi: an in-jit mpi4jax.allreduce
# (Sum) must give the sum over ranks. Any failure stops the script with a line
# that says which step failed and why.
#
#   scripts/setup_mpi4jax.sh            # -> <repo>/.venv-mpi4jax
#   MPI4JAX_VENV=/path scripts/setup_mpi4jax.sh
set -euo pipefail
cd "$(dirname "$0")/.."

MPI4JAX_VERSION=0.9.1
VENV=${MPI4JAX_VENV:-$PWD/.venv-mpi4jax}

fail() { echo "error: setup_mpi4jax.sh: $*" >&2; exit 1; }

for tool in mpicc.openmpi mpirun.openmpi; do
  command -v "$tool" >/dev/null || fail "$tool not found: install Debian's Open MPI" \
    "(apt-get install openmpi-bin libopenmpi-dev); mpi4jax is built and run against it"
done
# mpicc.openmpi compiles mpi4jax's C++ bridge with the gcc driver: it needs g++'s cc1plus.
command -v g++ >/dev/null || fail "g++ not found (apt-get install g++): mpi4jax's bridge is C++"

if [ -x .venv/bin/python ]; then
  PY=$(.venv/bin/python -c "import sys; print(sys._base_executable)")
  JAX_VERSION=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('jax'))" \
                2>/dev/null || echo 0.10.2)
  JAXLIB_VERSION=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('jaxlib'))" \
                   2>/dev/null || echo "$JAX_VERSION")
else
  PY=${PYTHON:-python3}
  JAX_VERSION=0.10.2
  JAXLIB_VERSION=0.10.2
fi

# The import check run after every step and once to decide whether anything is
# to be done: versions pinned, mpi4py on Open MPI, mpi4jax's bridge loads.
check_import() {
  "$VENV/bin/python" - "$JAX_VERSION" "$JAXLIB_VERSION" "$MPI4JAX_VERSION" <<'EOF'
import importlib.metadata as m, sys
want = dict(zip(("jax", "jaxlib", "mpi4jax"), sys.argv[1:]))
got = {k: m.version(k) for k in want}
assert got == want, f"installed {got}, want {want}"
from mpi4py import MPI
lib = MPI.Get_library_version()
assert lib.startswith("Open MPI"), f"mpi4py runs on {lib.split(',')[0]!r}, not Open MPI"
import mpi4jax  # noqa: F401  (loads the compiled bridge; checks its MPI ABI against mpi4py's)
EOF
}

# Two ranks under mpirun.openmpi: a jitted mpi4jax.allreduce(Sum) of rank+1.
check_np2() {
  OMPI_MCA_rmaps_base_oversubscribe=1 MPI4JAX_NO_WARN_JAX_VERSION=1 JAX_PLATFORMS=cpu \
    timeout 120 mpirun.openmpi -np 2 --allow-run-as-root --oversubscribe "$VENV/bin/python" -c '
import jax, jax.numpy as jnp, mpi4jax
from mpi4py import MPI
r, n = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
f = jax.jit(lambda x: mpi4jax.allreduce(x, op=MPI.SUM))
got = f(jnp.full((1000,), r + 1.0, jnp.float32)).block_until_ready()
want = n * (n + 1) / 2
assert bool((got == want).all()), f"rank {r}: got {got[:4]}, want {want}"
if r == 0:
    print(f"mpi4jax {mpi4jax.__version__} on jax {jax.__version__}: np {n} in-jit Sum ok")
'
}

if [ -x "$VENV/bin/python" ] && check_import >/dev/null 2>&1 && check_np2 >/dev/null 2>&1; then
  echo "==> $VENV is ready (mpi4jax $MPI4JAX_VERSION, jax $JAX_VERSION); nothing to do"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV with $PY"
  "$PY" -m venv "$VENV" || fail "could not create the venv $VENV with $PY"
fi
# Keeps the venv out of git status (and out of copies of the work tree).
echo '*' > "$VENV/.gitignore"
PIP=("$VENV/bin/pip" install -q)

echo "==> installing jax $JAX_VERSION, jaxlib $JAXLIB_VERSION and the build tools"
# mpi4jax's pyproject asks for setuptools>=82.0.1, nanobind>=2 and jax>=0.6 at build time.
"${PIP[@]}" --upgrade pip >/dev/null || fail "pip upgrade in $VENV failed (see above)"
"${PIP[@]}" "jax==$JAX_VERSION" "jaxlib==$JAXLIB_VERSION" numpy "setuptools>=82.0.1" wheel \
  "nanobind>=2.0.0" || fail "could not install jax==$JAX_VERSION / build tools (see pip's output above)"

echo "==> building mpi4py from source against Open MPI (MPICC=mpicc.openmpi)"
if ! "$VENV/bin/python" -c "from mpi4py import MPI; assert MPI.Get_library_version().startswith('Open MPI')" \
     2>/dev/null; then
  MPICC=$(command -v mpicc.openmpi) "${PIP[@]}" --no-binary mpi4py --no-cache-dir mpi4py \
    || fail "mpi4py did not build against Open MPI (see the compiler output above)"
fi

echo "==> building mpi4jax $MPI4JAX_VERSION (C++ bridge with mpicc.openmpi; a few minutes on 2 cores)"
# No build isolation: the bridge must compile against this venv's jaxlib FFI
# headers and mpi4py, not against whatever an isolated build would download.
# (MPI4JAX_BUILD_MPICC must be a path: mpi4jax's setup.py checks that it exists.)
# CPU bridge only: setup.py builds a CUDA bridge too when it finds a CUDA
# toolkit (nvcc on PATH, CUDA_PATH, /usr/local/cuda), and that build fails where
# the toolkit is partial or only a stand-in. CUDA_PATH naming an empty folder
# makes it find no headers and skip the CUDA bridge; the benchmark runs on CPU.
NO_CUDA=$(mktemp -d)
trap 'rmdir "$NO_CUDA"' EXIT
CUDA_PATH=$NO_CUDA MPI4JAX_BUILD_MPICC=$(command -v mpicc.openmpi) "${PIP[@]}" --no-build-isolation --no-cache-dir \
  --force-reinstall --no-deps "mpi4jax==$MPI4JAX_VERSION" \
  || fail "mpi4jax $MPI4JAX_VERSION did not build (see the compiler output above)"

check_import || fail "the built mpi4jax does not import in $VENV (see the traceback above)"
echo "==> checking 2 ranks under mpirun.openmpi"
check_np2 || fail "the 2-rank in-jit allreduce check failed (see above)"
echo "==> ready: $VENV"
