"""The suite's plugin-memory mode (`--memory plugin`, docs/conformance.md): for
a vendor who has a device plugin but no framework device yet.

Every buffer an op reads or writes comes from the plugin's `mem_alloc`;
values cross with its `memcpy_async` on the device's default stream
(`_core.PluginMemory`); the ops go through the core's enqueue bindings
exactly as a framework adapter's tensors do, with the device named by a
`_core.DeviceRef(type, index, stream 0)` - a framework without streams, as
plugin.h describes it. Host-side values and expectations stay torch CPU
tensors.

`PluginTensor` is such a buffer with a torch dtype and a shape; `PluginOps`
is the part of the `horovod_accel.torch` surface that the case functions
call (collectives.py), over PluginTensors. It is an adapter in the sense of
docs/design/README.md: it converts buffers, and handles, naming, waiting and
errors are the shared op layer's (horovod_accel.common.handles).
"""
from dataclasses import dataclass

import torch

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.handles import submit, synchronize
from horovod_accel.common.process_sets import registered_id
from horovod_accel.torch.tensors import DTYPE_CODES, dtype_code


@dataclass(frozen=True)
class PluginDevice:
    """Where PluginTensors live: the plugin's device type and this rank's index."""
    type: str
    index: int

    def __str__(self):
        return f"{self.type}:{self.index} (plugin memory)"


class PluginTensor:
    """`numel * element_size` bytes of plugin device memory holding a tensor of
    `dtype` and `shape` (C-contiguous). Owns its memory: freed through the
    plugin when the object dies, which the handle of any op using it delays
    until the op completed (the handle keeps it alive)."""

    __slots__ = ("memory", "device", "ptr", "shape", "dtype", "nbytes", "__weakref__")

    def __init__(self, memory, device, shape, dtype):
        self.ptr = 0  # before anything can fail: __del__ frees only what was allocated
        if dtype not in DTYPE_CODES:
            dtype_code(torch.empty(0, dtype=dtype))  # raises the adapter's message
        self.memory, self.device = memory, device
        self.shape = torch.Size(shape)
        self.dtype = dtype
        self.nbytes = self.shape.numel() * dtype.itemsize
        self.ptr = memory.alloc(self.nbytes)

    @classmethod
    def from_host(cls, memory, device, host):
        t = cls(memory, device, host.shape, host.dtype)
        src = host.contiguous()
        t.memory.copy_from_host(t.ptr, src.data_ptr(), t.nbytes)
        return t

    def empty_like(self, shape=None):
        return PluginTensor(self.memory, self.device, self.shape if shape is None else shape,
                            self.dtype)

    def numel(self):
        return self.shape.numel()

    def dim(self):
        return len(self.shape)

    def detach(self):
        return self

    def cpu(self):
        """A new host tensor with this buffer's values (blocks until copied)."""
        out = torch.empty(self.shape, dtype=self.dtype)
        self.memory.copy_to_host(out.data_ptr(), self.ptr, self.nbytes)
        return out

    def __del__(self):
        if self.ptr:
            self.memory.free(self.ptr)
            self.ptr = 0

    def __repr__(self):
        return (f"PluginTensor({list(self.shape)}, {str(self.dtype).replace('torch.', '')}, "
                f"{self.device})")


def _from_output(memory, device, buf, dtype):
    """A PluginTensor holding a core-allocated device output (allgather,
    alltoall: `_core.DeviceOutput`), copied device to device."""
    t = PluginTensor(memory, device, list(buf.shape), dtype)
    if t.nbytes:
        buf.copy_to(t.ptr, 0)
    return t


class PluginOps:
    """The collectives of `hvd` (horovod_accel.torch, already initialized) on
    PluginTensors of this rank's accelerator `device_type:index`. Everything
    else (Sum, poll, synchronize, barrier, process sets, rank, size) is hvd's.
    Binding the memory binds this rank's accelerator (Runtime.plugin_memory):
    ValueError when no loaded plugin serves device_type."""

    def __init__(self, hvd, device_type, index):
        self._hvd = hvd
        self._rt = DEFAULT_RUNTIME.initialized_runtime()
        self.memory = self._rt.plugin_memory(device_type, index)
        self.device = PluginDevice(device_type, index)
        self._ref = DEFAULT_RUNTIME.core().DeviceRef(device_type, index, 0)

    def __getattr__(self, name):
        return getattr(self._hvd, name)

    def to_device(self, host):
        return PluginTensor.from_host(self.memory, self.device, host)

    # ------------------------------------------------------------ allreduce

    def _allreduce_async(self, x, in_place, name, op, pre, post, process_set):
        ps_id = registered_id(process_set)
        out = x if in_place else x.empty_like()
        return submit("allreduce", name, ps_id, self._rt.enqueue_allreduce, keep=(x, out),
                      finish=None, result=out,
                      args=(ps_id, x.ptr, out.ptr, DTYPE_CODES[x.dtype], list(x.shape), self._ref,
                            int(op), float(pre), float(post)))

    def allreduce_async(self, tensor, name=None, op=None, prescale_factor=1.0,
                        postscale_factor=1.0, process_set=None):
        return self._allreduce_async(tensor, False, name, self._op(op), prescale_factor,
                                     postscale_factor, self._ps(process_set))

    def allreduce_async_(self, tensor, name=None, op=None, prescale_factor=1.0,
                         postscale_factor=1.0, process_set=None):
        return self._allreduce_async(tensor, True, name, self._op(op), prescale_factor,
                                     postscale_factor, self._ps(process_set))

    def allreduce(self, tensor, **kw):
        return synchronize(self.allreduce_async(tensor, **kw))

    def allreduce_(self, tensor, **kw):
        return synchronize(self.allreduce_async_(tensor, **kw))

    def _grouped_allreduce_async(self, xs, in_place, name, op, pre, post, process_set):
        ps_id = registered_id(process_set)
        outs = list(xs) if in_place else [x.empty_like() for x in xs]
        return submit("grouped_allreduce", name, ps_id,
                      lambda names: self._rt.enqueue_grouped_allreduce(
                          names, ps_id, [x.ptr for x in xs], [o.ptr for o in outs],
                          [DTYPE_CODES[x.dtype] for x in xs], [list(x.shape) for x in xs],
                          self._ref, int(op), float(pre), float(post)),
                      keep=(xs, outs), finish=None, result=outs, group_size=len(xs))

    def grouped_allreduce_async(self, tensors, name=None, op=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=None):
        return self._grouped_allreduce_async(list(tensors), False, name, self._op(op),
                                             prescale_factor, postscale_factor,
                                             self._ps(process_set))

    def grouped_allreduce(self, tensors, **kw):
        return synchronize(self.grouped_allreduce_async(tensors, **kw))

    def grouped_allreduce_(self, tensors, name=None, op=None, prescale_factor=1.0,
                           postscale_factor=1.0, process_set=None):
        return synchronize(self._grouped_allreduce_async(
            list(tensors), True, name, self._op(op), prescale_factor, postscale_factor,
            self._ps(process_set)))

    # ------------------------------------------------------------ allgather

    def allgather_async(self, tensor, name=None, process_set=None):
        ps_id = registered_id(self._ps(process_set))
        return submit("allgather", name, ps_id,
                      lambda core_name: self._rt.enqueue_allgather(
                          core_name, ps_id, tensor.ptr, DTYPE_CODES[tensor.dtype],
                          list(tensor.shape), self._ref),
                      keep=(tensor,),
                      finish=lambda works: _from_output(self.memory, self.device,
                                                        works[0].output(), tensor.dtype))

    def allgather(self, tensor, **kw):
        return synchronize(self.allgather_async(tensor, **kw))

    def grouped_allgather(self, tensors, name=None, process_set=None):
        xs = list(tensors)
        ps_id = registered_id(self._ps(process_set))
        handle = submit("grouped_allgather", name, ps_id,
                        lambda names: self._rt.enqueue_grouped_allgather(
                            names, ps_id, [x.ptr for x in xs],
                            [DTYPE_CODES[x.dtype] for x in xs], [list(x.shape) for x in xs],
                            self._ref),
                        keep=(xs,),
                        finish=lambda works: [_from_output(self.memory, self.device, w.output(),
                                                           x.dtype) for w, x in zip(works, xs)],
                        group_size=len(xs))
        return synchronize(handle)

    # ------------------------------------------------------------ broadcast

    def _broadcast_async(self, x, root_rank, in_place, name, process_set):
        ps_id = registered_id(process_set)
        out = x if in_place else x.empty_like()
        return submit("broadcast", name, ps_id,
                      lambda core_name: self._rt.enqueue_broadcast(
                          core_name, ps_id, x.ptr, out.ptr, DTYPE_CODES[x.dtype], list(x.shape),
                          self._ref, int(root_rank)),
                      keep=(x, out), finish=None, result=out)

    def broadcast_async(self, tensor, root_rank, name=None, process_set=None):
        return self._broadcast_async(tensor, root_rank, False, name, self._ps(process_set))

    def broadcast_async_(self, tensor, root_rank, name=None, process_set=None):
        return self._broadcast_async(tensor, root_rank, True, name, self._ps(process_set))

    def broadcast(self, tensor, root_rank, **kw):
        return synchronize(self.broadcast_async(tensor, root_rank, **kw))

    def broadcast_(self, tensor, root_rank, **kw):
        return synchronize(self.broadcast_async_(tensor, root_rank, **kw))

    # ------------------------------------------------------------ alltoall

    def alltoall_async(self, tensor, splits=None, name=None, process_set=None):
        ps_id = registered_id(self._ps(process_set))
        if splits is None:
            send = []
        elif isinstance(splits, torch.Tensor):
            send = [int(s) for s in splits.tolist()]
        else:
            send = [int(s) for s in splits]

        def finish(works):
            out = _from_output(self.memory, self.device, works[0].output(), tensor.dtype)
            return out, torch.tensor(list(works[0].received_splits()), dtype=torch.int32)

        return submit("alltoall", name, ps_id,
                      lambda core_name: self._rt.enqueue_alltoall(
                          core_name, ps_id, tensor.ptr, DTYPE_CODES[tensor.dtype],
                          list(tensor.shape), self._ref, send),
                      keep=(tensor,), finish=finish)

    def alltoall(self, tensor, splits=None, **kw):
        out, received = synchronize(self.alltoall_async(tensor, splits, **kw))
        return out if splits is None else (out, received)

    # ------------------------------------------------------------ reducescatter

    def _scattered(self, ps_id, x):
        """This rank's output of a reducescatter of x (upstream's split of dim 0)."""
        set_rank, n = self._rt.process_set_rank(ps_id), self._rt.process_set_size(ps_id)
        d0 = x.shape[0]
        return x.empty_like((d0 // n + (1 if set_rank < d0 % n else 0), *x.shape[1:]))

    def reducescatter_async(self, tensor, name=None, op=None, process_set=None,
                            prescale_factor=1.0, postscale_factor=1.0):
        ps_id = registered_id(self._ps(process_set))
        out = self._scattered(ps_id, tensor)
        return submit("reducescatter", name, ps_id,
                      lambda core_name: self._rt.enqueue_reducescatter(
                          core_name, ps_id, tensor.ptr, out.ptr, DTYPE_CODES[tensor.dtype],
                          list(tensor.shape), self._ref, int(self._op(op)),
                          float(prescale_factor), float(postscale_factor)),
                      keep=(tensor, out), finish=None, result=out)

    def reducescatter(self, tensor, **kw):
        return synchronize(self.reducescatter_async(tensor, **kw))

    def grouped_reducescatter(self, tensors, name=None, op=None, process_set=None,
                              prescale_factor=1.0, postscale_factor=1.0):
        xs = list(tensors)
        ps_id = registered_id(self._ps(process_set))
        outs = [self._scattered(ps_id, x) for x in xs]
        handle = submit("grouped_reducescatter", name, ps_id,
                        lambda names: self._rt.enqueue_grouped_reducescatter(
                            names, ps_id, [x.ptr for x in xs], [o.ptr for o in outs],
                            [DTYPE_CODES[x.dtype] for x in xs], [list(x.shape) for x in xs],
                            self._ref, int(self._op(op)), float(prescale_factor),
                            float(postscale_factor)),
                        keep=(xs, outs), finish=None, result=outs, group_size=len(xs))
        return synchronize(handle)

    # ------------------------------------------------------------ defaults

    def _op(self, op):
        return self._hvd.Average if op is None else op

    def _ps(self, process_set):
        return self._hvd.global_process_set if process_set is None else process_set
