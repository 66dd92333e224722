"""Runs every training check on every rank, in order:

    horovodrun -np N python tests/python/training_scripts/run_checks.py [check ...]

Prints 'PASS <check>' per check (rank-prefixed by horovodrun); exits non-zero
at the first failure. With >= 3 ranks, ProcessSet([0, 1]) is registered at
init for the process-set check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
import checks_training  # noqa: E402,F401 -- registers its checks
import checks_api  # noqa: E402 -- registers its checks (after checks_training's)
from train_common import run_all  # noqa: E402


def main():
    torch.set_num_threads(1)
    size = int(os.environ.get("HOROVOD_SIZE", "1"))
    hvd.init(process_sets=[checks_api.PAIR_SET] if size >= 3 else None)
    code = run_all(set(sys.argv[1:]))
    hvd.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
