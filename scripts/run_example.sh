#!/usr/bin/env bash
# The README's first command: set everything up, then train with 2 processes:
# the classic Horovod MNIST-style CNN script on scikit-learn's digits (nothing
# downloaded). It exits non-zero unless the test accuracy ends above 90%.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> 2-process training run on CPU (examples/pytorch/pytorch_mnist.py)"
.venv/bin/horovodrun -np 2 .venv/bin/python examples/pytorch/pytorch_mnist.py "$@"
