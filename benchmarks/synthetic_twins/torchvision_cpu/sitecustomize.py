"""Lets PyPI's torchvision import beside a CPU-only torch (benchmarks only).

PyPI's torchvision wheels are CUDA builds: their op library (_C.so) needs
libtorch_cuda.so, which a CPU torch does not have. torchvision then imports
without its ops, except that its `_meta_registrations` registers fake
kernels for torchvision::nms and ::qnms unconditionally, which raises
"operator torchvision::nms does not exist". The synthetic benchmarks use
only torchvision.models (pure Python), so when _C.so cannot load, this
declares those two operators' schemas before torchvision is imported.
benchmarks/synthetic.py puts this folder on PYTHONPATH for every peer alike.
"""
import importlib.machinery
import os
import sys


class _BeforeTorchvision:
    def find_spec(self, name, path=None, target=None):
        if name == "torchvision":
            sys.meta_path.remove(self)
            _declare_ops_if_missing()
        return None


def _declare_ops_if_missing():
    spec = importlib.machinery.PathFinder.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    import torch
    lib = os.path.join(list(spec.submodule_search_locations)[0], "_C.so")
    try:
        torch.ops.load_library(lib)
        return  # a torchvision built for this torch: nothing to do
    except (OSError, RuntimeError):
        pass
    fragment = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        fragment.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    sys.modules[__name__]._fragment = fragment  # the registration lives as long as the process


sys.meta_path.insert(0, _BeforeTorchvision())
