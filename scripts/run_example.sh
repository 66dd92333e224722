#!/usr/bin/env bash
# The README's first command: set everything up, then train with 2 processes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> 2-process training run on CPU"
.venv/bin/horovodrun -np 2 .venv/bin/python examples/pytorch/pytorch_synthetic_mlp.py --epochs 5
