"""SyncBatchNorm: batch normalization with statistics over the whole global
batch (every rank's samples), upstream `horovod.torch.SyncBatchNorm`.

Works on any device the core supports (upstream needed CUDA kernels). The
statistics are computed in two passes with differentiable Sum allreduces
(per-channel sum and count, then the sum of squared deviations from the
global mean), so autograd yields exactly the gradient of the full-batch
normalization: each rank's input gradient includes the other ranks'
contributions through the statistics.

Under torch.compile the two allreduces are graph nodes (custom_ops.py), so
a compiled model with SyncBatchNorm layers has no graph break there.

Collective: in training mode (or without running stats) every rank must run
forward and backward the same number of times and in the same order.
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from horovod_accel.torch.mpi_ops import Sum, allreduce, size

_EMPTY_BATCH = "SyncBatchNorm got an empty global batch (no samples on any rank)."


class SyncBatchNorm(_BatchNorm):
    """Applies synchronous batch normalization over N-D input (N >= 2; dim 1
    is the channel dim), with statistics reduced across all Horovod ranks.

    Arguments as torch.nn.BatchNorm*: num_features, eps, momentum (None =
    cumulative average), affine, track_running_stats. In eval mode with
    running stats it is a plain local batch norm (no communication).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _average_factor(self):
        """Weight of this batch in the running statistics (as _BatchNorm)."""
        if not (self.training and self.track_running_stats):
            return 0.0
        self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return self.momentum

    def forward(self, input):
        self._check_input_dim(input)
        factor = self._average_factor()
        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                False, 0.0, self.eps)
        if size() == 1:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                True, factor, self.eps)
        return self._synchronized(input, factor)

    def _synchronized(self, input, factor):
        channels = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        bshape = [1, channels] + [1] * (input.dim() - 2)
        # Reduced precision inputs accumulate in float32.
        compute = torch.float32 if input.dtype in (torch.float16, torch.bfloat16) else input.dtype
        x = input.to(compute)
        local_count = torch.tensor([input.numel() // max(channels, 1)], dtype=compute,
                                   device=input.device)
        sums = allreduce(torch.cat([x.sum(dim=dims), local_count]), op=Sum)
        count = sums[-1].detach()  # a constant: no gradient flows through the count
        compiling = torch.compiler.is_compiling()
        if compiling:
            # Traced: the check runs in the graph (no data-dependent branch).
            torch._assert_async(count > 0, _EMPTY_BATCH)
        elif float(count) == 0:
            raise ValueError(_EMPTY_BATCH)
        mean = sums[:channels] / count
        centered = x - mean.view(bshape)
        var = allreduce((centered * centered).sum(dim=dims), op=Sum) / count
        y = centered * torch.rsqrt(var + self.eps).view(bshape)
        if self.affine:
            y = y * self.weight.view(bshape) + self.bias.view(bshape)
        if self.training and self.track_running_stats:
            with torch.no_grad():
                if compiling:
                    unbiased = var.detach() * torch.where(count > 1, count / (count - 1), 1.0)
                else:
                    n = float(count)
                    unbiased = var.detach() * (n / (n - 1) if n > 1 else 1.0)
                self.running_mean.mul_(1 - factor).add_(mean.detach().to(self.running_mean.dtype),
                                                        alpha=factor)
                self.running_var.mul_(1 - factor).add_(unbiased.to(self.running_var.dtype),
                                                       alpha=factor)
        return y.to(input.dtype)
