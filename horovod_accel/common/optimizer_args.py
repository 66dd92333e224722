"""Argument checks and derived settings shared by every adapter's
DistributedOptimizer / DistributedGradientTape (upstream's messages)."""
from horovod_accel.common.basics import HorovodBasics

_AVERAGE = HorovodBasics.Average


def check_backward_passes(passes):
    """ValueError unless backward_passes_per_step is a positive integer."""
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 1:
        raise ValueError(f"backward_passes_per_step must be a positive integer, got {passes!r}")


def check_predivide(op, gradient_predivide_factor):
    """ValueError if a predivide factor is combined with an op other than Average."""
    if gradient_predivide_factor != 1.0 and op != _AVERAGE:
        raise ValueError("gradient_predivide_factor not supported with op != Average")


def predivide_scales(op, gradient_predivide_factor):
    """(prescale_factor, postscale_factor) realising gradient_predivide_factor f:
    with Average, gradients are scaled by 1/f before the sum and by f after it
    (the core then applies 1/size); other ops are not scaled."""
    if op == _AVERAGE:
        return 1.0 / gradient_predivide_factor, gradient_predivide_factor
    return 1.0, 1.0


def check_process_set(process_set):
    """ValueError unless process_set is registered (has an id)."""
    if getattr(process_set, "process_set_id", None) is None:
        raise ValueError(f"process_set {process_set} is not registered: pass it to "
                         f"hvd.init(process_sets=[...]) or hvd.add_process_set() first.")
