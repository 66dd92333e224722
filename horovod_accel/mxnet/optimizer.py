"""DistributedOptimizer: upstream's `horovod.mxnet.DistributedOptimizer`, an
mx.optimizer.Optimizer that averages every gradient over the ranks of a
process set before the wrapped optimizer's update. Use it with
`mx.mod.Module` (`mod.fit(..., optimizer=hvd.DistributedOptimizer(opt))`) or
a `gluon.Trainer` created without a kvstore (kvstore=None); Gluon code
usually takes DistributedTrainer (trainer.py) instead.

Each update allreduces its gradient in place on MXNet's engine (name: the
parameter index; grouped per `num_groups` when the updater aggregates
several parameters) and then lets the wrapped optimizer update: the update
operation waits for the allreduce, the Python thread does not.
"""
import mxnet as mx

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.util import split_list
from horovod_accel.mxnet.ops_engine import allreduce_, grouped_allreduce_

# The wrapper's own attributes; every other attribute is the wrapped
# optimizer's (read through __getattr__, written through __setattr__).
_OWN_ATTRIBUTES = frozenset({"_optimizer", "_gradient_predivide_factor", "_num_groups",
                             "_process_set"})


class DistributedOptimizer(mx.optimizer.Optimizer):
    """Wraps `optimizer` so that gradients are averaged over `process_set`.

    gradient_predivide_factor: gradients are scaled by
    1 / gradient_predivide_factor before the sum and by
    gradient_predivide_factor / set size after it (the average is the same;
    the split can avoid overflow in float16).
    num_groups: > 0 allreduces the gradients of one aggregated update in that
    many grouped allreduces instead of one allreduce each.

    Unlike upstream, attributes set on the wrapper (what `Module` and
    `gluon.Trainer` do with `rescale_grad`, `idx2name`, `param_dict`) are set
    on the wrapped optimizer, which is the one that uses them.
    """

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0,
                 process_set=global_process_set):
        # No super().__init__(): the hyper-parameters are the wrapped optimizer's.
        self._optimizer = optimizer
        self._gradient_predivide_factor = float(gradient_predivide_factor)
        self._num_groups = int(num_groups)
        self._process_set = process_set

    def __getattr__(self, item):
        # Only called for attributes the wrapper lacks. While unpickling,
        # _optimizer is not there yet: no recursion.
        if item in _OWN_ATTRIBUTES or item.startswith("__"):
            raise AttributeError(item)
        return getattr(self._optimizer, item)

    def __setattr__(self, name, value):
        if name in _OWN_ATTRIBUTES:
            object.__setattr__(self, name, value)
        else:
            setattr(self._optimizer, name, value)

    def __getstate__(self):
        return {name: self.__dict__[name] for name in _OWN_ATTRIBUTES}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def create_state(self, index, weight):
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._optimizer.create_state_multi_precision(index, weight)

    def _allreduce_kwargs(self, priority):
        return dict(op=HorovodBasics.Average, priority=priority,
                    prescale_factor=1.0 / self._gradient_predivide_factor,
                    postscale_factor=self._gradient_predivide_factor,
                    process_set=self._process_set)

    def _do_allreduce(self, index, grad):
        if self._process_set.size() == 1:
            return
        if not isinstance(index, (tuple, list)):
            allreduce_(grad, name=str(index), **self._allreduce_kwargs(0))
        elif self._num_groups > 0:
            for i, (grads, indices) in enumerate(zip(split_list(list(grad), self._num_groups),
                                                     split_list(list(index), self._num_groups))):
                if grads:
                    grouped_allreduce_(grads, name=f"{indices[0]}:{indices[-1]}",
                                       **self._allreduce_kwargs(-i))
        else:
            for i, (idx, g) in enumerate(zip(index, grad)):
                allreduce_(g, name=str(idx), **self._allreduce_kwargs(-i))

    def update(self, index, weight, grad, state):
        if self._process_set.included():
            self._do_allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        if self._process_set.included():
            self._do_allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self._optimizer.set_wd_mult(args_wd_mult)
