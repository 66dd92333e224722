"""Builds the horovod_accel_cuda wheel: the CUDA (CUDA runtime + NCCL) device plugin. The build
logic is every plugin wheel's: packaging/plugin_wheel.py (beside this file in
an sdist, one folder up in a checkout)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for d in (HERE, os.path.dirname(HERE)):
    if os.path.isfile(os.path.join(d, "plugin_wheel.py")):
        sys.path.insert(0, d)
        break
from plugin_wheel import setup_plugin  # noqa: E402

setup_plugin("cuda", HERE)
