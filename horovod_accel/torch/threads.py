"""torch's side of the per-rank compute threads (common/compute_threads.py):
registered with the default runtime when the adapter is imported."""
import torch

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME


def set_torch_threads(n):
    """Shrinks torch's intra-op pool (and with it OpenMP's and MKL's) to n
    threads; a pool already at n or below is left as the user made it. The
    inter-op pool keeps its size: torch sizes it once, at its first use, and
    only torch.jit.fork and a few ops run on it. Returns None (never refuses)."""
    if torch.get_num_threads() > n:
        torch.set_num_threads(n)
    return None


DEFAULT_RUNTIME.add_thread_setter("torch", set_torch_threads)
