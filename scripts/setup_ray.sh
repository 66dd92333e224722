#!/usr/bin/env bash
# Installs Ray into the project's venv (.venv) for horovod.ray and its tests
# (tests/python/test_ray.py, test_ray_elastic.py). Idempotent: does nothing
# when the pinned Ray is already there. Run after scripts/setup.sh.
#   RAY_SPEC   the pip requirement (default: ray==2.60.*)
#   PYTHON     the interpreter to install into (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
SPEC=${RAY_SPEC:-"ray==2.60.*"}
if [ ! -x "$PY" ]; then
  echo "setup_ray.sh: $PY not found; run scripts/setup.sh first (or set PYTHON)" >&2
  exit 1
fi
if "$PY" - "$SPEC" <<'PYEOF' 2>/dev/null; then
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
sys.exit(0 if Requirement(sys.argv[1]).specifier.contains(version("ray"), prereleases=True) else 1)
PYEOF
  echo "==> ray $("$PY" -c 'import ray; print(ray.__version__)') already installed"
  exit 0
fi
echo "==> installing $SPEC"
"$PY" -m pip install -q "$SPEC"
echo "==> ray $("$PY" -c 'import ray; print(ray.__version__)')"
