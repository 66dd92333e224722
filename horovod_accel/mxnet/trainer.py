"""DistributedTrainer: upstream's `horovod.mxnet.DistributedTrainer`, a
gluon.Trainer that averages gradients with Horovod instead of a kvstore.

`step()` (or `allreduce_grads()`) allreduces every gradient in place on
MXNet's engine, named '<prefix><parameter index>' (or grouped, per
`num_groups` and dtype), then updates as gluon.Trainer does: the update
operations wait for the allreduces, the Python thread does not.
"""
import warnings
from collections import OrderedDict, defaultdict

import mxnet as mx

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.util import split_list
from horovod_accel.mxnet.compression import Compression
from horovod_accel.mxnet.ops_engine import allreduce_, grouped_allreduce_
from horovod_accel.mxnet.optimizer import DistributedOptimizer


class DistributedTrainer(mx.gluon.Trainer):
    """gluon.Trainer over Horovod.

    params: the parameters to train (a ParameterDict, a dict or a list of
        Parameters; lists are sorted by name so every rank orders them alike).
    optimizer, optimizer_params: as gluon.Trainer (a DistributedOptimizer is
        unwrapped, with a warning, as upstream).
    compression: Compression.none or Compression.fp16 (gradients are sent as
        float16 and cast back).
    gradient_predivide_factor: see DistributedOptimizer.
    prefix: prepended to the allreduce names; two trainers in one program
        need different prefixes.
    num_groups: > 0 allreduces the gradients in that many grouped allreduces
        (split further by dtype).
    process_set: the ranks the gradients are averaged over.
    """

    def __init__(self, params, optimizer, optimizer_params=None, compression=Compression.none,
                 gradient_predivide_factor=1.0, prefix=None, num_groups=0,
                 process_set=global_process_set):
        if isinstance(optimizer, DistributedOptimizer):
            optimizer = optimizer._optimizer
            warnings.warn("DistributedTrainer does not take DistributedOptimizer as its "
                          "optimizer. We have unwrapped it for you.")
        if prefix is not None and not isinstance(prefix, str):
            raise ValueError(f"prefix must be a str, got {type(prefix).__name__}.")
        # One parameter order on every rank: names are indices into it.
        if isinstance(params, dict):
            params = OrderedDict(params)
        elif isinstance(params, (list, tuple)):
            params = sorted(params, key=lambda p: p.name)
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._compression = compression
        self._process_set = process_set
        self._gradient_predivide_factor = float(gradient_predivide_factor)
        self._prefix = prefix or ""
        self._num_groups = int(num_groups)

    def _allreduce_kwargs(self, priority):
        return dict(op=HorovodBasics.Average, priority=priority,
                    prescale_factor=1.0 / self._gradient_predivide_factor,
                    postscale_factor=self._gradient_predivide_factor,
                    process_set=self._process_set)

    def _allreduce_grads(self):
        if self._process_set.size() == 1 or not self._process_set.included():
            return
        entries = []  # (parameter's gradient, what is sent, compression ctx, name)
        for i, param in enumerate(self._params):
            if param.grad_req != "null":
                grad = param.list_grad()[0]
                sent, ctx = self._compression.compress(grad)
                entries.append((grad, sent, ctx, self._prefix + str(i)))
        if self._num_groups > 0:
            for i, group in enumerate(split_list(entries, self._num_groups)):
                by_dtype = defaultdict(list)
                for entry in group:
                    by_dtype[entry[1].dtype].append(entry)
                for same_dtype in by_dtype.values():
                    names = [e[3] for e in same_dtype]
                    grouped_allreduce_([e[1] for e in same_dtype], name=f"{names[0]}:{names[-1]}",
                                       **self._allreduce_kwargs(-i))
        else:
            for i, (_, sent, _, name) in enumerate(entries):
                allreduce_(sent, name=name, **self._allreduce_kwargs(-i))
        if self._compression is not Compression.none:
            for grad, sent, ctx, _ in entries:
                if sent is not grad:
                    grad[:] = self._compression.decompress(sent, ctx)
